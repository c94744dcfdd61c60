// The cpu backend's fused NF4 / FP8 kernels (backends/cpu/kernels/quant_gemm.h,
// quant_embedding.h) against the portable reference: the weight dequantized by
// runtime/kernels/util/quant_formats.h (what the portable kernels run), then an f32 product in
// double precision. Every ISA this CPU runs, forced in turn (scalar, AVX2, AVX-512); GEMV (m = 1)
// and GEMM rows; odd K and N, K < 16, a partial last NF4 block and blocks spanning rows, block
// sizes 32..256, double quantization, FP8 e4m3/e5m2 per tensor / per channel / 2-D blocks
// (tile widths that are and are not multiples of 16), scales whose FP8 factor overflows; no
// pool and a 2-thread pool; AVX2's two NF4 lookups (Nf4Avx2Lookup); A and C ending at a
// PROT_NONE page; the run-based fast path's edges (short last chunk, N not a multiple of the row group, small / non-power-of-two double
// quantization blocks, short last FP8 run). Max relative error (max |got - ref| / max |ref|)
// <= 1e-5. Each decoded weight (A = identity) and the embedding gather must equal the reference
// exactly. Many rows of A (kQuantPanelMinRows and more) take the decoded-panel path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/quant_embedding.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "runtime/kernels/util/quant_formats.h"
#include "tests/backends/cpu/kernel_test_util.h"
#include "tests/support/allocation_counter.h"

