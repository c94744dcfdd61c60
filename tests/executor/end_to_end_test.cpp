// End to end: GraphBuilder -> compile_program -> .pte file -> every loader and Module ->
// execute -> compare with a naive reference computed here. Plus state tensors.
#include <gtest/gtest.h>

#include "tests/support/temp_path.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/loader/file_data_loader.h"
#include "runtime/loader/mmap_data_loader.h"
#include "runtime/extension/module.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"

namespace tern {
namespace {

using compiler::GraphBuilder;
using testing::f32_view;

std::string message() { return last_error_message(); }

// MLP dimensions: x[B, D] -> linear(H) -> relu -> linear(D) -> + x -> reshape [B * D / 2, 2].
constexpr int64_t kB = 2, kD = 4, kH = 6;

std::vector<float> values(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(seed + 0.7f * static_cast<float>(i));
  return v;
}

const std::vector<float> kW1 = values(kH * kD, 0.1f);
const std::vector<float> kB1 = values(kH, 1.3f);
const std::vector<float> kW2 = values(kD * kH, 2.9f);
const std::vector<float> kB2 = values(kD, 4.2f);

std::vector<uint8_t> mlp_program() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {kB, kD});
  const int w1 = b.constant_f32("fc1.weight", {kH, kD}, kW1);
  const int b1 = b.constant_f32("fc1.bias", {kH}, kB1);
  const int w2 = b.constant_f32("fc2.weight", {kD, kH}, kW2);
  const int b2 = b.constant_f32("fc2.bias", {kD}, kB2);
  const int h = b.op("tern::linear", {x, w1, b1}, DType::F32, {kB, kH}, "fc1");
  const int r = b.op("tern::relu", {h}, DType::F32, {kB, kH}, "relu");
  const int y = b.op("tern::linear", {r, w2, b2}, DType::F32, {kB, kD}, "fc2");
  const int z = b.op("tern::add", {y, x}, DType::F32, {kB, kD}, "residual");
  const int out = b.op("tern::reshape", {z, b.int_list({kB * kD / 2, 2})}, DType::F32,
                       {kB * kD / 2, 2}, "fold");
  b.output(out);
  return testing::compile_graph(b.build());
}

/// The MLP by naive loops, in double, rounded to float at the end.
std::vector<float> mlp_reference(const std::vector<float>& x) {
  std::vector<float> out(kB * kD);
  for (int64_t i = 0; i < kB; ++i) {
    std::vector<double> hidden(kH);
    for (int64_t j = 0; j < kH; ++j) {
      double s = kB1[j];
      for (int64_t k = 0; k < kD; ++k) s += double(x[i * kD + k]) * kW1[j * kD + k];
      hidden[j] = s > 0 ? s : 0;
    }
    for (int64_t j = 0; j < kD; ++j) {
      double s = kB2[j];
      for (int64_t k = 0; k < kH; ++k) s += hidden[k] * kW2[j * kH + k];
      out[i * kD + j] = static_cast<float>(s + x[i * kD + j]);
    }
  }
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << "element " << i;
  }
}

/// Sets x, executes and compares with the reference, for two different inputs.
void run_mlp(Method& method) {
  ASSERT_EQ(method.num_inputs(), 1u);
  std::vector<int64_t> sizes = {kB, kD};
  for (float seed : {0.0f, 5.5f}) {
    std::vector<float> x = values(kB * kD, seed);
    ASSERT_EQ(method.set_input(0, f32_view(sizes, x)), Error::Ok) << message();
    ASSERT_EQ(method.execute(), Error::Ok) << message();
    auto out = method.output(0);
    ASSERT_TRUE(out.ok()) << message();
    EXPECT_EQ((*out)->rank, 2u);
    EXPECT_EQ((*out)->sizes[0], kB * kD / 2);
    EXPECT_EQ((*out)->sizes[1], 2);
    expect_near(testing::to_vector(**out), mlp_reference(x));
  }
}

class EndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    bytes_ = mlp_program();
    path_ = tern::testing_support::unique_temp_path("tern_end_to_end", ".pte");
    compiler::write_file(path_, bytes_);
  }
  void TearDown() override { std::remove(path_.c_str()); }

  /// Loads the program through `loader`, loads forward into fresh memory and runs it.
  void run_with_loader(DataLoader* loader) {
    auto program = Program::load(loader);
    ASSERT_TRUE(program.ok()) << message();
    ASSERT_EQ(program->num_methods(), 1u);
    auto meta = program->method_meta("forward");
    ASSERT_TRUE(meta.ok()) << message();
    testing::MethodMemory memory(*meta);
    auto method = program->load_method("forward", memory.manager());
    ASSERT_TRUE(method.ok()) << message();
    run_mlp(*method);
  }

  std::vector<uint8_t> bytes_;
  std::string path_;
};

