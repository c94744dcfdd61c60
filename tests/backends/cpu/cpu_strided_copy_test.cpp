// The cpu backend's strided copy (backends/cpu/kernels/strided_copy.h) against the index formula
// it implements, y[i0..ir-1] = x[offset + sum_d i_d * stride[d]], evaluated here one element at a
// time: the row path (contiguous and gathered rows, short and long), the block path
// (interleaves of 2 and 4 groups with vector bodies and tails, other group counts), the tile
// path (transposes with partial tiles, a dim between the pair, reversed columns), all with
// and without a pool, negative strides (a flip), and on buffers that end at a guard page (input
// read-only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/kernels/strided_copy.h"
#include "tests/backends/cpu/kernel_test_util.h"

namespace tern::cpu {
namespace {

using kernel_test::GuardedBuffer;
using kernel_test::Pool;
using kernel_test::random_floats;

struct Case {
  std::string name;
  std::vector<int64_t> extent;
  std::vector<int64_t> stride;
  int64_t offset = 0;
};

/// The input elements a case reads: one past the largest index (a negative stride reaches
/// back from the offset, to element 0 at the lowest in these cases).
int64_t input_span(const Case& c) {
  int64_t last = c.offset;
  for (size_t d = 0; d < c.extent.size(); ++d) {
    last += (c.extent[d] - 1) * std::max<int64_t>(c.stride[d], 0);
  }
  return last + 1;
}

int64_t output_size(const Case& c) {
  int64_t n = 1;
  for (int64_t e : c.extent) n *= e;
  return n;
}

/// The formula, one output element at a time.
std::vector<float> reference(const Case& c, const float* x) {
  std::vector<float> y(static_cast<size_t>(output_size(c)));
  for (int64_t o = 0; o < output_size(c); ++o) {
    int64_t rest = o, at = c.offset;
    for (size_t d = c.extent.size(); d-- > 0;) {
      at += (rest % c.extent[d]) * c.stride[d];
      rest /= c.extent[d];
    }
    y[static_cast<size_t>(o)] = x[at];
  }
  return y;
}

StridedCopyProblem problem(const Case& c, const float* x, float* y) {
  StridedCopyProblem p;
  p.x = x;
  p.y = y;
  p.rank = static_cast<int>(c.extent.size());
  for (int d = 0; d < p.rank; ++d) {
    p.extent[d] = c.extent[static_cast<size_t>(d)];
    p.stride[d] = c.stride[static_cast<size_t>(d)];
  }
  p.offset = c.offset;
  return p;
}

std::vector<Case> cases() {
  return {
      {"plain rows", {5, 7}, {7, 1}},
      {"channel slice of NHWC (short contiguous rows)", {784, 24}, {48, 1}, 24},
      {"long contiguous rows", {3, 1000}, {1200, 1}, 100},
      {"gathered rows (NHWC -> NCHW)", {24, 784}, {1, 24}},
      {"channel shuffle, 2 groups (24 channels)", {784, 24, 2}, {48, 1, 24}},
      {"2 groups, odd run (tail only after the vector body)", {10, 7, 2}, {14, 1, 7}},
      {"4 groups, run of 6", {9, 6, 4}, {24, 1, 6}, 0},
      {"4 groups with a pixel gap", {3, 5, 8, 4}, {400, 80, 1, 8}, 3},
      {"3 groups", {33, 16, 3}, {48, 1, 16}},
      {"16 groups", {2, 5, 16}, {80, 1, 5}},
      {"17 groups: rows, not blocks", {2, 5, 17}, {85, 1, 5}},
      {"expand (stride 0)", {4, 3, 8}, {0, 8, 1}},
      {"interleave of a broadcast group", {6, 8, 2}, {8, 1, 0}},
      {"rank 6", {2, 3, 2, 2, 3, 2}, {1, 2, 6, 12, 24, 72}},
      {"big shuffle (pool split)", {64 * 64, 128, 2}, {256, 1, 128}},
      {"big gather (pool split)", {600, 1024}, {1, 600}},
      // Negative strides (a flip, since blob version 17): read from the offset backwards.
      {"reversed sequence of rows (a bidirectional RNN's flip)", {20, 40}, {-40, 1}, 19 * 40},
      {"reversed rows", {5, 7}, {7, -1}, 6},
      {"everything reversed", {1000}, {-1}, 999},
      {"channel shuffle with its groups reversed", {784, 24, 2}, {48, 1, -24}, 24},
      {"big flip (pool split)", {600, 1024}, {-1024, 1}, 599 * 1024},
      // The tile path: a dim before the last reads contiguously, the last with a stride.
      {"tiles: NHWC -> [C, H*W], partial tiles", {40, 300}, {1, 40}},
      {"tiles: YOLO's box bins put last, a dim between", {1, 50, 4, 16}, {0, 1, 800, 50}},
      {"tiles: columns read backwards", {20, 64}, {1, -20}, 63 * 20},
      {"tiles: a contiguous dim of 15 is rows", {15, 64}, {1, 15}},
      {"big tiles (pool split)", {96, 8192}, {1, 96}},
  };
}

TEST(CpuStridedCopy, EveryPathMatchesTheIndexFormula) {
  Pool pool(2);
  for (const Case& c : cases()) {
    const std::vector<float> x = random_floats(static_cast<size_t>(input_span(c)), 7);
    const std::vector<float> want = reference(c, x.data());
    for (pthreadpool_t p : {static_cast<pthreadpool_t>(nullptr), pool.pool}) {
      std::vector<float> y(want.size() + 1, -7.0f);  // one float past the end: untouched
      strided_copy(problem(c, x.data(), y.data()), p);
      EXPECT_EQ(y.back(), -7.0f) << c.name << ": wrote past the output";
      y.pop_back();
      EXPECT_EQ(y, want) << c.name << (p == nullptr ? " (no pool)" : " (pool of 2)");
    }
  }
}

TEST(CpuStridedCopy, ExactBuffersEndingAtGuardPages) {
  Pool pool(2);
  for (const Case& c : cases()) {
    const std::vector<float> x = random_floats(static_cast<size_t>(input_span(c)), 11);
    const size_t out = static_cast<size_t>(output_size(c));
    GuardedBuffer in(x.size() * sizeof(float)), y(out * sizeof(float));
    ASSERT_NE(in.data(), nullptr);
    ASSERT_NE(y.data(), nullptr);
    std::copy(x.begin(), x.end(), in.data());
    ASSERT_TRUE(in.make_read_only());
    strided_copy(problem(c, in.data(), y.data()), pool.pool);
    EXPECT_EQ(std::vector<float>(y.data(), y.data() + out), reference(c, x.data())) << c.name;
  }
}

}  // namespace
}  // namespace tern::cpu