namespace tern::cpu {
namespace {

using kernel_test::GuardedBuffer;
using kernel_test::Pool;
using kernel_test::random_floats;
using kernel_test::supported_isas;

/// One kernel this CPU runs: an ISA and, on AVX2, one of its two NF4 codebook lookups
/// (Nf4Avx2Lookup; dispatch picks by vendor, the tests run both on any AVX2 host).
struct Kernel {
  GemmIsa isa = GemmIsa::Scalar;
  Nf4Avx2Lookup lookup = Nf4Avx2Lookup::Permute;
  std::string name() const {
    std::string s = gemm_isa_name(isa);
    if (isa == GemmIsa::Avx2) s += lookup == Nf4Avx2Lookup::BytePlanes ? " byte-planes" : " permute";
    return s;
  }
  /// Makes quant_gemm use this kernel.
  bool use() const {
    quant_force_nf4_avx2_lookup(lookup);
    return packed_gemm_force_isa(isa);
  }
};

std::vector<Kernel> kernels() {
  std::vector<Kernel> out;
  for (GemmIsa isa : supported_isas()) {
    out.push_back({isa, Nf4Avx2Lookup::Permute});
    if (isa == GemmIsa::Avx2) out.push_back({isa, Nf4Avx2Lookup::BytePlanes});
  }
  return out;
}

struct Scheme {
  QuantWeightFormat format = QuantWeightFormat::Nf4;
  uint32_t block = 64;  ///< NF4 block size
  Fp8Granularity granularity = Fp8Granularity::PerChannel;
  uint32_t block_rows = 0, block_cols = 0;
  uint32_t dq_block = 256;  ///< NF4 double quantization: absmax values per absmax2
  uint32_t row_group = 0;   ///< NF4 codes' row group (quant_weight.h); 0: this CPU's
  std::string name() const {
    const std::string g = row_group != 0 ? "_g" + std::to_string(row_group) : "";
    switch (format) {
      case QuantWeightFormat::Nf4:
        return "nf4_b" + std::to_string(block) + g;
      case QuantWeightFormat::Nf4DoubleQuant:
        return "nf4dq_b" + std::to_string(block) + "_dq" + std::to_string(dq_block) + g;
      default:
        break;
    }
    std::string s = format == QuantWeightFormat::Fp8E4M3 ? "e4m3" : "e5m2";
    if (granularity == Fp8Granularity::PerTensor) return s + "_tensor";
    if (granularity == Fp8Granularity::PerChannel) return s + "_channel";
    return s + "_block" + std::to_string(block_rows) + "x" + std::to_string(block_cols);
  }
};

/// A quantized [rows, cols] weight in the program's format (random codes and parameters), its
/// reference dequantization and the cpu kernels' re-laid-out constant.
struct TestWeight {
  std::vector<uint8_t> packed;  // program codes
  std::vector<float> absmax, dq_absmax2, dq_table, scale;
  std::vector<uint8_t> dq_codes;
  float dq_offset = 0.0f;
  std::vector<float> ref;       // dequantized by quant_formats.h
  std::vector<uint8_t> blob;    // pack_quant_weight's constant (64-byte aligned copy below)
  std::vector<uint64_t> store;  // aligned storage for blob
  QuantWeightDesc desc;
  QuantWeightLayout layout;
  QuantWeightView view() const { return quant_weight_view(desc, layout, store.data()); }
};

bool fp8_special(QuantWeightFormat f, uint8_t b) {
  return f == QuantWeightFormat::Fp8E4M3 ? (b & 0x7F) == 0x7F : (b & 0x7F) >= 0x7C;
}

TestWeight make_weight(const Scheme& s, uint64_t rows, uint64_t cols, uint32_t seed,
                       float scale_magnitude = 0.01f) {
  TestWeight w;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.5f, 1.5f);
  const uint64_t numel = rows * cols;
  const bool nf4 = s.format == QuantWeightFormat::Nf4 || s.format == QuantWeightFormat::Nf4DoubleQuant;
  QuantView q;
  TensorView t;
  const int64_t sizes[2] = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
  t.rank = 2;
  t.sizes = sizes;
  w.desc.format = s.format;
  w.desc.rows = rows;
  w.desc.cols = cols;
  if (nf4) {
    w.packed.resize((numel + 1) / 2);
    for (uint8_t& b : w.packed) b = static_cast<uint8_t>(rng());
    const uint64_t blocks = (numel + s.block - 1) / s.block;
    t.dtype = DType::NF4;
    q.block_size = s.block;
    w.desc.block_size = s.block;
    if (s.format == QuantWeightFormat::Nf4) {
      q.scheme = QuantView::Scheme::NF4;
      for (uint64_t i = 0; i < blocks; ++i) w.absmax.push_back(unit(rng) * 0.05f);
      q.absmax = w.absmax.data();
    } else {
      q.scheme = QuantView::Scheme::NF4DoubleQuant;
      q.dq_block_size = s.dq_block;
      w.desc.dq_block_size = s.dq_block;
      for (int i = 0; i < 256; ++i) w.dq_table.push_back(-1.0f + 2.0f * static_cast<float>(i) / 255.0f);
      for (uint64_t i = 0; i < blocks; ++i) w.dq_codes.push_back(static_cast<uint8_t>(rng()));
      for (uint64_t i = 0; i < (blocks + s.dq_block - 1) / s.dq_block; ++i) {
        w.dq_absmax2.push_back(unit(rng) * 0.01f);
      }
      w.dq_offset = 0.03f;
      q.dq_codes = w.dq_codes.data();
      q.dq_absmax2 = w.dq_absmax2.data();
      q.dq_table = w.dq_table.data();
      q.dq_offset = w.dq_offset;
    }
  } else {
    w.packed.resize(numel);
    for (uint8_t& b : w.packed) {
      do {
        b = static_cast<uint8_t>(rng());
      } while (fp8_special(s.format, b));
    }
    t.dtype = s.format == QuantWeightFormat::Fp8E4M3 ? DType::FP8E4M3 : DType::FP8E5M2;
    q.scheme = QuantView::Scheme::FP8;
    w.desc.granularity = s.granularity;
    uint64_t count = 1;
    if (s.granularity == Fp8Granularity::PerTensor) {
      q.granularity = QuantView::Granularity::PerTensor;
    } else if (s.granularity == Fp8Granularity::PerChannel) {
      q.granularity = QuantView::Granularity::PerChannel;
      count = rows;
    } else {
      q.granularity = QuantView::Granularity::Block2D;
      q.block_rows = s.block_rows;
      q.block_cols = s.block_cols;
      w.desc.block_rows = s.block_rows;
      w.desc.block_cols = s.block_cols;
      count = ((rows + s.block_rows - 1) / s.block_rows) *
              ((cols + s.block_cols - 1) / s.block_cols);
    }
    const float mag = s.format == QuantWeightFormat::Fp8E4M3 ? scale_magnitude
                                                              : scale_magnitude * 1e-3f;
    for (uint64_t i = 0; i < count; ++i) w.scale.push_back(unit(rng) * mag);
    q.scale = w.scale.data();
  }
  t.data = w.packed.data();
  t.quant = &q;
  w.ref.resize(numel);
  quant::dequantize(t, 0, numel, w.ref.data());
  EXPECT_TRUE(quant_weight_layout(w.desc, &w.layout, s.row_group));
  w.store.assign(w.layout.total_bytes / 8 + 2, 0);
  pack_quant_weight(w.desc, w.layout, w.packed.data(), w.absmax.data(), w.dq_codes.data(),
                    w.dq_absmax2.data(), w.dq_table.data(), w.dq_offset, w.scale.data(),
                    reinterpret_cast<uint8_t*>(w.store.data()));
  return w;
}

class CpuQuantGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = packed_gemm_isa();
    saved_lookup_ = quant_nf4_avx2_lookup();
  }
  void TearDown() override {
    quant_force_nf4_avx2_lookup(saved_lookup_);
    ASSERT_TRUE(packed_gemm_force_isa(saved_));
  }
  GemmIsa saved_ = GemmIsa::Scalar;
  Nf4Avx2Lookup saved_lookup_ = Nf4Avx2Lookup::Permute;
};

