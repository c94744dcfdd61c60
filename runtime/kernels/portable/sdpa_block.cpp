// One attention head, a block of r query rows at a time (see sdpa_block.h):
//   1. scores [r, keys] = scale * Q_blk K^T: a register tile of MR query rows x NR keys over a
//      stack panel holding K^T for NR keys (packed once per block), or, for fewer than
//      kPackedMinRows query rows in all, one vectorized dot product per score;
//   2. per row: mask, max, p = e^(s - max) (vmath::exp_nonpositive), sum in double;
//   3. out_blk [r, Ev] = P V: a register tile of MR rows x NR columns reading V's rows in
//      place, then each row times 1 / sum (zeros for a row with nothing attended).
// With is_causal, key slivers and key ranges beyond a tile's last row are skipped (keys = at
// most row0 + r); with a bool mask, the keys after the last one any row of the block attends.
// Plain C++ that the compiler vectorizes; on x86-64 the same template is also built for
// AVX2+FMA and AVX-512 and picked at run time (simd_dispatch.h), as gemm.cpp does.
//
// Why not gemm_f32: its single-row products take matrix-vector loops that sum in another
// order, and the block height here depends on how much temp memory the caller gave, so the
// result would too. Here every score and output element is one accumulator summed along k in
// order (chunks of KC keys added in order), whatever the tile or block shape; a weight of 0
// adds an exact 0 (value rows with inf or NaN take a row-by-row path that skips them).
#include "runtime/kernels/portable/sdpa_block.h"

#include <cmath>
#include <cstring>

#include "runtime/kernels/util/scratch_sizes.h"
#include "runtime/kernels/util/simd_dispatch.h"
#include "runtime/kernels/util/vector_math.h"

