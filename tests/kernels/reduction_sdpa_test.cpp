// tern::scaled_dot_product_attention: a naive double-precision loop, the scratch contract
// (sdpa_scratch_bytes from the temp allocator) and error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/core/memory_allocator.h"
#include "runtime/kernels/util/scratch_sizes.h"
#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

class SdpaTest : public KernelTest {
 protected:
  // Calls the kernel with a temp allocator of `temp_bytes` (none when negative).
  Error run(std::vector<EValue*> args, int64_t temp_bytes) {
    KernelFn fn = find_kernel("tern::scaled_dot_product_attention");
    if (fn == nullptr) return Error::NotFound;
    scratch_.assign(static_cast<size_t>(temp_bytes < 0 ? 0 : temp_bytes), 0);
    MemoryAllocator temp(scratch_.data(), scratch_.size());
    KernelContext context;
    context.temp_allocator = temp_bytes < 0 ? nullptr : &temp;
    return fn(context, Span<EValue*>(args.data(), args.size()));
  }
  std::vector<uint8_t> scratch_;
};

// Naive attention for one [L, E] x [S, E] x [S, Ev] block; mask[i][j] false drops a key.
std::vector<double> naive(const float* q, const float* k, const float* v, int64_t L, int64_t S,
                          int64_t E, int64_t Ev, bool causal, const std::vector<bool>* mask) {
  std::vector<double> out(static_cast<size_t>(L * Ev), 0.0);
  for (int64_t i = 0; i < L; ++i) {
    std::vector<double> s(static_cast<size_t>(S), -INFINITY);
    double m = -INFINITY;
    for (int64_t j = 0; j < S; ++j) {
      if (causal && j > i) continue;
      if (mask && !(*mask)[static_cast<size_t>(i * S + j)]) continue;
      double d = 0;
      for (int64_t e = 0; e < E; ++e) d += static_cast<double>(q[i * E + e]) * k[j * E + e];
      s[j] = d / std::sqrt(static_cast<double>(E));
      m = std::max(m, s[j]);
    }
    if (m == -INFINITY) continue;
    double sum = 0;
    for (int64_t j = 0; j < S; ++j) sum += std::exp(s[j] - m);
    for (int64_t j = 0; j < S; ++j) {
      const double p = std::exp(s[j] - m) / sum;
      for (int64_t c = 0; c < Ev; ++c) out[i * Ev + c] += p * v[j * Ev + c];
    }
  }
  return out;
}

TEST_F(SdpaTest, CausalMatchesNaive) {
  const int64_t B = 2, L = 5, S = 7, E = 6, Ev = 3;
  auto q = random_tensor<float>({B, L, E}, 21);
  auto k = random_tensor<float>({B, S, E}, 22);
  auto v = random_tensor<float>({B, S, Ev}, 23);
  auto out = zeros<float>({B, L, Ev});
  EValue none;
  EValue causal = EValue::from_bool(true);
  ASSERT_EQ(
      run({&q->value, &k->value, &v->value, &none, &causal, &none, &out->value},
          static_cast<int64_t>(portable::sdpa_scratch_bytes(S) + portable::kScratchAlignment)),
      Error::Ok)
      << last_error_message();
  for (int64_t b = 0; b < B; ++b) {
    const auto want = naive(q->data.data() + b * L * E, k->data.data() + b * S * E,
                            v->data.data() + b * S * Ev, L, S, E, Ev, true, nullptr);
    for (int64_t i = 0; i < L * Ev; ++i) {
      EXPECT_NEAR(out->data[b * L * Ev + i], want[i], 1e-5) << "batch " << b << " elem " << i;
    }
  }
}