/// Runs C = A · Wᵀ + bias on every ISA with and without a pool (A and C end at a PROT_NONE
/// page) and returns the worst relative error against the double reference.
double check(const TestWeight& w, int64_t m, bool bias, const std::string& what) {
  const int64_t n = static_cast<int64_t>(w.desc.rows), k = static_cast<int64_t>(w.desc.cols);
  const std::vector<float> a = random_floats(static_cast<size_t>(m * k), 7u + static_cast<uint32_t>(m));
  const std::vector<float> b = random_floats(static_cast<size_t>(n), 11u, -0.1f, 0.1f);
  std::vector<double> ref(static_cast<size_t>(m * n));
  double ref_max = 0.0;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double s = bias ? b[static_cast<size_t>(j)] : 0.0;
      for (int64_t i = 0; i < k; ++i) {
        s += static_cast<double>(a[static_cast<size_t>(r * k + i)]) *
             w.ref[static_cast<size_t>(j * k + i)];
      }
      ref[static_cast<size_t>(r * n + j)] = s;
      ref_max = std::max(ref_max, std::fabs(s));
    }
  }
  double worst = 0.0;
  Pool pool(2);
  for (const Kernel& kernel : kernels()) {
    EXPECT_TRUE(kernel.use());
    for (pthreadpool_t pl : {static_cast<pthreadpool_t>(nullptr), pool.pool}) {
      GuardedBuffer abuf(a.size() * sizeof(float));
      GuardedBuffer cbuf(ref.size() * sizeof(float));
      std::memcpy(abuf.data(), a.data(), a.size() * sizeof(float));
      EXPECT_TRUE(abuf.make_read_only());
      QuantGemmProblem p;
      p.m = m;
      p.a = abuf.data();
      p.lda = k;
      p.w = w.view();
      p.bias = bias ? b.data() : nullptr;
      p.c = cbuf.data();
      p.ldc = n;
      quant_gemm(p, pl);  // warm: dispatch detection, pool threads started
      {
        testing_support::ArmedCounter allocations;
        quant_gemm(p, pl);
        if (TERN_ZERO_ALLOC_HOOKS) {
          EXPECT_EQ(allocations.count(), 0) << what;
        }
      }
      double err = 0.0;
      for (size_t i = 0; i < ref.size(); ++i) {
        err = std::max(err, std::fabs(cbuf.data()[i] - ref[i]));
      }
      err /= std::max(ref_max, 1e-30);
      EXPECT_LE(err, 1e-5) << what << " kernel " << kernel.name()
                           << (pl ? " pool" : " no pool");
      worst = std::max(worst, err);
    }
  }
  return worst;
}

