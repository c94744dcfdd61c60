// The portable kernel of the fused quantized GEMM (quant_gemm.h): each weight row decoded 16
// elements at a time (the same bit moves and scale factors as the SIMD kernels), dotted with
// up to kRows rows of A. On aarch64 the dot products use NEON, and in the fast path's layouts
// NF4 takes the NEON byte-plane kernel (quant_nf4_planes_neon.cpp), FP8 the NEON f16 kernel
// (quant_fp8_neon.cpp).
#include <cstring>

#include "backends/cpu/kernels/quant_gemm.h"
#include "runtime/kernels/util/quant_formats.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace tern::cpu::quant_detail {
namespace {

constexpr int64_t kRows = 8;

/// 16 decoded weights of row `row` at column k0 (0 past the row's end).
void decode16(const QuantWeightView& w, ScaleCursor& cur, uint64_t row, uint64_t k0, float* out) {
  float s = 0.0f;
  if (!cur.vector(w, row, k0, &s)) {
    quant_fill16(w, row, k0, out);
    return;
  }
  const uint64_t k = w.desc.cols;
  const uint64_t lanes = k0 + 16 <= k ? 16 : k - k0;
  const uint8_t* codes = w.codes + row * w.layout.row_bytes;  // FP8
  switch (w.desc.format) {
    case QuantWeightFormat::Nf4:
    case QuantWeightFormat::Nf4DoubleQuant: {
      const uint8_t* chunk = w.codes + nf4_chunk_offset(w.desc, w.layout, row, k0 / kNf4ChunkElems);
      const uint32_t shift = static_cast<uint32_t>((k0 % kNf4ChunkElems) / 16) * 4;
      for (uint64_t i = 0; i < lanes; ++i) {
        uint32_t word;
        std::memcpy(&word, chunk + 4 * i, 4);
        out[i] = quant::kNf4Code[(word >> shift) & 15u] * s;
      }
      break;
    }
    case QuantWeightFormat::Fp8E4M3:
    case QuantWeightFormat::Fp8E5M2: {
      const bool e4m3 = w.desc.format == QuantWeightFormat::Fp8E4M3;
      const int sh = e4m3 ? kE4m3Shift : kE5m2Shift;
      const uint32_t mask = e4m3 ? kE4m3Mask : kE5m2Mask;
      // A code with exponent 0 (an FP8 subnormal) would be a subnormal f32 here, which the
      // cpu delegate's flush-to-zero mode reads as 0 (pool_flags.h): its mantissa field as an
      // integer times s · 2^-149 instead (the same real product, rounded once; both operands
      // normal).
      const float sub = s * 0x1p-75f * 0x1p-74f;
      for (uint64_t i = 0; i < lanes; ++i) {
        const int32_t sx = static_cast<int8_t>(codes[k0 + i]);
        const uint32_t bits = (static_cast<uint32_t>(sx) << sh) & mask;
        if ((bits & 0x7F800000u) != 0) {
          out[i] = quant::bits_to_float(bits) * s;
        } else {
          const float m = static_cast<float>(bits & 0x007FFFFFu);
          out[i] = (bits >> 31 ? -m : m) * sub;
        }
      }
      break;
    }
  }
  for (uint64_t i = lanes; i < 16; ++i) out[i] = 0.0f;
}

float dot16(const float* w, const float* a, uint64_t lanes) {
#if defined(__aarch64__)
  if (lanes == 16) {
    float32x4_t acc = vmulq_f32(vld1q_f32(w), vld1q_f32(a));
    acc = vfmaq_f32(acc, vld1q_f32(w + 4), vld1q_f32(a + 4));
    acc = vfmaq_f32(acc, vld1q_f32(w + 8), vld1q_f32(a + 8));
    acc = vfmaq_f32(acc, vld1q_f32(w + 12), vld1q_f32(a + 12));
    return vaddvq_f32(acc);
  }
#endif
  float sum = 0.0f;
  for (uint64_t i = 0; i < lanes; ++i) sum += w[i] * a[i];
  return sum;
}

void rows_generic(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
#if defined(__aarch64__)
  const QuantWeightFormat f = p.w.desc.format;
  if ((f == QuantWeightFormat::Nf4 || f == QuantWeightFormat::Nf4DoubleQuant) &&
      quant_fast_path_ok(p.w)) {
    return nf4_planes_rows_neon(p, n0, n1);
  }
  if ((f == QuantWeightFormat::Fp8E4M3 || f == QuantWeightFormat::Fp8E5M2) &&
      quant_fast_path_ok(p.w) && fp8_rows_neon(p, n0, n1)) {
    return;
  }
#endif
  const uint64_t k = p.w.desc.cols;
  float wv[16];
  for (int64_t n = n0; n < n1; ++n) {
    for (int64_t r0 = 0; r0 < p.m; r0 += kRows) {
      const int64_t mr = p.m - r0 < kRows ? p.m - r0 : kRows;
      float acc[kRows] = {};
      ScaleCursor cur;
      for (uint64_t k0 = 0; k0 < k; k0 += 16) {
        decode16(p.w, cur, static_cast<uint64_t>(n), k0, wv);
        const uint64_t lanes = k0 + 16 <= k ? 16 : k - k0;
        for (int64_t r = 0; r < mr; ++r) acc[r] += dot16(wv, p.a + (r0 + r) * p.lda + k0, lanes);
      }
      for (int64_t r = 0; r < mr; ++r) p.c[(r0 + r) * p.ldc + n] = quant_output(p, n, acc[r]);
    }
  }
}

}  // namespace

QuantRowsFn quant_rows_generic() { return &rows_generic; }

}  // namespace tern::cpu::quant_detail
