// Zero-copy weights (docs/jetson.md). Everywhere: the registry of pinned host ranges that the
// delegates share (pins each page once, counts holders, unpins with the last one, all or nothing
// on a driver error), with a fake driver. On a CUDA device: with TERN_CUDA_ZERO_COPY=force the
// delegate reads its f32 weights from the program's host memory (pinned while the method lives)
// and gives the same outputs as the portable kernels; without it nothing is pinned.
#include <gtest/gtest.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "backends/cuda/runtime/host_range_registry.h"
#include "tests/backends/cuda/cuda_test_util.h"

namespace tern::cuda_test {
namespace {

using cuda::HostRangeOps;
using cuda::HostRangeRegistry;

constexpr uintptr_t kPage = 4096;

/// The fake driver's log: every pin (begin, bytes) and unpin (begin) in order.
struct FakeDriver {
  std::vector<std::pair<uintptr_t, size_t>> pins;
  std::vector<uintptr_t> unpins;
  uintptr_t refuse = 0;  ///< a begin address pin refuses
};
FakeDriver g_driver;

Error fake_pin(void* begin, size_t bytes) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(begin);
  if (b == g_driver.refuse) return set_error_message(Error::DelegateMemoryAllocationFailed, "refused");
  g_driver.pins.push_back({b, bytes});
  return Error::Ok;
}
void fake_unpin(void* begin) { g_driver.unpins.push_back(reinterpret_cast<uintptr_t>(begin)); }

const void* at(uintptr_t page, uintptr_t offset = 0) {
  return reinterpret_cast<const void*>(0x10000000 + page * kPage + offset);
}
uintptr_t addr(uintptr_t page) { return reinterpret_cast<uintptr_t>(at(page)); }

TEST(CudaHostRangeRegistry, PinsEachPageOnceAndUnpinsWithTheLastHolder) {
  g_driver = FakeDriver();
  HostRangeRegistry r({fake_pin, fake_unpin}, kPage);
  // Bytes 100 .. 100 + 2 pages: pages 0, 1, 2.
  ASSERT_EQ(r.hold(at(0, 100), 2 * kPage), Error::Ok);
  ASSERT_EQ(g_driver.pins.size(), 1u);
  EXPECT_EQ(g_driver.pins[0], std::make_pair(addr(0), size_t{3 * kPage}));
  // The same weights again (a second method): no new pin, two holders.
  ASSERT_EQ(r.hold(at(0, 100), 2 * kPage), Error::Ok);
  EXPECT_EQ(g_driver.pins.size(), 1u);
  EXPECT_EQ(r.holders(at(1)), 2u);
  // A neighbour sharing page 2 and reaching into pages 3 and 4: only pages 3-4 are pinned.
  ASSERT_EQ(r.hold(at(2, 8), 2 * kPage), Error::Ok);
  ASSERT_EQ(g_driver.pins.size(), 2u);
  EXPECT_EQ(g_driver.pins[1], std::make_pair(addr(3), size_t{2 * kPage}));
  EXPECT_EQ(r.ranges(), 2u);
  EXPECT_EQ(r.holders(at(0)), 3u);  // pages 0-2 are one range: its three holders
  EXPECT_EQ(r.holders(at(4)), 1u);
  // A range between two pinned ones: pages 6 and 8 pinned, then 5-9 pins 5, 7 and 9 apart.
  ASSERT_EQ(r.hold(at(6), kPage), Error::Ok);
  ASSERT_EQ(r.hold(at(8), 1), Error::Ok);
  ASSERT_EQ(r.hold(at(5), 5 * kPage), Error::Ok);
  ASSERT_EQ(g_driver.pins.size(), 7u);
  EXPECT_EQ(g_driver.pins[4], std::make_pair(addr(5), size_t{kPage}));
  EXPECT_EQ(g_driver.pins[5], std::make_pair(addr(7), size_t{kPage}));
  EXPECT_EQ(g_driver.pins[6], std::make_pair(addr(9), size_t{kPage}));
  EXPECT_EQ(r.ranges(), 7u);
  // Letting go: a range is unpinned (at the begin it was pinned with) only without holders.
  r.release(at(0, 100), 2 * kPage);
  r.release(at(0, 100), 2 * kPage);
  EXPECT_TRUE(g_driver.unpins.empty());
  r.release(at(2, 8), 2 * kPage);
  ASSERT_EQ(g_driver.unpins.size(), 2u);
  EXPECT_EQ(g_driver.unpins[0], addr(0));
  EXPECT_EQ(g_driver.unpins[1], addr(3));
  r.release(at(5), 5 * kPage);
  EXPECT_EQ(g_driver.unpins.size(), 5u);  // 5, 7, 9; pages 6 and 8 keep their first holders
  EXPECT_EQ(r.ranges(), 2u);
  r.release(at(6), kPage);
  r.release(at(8), 1);
  EXPECT_EQ(r.ranges(), 0u);
  EXPECT_EQ(g_driver.unpins.size(), 7u);
}

TEST(CudaHostRangeRegistry, ADriverErrorPinsAndCountsNothing) {
  g_driver = FakeDriver();
  HostRangeRegistry r({fake_pin, fake_unpin}, kPage);
  ASSERT_EQ(r.hold(at(1), kPage), Error::Ok);
  g_driver.refuse = addr(2);
  // Pages 0-3: page 0 is pinned, then page 2's pin fails: page 0 is unpinned again.
  EXPECT_EQ(r.hold(at(0), 4 * kPage), Error::DelegateMemoryAllocationFailed);
  ASSERT_EQ(g_driver.pins.size(), 2u);
  EXPECT_EQ(g_driver.pins[1].first, addr(0));
  ASSERT_EQ(g_driver.unpins.size(), 1u);
  EXPECT_EQ(g_driver.unpins[0], addr(0));
  EXPECT_EQ(r.ranges(), 1u);
  EXPECT_EQ(r.holders(at(1)), 1u);
  EXPECT_EQ(r.hold(nullptr, 8), Error::InvalidArgument);
  EXPECT_EQ(r.hold(at(1), 0), Error::InvalidArgument);
}

/// Compiles `graph` for cuda with every segment page-aligned (so each weight is kDeviceAlignment
/// aligned in host memory and may be read in place).
std::vector<uint8_t> compile_page_aligned(const compiler::Graph& graph) {
  compiler::ProgramGraph program;
  program.source_model = "cuda_zero_copy_test";
  program.methods.push_back(graph);
  compiler::CompileOptions options;
  options.backends = {"cuda"};
  options.serializer.segment_alignment = 4096;
  return compiler::compile_program(program, options).bytes;
}

TEST(CudaZeroCopy, WeightsReadInPlaceMatchThePortableKernels) {
  register_all();
  TERN_SKIP_WITHOUT_CUDA_DEVICE();
  const compiler::Graph graph = mlp_model().build();
  const std::vector<uint8_t> pte = compile_page_aligned(graph);
  const std::vector<std::vector<float>> inputs = random_inputs(graph, 5);
  const RunResult portable = run_program(pte, graph, inputs, /*disable_cuda=*/true);
  ASSERT_EQ(cuda::host_range_registry().ranges(), 0u);
  for (const char* mode : {"force", "0"}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(setenv("TERN_CUDA_ZERO_COPY", mode, 1), 0);
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 8 << 20);
    {
      auto method = lp.program().load_method("forward", memory.manager(), MethodLoadOptions());
      ASSERT_TRUE(method.ok()) << last_error_message();
      ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
      const bool in_place = std::string(mode) == "force";
      // The three linear weights and biases, pinned while the method lives.
      EXPECT_EQ(cuda::host_range_registry().ranges() > 0, in_place);
      std::vector<std::vector<float>> data = inputs;
      const TensorView x = testing::f32_view(graph.values[static_cast<size_t>(graph.inputs[0])].sizes, data[0]);
      ASSERT_EQ(method->set_input(0, x), Error::Ok);
      ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
      const std::vector<float> got = testing::to_vector(*method->output(0).get());
      ASSERT_EQ(got.size(), portable.outputs.at(0).size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], portable.outputs[0][i], 1e-4f) << "element " << i;
      }
    }
    EXPECT_EQ(cuda::host_range_registry().ranges(), 0u);  // unpinned with the method
  }
  unsetenv("TERN_CUDA_ZERO_COPY");
}

}  // namespace
}  // namespace tern::cuda_test