std::vector<Scheme> all_schemes() {
  std::vector<Scheme> out;
  // NF4 with both row groups (rows in order, chunks of 8 rows interleaved), whichever this
  // CPU packs with.
  for (uint32_t b : {32u, 64u, 128u, 256u}) {
    for (uint32_t g : {1u, 8u}) {
      Scheme s{QuantWeightFormat::Nf4, b};
      s.row_group = g;
      out.push_back(s);
      s.format = QuantWeightFormat::Nf4DoubleQuant;
      out.push_back(s);
    }
  }
  for (QuantWeightFormat f : {QuantWeightFormat::Fp8E4M3, QuantWeightFormat::Fp8E5M2}) {
    out.push_back({f, 0, Fp8Granularity::PerTensor});
    out.push_back({f, 0, Fp8Granularity::PerChannel});
    out.push_back({f, 0, Fp8Granularity::Block, 128, 128});
    out.push_back({f, 0, Fp8Granularity::Block, 3, 5});
    out.push_back({f, 0, Fp8Granularity::Block, 2, 32});
  }
  return out;
}

TEST_F(CpuQuantGemm, EverySchemeShapeAndIsaMatchesDequantizeThenMatmul) {
  // (n, k): aligned, odd K and N, K < 16, K not a multiple of 16 (blocks span rows and
  // vectors), one long row, a partial last NF4 block (n*k not a multiple of the block).
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {16, 256}, {37, 129}, {5, 7}, {33, 200}, {3, 1000}, {9, 96}, {130, 64}};
  double worst = 0.0;
  uint32_t seed = 1;
  for (const Scheme& s : all_schemes()) {
    for (const auto& [n, k] : shapes) {
      const TestWeight w = make_weight(s, static_cast<uint64_t>(n), static_cast<uint64_t>(k), seed++);
      for (int64_t m : {1, 2, 3, 5, 9}) {
        const std::string what = s.name() + " n=" + std::to_string(n) + " k=" +
                                 std::to_string(k) + " m=" + std::to_string(m);
        worst = std::max(worst, check(w, m, /*bias=*/m != 3, what));
      }
    }
  }
  std::printf("max relative error over every case: %.3g\n", worst);
}

TEST_F(CpuQuantGemm, RunBasedFastPathEdgesMatchDequantizeThenMatmul) {
  // The kernels' fast path (quant_fast_path_ok): NF4 rows that hold whole blocks with K not a
  // multiple of the 128-code chunk or of 256 (a short last chunk; a 256 block spanning two
  // chunks), N not a multiple of the GEMV's 8-row or the GEMM's 4-row group, double
  // quantization with small and non-power-of-two dq blocks (the latter takes the exact path);
  // FP8 2-D blocks whose width is a multiple of 16 but not of the row (a short last run and a
  // masked last vector) and per-channel rows ending mid-vector.
  std::vector<std::pair<Scheme, std::vector<std::pair<int64_t, int64_t>>>> cases;
  for (uint32_t b : {32u, 64u, 128u, 256u}) {
    const std::vector<std::pair<int64_t, int64_t>> shapes = {
        {13, 3 * static_cast<int64_t>(b)}, {9, 5 * static_cast<int64_t>(b)}, {17, b}};
    for (uint32_t g : {1u, 8u}) {
      Scheme plain{QuantWeightFormat::Nf4, b};
      plain.row_group = g;
      cases.push_back({plain, shapes});
      for (uint32_t dq : {4u, 100u, 256u}) {
        Scheme s{QuantWeightFormat::Nf4DoubleQuant, b};
        s.dq_block = dq;
        s.row_group = g;
        cases.push_back({s, shapes});
      }
    }
  }
  for (QuantWeightFormat f : {QuantWeightFormat::Fp8E4M3, QuantWeightFormat::Fp8E5M2}) {
    cases.push_back({{f, 0, Fp8Granularity::Block, 3, 32}, {{13, 100}, {10, 64}, {9, 31}}});
    cases.push_back({{f, 0, Fp8Granularity::Block, 8, 48}, {{21, 200}}});
    cases.push_back({{f, 0, Fp8Granularity::PerChannel}, {{13, 77}, {11, 1}, {17, 130}}});
  }
  uint32_t seed = 700;
  for (const auto& [s, shapes] : cases) {
    for (const auto& [n, k] : shapes) {
      const TestWeight w = make_weight(s, static_cast<uint64_t>(n), static_cast<uint64_t>(k), seed++);
      for (int64_t m : {1, 2, 4, 6}) {
        check(w, m, /*bias=*/m != 2,
              s.name() + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " m=" +
                  std::to_string(m));
      }
    }
  }
}

