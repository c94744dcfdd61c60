// tern::scaled_dot_product_attention's blocks of query rows: the planned scratch (a block of
// rows, scratch_sizes.h and the compiler's plan), graceful fallback to fewer rows when the temp
// allocator is smaller (programs planned with one row), bitwise-identical results whatever the
// block height, every instruction-set variant, masks across block boundaries, and keys of
// weight 0 whose value rows hold inf or NaN. Expected values: a naive double-precision loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "runtime/core/memory_allocator.h"
#include "runtime/kernels/util/scratch_sizes.h"
#include "runtime/kernels/util/simd_dispatch.h"
#include "tests/kernels/kernel_test_util.h"
#include "tools/compiler/graph.h"
#include "tools/compiler/kernel_scratch.h"

namespace tern {
namespace testing {
namespace {

using portable::SimdLevel;

// Mask read by the reference: whether query i of head h attends key j, and what it adds.
struct RefMask {
  std::function<bool(int64_t h, int64_t i, int64_t j)> attends;
  std::function<double(int64_t h, int64_t i, int64_t j)> add;
};

// Naive attention over heads [H, L, E] x [H, S, E] x [H, S, Ev] in double. Keys of weight 0 are
// skipped (so a masked key's inf or NaN value does not reach the result); a row with no
// attended key is zeros.
std::vector<double> naive(const std::vector<float>& q, const std::vector<float>& k,
                          const std::vector<float>& v, int64_t H, int64_t L, int64_t S, int64_t E,
                          int64_t Ev, bool causal, double scale, const RefMask* mask) {
  std::vector<double> out(static_cast<size_t>(H * L * Ev), 0.0);
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> s(static_cast<size_t>(S), -INFINITY);
      double m = -INFINITY;
      bool nan = false;
      for (int64_t j = 0; j < S; ++j) {
        if (causal && j > i) continue;
        if (mask != nullptr && mask->attends && !mask->attends(h, i, j)) continue;
        double d = 0;
        for (int64_t e = 0; e < E; ++e) {
          d += static_cast<double>(q[(h * L + i) * E + e]) * k[(h * S + j) * E + e];
        }
        s[j] = d * scale + (mask != nullptr && mask->add ? mask->add(h, i, j) : 0.0);
        if (std::isnan(s[j])) nan = true;
        if (s[j] > m) m = s[j];
      }
      double* o = out.data() + (h * L + i) * Ev;
      if (nan) {
        for (int64_t c = 0; c < Ev; ++c) o[c] = NAN;
        continue;
      }
      if (m == -INFINITY) continue;
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += std::exp(s[j] - m);
      for (int64_t j = 0; j < S; ++j) {
        const double p = std::exp(s[j] - m) / sum;
        if (p == 0.0) continue;
        for (int64_t c = 0; c < Ev; ++c) o[c] += p * v[(h * S + j) * Ev + c];
      }
    }
  }
  return out;
}

// A bool mask tensor over caller storage.
struct BoolMask {
  std::vector<int64_t> sizes;
  std::vector<uint8_t> bits;
  TensorView view;
  EValue value;
  BoolMask(std::vector<int64_t> s, std::vector<uint8_t> b)
      : sizes(std::move(s)), bits(std::move(b)) {
    view.dtype = DType::Bool;
    view.rank = static_cast<uint32_t>(sizes.size());
    view.sizes = sizes.data();
    view.data = bits.data();
    view.nbytes = bits.size();
    value = EValue::from_tensor(&view);
  }
  BoolMask(const BoolMask&) = delete;
  BoolMask& operator=(const BoolMask&) = delete;
};

// The instruction-set variants this machine runs (the cap selects one at a time).
std::vector<SimdLevel> variants() {
  std::vector<SimdLevel> out = {SimdLevel::Baseline};
  if (portable::simd_level_supported() >= SimdLevel::Avx2) out.push_back(SimdLevel::Avx2);
  if (portable::simd_level_supported() >= SimdLevel::Avx512) out.push_back(SimdLevel::Avx512);
  return out;
}

const char* name_of(SimdLevel level) {
  return level == SimdLevel::Baseline ? "baseline" : level == SimdLevel::Avx2 ? "avx2" : "avx512";
}

class SdpaBlockTest : public KernelTest {
 protected:
  void TearDown() override { portable::simd_level_cap() = SimdLevel::Avx512; }