namespace tern::portable {
namespace {

/// Below this many query rows in all, scores are dot products (packing K^T would cost more
/// than it saves). Decided by the head's row count, never by the block height.
constexpr int64_t kPackedMinRows = 4;
/// Lanes of the dot products, the row maximum and the row sum (a fixed summation order).
constexpr int kLanes = 16;

// W floats as one GCC/Clang vector: arithmetic on it is explicit SIMD, so the register tile
// below does not depend on what the auto-vectorizer makes of it (at -O3 GCC 12 turns a plain
// tile loop into in-order reductions along k, many times slower).
template <int W>
struct VecOf;
template <>
struct VecOf<4> {
  typedef float type __attribute__((vector_size(16)));
};
template <>
struct VecOf<8> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct VecOf<16> {
  typedef float type __attribute__((vector_size(64)));
};
template <int W>
using Vec = typename VecOf<W>::type;
static_assert(sizeof(Vec<16>) == 16 * sizeof(float), "a vector of 16 floats");

// Unaligned loads and stores (by reference: vectors passed by value draw -Wpsabi notes).
template <int W>
TERN_SIMD_INLINE void load_vec(Vec<W>& v, const float* p) {
  std::memcpy(&v, p, sizeof(v));
}

template <int W>
TERN_SIMD_INLINE void store_vec(float* p, const Vec<W>& v) {
  std::memcpy(p, &v, sizeof(v));
}

// acc[MR][NV*W] = A[MR rows, kc] * B[kc, NV*W] (A's element (i, p) at a[i * rs_a + p], B's row p
// at b + p * rs_b); then C's MR x nr corner = f_i * acc (first) or C + f_i * acc, with row i's
// factor f_i = factor[i]. Each accumulator sums along p in order.
template <int MR, int NV, int W>
TERN_SIMD_INLINE void micro_tile(int64_t kc, const float* a, int64_t rs_a, const float* b,
                                 int64_t rs_b, int nr, const float* factor, bool first, float* c,
                                 int64_t rs_c) {
  Vec<W> acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 16
    for (int jv = 0; jv < NV; ++jv) acc[i][jv] = Vec<W>{};
  }
  for (int64_t p = 0; p < kc; ++p) {
    Vec<W> bv[NV];
#pragma GCC unroll 16
    for (int jv = 0; jv < NV; ++jv) load_vec<W>(bv[jv], b + p * rs_b + jv * W);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const float av = a[i * rs_a + p];
#pragma GCC unroll 16
      for (int jv = 0; jv < NV; ++jv) acc[i][jv] += av * bv[jv];
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    float* ci = c + i * rs_c;
    const float f = factor[i];
    if (nr == NV * W) {
#pragma GCC unroll 16
      for (int jv = 0; jv < NV; ++jv) {
        float* cv = ci + jv * W;
        Vec<W> out;
        if (first) {
          out = f * acc[i][jv];
        } else {
          load_vec<W>(out, cv);
          out = out + f * acc[i][jv];
        }
        store_vec<W>(cv, out);
      }
    } else {
      float row[NV * W];
      for (int jv = 0; jv < NV; ++jv) store_vec<W>(row + jv * W, acc[i][jv]);
      for (int j = 0; j < nr; ++j) ci[j] = first ? f * row[j] : ci[j] + f * row[j];
    }
  }
}

// Rows [0, rows) of a product in tiles of MR, then 4, 2 and 1 rows (row i's factor: factor[i]).
// kc_of(i, mr) gives the k extent of the tile starting at row i (<= 0: skip the tile).
template <int MR, int NV, int W, typename KcOf>
TERN_SIMD_INLINE void row_tiles(int64_t rows, KcOf kc_of, const float* a, int64_t rs_a,
                                const float* b, int64_t rs_b, int nr, const float* factor,
                                bool first, float* c, int64_t rs_c) {
  int64_t i = 0;
  for (; i + MR <= rows; i += MR) {
    const int64_t kc = kc_of(i, MR);
    if (kc > 0) {
      micro_tile<MR, NV, W>(kc, a + i * rs_a, rs_a, b, rs_b, nr, factor + i, first, c + i * rs_c,
                            rs_c);
    }
  }
  if (MR > 4 && i + 4 <= rows) {
    const int64_t kc = kc_of(i, 4);
    if (kc > 0) {
      micro_tile<4, NV, W>(kc, a + i * rs_a, rs_a, b, rs_b, nr, factor + i, first, c + i * rs_c,
                           rs_c);
    }
    i += 4;
  }
  if (MR > 2 && i + 2 <= rows) {
    const int64_t kc = kc_of(i, 2);
    if (kc > 0) {
      micro_tile<2, NV, W>(kc, a + i * rs_a, rs_a, b, rs_b, nr, factor + i, first, c + i * rs_c,
                           rs_c);
    }
    i += 2;
  }
  if (i < rows) {
    const int64_t kc = kc_of(i, 1);
    if (kc > 0) {
      micro_tile<1, NV, W>(kc, a + i * rs_a, rs_a, b, rs_b, nr, factor + i, first, c + i * rs_c,
                           rs_c);
    }
  }
}

// sum_p a[p] * b[p] in kLanes partial sums (vectorized), folded in a fixed tree, plus the tail.
TERN_SIMD_INLINE float dot_lanes(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t p = 0;
  for (; p + kLanes <= n; p += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[p + l] * b[p + l];
  }
  float tail = 0.0f;
  for (; p < n; ++p) tail += a[p] * b[p];
  for (int w = kLanes / 2; w >= 1; w /= 2) {
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  }
  return acc[0] + tail;
}

// Per-block state of each row: 1 / sum, or 0 with `empty` for a row with nothing attended.
struct RowNorm {
  float inv;
  bool empty;
};

template <int MR, int NV, int W, int64_t KC>
struct HeadKernel {
  static constexpr int NR = NV * W;
  const SdpaHead& h;
  float* scores;

  // Keys row `row` attends before masking: all, or j <= row when causal.
  TERN_SIMD_INLINE int64_t key_limit(int64_t row, int64_t keys) const {
    return h.causal && row + 1 < keys ? row + 1 : keys;
  }

