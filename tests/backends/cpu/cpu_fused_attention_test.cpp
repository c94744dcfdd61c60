// The cpu backend's fused attention (backends/cpu/kernels/fused_attention.h) against the
// formula evaluated here in double, one query row at a time: out[i] = sum_j p_j v_j with p =
// softmax over the attended keys of (q_i . k_j) * scale + mask_ij. Heads and row blocks (one
// and several, causal blocks), k as [s, e] and transposed, masks broadcast over heads and rows,
// rows with nothing attended (zeros or NaN), every ISA, with and without a pool; inputs
// read-only and every buffer (the scratch too) ending at a guard page.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "backends/cpu/kernels/fused_attention.h"
#include "runtime/kernels/util/simd_dispatch.h"
#include "tests/backends/cpu/kernel_test_util.h"

namespace tern::cpu {
namespace {

using kernel_test::GuardedBuffer;
using kernel_test::Pool;
using kernel_test::random_floats;

struct Case {
  std::string name;
  int64_t batch = 1, l = 1, s = 1, e = 1, ev = 1;
  bool k_transposed = false;
  float scale = 1.0f;
  int64_t causal_period = 0;
  /// Mask dims [b_0 .. b_{r-1}, L or 1, S] with each b_d 1 or batch_dims[d]; empty: no mask.
  std::vector<int64_t> batch_dims;
  std::vector<int64_t> mask_dims;
  /// Rows (of head 0's mask) set to -inf everywhere: nothing attended.
  std::vector<int64_t> empty_rows;
  bool empty_rows_nan = false;
  /// > 0: keys from `tail` on are masked (-inf) in every row and their K and V rows hold NaN
  /// and inf (a KV cache filled to a position): the kernel must never read them.
  int64_t tail = 0;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

int64_t numel(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

/// The mask element of head b, row i, key j (0 without a mask).
double mask_at(const Case& c, const std::vector<float>& mask, int64_t b, int64_t i, int64_t j) {
  if (c.mask_dims.empty()) return 0.0;
  const size_t r = c.batch_dims.size();
  int64_t idx = 0, rest = b;
  std::vector<int64_t> index(r);
  for (size_t d = r; d-- > 0;) {
    index[d] = rest % c.batch_dims[d];
    rest /= c.batch_dims[d];
  }
  for (size_t d = 0; d < r; ++d) idx = idx * c.mask_dims[d] + (c.mask_dims[d] == 1 ? 0 : index[d]);
  idx = idx * c.mask_dims[r] + (c.mask_dims[r] == 1 ? 0 : i);
  return mask[static_cast<size_t>(idx * c.s + j)];
}

std::vector<double> reference(const Case& c, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& mask) {
  std::vector<double> out(static_cast<size_t>(c.batch * c.l * c.ev));
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t i = 0; i < c.l; ++i) {
      const int64_t lim = c.causal_period == 0 ? c.s : std::min(c.s, i % c.causal_period + 1);
      std::vector<double> x(static_cast<size_t>(lim));
      double mx = -INFINITY;
      for (int64_t j = 0; j < lim; ++j) {
        if (c.tail > 0 && j >= c.tail) {  // never read: weight 0
          x[static_cast<size_t>(j)] = -INFINITY;
          continue;
        }
        double dot = 0;
        for (int64_t t = 0; t < c.e; ++t) {
          const float kv = c.k_transposed ? k[static_cast<size_t>((b * c.e + t) * c.s + j)]
                                          : k[static_cast<size_t>((b * c.s + j) * c.e + t)];
          dot += static_cast<double>(q[static_cast<size_t>((b * c.l + i) * c.e + t)]) * kv;
        }
        x[static_cast<size_t>(j)] = dot * c.scale + mask_at(c, mask, b, i, j);
        mx = std::max(mx, x[static_cast<size_t>(j)]);
      }
      double* o = out.data() + (b * c.l + i) * c.ev;
      if (mx == -INFINITY) {
        for (int64_t t = 0; t < c.ev; ++t) o[t] = c.empty_rows_nan ? NAN : 0.0;
        continue;
      }
      double sum = 0;
      for (double& xj : x) sum += (xj = std::exp(xj - mx));
      for (int64_t j = 0; j < lim; ++j) {
        if (x[static_cast<size_t>(j)] == 0.0) continue;  // (the tail's NaN values weigh 0)
        for (int64_t t = 0; t < c.ev; ++t) {
          o[t] += x[static_cast<size_t>(j)] / sum * v[static_cast<size_t>((b * c.s + j) * c.ev + t)];
        }
      }
    }
  }
  return out;
}

Case make(const char* name, int64_t batch, int64_t l, int64_t s, int64_t e, int64_t ev,
          bool k_transposed, float scale, int64_t causal_period = 0,
          std::vector<int64_t> batch_dims = {}, std::vector<int64_t> mask_dims = {}) {
  Case c;
  c.name = name;
  c.batch = batch;
  c.l = l;
  c.s = s;
  c.e = e;
  c.ev = ev;
  c.k_transposed = k_transposed;
  c.scale = scale;
  c.causal_period = causal_period;
  c.batch_dims = std::move(batch_dims);
  c.mask_dims = std::move(mask_dims);
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back(make("small", 3, 7, 9, 5, 4, false, 0.3f));
  c.push_back(make("k_transposed", 2, 6, 11, 7, 3, true, 0.5f));
  c.push_back(make("one_row_one_key", 4, 1, 1, 3, 2, false, 1.0f));
  c.push_back(make("decode_row", 6, 1, 70, 16, 16, false, 0.25f));
  c.push_back(make("causal_blocks", 2, 75, 75, 16, 8, false, 0.25f, 75));
  c.push_back(make("causal_keys_fewer_than_rows", 1, 40, 20, 8, 8, false, 0.5f, 40));
  c.push_back(make("causal_folded_heads", 2, 3 * 13, 13, 8, 5, false, 0.4f, 13));
  c.push_back(make("mask_per_head_and_row", 6, 5, 17, 8, 7, false, 0.3f, 0, {2, 3}, {2, 3, 5, 17}));
  c.push_back(
      make("mask_broadcast_heads_rows", 6, 9, 33, 8, 7, false, 0.3f, 0, {2, 3}, {2, 1, 1, 33}));
  c.push_back(make("mask_one_head_dim", 4, 9, 20, 12, 6, true, 0.3f, 0, {4}, {1, 9, 20}));
  c.push_back(make("mask_and_causal", 2, 20, 20, 8, 8, false, 0.3f, 20, {2}, {2, 20, 20}));
  Case empty = make("empty_rows_zero", 2, 6, 10, 8, 5, false, 0.3f, 0, {2}, {1, 6, 10});
  empty.empty_rows = {1, 4};
  c.push_back(empty);
  empty.name = "empty_rows_nan";
  empty.empty_rows_nan = true;
  c.push_back(empty);
  // Several row blocks of a long key range (Whisper-like), uneven last block, a mask.
  c.push_back(make("long_keys_blocks", 2, 300, 700, 64, 48, false, 0.125f, 0, {2}, {1, 1, 700}));
  c.push_back(make("long_keys_transposed", 3, 130, 515, 24, 40, true, 0.2f));
  // A decode step over a cache filled to key 22 of 70 (the mask broadcast over the heads),
  // BERT's padding mask [B, 1, 1, S] over batch x heads, and a causal prefill chunk.
  Case tail = make("decode_cache_tail", 6, 1, 70, 16, 16, false, 0.25f, 0, {6}, {1, 1, 70});
  tail.tail = 23;
  c.push_back(tail);
  tail = make("padding_tail", 6, 33, 33, 8, 7, false, 0.3f, 0, {2, 3}, {2, 1, 1, 33});
  tail.tail = 20;
  c.push_back(tail);
  tail = make("prefill_chunk_tail", 4, 8, 300, 16, 8, false, 0.25f, 0, {4}, {1, 8, 300});
  tail.tail = 131;
  c.push_back(tail);
  return c;
}

class FusedAttention : public ::testing::TestWithParam<Case> {};

void run_case(const Case& c, pthreadpool_t pool, int64_t threads) {
  const int64_t qn = c.batch * c.l * c.e, kn = c.batch * c.s * c.e, vn = c.batch * c.s * c.ev;
  const int64_t on = c.batch * c.l * c.ev;
  std::vector<float> q = random_floats(static_cast<size_t>(qn), 1, -1.0f, 1.0f);
  std::vector<float> k = random_floats(static_cast<size_t>(kn), 2, -1.0f, 1.0f);
  std::vector<float> v = random_floats(static_cast<size_t>(vn), 3, -1.0f, 1.0f);
  std::vector<float> mask;
  if (!c.mask_dims.empty()) {
    mask = random_floats(static_cast<size_t>(numel(c.mask_dims)), 4, -2.0f, 1.0f);
    for (size_t i = 0; i < mask.size(); i += 7) mask[i] = -INFINITY;  // some keys masked out
    for (int64_t row : c.empty_rows) {
      for (int64_t j = 0; j < c.s; ++j) mask[static_cast<size_t>(row * c.s + j)] = -INFINITY;
    }
    for (size_t i = 0; c.tail > 0 && i < mask.size(); ++i) {
      if (static_cast<int64_t>(i) % c.s >= c.tail) mask[i] = -INFINITY;
    }
  }
  for (int64_t b = 0; c.tail > 0 && b < c.batch; ++b) {  // the cache's unwritten rows
    for (int64_t j = c.tail; j < c.s; ++j) {
      for (int64_t t = 0; t < c.e; ++t) k[static_cast<size_t>((b * c.s + j) * c.e + t)] = NAN;
      for (int64_t t = 0; t < c.ev; ++t) {
        v[static_cast<size_t>((b * c.s + j) * c.ev + t)] = t % 2 ? NAN : INFINITY;
      }
    }
  }
  const std::vector<double> want = reference(c, q, k, v, mask);

  GuardedBuffer gq(sizeof(float) * q.size()), gk(sizeof(float) * k.size()),
      gv(sizeof(float) * v.size()), gm(sizeof(float) * (mask.empty() ? 1 : mask.size())),
      go(sizeof(float) * static_cast<size_t>(on));
  std::copy(q.begin(), q.end(), gq.data());
  std::copy(k.begin(), k.end(), gk.data());
  std::copy(v.begin(), v.end(), gv.data());
  std::copy(mask.begin(), mask.end(), gm.data());
  ASSERT_TRUE(gq.make_read_only() && gk.make_read_only() && gv.make_read_only() &&
              gm.make_read_only());
  AttentionProblem p;
  p.batch = c.batch;
  p.l = c.l;
  p.s = c.s;
  p.e = c.e;
  p.ev = c.ev;
  p.q = gq.data();
  p.k = gk.data();
  p.k_transposed = c.k_transposed;
  p.v = gv.data();
  p.out = go.data();
  p.scale = c.scale;
  p.causal_period = c.causal_period;
  p.empty_rows_nan = c.empty_rows_nan;
  if (!c.mask_dims.empty()) {
    p.mask = gm.data();
    const size_t r = c.batch_dims.size();
    p.mask_batch_rank = static_cast<int>(r);
    int64_t stride = c.mask_dims[r] * c.s;
    p.mask_row_stride = c.mask_dims[r] == 1 ? 0 : c.s;
    for (size_t d = r; d-- > 0;) {
      p.mask_batch_dims[d] = c.batch_dims[d];
      p.mask_batch_strides[d] = c.mask_dims[d] == 1 ? 0 : stride;
      stride *= c.mask_dims[d];
    }
  }
  const uint64_t scratch_floats = attention_scratch_floats(p, threads);
  GuardedBuffer scratch(sizeof(float) * scratch_floats);
  fused_attention(p, scratch.data(), pool);

  double peak = 0;
  for (double w : want) peak = std::isnan(w) ? peak : std::max(peak, std::fabs(w));
  for (int64_t i = 0; i < on; ++i) {
    const double w = want[static_cast<size_t>(i)];
    const float got = go.data()[i];
    if (std::isnan(w)) {
      ASSERT_TRUE(std::isnan(got)) << "element " << i;
      continue;
    }
    ASSERT_LE(std::fabs(got - w), 2e-6 * peak + 1e-7) << "element " << i << ": " << got
                                                      << " against " << w;
  }
}

TEST_P(FusedAttention, MatchesTheFormulaOnEveryIsa) {
  const Case& c = GetParam();
  const GemmIsa saved = packed_gemm_isa();
  const portable::SimdLevel saved_level = portable::simd_level_cap();
  for (GemmIsa isa : kernel_test::supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    portable::simd_level_cap() = isa == GemmIsa::Avx512 ? portable::SimdLevel::Avx512
                                 : isa == GemmIsa::Avx2 ? portable::SimdLevel::Avx2
                                                        : portable::SimdLevel::Baseline;
    SCOPED_TRACE(gemm_isa_name(isa));
    run_case(c, nullptr, 1);
    Pool pool(3);
    run_case(c, pool.pool, 3);
  }
  packed_gemm_force_isa(saved);
  portable::simd_level_cap() = saved_level;
}

INSTANTIATE_TEST_SUITE_P(Cases, FusedAttention, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace tern::cpu