  // Calls the kernel with a temp allocator of `temp_bytes`; returns the allocator's use.
  Error run(std::vector<EValue*> args, size_t temp_bytes, size_t* used = nullptr) {
    KernelFn fn = find_kernel("tern::scaled_dot_product_attention");
    if (fn == nullptr) return Error::NotFound;
    scratch_.assign(temp_bytes, 0);
    MemoryAllocator temp(scratch_.data(), scratch_.size());
    KernelContext context;
    context.temp_allocator = &temp;
    const Error err = fn(context, Span<EValue*>(args.data(), args.size()));
    if (used != nullptr) *used = temp.used();
    return err;
  }
  std::vector<uint8_t> scratch_;
};

// Temp sizes to try for L query rows and S keys: the planned block, three rows, one row.
std::vector<size_t> temp_sizes(int64_t L, int64_t S) {
  const uint64_t row = portable::sdpa_scratch_bytes(static_cast<uint64_t>(S));
  const uint64_t full =
      portable::sdpa_block_scratch_bytes(static_cast<uint64_t>(L), static_cast<uint64_t>(S));
  return {static_cast<size_t>(full + portable::kScratchAlignment),
          static_cast<size_t>(3 * row + portable::kScratchAlignment),
          static_cast<size_t>(row + portable::kScratchAlignment)};
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i << ": " << got[i];
    } else {
      ASSERT_NEAR(got[i], want[i], tol) << what << " element " << i;
    }
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(SdpaScratchSizes, BlockRowsFollowTheBudget) {
  // 256 KiB of scores at most, 64 rows at most, never more rows than queries, at least one.
  EXPECT_EQ(portable::sdpa_block_rows(128, 128), 64u);
  EXPECT_EQ(portable::sdpa_block_rows(1, 128), 1u);
  EXPECT_EQ(portable::sdpa_block_rows(10, 50), 10u);
  EXPECT_EQ(portable::sdpa_block_rows(200, 4096), 16u);  // 256 KiB / 16 KiB per row
  EXPECT_EQ(portable::sdpa_block_rows(200, uint64_t{1} << 20), 1u);
  EXPECT_EQ(portable::sdpa_block_rows(0, 5), 1u);
  EXPECT_EQ(portable::sdpa_block_scratch_bytes(128, 128), 64u * 128u * 4u);
  EXPECT_EQ(portable::sdpa_block_scratch_bytes(3, 100), 3u * 400u);
  EXPECT_EQ(portable::sdpa_block_scratch_bytes(5, UINT64_MAX / 2), UINT64_MAX);
}

TEST(SdpaScratchSizes, CompilerPlansABlockOfRows) {
  using compiler::Value;
  compiler::Graph g;
  auto tensor = [&](std::vector<int64_t> sizes) {
    Value v;
    v.kind = Value::Kind::Tensor;
    v.sizes = std::move(sizes);
    g.values.push_back(v);
    return static_cast<int>(g.values.size() - 1);
  };
  g.values.push_back(Value());  // None
  compiler::Node node;
  node.op = "tern::scaled_dot_product_attention";
  node.args = {tensor({1, 8, 128, 64}), tensor({1, 8, 128, 64}), tensor({1, 8, 128, 64}), 0};
  node.outputs = {tensor({1, 8, 128, 64})};
  EXPECT_EQ(compiler::node_scratch_bytes(g, node), 64u * 128u * 4u + 64u);
  node.args = {tensor({2, 5, 16}), tensor({2, 300, 16}), tensor({2, 300, 8}), 0};
  EXPECT_EQ(compiler::node_scratch_bytes(g, node), 5u * 300u * 4u + 64u);
  node.args = {tensor({1, 16}), tensor({0, 16}), tensor({0, 8}), 0};  // no keys: no scratch
  EXPECT_EQ(compiler::node_scratch_bytes(g, node), 0u);
}

struct Shape {
  int64_t h, l, s, e, ev;
  bool causal;
};

TEST_F(SdpaBlockTest, AnyTempSizeGivesTheSameBitsEveryVariant) {
  const Shape shapes[] = {
      {2, 70, 90, 24, 20, false},  // two blocks, the second of 6 rows; 20 = a column tail
      {2, 70, 90, 24, 20, true},
      {1, 130, 37, 8, 33, true},   // causal with L > S: late rows attend every key
      {1, 37, 130, 8, 33, true},   // causal with L < S
      {1, 37, 50, 300, 5, false},  // E over one k chunk (256) of the score product
      {1, 65, 300, 16, 40, true},  // S over one k chunk of P V
      {3, 1, 1, 4, 3, false},      // L = 1, S = 1
      {1, 3, 50, 12, 7, true},     // fewer than 4 query rows: dot-product scores
      {1, 6, 1, 5, 64, false},     // S = 1: every weight is 1
  };
  uint32_t seed = 100;
  for (const Shape& sh : shapes) {
    auto q = random_tensor<float>({sh.h, sh.l, sh.e}, seed++);
    auto k = random_tensor<float>({sh.h, sh.s, sh.e}, seed++);
    auto v = random_tensor<float>({sh.h, sh.s, sh.ev}, seed++);
    const double scale = 1.0 / std::sqrt(static_cast<double>(sh.e));
    const auto want =
        naive(q->data, k->data, v->data, sh.h, sh.l, sh.s, sh.e, sh.ev, sh.causal, scale, nullptr);
    for (SimdLevel level : variants()) {
      portable::simd_level_cap() = level;
      std::vector<float> first;
      for (size_t temp : temp_sizes(sh.l, sh.s)) {
        auto out = zeros<float>({sh.h, sh.l, sh.ev});
        EValue none;
        EValue causal = EValue::from_bool(sh.causal);
        ASSERT_EQ(run({&q->value, &k->value, &v->value, &none, &causal, &none, &out->value}, temp),
                  Error::Ok)
            << last_error_message();
        const std::string what = std::string(name_of(level)) + " L=" + std::to_string(sh.l) +
                                 " S=" + std::to_string(sh.s) + " E=" + std::to_string(sh.e) +
                                 (sh.causal ? " causal" : "") + " temp " + std::to_string(temp);
        expect_close(out->data, want, 2e-5, what);
        if (first.empty()) {
          first = out->data;
        } else {
          EXPECT_TRUE(same_bits(first, out->data)) << what << ": differs from the full block";
        }
      }
    }
  }
}

TEST_F(SdpaBlockTest, PlannedBytesGiveOneFullBlock) {
  // L = 100, S = 40: the plan holds 64 rows; the kernel takes exactly that.
  auto q = random_tensor<float>({100, 8}, 1);
  auto k = random_tensor<float>({40, 8}, 2);
  auto v = random_tensor<float>({40, 8}, 3);
  auto out = zeros<float>({100, 8});
  EValue none;
  EValue no = EValue::from_bool(false);
  const uint64_t planned = portable::sdpa_block_scratch_bytes(100, 40);
  EXPECT_EQ(planned, 64u * 40u * 4u);
  size_t used = 0;
  ASSERT_EQ(run({&q->value, &k->value, &v->value, &none, &no, &none, &out->value},
                static_cast<size_t>(planned + portable::kScratchAlignment), &used),
            Error::Ok);
  EXPECT_GE(used, planned);
  // Room for 5 rows: it takes 5 (whatever the padding before the first).
  ASSERT_EQ(
      run({&q->value, &k->value, &v->value, &none, &no, &none, &out->value}, 5 * 160 + 63, &used),
      Error::Ok);
  EXPECT_GE(used, 5u * 160u);
}

TEST_F(SdpaBlockTest, TooSmallForOneRowFails) {
  auto q = zeros<float>({70, 4});
  auto k = zeros<float>({100, 4});
  auto v = zeros<float>({100, 3});
  auto out = zeros<float>({70, 3});
  EValue none;
  EValue no = EValue::from_bool(false);
  std::vector<EValue*> args = {&q->value, &k->value, &v->value, &none, &no, &none, &out->value};
  // 399 bytes at a 64-aligned base hold no row of 100 scores, whatever the padding.
  EXPECT_EQ(run(args, 399), Error::MemoryAllocationFailed);
  EXPECT_NE(std::string(last_error_message()).find("needs 400 bytes"), std::string::npos)
      << last_error_message();
  EXPECT_EQ(run(args, 400 + 63), Error::Ok) << last_error_message();
}

TEST_F(SdpaBlockTest, MasksBroadcastAcrossBlocks) {
  const int64_t H = 2, L = 80, S = 45, E = 8, Ev = 6;
  auto q = random_tensor<float>({H, L, E}, 11);
  auto k = random_tensor<float>({H, S, E}, 12);
  auto v = random_tensor<float>({H, S, Ev}, 13);
  // Bool [L, S] shared by the heads: a pattern, rows 3 and 70 (second block) attend nothing.
  std::vector<uint8_t> bits(static_cast<size_t>(L * S));
  for (int64_t i = 0; i < L; ++i) {
    for (int64_t j = 0; j < S; ++j) bits[i * S + j] = (i * 7 + j * 3) % 5 != 0;
  }
  for (int64_t j = 0; j < S; ++j) bits[3 * S + j] = bits[70 * S + j] = 0;
  BoolMask bmask({L, S}, bits);
  RefMask bref;
  bref.attends = [&](int64_t, int64_t i, int64_t j) { return bits[i * S + j] != 0; };
  // Float [H, 1, S]: per head, the same for every query; -inf drops keys.
  auto fmask = random_tensor<float>({H, 1, S}, 14);
  fmask->data[5] = -INFINITY;
  fmask->data[S + 44] = -INFINITY;
  RefMask fref;
  fref.add = [&](int64_t h, int64_t, int64_t j) {
    return static_cast<double>(fmask->data[h * S + j]);
  };
  const double scale = 0.3;
  EValue scale_v = EValue::from_double(scale);
  EValue no = EValue::from_bool(false);
  for (int which = 0; which < 2; ++which) {
    EValue* mask = which == 0 ? &bmask.value : &fmask->value;
    const auto want =
        naive(q->data, k->data, v->data, H, L, S, E, Ev, false, scale, which == 0 ? &bref : &fref);
    std::vector<float> first;
    for (size_t temp : temp_sizes(L, S)) {
      auto out = zeros<float>({H, L, Ev});
      ASSERT_EQ(run({&q->value, &k->value, &v->value, mask, &no, &scale_v, &out->value}, temp),
                Error::Ok)
          << last_error_message();
      expect_close(out->data, want, 2e-5, which == 0 ? "bool mask" : "float mask");
      if (first.empty()) {
        first = out->data;
      } else {
        EXPECT_TRUE(same_bits(first, out->data)) << "temp " << temp;
      }
    }
    if (which == 0) {
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t c = 0; c < Ev; ++c) {
          EXPECT_EQ(first[(h * L + 3) * Ev + c], 0.0f);
          EXPECT_EQ(first[(h * L + 70) * Ev + c], 0.0f);
        }
      }
    }
  }
}