TEST_F(CpuQuantGemm, ManyRowsRunOnDecodedPanelsAndMatch) {
  // m >= kQuantPanelMinRows with a fast-path weight: quant_gemm decodes 16-row panels a K block
  // (1024) at a time — on AVX-512 pairs of panels 512 rows at a time, tiled together — and runs
  // the f32 GEMM's microkernels (quant_panel_gemm.cpp). K in one block and in three or five
  // (the last one short), N with a partial last panel (37: a pair and a lone panel), m with a
  // short last register tile, with and without bias; a clamp in the last block's epilogue.
  std::vector<Scheme> schemes;
  for (const Scheme& s : all_schemes()) {
    if (s.granularity != Fp8Granularity::Block || s.block_cols % 16 == 0) schemes.push_back(s);
  }
  uint32_t seed = 300;
  for (const Scheme& s : schemes) {
    for (const auto& [n, k] : std::vector<std::pair<int64_t, int64_t>>{{37, 256}, {16, 2304}}) {
      const TestWeight w = make_weight(s, static_cast<uint64_t>(n), static_cast<uint64_t>(k), seed++);
      ASSERT_TRUE(quant_detail::quant_fast_path_ok(w.view())) << s.name();
      for (int64_t m : {kQuantPanelMinRows, kQuantPanelMinRows + 7}) {
        check(w, m, /*bias=*/m == kQuantPanelMinRows,
              s.name() + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " m=" +
                  std::to_string(m));
      }
    }
  }
  // The clamp: outputs of a random product clamped to [-0.05, 0.05] on the panel path.
  const TestWeight w = make_weight({QuantWeightFormat::Nf4, 64}, 40, 512, 77);
  const int64_t m = 20, n = 40, k = 512;
  const std::vector<float> a = random_floats(static_cast<size_t>(m * k), 5u);
  std::vector<float> c(static_cast<size_t>(m * n)), clamped(c.size());
  QuantGemmProblem p;
  p.m = m;
  p.a = a.data();
  p.lda = k;
  p.w = w.view();
  p.c = c.data();
  p.ldc = n;
  quant_gemm(p, nullptr);
  p.c = clamped.data();
  p.out_min = -0.05f;
  p.out_max = 0.05f;
  quant_gemm(p, nullptr);
  int inside = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(clamped[i], std::min(0.05f, std::max(-0.05f, c[i]))) << i;
    inside += c[i] > -0.05f && c[i] < 0.05f;
  }
  EXPECT_GT(inside, 0);
  EXPECT_LT(inside, static_cast<int>(c.size()));
}