TEST_F(EndToEndTest, FileDataLoader) {
  auto loader = FileDataLoader::from(path_.c_str());
  ASSERT_TRUE(loader.ok()) << message();
  run_with_loader(&loader.get());
}

TEST_F(EndToEndTest, MmapDataLoader) {
  auto loader = MmapDataLoader::from(path_.c_str());
  ASSERT_TRUE(loader.ok()) << message();
  run_with_loader(&loader.get());
}

TEST_F(EndToEndTest, BufferDataLoader) {
  testing::AlignedBytes buffer = testing::aligned_bytes(bytes_.size());
  std::memcpy(buffer.get(), bytes_.data(), bytes_.size());
  BufferDataLoader loader(buffer.get(), bytes_.size());
  run_with_loader(&loader);
}

TEST_F(EndToEndTest, ModuleWithEachLoadMode) {
  for (Module::LoadMode mode : {Module::LoadMode::File, Module::LoadMode::Mmap}) {
    Module module;
    Module::Options options;
    options.mode = mode;
    EXPECT_EQ(module.program(), nullptr);
    ASSERT_EQ(module.load(path_.c_str(), options), Error::Ok) << message();
    ASSERT_NE(module.program(), nullptr);
    auto method = module.method("forward");
    ASSERT_TRUE(method.ok()) << message();
    run_mlp(**method);
    auto again = module.method("forward");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *method);  // loaded once
    EXPECT_EQ(module.method("backward").error(), Error::NotFound);
  }
}

TEST_F(EndToEndTest, ModuleErrors) {
  Module module;
  EXPECT_EQ(module.method("forward").error(), Error::InvalidState);
  EXPECT_EQ(module.load((path_ + ".missing").c_str()), Error::AccessFailed);
  EXPECT_NE(message().find(".missing"), std::string::npos) << message();
}

// ---- state ----------------------------------------------------------------------------------

/// forward(x[3]) -> acc, where acc is a state tensor: acc = acc + x (written in place).
std::vector<uint8_t> accumulator_program(const std::vector<float>& init) {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {3});
  std::vector<uint8_t> init_bytes(init.size() * sizeof(float));
  if (!init.empty()) std::memcpy(init_bytes.data(), init.data(), init_bytes.size());
  const int acc = b.state("acc", DType::F32, {3}, init_bytes);
  b.op_into("tern::add", {acc, x}, {acc}, "accumulate");
  b.output(acc);
  return testing::compile_graph(b.build());
}

std::vector<float> step(Method& method, std::vector<float> x) {
  std::vector<int64_t> sizes = {3};
  EXPECT_EQ(method.set_input(0, f32_view(sizes, x)), Error::Ok) << message();
  EXPECT_EQ(method.execute(), Error::Ok) << message();
  auto out = method.output(0);
  EXPECT_TRUE(out.ok()) << message();
  return out.ok() ? testing::to_vector(**out) : std::vector<float>();
}

TEST(StateTest, AccumulatorGrowsAndResets) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  testing::LoadedProgram lp(accumulator_program({}));
  testing::MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();
  EXPECT_EQ(step(*method, {1, 2, 3}), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(step(*method, {10, 20, 30}), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(step(*method, {0.5f, 0.5f, 0.5f}), (std::vector<float>{11.5f, 22.5f, 33.5f}));
  ASSERT_EQ(method->reset_state(), Error::Ok) << message();
  EXPECT_EQ(step(*method, {1, 1, 1}), (std::vector<float>{1, 1, 1}));
}

TEST(StateTest, InitialValueIsRestoredByReset) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  testing::LoadedProgram lp(accumulator_program({100, 200, 300}));
  testing::MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();
  EXPECT_EQ(step(*method, {1, 2, 3}), (std::vector<float>{101, 202, 303}));
  EXPECT_EQ(step(*method, {1, 2, 3}), (std::vector<float>{102, 204, 306}));
  ASSERT_EQ(method->reset_state(), Error::Ok);
  EXPECT_EQ(step(*method, {-100, 0, 0}), (std::vector<float>{0, 200, 300}));
}

}  // namespace
}  // namespace tern