TEST_F(SdpaBlockTest, KeysOfWeightZeroIgnoreNonFiniteValues) {
  const int64_t L = 20, S = 12, E = 4, Ev = 5;
  auto q = random_tensor<float>({L, E}, 21);
  auto k = random_tensor<float>({S, E}, 22);
  auto v = random_tensor<float>({S, Ev}, 23);
  // Causal: key 11 is attended by row 11 onwards only; its value row is inf, key 10's NaN.
  for (int64_t c = 0; c < Ev; ++c) {
    v->data[11 * Ev + c] = INFINITY;
    v->data[10 * Ev + c] = c == 2 ? NAN : 1.0f;
  }
  // Row 4 of q is NaN: its whole output row is NaN.
  q->data[4 * E + 1] = NAN;
  const auto want = naive(q->data, k->data, v->data, 1, L, S, E, Ev, true, 0.5, nullptr);
  EValue none;
  EValue yes = EValue::from_bool(true);
  EValue scale_v = EValue::from_double(0.5);
  for (SimdLevel level : variants()) {
    portable::simd_level_cap() = level;
    for (size_t temp : temp_sizes(L, S)) {
      auto out = zeros<float>({L, Ev});
      ASSERT_EQ(run({&q->value, &k->value, &v->value, &none, &yes, &scale_v, &out->value}, temp),
                Error::Ok);
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t c = 0; c < Ev; ++c) {
          const float got = out->data[i * Ev + c];
          const double w = want[i * Ev + c];
          const std::string at = std::string(name_of(level)) + " row " + std::to_string(i) +
                                 " col " + std::to_string(c) + " temp " + std::to_string(temp);
          if (i == 4) {
            EXPECT_TRUE(std::isnan(got)) << at;
          } else if (i < 10) {  // keys 10 and 11 weigh 0: finite, as the reference
            EXPECT_NEAR(got, w, 2e-5) << at;
          } else if (std::isnan(w)) {
            EXPECT_TRUE(std::isnan(got)) << at;
          } else if (std::isinf(w)) {
            EXPECT_EQ(got, static_cast<float>(w)) << at;
          } else {
            EXPECT_NEAR(got, w, 2e-5) << at;
          }
        }
      }
    }
  }
}