  // scores[i, j] = scale * q[row0 + i] . k[j] for i < r, j < keys (ld = keys); with causal,
  // entries beyond a tile's last row may be left unwritten (softmax does not read them).
  // scale_rows: r copies of the scale (the tiles' row factors).
  TERN_SIMD_INLINE void compute_scores(int64_t row0, int64_t r, int64_t keys,
                                       const float* scale_rows) const {
    const float* q = h.q + row0 * h.e;
    const int64_t ld = keys;
    if (h.e == 0) {  // empty dot products
      for (int64_t i = 0; i < r * ld; ++i) scores[i] = 0.0f * h.scale;
      return;
    }
    if (h.l < kPackedMinRows) {
      for (int64_t i = 0; i < r; ++i) {
        const int64_t lim = key_limit(row0 + i, keys);
        for (int64_t j = 0; j < lim; ++j) {
          scores[i * ld + j] = h.scale * dot_lanes(q + i * h.e, h.k + j * h.e, h.e);
        }
      }
      return;
    }
    alignas(64) float panel[KC * NR];
    for (int64_t j0 = 0; j0 < keys; j0 += NR) {
      const int nr = static_cast<int>(keys - j0 < NR ? keys - j0 : NR);
      // With causal, rows before i_first attend none of these keys.
      const int64_t i_first = h.causal && j0 > row0 ? j0 - row0 : 0;
      for (int64_t e0 = 0; e0 < h.e; e0 += KC) {
        const int64_t kc = h.e - e0 < KC ? h.e - e0 : KC;
        // panel[p, jj] = k[j0 + jj, e0 + p], zero for jj >= nr.
        if (nr < NR) std::memset(panel, 0, sizeof(float) * static_cast<size_t>(kc * NR));
        for (int jj = 0; jj < nr; ++jj) {
          const float* src = h.k + (j0 + jj) * h.e + e0;
          for (int64_t p = 0; p < kc; ++p) panel[p * NR + jj] = src[p];
        }
        row_tiles<MR, NV, W>(
            r - i_first, [kc](int64_t, int64_t) { return kc; }, q + (i_first)*h.e + e0, h.e, panel,
            NR, nr, scale_rows, e0 == 0, scores + i_first * ld + j0, ld);
      }
    }
  }

  // Row i of the block: mask, softmax numerators in place (zeros past the key limit), norm.
  TERN_SIMD_INLINE RowNorm softmax_row(int64_t row, float* s, int64_t keys) const {
    const int64_t lim = key_limit(row, keys);
    if (h.mask != nullptr) {
      const int64_t base = h.mask_offset + row * h.mask_stride_l;
      if (h.mask_is_bool) {
        const uint8_t* m = static_cast<const uint8_t*>(h.mask) + base;
        for (int64_t j = 0; j < lim; ++j) s[j] = m[j * h.mask_stride_s] != 0 ? s[j] : -INFINITY;
      } else {
        const float* m = static_cast<const float*>(h.mask) + base;
        for (int64_t j = 0; j < lim; ++j) s[j] += m[j * h.mask_stride_s];
      }
    }
    float mx[kLanes];
    int nan[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      mx[l] = -INFINITY;
      nan[l] = 0;
    }
    int64_t j = 0;
    for (; j + kLanes <= lim; j += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const float v = s[j + l];
        mx[l] = v > mx[l] ? v : mx[l];
        nan[l] |= v != v;
      }
    }
    for (; j < lim; ++j) {
      mx[0] = s[j] > mx[0] ? s[j] : mx[0];
      nan[0] |= s[j] != s[j];
    }
    float m = mx[0];
    int any_nan = nan[0];
    for (int l = 1; l < kLanes; ++l) {
      m = mx[l] > m ? mx[l] : m;
      any_nan |= nan[l];
    }
    if (m == -INFINITY && any_nan == 0) {  // nothing attended: zeros
      std::memset(s, 0, sizeof(float) * static_cast<size_t>(keys));
      return {0.0f, true};
    }
    for (j = 0; j + kLanes <= lim; j += kLanes) {  // fixed-length inner loops vectorize at -O2
      for (int l = 0; l < kLanes; ++l) s[j + l] = vmath::exp_nonpositive(s[j + l] - m);
    }
    for (; j < lim; ++j) s[j] = vmath::exp_nonpositive(s[j] - m);
    for (j = lim; j < keys; ++j) s[j] = 0.0f;
    double sum[kLanes / 2] = {};
    for (j = 0; j + kLanes / 2 <= lim; j += kLanes / 2) {
      for (int l = 0; l < kLanes / 2; ++l) sum[l] += static_cast<double>(s[j + l]);
    }
    for (; j < lim; ++j) sum[0] += static_cast<double>(s[j]);
    for (int w = kLanes / 4; w >= 1; w /= 2) {
      for (int l = 0; l < w; ++l) sum[l] += sum[l + w];
    }
    return {static_cast<float>(1.0 / sum[0]), false};
  }