TEST_F(CpuQuantGemm, DecodedWeightsEqualTheReferenceBitForBit) {
  // A = the identity (m = K), no bias: C[r][j] is weight (j, r) times 1 plus zeros, so each
  // kernel's decoded weight must be the reference's code × scale exactly (the scaled NF4
  // codebook, the FP8 folded factor, the double-quantized absmax with no fused multiply-add).
  // All K rows at once (the panel path of m >= kQuantPanelMinRows where the weight takes the
  // fast path) and in slices of 7 rows of the identity (the fused kernels).
  std::vector<Scheme> schemes = all_schemes();
  Scheme dq4{QuantWeightFormat::Nf4DoubleQuant, 32};
  dq4.dq_block = 4;
  schemes.push_back(dq4);
  uint32_t seed = 900;
  Pool pool(2);
  for (const Scheme& s : schemes) {
    for (const auto& [n, k] : std::vector<std::pair<int64_t, int64_t>>{{11, 256}, {6, 129}, {9, 96}}) {
      const TestWeight w = make_weight(s, static_cast<uint64_t>(n), static_cast<uint64_t>(k), seed++);
      std::vector<float> a(static_cast<size_t>(k * k), 0.0f);
      for (int64_t i = 0; i < k; ++i) a[static_cast<size_t>(i * k + i)] = 1.0f;
      for (const Kernel& kernel : kernels()) {
        ASSERT_TRUE(kernel.use());
        for (pthreadpool_t pl : {static_cast<pthreadpool_t>(nullptr), pool.pool}) {
         for (int64_t slice : {k, int64_t{7}}) {
          std::vector<float> c(static_cast<size_t>(k * n), -7.0f);
          for (int64_t r0 = 0; r0 < k; r0 += slice) {
            QuantGemmProblem p;
            p.m = std::min(slice, k - r0);
            p.a = a.data() + r0 * k;
            p.lda = k;
            p.w = w.view();
            p.c = c.data() + r0 * n;
            p.ldc = n;
            quant_gemm(p, pl);
          }
          int bad = 0;
          for (int64_t r = 0; r < k && bad < 3; ++r) {
            for (int64_t j = 0; j < n && bad < 3; ++j) {
              const float got = c[static_cast<size_t>(r * n + j)];
              const float want = w.ref[static_cast<size_t>(j * k + r)];
              if (!(got == want)) {
                ++bad;
                ADD_FAILURE() << s.name() << " n=" << n << " k=" << k << " kernel "
                              << kernel.name() << " rows per call " << slice << " weight ("
                              << j << ", " << r << "): " << got << " != " << want;
              }
            }
          }
         }
        }
      }
    }
  }
}

TEST_F(CpuQuantGemm, Fp8ScaleWhoseFoldedFactorOverflowsStaysExact) {
  // The per-vector path (tile(): 2-D blocks whose width is not a multiple of 16) folds
  // scale * 2^120, which overflows f32 for scale >= 256: those vectors take its exact scalar
  // fill. The run-based fast paths and the panel path fold scale * 2^8 (f16 decode), finite here.
  for (Fp8Granularity g :
       {Fp8Granularity::PerTensor, Fp8Granularity::PerChannel, Fp8Granularity::Block}) {
    const Scheme s = g == Fp8Granularity::Block
                         ? Scheme{QuantWeightFormat::Fp8E4M3, 0, g, 3, 5}
                         : Scheme{QuantWeightFormat::Fp8E4M3, 0, g};
    const TestWeight w = make_weight(s, 20, 70, 99, 1000.0f);
    check(w, 1, true, "e4m3 huge scales");
    check(w, 4, false, "e4m3 huge scales gemm");
    check(w, kQuantPanelMinRows, true, "e4m3 huge scales, decoded panels");
  }
}

TEST_F(CpuQuantGemm, LargeGemvAcrossThreads) {
  const TestWeight w = make_weight({QuantWeightFormat::Nf4, 64}, 1024, 2048, 5);
  check(w, 1, true, "nf4 1024x2048 gemv");
  const TestWeight f = make_weight({QuantWeightFormat::Fp8E4M3, 0, Fp8Granularity::Block, 128, 128},
                                   512, 1024, 6);
  check(f, 1, true, "fp8 block 512x1024 gemv");
  check(f, 7, true, "fp8 block 512x1024 gemm");
}