// A KV cache [H, S, E] / [H, S, Ev] of random keys and values filled to position P, its tail
// (keys after P) NaN and its values NaN / inf, and the same cut to P + 1 keys.
struct CacheWithTail {
  std::unique_ptr<OwnedTensor<float>> k, v, k_cut, v_cut;
  CacheWithTail(int64_t H, int64_t S, int64_t P, int64_t E, int64_t Ev, uint32_t seed)
      : k(random_tensor<float>({H, S, E}, seed)),
        v(random_tensor<float>({H, S, Ev}, seed + 1)),
        k_cut(zeros<float>({H, P + 1, E})),
        v_cut(zeros<float>({H, P + 1, Ev})) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t j = 0; j < S; ++j) {
        for (int64_t e = 0; e < E; ++e) {
          float& x = k->data[(h * S + j) * E + e];
          if (j > P) x = NAN;
          else k_cut->data[(h * (P + 1) + j) * E + e] = x;
        }
        for (int64_t c = 0; c < Ev; ++c) {
          float& x = v->data[(h * S + j) * Ev + c];
          if (j > P) x = c % 2 ? NAN : INFINITY;
          else v_cut->data[(h * (P + 1) + j) * Ev + c] = x;
        }
      }
    }
  }
};

// A decode step over a KV cache filled to position p: a bool mask attends keys 0..p of S, the
// rest of the cache holds anything (NaN here). The kernel stops each block after the last
// attended key; the result must be bitwise that of the attended keys alone (K, V cut to p + 1
// keys, no mask), every variant and block height.
TEST_F(SdpaBlockTest, BoolMaskedCacheTailIsNeverRead) {
  const int64_t H = 3, L = 5, S = 40, P = 22, E = 8, Ev = 7;
  auto q = random_tensor<float>({H, L, E}, 31);
  CacheWithTail c(H, S, P, E, Ev, 32);
  auto& [k, v, k_cut, v_cut] = c;
  std::vector<uint8_t> bits(static_cast<size_t>(S));
  for (int64_t j = 0; j < S; ++j) bits[j] = j <= P;
  BoolMask mask({1, S}, bits);
  EValue none;
  EValue no = EValue::from_bool(false);
  EValue scale_v = EValue::from_double(0.25);
  for (SimdLevel level : variants()) {
    portable::simd_level_cap() = level;
    auto want = zeros<float>({H, L, Ev});
    ASSERT_EQ(run({&q->value, &k_cut->value, &v_cut->value, &none, &no, &scale_v, &want->value},
                  1 << 20),
              Error::Ok);
    for (size_t temp : temp_sizes(L, S)) {
      auto out = zeros<float>({H, L, Ev});
      ASSERT_EQ(run({&q->value, &k->value, &v->value, &mask.value, &no, &scale_v, &out->value},
                    temp),
                Error::Ok)
          << last_error_message();
      EXPECT_TRUE(same_bits(out->data, want->data)) << name_of(level) << " temp " << temp;
    }
  }
}