  // out rows [row0, row0 + r) = inv_i * (P V) for P = scores [r, keys] (ld = keys).
  TERN_SIMD_INLINE void weighted_values(int64_t row0, int64_t r, int64_t keys,
                                        const float* inv) const {
    alignas(64) float panel[KC * NR];
    const int64_t ld = keys;
    for (int64_t c0 = 0; c0 < h.ev; c0 += NR) {
      const int nr = static_cast<int>(h.ev - c0 < NR ? h.ev - c0 : NR);
      for (int64_t p0 = 0; p0 < keys; p0 += KC) {
        const int64_t kc = keys - p0 < KC ? keys - p0 : KC;
        const float* b = h.v + p0 * h.ev + c0;
        int64_t rs_b = h.ev;
        if (nr < NR) {  // the last columns: a zero-padded copy (reading NR would overrun v)
          for (int64_t p = 0; p < kc; ++p) {
            std::memcpy(panel + p * NR, b + p * h.ev, sizeof(float) * static_cast<size_t>(nr));
            for (int jj = nr; jj < NR; ++jj) panel[p * NR + jj] = 0.0f;
          }
          b = panel;
          rs_b = NR;
        }
        const bool causal = h.causal;
        auto kc_of = [=](int64_t i, int64_t mr) {
          if (!causal) return kc;
          const int64_t end = row0 + i + mr - p0;  // keys past the tile's last row weigh 0
          return end < kc ? end : kc;
        };
        row_tiles<MR, NV, W>(r, kc_of, scores + p0, ld, b, rs_b, nr, inv, p0 == 0,
                             h.out + row0 * h.ev + c0, h.ev);
      }
    }
  }

  // out row = sum over keys with a nonzero weight of p_j * v_j, in key order.
  TERN_SIMD_INLINE void weighted_values_skipping_zeros(int64_t row, const float* p,
                                                       int64_t keys) const {
    float* o = h.out + row * h.ev;
    for (int64_t c = 0; c < h.ev; ++c) o[c] = 0.0f;
    for (int64_t j = 0; j < keys; ++j) {
      if (p[j] == 0.0f) continue;
      const float* vj = h.v + j * h.ev;
      for (int64_t c = 0; c < h.ev; ++c) o[c] += p[j] * vj[c];
    }
  }

  // With a mask: 1 + the last key that rows [row0, row0 + r) attend (at least 1): a bool mask's
  // true, a float mask's value other than -inf. The keys after it are masked in every row of
  // the block (weight exactly 0 for a finite score), so the block stops there: a decode step
  // over a cache filled to its position reads K and V up to the position only (the exporter
  // writes a bool mask from the inputs as the additive float one). Results are bitwise those
  // over every key (the dropped terms are trailing zeros of sums taken in key order); a NaN
  // or +inf score at a dropped key is not seen, as a bool mask's masked keys never are.
  TERN_SIMD_INLINE int64_t attended_extent(int64_t row0, int64_t r) const {
    if (h.mask == nullptr) return h.s;
    int64_t extent = 1;
    for (int64_t i = row0; i < row0 + r; ++i) {
      const int64_t base = h.mask_offset + i * h.mask_stride_l;
      if (h.mask_is_bool) {
        const uint8_t* row = static_cast<const uint8_t*>(h.mask) + base;
        for (int64_t j = key_limit(i, h.s) - 1; j >= extent; --j) {
          if (row[j * h.mask_stride_s] != 0) {
            extent = j + 1;
            break;
          }
        }
      } else {
        const float* row = static_cast<const float*>(h.mask) + base;
        for (int64_t j = key_limit(i, h.s) - 1; j >= extent; --j) {
          if (row[j * h.mask_stride_s] != -INFINITY) {
            extent = j + 1;
            break;
          }
        }
      }
    }
    return extent;
  }

