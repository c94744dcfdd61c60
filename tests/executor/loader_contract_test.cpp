// The contracts between the loader, the Program and the backends (docs/architecture.md):
// Program::load relies on the loader's alignment promise and refuses a loader that breaks it;
// Program::segment_buffer hands a segment out as an owned buffer whose release reaches the
// loader; a backend's init owns its blob and may free it once it no longer needs the bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "runtime/backend/backend.h"
#include "runtime/core/data_loader.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/extension/method_memory.h"
#include "runtime/loader/buffer_data_loader.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_builder.h"

namespace tern {
namespace {

/// forward(x) = x + c, with a constant (one segment) and a delegated add (a blob segment).
std::vector<uint8_t> program_with_a_blob(const std::string& blob) {
  compiler::GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {2, 8});
  const int c = b.constant_f32("c", {2, 8}, std::vector<float>(16, 1.5f));
  const int y = b.op("tern::add", {x, c}, DType::F32, {2, 8}, "add0");
  b.delegate("keeper", 0, 0, std::vector<uint8_t>(blob.begin(), blob.end()));
  b.output(y);
  compiler::ProgramGraph program;
  program.source_model = "loader_contract_test";
  program.methods.push_back(b.build());
  return compiler::compile_program(program).bytes;
}

/// The file's bytes at a 64-byte aligned address.
class AlignedCopy {
 public:
  explicit AlignedCopy(const std::vector<uint8_t>& bytes) : store_(bytes.size() / 64 + 2) {
    std::memcpy(data(), bytes.data(), bytes.size());
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(store_.data()); }

 private:
  struct alignas(64) Line {
    uint8_t bytes[64];
  };
  std::vector<Line> store_;
};

/// A caller's loader over aligned bytes that records what it is told to release, and can be
/// made to break the alignment promise.
class RecordingLoader final : public DataLoader {
 public:
  RecordingLoader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  Result<size_t> size() const override { return size_; }
  Result<FreeableBuffer> load(size_t offset, size_t size) override {
    if (misalign && size > 0) {
      // One byte past an aligned copy: data % 64 == 1 whatever the offset.
      shifted_.assign(size + 65, 0);
      uint8_t* p = shifted_.data();
      while (reinterpret_cast<uintptr_t>(p) % 64 != 1) ++p;
      std::memcpy(p, data_ + offset, size);
      return FreeableBuffer(p, size, nullptr);
    }
    return FreeableBuffer(data_ + offset, size, nullptr);
  }
  void release_resident(const void* data, size_t size) override {
    released.emplace_back(static_cast<const uint8_t*>(data) - data_, size);
  }
  bool misalign = false;
  std::vector<std::pair<ptrdiff_t, size_t>> released;  ///< (offset in the file, size)

 private:
  const uint8_t* data_;
  size_t size_;
  std::vector<uint8_t> shifted_;
};

Program::LoadOptions structure_only() {
  Program::LoadOptions options;
  options.verification = Program::Verification::Structure;
  return options;
}

TEST(LoaderContract, ALoaderBreakingTheAlignmentPromiseIsRefusedByName) {
  const std::vector<uint8_t> bytes = program_with_a_blob("add");
  AlignedCopy copy(bytes);
  RecordingLoader loader(copy.data(), bytes.size());
  loader.misalign = true;
  auto program = Program::load(&loader);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error(), Error::InvalidArgument);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("FlatBuffer"), std::string::npos) << message;
  EXPECT_NE(message.find("DataLoader::load() promises"), std::string::npos) << message;
}

TEST(LoaderContract, FullVerificationReleasesEveryCheckedSegment) {
  const std::vector<uint8_t> bytes = program_with_a_blob("add");
  AlignedCopy copy(bytes);
  RecordingLoader loader(copy.data(), bytes.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  ASSERT_EQ(loader.released.size(), program->num_segments());
}

TEST(LoaderContract, SegmentBufferIsTheSegmentAndItsReleaseReachesTheLoader) {
  const std::vector<uint8_t> bytes = program_with_a_blob("keep these bytes");
  AlignedCopy copy(bytes);
  RecordingLoader loader(copy.data(), bytes.size());
  auto program = Program::load(&loader, structure_only());
  ASSERT_TRUE(program.ok()) << last_error_message();
  ASSERT_TRUE(loader.released.empty());
  bool found_blob = false;
  for (uint32_t i = 0; i < program->num_segments(); ++i) {
    auto data = program->segment_data(i);
    auto buffer = program->segment_buffer(i);
    ASSERT_TRUE(data.ok() && buffer.ok());
    EXPECT_EQ(buffer->data(), data->data());
    EXPECT_EQ(buffer->size(), data->size());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % kLoaderAlignment, 0u) << i;
    if (buffer->size() == 16 && std::memcmp(buffer->data(), "keep these bytes", 16) == 0) {
      found_blob = true;
    }
    buffer->free();
    ASSERT_EQ(loader.released.size(), i + 1u);
    EXPECT_EQ(loader.released.back().first, data->data() - copy.data());
    EXPECT_EQ(loader.released.back().second, data->size());
    // The bytes stay valid in the Program.
    auto again = program->segment_data(i);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->data(), data->data());
  }
  EXPECT_TRUE(found_blob);
  auto out_of_range = program->segment_buffer(static_cast<uint32_t>(program->num_segments()));
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_EQ(out_of_range.error(), Error::InvalidArgument);
}

/// A device-style backend: copies what it needs from the blob at init, then frees the blob.
class CopyingBackend final : public BackendInterface {
 public:
  bool is_available() const override { return true; }
  Result<DelegateHandle*> init(BackendInitContext&, FreeableBuffer blob,
                               Span<const CompileSpecView>) const override {
    seen_alignment = reinterpret_cast<uintptr_t>(blob.data()) % kLoaderAlignment;
    seen.assign(blob.bytes().begin(), blob.bytes().end());
    blob.free();  // the host copy is no longer needed
    return reinterpret_cast<DelegateHandle*>(&seen);
  }
  Error execute(BackendExecuteContext&, DelegateHandle*, Span<EValue*>) const override {
    return Error::Ok;
  }
  void destroy(DelegateHandle*) const override {}
  mutable std::vector<uint8_t> seen;
  mutable uintptr_t seen_alignment = 1;
};

TEST(LoaderContract, ABackendThatFreesItsBlobReleasesItsPagesThroughTheLoader) {
  const std::vector<uint8_t> bytes = program_with_a_blob("weights to upload");
  AlignedCopy copy(bytes);
  RecordingLoader loader(copy.data(), bytes.size());
  auto program = Program::load(&loader, structure_only());
  ASSERT_TRUE(program.ok()) << last_error_message();
  static CopyingBackend backend;
  Backend entry;
  entry.name = "keeper";
  entry.backend = &backend;
  ASSERT_EQ(register_backend(entry), Error::Ok);

  auto meta = program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  MethodMemory memory;
  ASSERT_EQ(memory.allocate(*meta), Error::Ok) << last_error_message();
  auto method = program->load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
  EXPECT_EQ(std::string(backend.seen.begin(), backend.seen.end()), "weights to upload");
  EXPECT_EQ(backend.seen_alignment, 0u);
  // The blob's segment, and only it, went back to the loader.
  ASSERT_EQ(loader.released.size(), 1u);
  EXPECT_EQ(loader.released[0].second, backend.seen.size());
  EXPECT_EQ(std::memcmp(copy.data() + loader.released[0].first, "weights to upload", 17), 0);
  clear_backend_registry_for_testing();
}

}  // namespace
}  // namespace tern