// The same with the additive float mask the exporter makes of a bool mask computed from the
// inputs (0 where attended, -inf elsewhere; finite values other than 0 here): keys after the
// last one any row of a block attends are never read, bitwise the result of the cut cache with
// the cut mask.
TEST_F(SdpaBlockTest, FloatMaskedCacheTailIsNeverRead) {
  const int64_t H = 3, L = 5, S = 40, P = 22, E = 8, Ev = 7;
  auto q = random_tensor<float>({H, L, E}, 41);
  CacheWithTail c(H, S, P, E, Ev, 42);
  auto& [k, v, k_cut, v_cut] = c;
  auto mask = random_tensor<float>({1, S}, 44);
  auto mask_cut = zeros<float>({1, P + 1});
  for (int64_t j = 0; j < S; ++j) {
    if (j > P || j == 3) mask->data[j] = -INFINITY;  // key 3 masked inside the attended run
    if (j <= P) mask_cut->data[j] = mask->data[j];
  }
  EValue no = EValue::from_bool(false);
  EValue scale_v = EValue::from_double(0.25);
  for (SimdLevel level : variants()) {
    portable::simd_level_cap() = level;
    auto want = zeros<float>({H, L, Ev});
    ASSERT_EQ(run({&q->value, &k_cut->value, &v_cut->value, &mask_cut->value, &no, &scale_v,
                   &want->value},
                  1 << 20),
              Error::Ok);
    for (size_t temp : temp_sizes(L, S)) {
      auto out = zeros<float>({H, L, Ev});
      ASSERT_EQ(run({&q->value, &k->value, &v->value, &mask->value, &no, &scale_v, &out->value},
                    temp),
                Error::Ok)
          << last_error_message();
      EXPECT_TRUE(same_bits(out->data, want->data)) << name_of(level) << " temp " << temp;
    }
  }
}

