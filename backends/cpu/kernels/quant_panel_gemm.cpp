// The quantized GEMM's path for many rows of A (quant_gemm.h, kQuantPanelMinRows): a prompt's
// worth of rows reuses every weight many times, so instead of decoding each weight once per two
// rows in registers (the fused kernels), each task decodes 16 weight rows × a block of K (1024)
// — or, where the ISA's wide tiles span two panels (AVX-512), 32 rows × 512 — into a 64 KiB
// stack buffer laid out as panels of the packed f32 GEMM ([bias 16][kc rows of 16]) and runs
// the packed GEMM's register-tiled microkernels (gemm_microkernel.h) for every row of A over
// it (the decode: AVX2 + F16C in quant_panel_avx2.cpp, else the portable loop below). Each
// decoded weight is the reference's code value × scale, one f32 rounding, so the
// result is dequantize-then-matmul up to the order of the K sum. Tasks are panels (16 output
// columns each, all of K and all rows of A), split over the pool; never allocates.
#include <cstdint>

#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "runtime/kernels/util/quant_formats.h"

namespace tern::cpu::quant_detail {
namespace {

using gemm_detail::MicrokernelSet;
using gemm_detail::TileArgs;

/// K rows per decoded block (a multiple of the NF4 chunk, 128, so blocks start on whole
/// chunks) when a task decodes one panel; the panel buffer is kc + 1 rows of 16 floats on the
/// task's stack (64 KiB: pool threads and the calling thread need stacks of more than that, as
/// every glibc, Android and musl default is). Measured on Zen 1 inside a 4-layer Llama prefill
/// (64 rows, K 2048 and 5632, 2 threads): kc 256 608 ms, 384 549, 768 482, 1024 471, 1536 443
/// (f32: 414). Why short blocks cost that much inside a model is not understood: the same
/// shapes alone run at 31-32 G multiply-adds/s for every kc, and neither prefetching the next
/// block's codes nor summing C in a contiguous buffer changed the model's figure.
constexpr uint64_t kPanelKc = 1024;
/// Where the ISA's wide tiles span two panels (AVX-512: 14 rows × 32 columns, two B vectors per
/// A broadcast instead of one), a task decodes two panels of half the K block into the same
/// stack buffer and runs those tiles: on an Intel Xeon inside a 4-layer Llama prefill (128
/// rows) NF4 286 -> 238 ms, FP8 e4m3 282 -> 241 (docs/BENCHMARKS.md).
constexpr uint64_t kPairKc = 512;
constexpr uint64_t kPanelFloats = (kPanelKc + 1) * kPanelWidth;
constexpr uint64_t kBufferFloats = 2 * (kPairKc + 1) * kPanelWidth;  // >= kPanelFloats
static_assert(kBufferFloats >= kPanelFloats, "one panel of kPanelKc rows fits the buffer");

struct PanelTask {
  const QuantGemmProblem* p = nullptr;
  const MicrokernelSet* ks = nullptr;
  PanelDecodeFn decode = nullptr;
  const float* fp8_values = nullptr;  ///< FP8: the 256 codes' values (unscaled, exact)
  int64_t panels = 0;
  int64_t per_task = 1;  ///< panels a task decodes and tiles together (1 or 2)
};

/// The values of the 256 codes of each FP8 format, made once per process (NaN / infinity codes
/// never occur in a weight the blob reader accepted; they decode as the reference decodes them
/// anyway).
struct Fp8Values {
  float e4m3[256], e5m2[256];
};
const Fp8Values& fp8_values() {
  static const Fp8Values values = [] {
    Fp8Values v{};
    for (int c = 0; c < 256; ++c) {
      v.e4m3[c] = quant::fp8_e4m3_to_float(static_cast<uint8_t>(c));
      v.e5m2[c] = quant::fp8_e5m2_to_float(static_cast<uint8_t>(c));
    }
    return v;
  }();
  return values;
}

/// Weight row `row` (< rows), columns [k0, k1) (k0 a multiple of 16), into column `j` of the
/// panel rows at `out` (out[(k - k0) * 16 + j]), each the reference's code value × scale.
/// quant_fast_path_ok weights: an NF4 block or FP8 scale group never changes inside a vector
/// of 16 columns starting at a multiple of 16.
void decode_row(const QuantWeightView& w, const float* fp8, uint64_t row, uint64_t k0,
                uint64_t k1, int64_t j, float* out) {
  const uint8_t* codes = w.codes + row * w.layout.row_bytes;  // FP8
  const bool nf4 = w.desc.format == QuantWeightFormat::Nf4 ||
                   w.desc.format == QuantWeightFormat::Nf4DoubleQuant;
  for (uint64_t v = k0; v < k1; v += 16) {
    const uint64_t end = v + 16 < k1 ? v + 16 : k1;
    float* o = out + (v - k0) * kPanelWidth + j;
    if (nf4) {
      const float absmax = nf4_absmax_at(w, (row * w.desc.cols + v) >> w.layout.block_shift);
      // Vector (v % 128) / 16 of its chunk: nibble of each of the chunk's 16 words.
      const uint8_t* chunk = w.codes + nf4_chunk_offset(w.desc, w.layout, row, v / kNf4ChunkElems);
      const uint32_t nibble = static_cast<uint32_t>((v % kNf4ChunkElems) / 16);
      for (uint64_t i = 0; i < end - v; ++i) {
        const uint8_t byte = chunk[i * 4 + nibble / 2];
        const uint32_t code = (nibble & 1) ? byte >> 4 : byte & 15u;
        o[i * kPanelWidth] = quant::kNf4Code[code] * absmax;
      }
    } else {
      const float scale = quant_scale_at(w, row, v);
      for (uint64_t i = 0; i < end - v; ++i) o[i * kPanelWidth] = fp8[codes[v + i]] * scale;
    }
  }
}

/// The portable PanelDecodeFn: one weight row at a time (decode_row).
void decode_panel_generic(const QuantWeightView& w, const float* fp8, uint64_t n0, int64_t cols,
                          uint64_t k0, uint64_t k1, float* rows) {
  for (int64_t j = 0; j < kPanelWidth; ++j) {
    if (j < cols) {
      decode_row(w, fp8, n0 + static_cast<uint64_t>(j), k0, k1, j, rows);
    } else {
      for (uint64_t i = 0; i < k1 - k0; ++i) rows[i * kPanelWidth + j] = 0.0f;
    }
  }
}

void run_panel(void* context, size_t index) {
  const PanelTask& t = *static_cast<const PanelTask*>(context);
  const QuantGemmProblem& p = *t.p;
  const QuantWeightView& w = p.w;
  const int64_t n = static_cast<int64_t>(w.desc.rows);
  const uint64_t k = w.desc.cols;
  // Panels [first, first + np) of this task, each decoded into its own stretch of the buffer:
  // [bias 16][kc rows of 16], `stride` floats apart (the packed GEMM's panel layout).
  const int64_t first = static_cast<int64_t>(index) * t.per_task;
  const int64_t np = t.panels - first < t.per_task ? t.panels - first : t.per_task;
  const uint64_t kc = t.per_task == 1 ? kPanelKc : kPairKc;
  const int64_t stride = static_cast<int64_t>((kc + 1) * kPanelWidth);
  const int64_t col0 = first * kPanelWidth;
  alignas(64) float buffer[kBufferFloats];
  int64_t last_cols = kPanelWidth;
  for (int64_t q = 0; q < np; ++q) {
    const int64_t c0 = col0 + q * kPanelWidth;
    const int64_t cols = n - c0 < kPanelWidth ? n - c0 : kPanelWidth;
    for (int64_t j = 0; j < kPanelWidth; ++j) {
      buffer[q * stride + j] = j < cols && p.bias != nullptr ? p.bias[c0 + j] : 0.0f;
    }
    last_cols = cols;
  }
  const int64_t max_rows = t.ks->max_rows;
  for (uint64_t k0 = 0; k0 < k || k0 == 0; k0 += kc) {
    const uint64_t k1 = k0 + kc < k ? k0 + kc : k;
    for (int64_t q = 0; q < np; ++q) {
      const int64_t c0 = col0 + q * kPanelWidth;
      const int64_t cols = n - c0 < kPanelWidth ? n - c0 : kPanelWidth;
      t.decode(w, t.fp8_values, static_cast<uint64_t>(c0), cols, k0, k1,
               buffer + q * stride + kPanelWidth);
    }
    TileArgs args;
    args.lda = p.lda;
    args.b = buffer + kPanelWidth;
    args.bias = buffer;
    args.panel_stride = stride;
    args.kc = static_cast<int64_t>(k1 - k0);
    args.ldc = p.ldc;
    args.last_cols = static_cast<int>(last_cols);
    args.first = k0 == 0;
    args.last = k1 >= k;
    args.out_min = p.out_min;
    args.out_max = p.out_max;
    for (int64_t r0 = 0; r0 < p.m; r0 += max_rows) {
      const int64_t mr = p.m - r0 < max_rows ? p.m - r0 : max_rows;
      args.a = p.a + r0 * p.lda + static_cast<int64_t>(k0);
      args.c = p.c + r0 * p.ldc + col0;
      t.ks->kernels[mr][np](args);
    }
    if (k1 >= k) break;
  }
}

}  // namespace

void panel_gemm(const QuantGemmProblem& p, pthreadpool_t pool) {
  PanelTask t;
  t.p = &p;
  t.ks = gemm_detail::active_microkernels();
  // The AVX2 decoder wherever dispatch runs AVX2 or AVX-512 (both imply it on every CPU so
  // far; F16C is checked); else (and on aarch64, whose NEON GEMM is the "scalar" ISA) the
  // portable one.
  const PanelDecodeFn avx2 = packed_gemm_isa() != GemmIsa::Scalar ? panel_decode_avx2() : nullptr;
  t.decode = avx2 != nullptr ? avx2 : &decode_panel_generic;
  if (p.w.desc.format == QuantWeightFormat::Fp8E4M3) t.fp8_values = fp8_values().e4m3;
  if (p.w.desc.format == QuantWeightFormat::Fp8E5M2) t.fp8_values = fp8_values().e5m2;
  t.panels = gemm_detail::ceil_div(static_cast<int64_t>(p.w.desc.rows), kPanelWidth);
  t.per_task = t.ks->wide_panels >= 2 ? 2 : 1;
  gemm_detail::run_tasks(pool, &run_panel, &t, gemm_detail::ceil_div(t.panels, t.per_task));
}

}  // namespace tern::cpu::quant_detail