// The NF4 codes' documented layout (quant_weight.h) with a row group of 8, worked by hand: 11
// rows of 256 columns are a group of 8 rows and a group of 3, 2 chunks (128 bytes) per row.
// Chunk c of row r < 8 is at (8c + r) * 64; chunk c of row 8 + i at 8 * 128 + (3c + i) * 64.
// Element e of a chunk is nibble e / 16 of little-endian word e % 16, so column 128 + 16 * 5 + 3
// of row 9 (chunk 1, vector 5, word 3) is the high nibble of byte 3 * 4 + 2 of that chunk.
TEST(CpuQuantWeight, Nf4ChunksOfEightRowsAreInterleaved) {
  QuantWeightDesc d;
  d.rows = 11;
  d.cols = 256;
  d.format = QuantWeightFormat::Nf4;
  d.block_size = 64;
  QuantWeightLayout l;
  ASSERT_TRUE(quant_weight_layout(d, &l, 8));
  EXPECT_EQ(l.row_bytes, 128u);
  EXPECT_EQ(nf4_chunk_offset(d, l, 0, 0), 0u);
  EXPECT_EQ(nf4_chunk_offset(d, l, 1, 0), 64u);
  EXPECT_EQ(nf4_chunk_offset(d, l, 7, 1), (8u + 7u) * 64u);
  EXPECT_EQ(nf4_chunk_offset(d, l, 8, 0), 1024u);
  EXPECT_EQ(nf4_chunk_offset(d, l, 9, 1), 1024u + 4u * 64u);
  EXPECT_EQ(nf4_chunk_offset(d, l, 10, 1), 1024u + 5u * 64u);
  EXPECT_EQ(nf4_chunk_stride(d, l, 3), 512u);
  EXPECT_EQ(nf4_chunk_stride(d, l, 10), 192u);
  // Program codes: element e = row * 256 + col, two per byte, the first in the high nibble.
  // Every code is 0 except (9, 211) = 13.
  std::vector<uint8_t> packed(11 * 256 / 2, 0);
  const uint64_t e = 9 * 256 + 211;
  packed[e / 2] = static_cast<uint8_t>((e & 1) ? 13 : 13 << 4);
  std::vector<float> absmax(l.blocks, 1.0f);
  std::vector<uint8_t> out(l.total_bytes, 0);
  pack_quant_weight(d, l, packed.data(), absmax.data(), nullptr, nullptr, nullptr, 0.0f, nullptr,
                    out.data());
  for (uint64_t i = 0; i < 11 * 128; ++i) {
    const uint8_t want = i == 1024 + 4 * 64 + 3 * 4 + 2 ? 0xD0 : 0x00;
    ASSERT_EQ(out[i], want) << "byte " << i;
  }
  // Row group 1: rows one after the other; anything else is refused.
  ASSERT_TRUE(quant_weight_layout(d, &l, 1));
  EXPECT_EQ(nf4_chunk_offset(d, l, 9, 1), 9u * 128u + 64u);
  EXPECT_EQ(nf4_chunk_stride(d, l, 10), 64u);
  EXPECT_FALSE(quant_weight_layout(d, &l, 4));
}

TEST(CpuQuantWeight, LayoutRefusesIllegalParameters) {
  QuantWeightLayout l;
  QuantWeightDesc d;
  d.rows = 4;
  d.cols = 8;
  d.format = QuantWeightFormat::Nf4;
  d.block_size = 64;
  EXPECT_TRUE(quant_weight_layout(d, &l));
  EXPECT_EQ(l.blocks, 1u);
  EXPECT_EQ(l.row_bytes, 64u);
  for (uint32_t bad : {0u, 16u, 48u, 8192u}) {
    d.block_size = bad;
    EXPECT_FALSE(quant_weight_layout(d, &l)) << bad;
  }
  d.block_size = 64;
  d.dq_block_size = 256;  // only with double quantization
  EXPECT_FALSE(quant_weight_layout(d, &l));
  d.format = QuantWeightFormat::Nf4DoubleQuant;
  EXPECT_TRUE(quant_weight_layout(d, &l));
  d.dq_block_size = 0;
  EXPECT_FALSE(quant_weight_layout(d, &l));
  QuantWeightDesc f;
  f.rows = 3;
  f.cols = 5;
  f.format = QuantWeightFormat::Fp8E5M2;
  f.block_size = 0;
  f.granularity = Fp8Granularity::Block;
  EXPECT_FALSE(quant_weight_layout(f, &l));  // R, C missing
  f.block_rows = 2;
  f.block_cols = 2;
  EXPECT_TRUE(quant_weight_layout(f, &l));
  EXPECT_EQ(l.scales, 6u);
  f.granularity = static_cast<Fp8Granularity>(3);
  EXPECT_FALSE(quant_weight_layout(f, &l));
  f.granularity = Fp8Granularity::PerChannel;  // R, C must be 0
  EXPECT_FALSE(quant_weight_layout(f, &l));
  f.block_rows = f.block_cols = 0;
  EXPECT_TRUE(quant_weight_layout(f, &l));
  f.format = static_cast<QuantWeightFormat>(5);
  EXPECT_FALSE(quant_weight_layout(f, &l));
  f.format = QuantWeightFormat::Fp8E4M3;
  f.rows = 0;
  EXPECT_FALSE(quant_weight_layout(f, &l));
}