TEST_F(SdpaTest, BoolMaskBroadcastAndFullyMaskedRow) {
  const int64_t H = 2, L = 3, S = 4, E = 4, Ev = 2;
  auto q = random_tensor<float>({H, L, E}, 31);
  auto k = random_tensor<float>({H, S, E}, 32);
  auto v = random_tensor<float>({H, S, Ev}, 33);
  auto out = zeros<float>({H, L, Ev});
  // [L, S] bool mask shared by both heads; row 1 attends nothing.
  std::vector<bool> mask_bits = {true,  false, true,  true, false, false,
                                 false, false, false, true, true,  false};
  std::vector<uint8_t> mask_bytes(mask_bits.begin(), mask_bits.end());
  std::vector<int64_t> mask_sizes = {L, S};
  TensorView mask_view;
  mask_view.dtype = DType::Bool;
  mask_view.rank = 2;
  mask_view.sizes = mask_sizes.data();
  mask_view.data = mask_bytes.data();
  mask_view.nbytes = mask_bytes.size();
  EValue mask = EValue::from_tensor(&mask_view);
  EValue no = EValue::from_bool(false);
  EValue none;
  ASSERT_EQ(run({&q->value, &k->value, &v->value, &mask, &no, &none, &out->value}, 1024), Error::Ok)
      << last_error_message();
  for (int64_t h = 0; h < H; ++h) {
    const auto want = naive(q->data.data() + h * L * E, k->data.data() + h * S * E,
                            v->data.data() + h * S * Ev, L, S, E, Ev, false, &mask_bits);
    for (int64_t i = 0; i < L * Ev; ++i) EXPECT_NEAR(out->data[h * L * Ev + i], want[i], 1e-5);
  }
  EXPECT_EQ(out->data[1 * Ev], 0.0f);  // fully masked row
}

TEST_F(SdpaTest, ScratchComesFromTheTempAllocator) {
  auto q = zeros<float>({2, 4});
  auto k = zeros<float>({100, 4});
  auto v = zeros<float>({100, 3});
  auto out = zeros<float>({2, 3});
  EValue none;
  EValue no = EValue::from_bool(false);
  std::vector<EValue*> args = {&q->value, &k->value, &v->value, &none, &no, &none, &out->value};
  EXPECT_EQ(portable::sdpa_scratch_bytes(100), 400u);
  EXPECT_EQ(run(args, -1), Error::MemoryAllocationFailed);
  EXPECT_NE(std::string(last_error_message()).find("400 bytes"), std::string::npos)
      << last_error_message();
  EXPECT_EQ(run(args, 399), Error::MemoryAllocationFailed);
  EXPECT_EQ(run(args, static_cast<int64_t>(400 + portable::kScratchAlignment)), Error::Ok)
      << last_error_message();
  // All-zero inputs: uniform attention over zero values.
  EXPECT_EQ(out->data, std::vector<float>(6, 0.0f));
}

TEST_F(SdpaTest, Errors) {
  auto q = zeros<float>({2, 3, 4});
  auto k = zeros<float>({2, 5, 4});
  auto v = zeros<float>({2, 5, 6});
  auto out = zeros<float>({2, 3, 6});
  EValue none;
  EValue no = EValue::from_bool(false);
  EValue yes = EValue::from_bool(true);
  const int64_t temp = 4096;
  auto k_bad = zeros<float>({2, 5, 3});
  expect_invalid(run({&q->value, &k_bad->value, &v->value, &none, &no, &none, &out->value}, temp),
                 {"scaled_dot_product_attention", "k", "expected last dim 4", "found 3"});
  auto v_bad = zeros<float>({2, 4, 6});
  expect_invalid(run({&q->value, &k->value, &v_bad->value, &none, &no, &none, &out->value}, temp),
                 {"v", "expected second-to-last dim 5", "found 4"});
  auto out_bad = zeros<float>({2, 3, 4});
  expect_invalid(run({&q->value, &k->value, &v->value, &none, &no, &none, &out_bad->value}, temp),
                 {"out", "expected shape [2, 3, 6]", "found [2, 3, 4]"});
  auto mask_bad = zeros<float>({3, 4});
  expect_invalid(
      run({&q->value, &k->value, &v->value, &mask_bad->value, &no, &none, &out->value}, temp),
      {"attn_mask", "broadcasts to [2, 3, 5]", "found [3, 4]"});
  auto mask = zeros<float>({3, 5});
  expect_invalid(
      run({&q->value, &k->value, &v->value, &mask->value, &yes, &none, &out->value}, temp),
      {"attn_mask", "is_causal", "both"});
  auto mask_i = zeros<int64_t>({3, 5});
  expect_invalid(
      run({&q->value, &k->value, &v->value, &mask_i->value, &no, &none, &out->value}, temp),
      {"attn_mask", "expected dtype one of {bool, f32}", "found i64"});
  auto k_batch = zeros<float>({3, 5, 4});
  expect_invalid(run({&q->value, &k_batch->value, &v->value, &none, &no, &none, &out->value}, temp),
                 {"scaled_dot_product_attention"});
  auto q1 = zeros<float>({4});
  expect_invalid(run({&q1->value, &k->value, &v->value, &none, &no, &none, &out->value}, temp),
                 {"q", "expected rank >= 2", "found rank 1"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
