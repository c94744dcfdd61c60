// Replays every checked-in crash input (tests/fuzz/regressions/<target>/) and every generated
// seed through the fuzz targets' entry functions, in the ordinary (and sanitizer) builds.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#if TERN_FUZZ_CPU_BLOB
#include "backends/cpu/runtime/blob_reader.h"
#include "backends/cpu/runtime/register_cpu_backend.h"
#endif
#if TERN_FUZZ_VULKAN_BLOB
#include "backends/vulkan/runtime/blob_reader.h"
#endif
#if TERN_FUZZ_CUDA_BLOB
#include "backends/cuda/runtime/blob_reader.h"
#endif
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/executor/program.h"
#include "tests/fuzz/fuzz_corpus.h"
#include "tests/fuzz/fuzz_entries.h"
#include "tests/fuzz/sample_programs.h"
#include "tests/support/temp_path.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_json.h"

namespace tern::fuzz {

/// Prints a target by name in test names and failure messages.
void PrintTo(Target target, std::ostream* os) { *os << target_name(target); }

namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

class FuzzRegression : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzRegression, CheckedInInputsRunClean) {
  const fs::path dir =
      fs::path(TERN_SOURCE_DIR) / "tests/fuzz/regressions" / target_name(GetParam());
  if (!fs::is_directory(dir))
    GTEST_SKIP() << "no regression inputs for this target (" << dir << ")";
  size_t replayed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().filename().string()[0] == '.') continue;
    SCOPED_TRACE(entry.path().string());
    const std::vector<uint8_t> bytes = read_bytes(entry.path());
    EXPECT_EQ(run_target(GetParam(), bytes.data(), bytes.size()), 0);
    ++replayed;
  }
  RecordProperty("replayed", static_cast<int>(replayed));
}

TEST_P(FuzzRegression, SeedsRunClean) {
  const std::vector<Seed> seeds = seed_inputs(GetParam());
  ASSERT_FALSE(seeds.empty());
  for (const Seed& seed : seeds) {
    SCOPED_TRACE(seed.first);
    EXPECT_EQ(run_target(GetParam(), seed.second.data(), seed.second.size()), 0);
  }
}

// Finding 1 (fuzz_program_load): a [long] vector placed 4 bytes off passed the FlatBuffers
// verifier (it checks only the length prefix) and was read with a misaligned load.
TEST(FuzzFindings, MisalignedInt64VectorIsRefused) {
  std::vector<uint8_t> bytes = read_bytes(fs::path(TERN_SOURCE_DIR) /
                                          "tests/fuzz/regressions/fuzz_program_load/"
                                          "misaligned-int64-sizes.bin");
  ASSERT_FALSE(bytes.empty());
  std::vector<uint8_t> copy(bytes.size() + 64);
  uint8_t* aligned = copy.data() + (64 - reinterpret_cast<uintptr_t>(copy.data()) % 64) % 64;
  std::memcpy(aligned, bytes.data(), bytes.size());
  fix_header_checksum(aligned, bytes.size());
  BufferDataLoader loader(aligned, bytes.size());
  Program::LoadOptions options;
  options.verification = Program::Verification::Structure;
  auto program = Program::load(&loader, options);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("not 8-byte aligned"), std::string::npos)
      << last_error_message();
}

// The graph.json seeds are only useful if they compile: check that they do.
TEST(FuzzSeeds, GraphJsonDocumentsCompile) {
  const fs::path dir = tern::testing_support::unique_temp_path("fuzz_seeds");
  fs::create_directories(dir);
  for (const SampleProgram& p : sample_programs()) {
    SCOPED_TRACE(p.name);
    auto [text, weights] = graph_json_document(p.graph);
    {
      std::ofstream out(dir / "weights.safetensors", std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(weights.data()),
                static_cast<std::streamsize>(weights.size()));
    }
    compiler::ProgramGraph graph;
    ASSERT_NO_THROW(graph = compiler::parse_graph_json(text, dir.string()));
    EXPECT_EQ(compiler::compile_program(graph).bytes.size(),
              sample_program_bytes(static_cast<size_t>(&p - sample_programs().data())).size());
  }
  fs::remove_all(dir);
}

