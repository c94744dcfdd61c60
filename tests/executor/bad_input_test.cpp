// Bad inputs at the API (docs/errors.md): each gives a specific Error whose message names
// what was expected and what was found. One test per row of the table in docs/errors.md.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/extension/module.h"
#include "tests/executor/hardening_util.h"
#include "tests/fuzz/sample_programs.h"
#include "tools/compiler/serializer.h"

namespace tern {
namespace {

std::string message() { return last_error_message(); }

/// The elementwise sample: forward(x: f32[2, 3]) -> f32[2, 3].
class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fuzz::register_sample_kernels_and_backend());
    program_ = std::make_unique<hardening::OwnedProgram>(
        fuzz::compile_one(fuzz::elementwise_graph(), "elementwise"));
    const MethodMeta meta = (*program_)->method_meta("forward").get();
    memory_ = hardening::ExactMemory::from_meta(meta);
    auto method = (*program_)->load_method("forward", memory_->manager());
    ASSERT_TRUE(method.ok()) << message();
    method_ = std::make_unique<Method>(std::move(*method));
  }
  /// A view of data_ with `sizes` (kept in sizes_), dtype and byte count as given.
  TensorView view(std::vector<int64_t> sizes, DType dtype = DType::F32, int64_t nbytes = -1) {
    sizes_ = std::move(sizes);
    TensorView v;
    v.dtype = dtype;
    v.rank = static_cast<uint32_t>(sizes_.size());
    v.sizes = sizes_.data();
    v.data = data_.data();
    v.nbytes = nbytes < 0 ? 24 : static_cast<uint64_t>(nbytes);
    return v;
  }
  void expect(Error got, Error want, const std::string& text) {
    EXPECT_EQ(got, want) << to_string(got) << ": " << message();
    EXPECT_NE(message().find(text), std::string::npos) << "message: " << message();
  }

  std::unique_ptr<hardening::OwnedProgram> program_;
  std::unique_ptr<hardening::ExactMemory> memory_;
  std::unique_ptr<Method> method_;
  std::vector<int64_t> sizes_;
  std::vector<float> data_ = std::vector<float>(8, 1.0f);
};

TEST_F(BadInput, WrongDtype) {
  expect(method_->set_input(0, view({2, 3}, DType::I32)), Error::InvalidArgument,
         "input 0 ('x'): expected shape [2, 3] (f32), got [2, 3] (i32)");
}

TEST_F(BadInput, WrongRank) {
  expect(method_->set_input(0, view({6})), Error::InvalidArgument,
         "input 0 ('x'): expected shape [2, 3] (f32), got [6] (f32)");
}

TEST_F(BadInput, WrongShape) {
  expect(method_->set_input(0, view({3, 2})), Error::InvalidArgument,
         "input 0 ('x'): expected shape [2, 3] (f32), got [3, 2] (f32)");
}

TEST_F(BadInput, WrongByteSize) {
  expect(method_->set_input(0, view({2, 3}, DType::F32, 20)), Error::InvalidArgument,
         "input 0 ('x'): expected 24 bytes, got nbytes = 20");
}

TEST_F(BadInput, NullData) {
  TensorView v = view({2, 3});
  v.data = nullptr;
  expect(method_->set_input(0, v), Error::InvalidArgument, "input 0 ('x'): data is null");
}

TEST_F(BadInput, NullSizes) {
  TensorView v = view({2, 3});
  v.sizes = nullptr;
  expect(method_->set_input(0, v), Error::InvalidArgument, "rank 2 with null sizes");
}

TEST_F(BadInput, InputIndexOutOfRange) {
  expect(method_->set_input(1, view({2, 3})), Error::InvalidArgument,
         "input 1 out of range: the method has 1 inputs");
}

TEST_F(BadInput, ExecuteBeforeSetInput) {
  expect(method_->execute(), Error::InvalidState,
         "input 0 ('x') has not been set; call set_input() before execute()");
}

TEST_F(BadInput, OutputReadBeforeExecute) {
  auto out = method_->output(0);
  expect(out.error(), Error::InvalidState, "output 0 read before a successful execute()");
}

TEST_F(BadInput, OutputReadAfterFailedExecute) {
  ASSERT_EQ(method_->set_input(0, view({2, 3})), Error::Ok) << message();
  ASSERT_EQ(method_->execute(), Error::Ok) << message();
  ASSERT_TRUE(method_->output(0).ok());
  // A failed call in between does not clear a good run; an out-of-range index is named.
  expect(method_->output(3).error(), Error::InvalidArgument,
         "output 3 out of range: the method has 1 outputs");
}

TEST_F(BadInput, UnknownMethodName) {
  expect((*program_)->method_meta("decode").error(), Error::NotFound, "decode");
  expect((*program_)->method_meta("decode").error(), Error::NotFound, "forward");
  expect((*program_)->load_method("decode", memory_->manager()).error(), Error::NotFound, "decode");
}

TEST_F(BadInput, UnknownMethodNameThroughModule) {
  const std::string path = tern::testing_support::unique_temp_path("bad_input", ".pte");
  compiler::write_file(path, fuzz::compile_one(fuzz::elementwise_graph(), "elementwise"));
  Module module;
  ASSERT_EQ(module.load(path.c_str()), Error::Ok) << message();
  auto method = module.method("decode");
  expect(method.error(), Error::NotFound, "decode");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tern