TEST_F(SdpaBlockTest, FullyMaskedRowIsZeroEvenWithNaNValues) {
  const int64_t L = 6, S = 5, E = 3, Ev = 4;
  auto q = random_tensor<float>({L, E}, 31);
  auto k = random_tensor<float>({S, E}, 32);
  auto v = random_tensor<float>({S, Ev}, 33);
  v->data[2 * Ev + 1] = NAN;  // key 2 is masked for every row
  std::vector<uint8_t> bits(static_cast<size_t>(L * S), 1);
  for (int64_t i = 0; i < L; ++i) bits[i * S + 2] = 0;
  for (int64_t j = 0; j < S; ++j) bits[1 * S + j] = 0;  // row 1 attends nothing
  BoolMask mask({L, S}, bits);
  RefMask ref;
  ref.attends = [&](int64_t, int64_t i, int64_t j) { return bits[i * S + j] != 0; };
  const auto want =
      naive(q->data, k->data, v->data, 1, L, S, E, Ev, false, 1.0 / std::sqrt(3.0), &ref);
  EValue none;
  EValue no = EValue::from_bool(false);
  for (size_t temp : temp_sizes(L, S)) {
    auto out = zeros<float>({L, Ev});
    ASSERT_EQ(run({&q->value, &k->value, &v->value, &mask.value, &no, &none, &out->value}, temp),
              Error::Ok);
    expect_close(out->data, want, 2e-5, "temp " + std::to_string(temp));
    for (int64_t c = 0; c < Ev; ++c) EXPECT_EQ(out->data[1 * Ev + c], 0.0f);
  }
}

}  // namespace
}  // namespace testing
}  // namespace tern