#if TERN_FUZZ_CPU_BLOB
// The cpu blob seeds are only useful if the reader accepts them: the compile half's blobs
// parse, and the backend builds a delegate from each.
TEST(FuzzSeeds, CpuBlobSeedsParseAndInit) {
  const std::vector<Seed> seeds = seed_inputs(Target::CpuBlob);
  ASSERT_GE(seeds.size(), 4u) << "expected blobs from demo_mlp, convnet, dense and pad";
  for (const Seed& seed : seeds) {
    SCOPED_TRACE(seed.first);
    // 64-byte aligned, as a program segment hands a blob to init.
    struct alignas(64) Line {
      uint8_t bytes[64];
    };
    std::vector<Line> aligned(seed.second.size() / 64 + 1);
    std::memcpy(aligned.data(), seed.second.data(), seed.second.size());
    const Span<const uint8_t> blob(reinterpret_cast<const uint8_t*>(aligned.data()),
                                   seed.second.size());
    cpu::BlobPlan plan;
    EXPECT_EQ(cpu::parse_blob(blob, &plan), Error::Ok) << last_error_message();
    cpu::free_blob_plan(&plan);
    BackendInitContext context;
    context.num_threads = 1;
    auto handle = cpu_backend_interface().init(
        context, FreeableBuffer(blob.data(), blob.size(), nullptr), Span<const CompileSpecView>());
    ASSERT_TRUE(handle.ok()) << last_error_message();
    cpu_backend_interface().destroy(*handle);
  }
}
#endif

#if TERN_FUZZ_VULKAN_BLOB
// The vulkan blob seeds are only useful if the reader accepts them.
TEST(FuzzSeeds, VulkanBlobSeedsParse) {
  const std::vector<Seed> seeds = seed_inputs(Target::VulkanBlob);
  ASSERT_GE(seeds.size(), 3u) << "expected the dense, convnet and attention blobs";
  bool ops[vulkan::kLastNodeOp + 1] = {};
  for (const Seed& seed : seeds) {
    SCOPED_TRACE(seed.first);
    struct alignas(64) Line {
      uint8_t bytes[64];
    };
    std::vector<Line> aligned(seed.second.size() / 64 + 1);
    std::memcpy(aligned.data(), seed.second.data(), seed.second.size());
    vulkan::BlobPlan plan;
    EXPECT_EQ(vulkan::parse_blob(Span<const uint8_t>(reinterpret_cast<const uint8_t*>(aligned.data()),
                                                     seed.second.size()),
                                 &plan),
              Error::Ok)
        << last_error_message();
    for (uint32_t i = 0; i < plan.header.num_nodes; ++i) {
      if (plan.nodes[i].op <= vulkan::kLastNodeOp) ops[plan.nodes[i].op] = true;
    }
    vulkan::free_blob_plan(&plan);
  }
  for (uint32_t op = 1; op <= vulkan::kLastNodeOp; ++op) {
    EXPECT_TRUE(ops[op]) << "no seed has a vulkan node op " << op;
  }
}
#endif

#if TERN_FUZZ_CUDA_BLOB
// The cuda blob seeds are only useful if the reader accepts them.
TEST(FuzzSeeds, CudaBlobSeedsParse) {
  const std::vector<Seed> seeds = seed_inputs(Target::CudaBlob);
  ASSERT_EQ(seeds.size(), 8u) << "expected the dense, convnet, attention, split_cat, "
                                 "version2_f16, quant_nf4_double, quant_fp8_tiles and experts "
                                 "blobs";
  bool ops[cuda::kLastNodeOp + 1] = {};
  for (const Seed& seed : seeds) {
    SCOPED_TRACE(seed.first);
    cuda::BlobPlan plan;
    ASSERT_EQ(cuda::parse_blob(Span<const uint8_t>(seed.second.data(), seed.second.size()), &plan),
              Error::Ok)
        << last_error_message();
    for (uint32_t i = 0; i < plan.header.num_nodes; ++i) ops[plan.nodes[i].op] = true;
    cuda::free_blob_plan(&plan);
  }
  for (uint32_t op = 1; op <= cuda::kLastNodeOp; ++op) {
    EXPECT_TRUE(ops[op]) << "no seed has a " << cuda::node_op_name(op) << " node";
  }
}
#endif

INSTANTIATE_TEST_SUITE_P(AllTargets, FuzzRegression, ::testing::ValuesIn(kAllTargets),
                         [](const ::testing::TestParamInfo<Target>& info) {
                           return std::string(target_name(info.param));
                         });

}  // namespace
}  // namespace tern::fuzz