TEST(CpuQuantWeight, NonFiniteFp8CodesAreFound) {
  TestWeight w = make_weight({QuantWeightFormat::Fp8E4M3, 0, Fp8Granularity::PerChannel}, 3, 70, 4);
  EXPECT_FALSE(quant_weight_has_nonfinite_codes(w.view()));
  uint8_t* codes = reinterpret_cast<uint8_t*>(w.store.data());
  codes[2 * w.layout.row_bytes + 69] = 0xFF;  // e4m3 NaN
  EXPECT_TRUE(quant_weight_has_nonfinite_codes(w.view()));
  TestWeight e = make_weight({QuantWeightFormat::Fp8E5M2, 0, Fp8Granularity::PerTensor}, 2, 9, 4);
  EXPECT_FALSE(quant_weight_has_nonfinite_codes(e.view()));
  reinterpret_cast<uint8_t*>(e.store.data())[3] = 0x7C;  // e5m2 +inf
  EXPECT_TRUE(quant_weight_has_nonfinite_codes(e.view()));
}

TEST(CpuQuantEmbedding, GatherEqualsDequantizedRowsExactly) {
  Pool pool(2);
  uint32_t seed = 300;
  for (const Scheme& s : all_schemes()) {
    for (const auto& [v, d] : std::vector<std::pair<uint64_t, uint64_t>>{{50, 33}, {7, 256}, {300, 64}}) {
      const TestWeight w = make_weight(s, v, d, seed++);
      const std::vector<int64_t> idx = {0, static_cast<int64_t>(v) - 1, 3, 2, 2};
      for (pthreadpool_t pl : {static_cast<pthreadpool_t>(nullptr), pool.pool}) {
        std::vector<float> out(idx.size() * d, -1.0f);
        ASSERT_EQ(quant_embedding(w.view(), idx.data(), static_cast<int64_t>(idx.size()), out.data(), pl), -1);
        for (size_t i = 0; i < idx.size(); ++i) {
          const int64_t row = idx[i];
          ASSERT_EQ(0, std::memcmp(out.data() + i * d, w.ref.data() + static_cast<uint64_t>(row) * d,
                                   d * sizeof(float)))
              << s.name() << " row " << row;
        }
      }
    }
  }
}

TEST(CpuQuantEmbedding, OutOfRangeIndexIsReportedAndNothingWritten) {
  const TestWeight w = make_weight({QuantWeightFormat::Nf4, 64}, 10, 16, 8);
  for (int64_t bad : {int64_t{10}, int64_t{-1}, int64_t{1} << 40}) {
    const std::vector<int64_t> idx = {1, 2, bad, 3};
    std::vector<float> out(idx.size() * 16, -7.0f);
    EXPECT_EQ(quant_embedding(w.view(), idx.data(), 4, out.data(), nullptr), 2);
    for (float f : out) ASSERT_EQ(f, -7.0f);
  }
}

}  // namespace
}  // namespace tern::cpu