  TERN_SIMD_INLINE void run(int64_t block_rows) const {
    // Any inf or NaN in the value rows any query attends (an all-ones exponent field)? Then
    // 0 * v is not 0.
    const int64_t extent = attended_extent(0, h.l);
    uint32_t non_finite = 0;
    for (int64_t i = 0; i < extent * h.ev; ++i) {
      non_finite |= (vmath::bits_of(h.v[i]) & 0x7F800000u) == 0x7F800000u;
    }
    float scale_rows[kSdpaMaxBlockRows];
    float inv[kSdpaMaxBlockRows];
    bool empty[kSdpaMaxBlockRows];
    for (int64_t i = 0; i < block_rows; ++i) scale_rows[i] = h.scale;
    for (int64_t row0 = 0; row0 < h.l; row0 += block_rows) {
      const int64_t r = h.l - row0 < block_rows ? h.l - row0 : block_rows;
      int64_t keys = h.causal && row0 + r < h.s ? row0 + r : h.s;
      if (h.mask != nullptr) {
        const int64_t attended = r == h.l ? extent : attended_extent(row0, r);
        keys = attended < keys ? attended : keys;
      }
      compute_scores(row0, r, keys, scale_rows);
      for (int64_t i = 0; i < r; ++i) {
        const RowNorm n = softmax_row(row0 + i, scores + i * keys, keys);
        inv[i] = n.inv;
        empty[i] = n.empty;
      }
      if (non_finite == 0) {  // rows with nothing attended have P = 0 and inv = 0: zeros
        weighted_values(row0, r, keys, inv);
        continue;
      }
      for (int64_t i = 0; i < r; ++i) {
        float* o = h.out + (row0 + i) * h.ev;
        if (empty[i]) {
          std::memset(o, 0, sizeof(float) * static_cast<size_t>(h.ev));
          continue;
        }
        weighted_values_skipping_zeros(row0 + i, scores + i * keys, keys);
        for (int64_t c = 0; c < h.ev; ++c) o[c] *= inv[i];
      }
    }
  }
};

void head_baseline(const SdpaHead& h, float* scores, int64_t rows) {
  HeadKernel<4, 4, 4, 256>{h, scores}.run(rows);
}

#if defined(TERN_SIMD_X86_DISPATCH)
TERN_SIMD_TARGET_AVX2 void head_avx2(const SdpaHead& h, float* scores, int64_t rows) {
  HeadKernel<6, 2, 8, 256>{h, scores}.run(rows);
}

TERN_SIMD_TARGET_AVX512 void head_avx512(const SdpaHead& h, float* scores, int64_t rows) {
  HeadKernel<8, 2, 16, 256>{h, scores}.run(rows);
}
#endif

}  // namespace

void sdpa_head(const SdpaHead& head, float* scores, int64_t block_rows) {
  constexpr int64_t kMost = static_cast<int64_t>(kSdpaMaxBlockRows);
  if (block_rows > kMost) block_rows = kMost;
  if (block_rows < 1) block_rows = 1;
#if defined(TERN_SIMD_X86_DISPATCH)
  switch (simd_level()) {
    case SimdLevel::Avx512:
      head_avx512(head, scores, block_rows);
      return;
    case SimdLevel::Avx2:
      head_avx2(head, scores, block_rows);
      return;
    default:
      break;
  }
#endif
  head_baseline(head, scores, block_rows);
}

}  // namespace tern::portable
