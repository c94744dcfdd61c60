// NCHW <-> NHWC at the delegate's edges: split over the pool by blocks of pixels; RGB and one
// channel go pixel by pixel so that every store is sequential, four channels or more in 4x4
// register transposes (SSE2, x86-64's baseline), else in square tiles.
#include "backends/cpu/runtime/layout_transpose.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

constexpr uint64_t kTile = 16;
/// Pixels per task: enough work to pay for a pool dispatch.
constexpr uint64_t kPixelsPerTask = 8192;
/// Up to this many channels, a pixel's channels are written one after the other.
constexpr uint64_t kFewChannels = 8;

/// One conversion: `planar` is [n][c][hw], `packed` [n][hw][c].
struct Transpose {
  const float* src = nullptr;
  float* dst = nullptr;
  uint64_t n = 0, c = 0, hw = 0;
  uint64_t blocks_per_image = 1;
  bool to_nhwc = true;
};

/// The few-channel NCHW -> NHWC loop with the channel count known to the compiler.
template <uint64_t C>
void planes_to_pixels(const float* src, float* dst, uint64_t hw, uint64_t p0, uint64_t p1) {
  const float* planes[C];
  for (uint64_t ch = 0; ch < C; ++ch) planes[ch] = src + ch * hw;
  for (uint64_t p = p0; p < p1; ++p) {
    for (uint64_t ch = 0; ch < C; ++ch) dst[p * C + ch] = planes[ch][p];
  }
}

/// RGB planes to pixels: four pixels per step with SSE2 shuffles (x86-64's baseline), so that
/// a 224x224 image costs about half of the scalar loop.
void rgb_to_pixels(const float* src, float* dst, uint64_t hw, uint64_t p0, uint64_t p1) {
#if defined(__SSE2__)
  const float* r = src;
  const float* g = src + hw;
  const float* b = src + 2 * hw;
  uint64_t p = p0;
  for (; p + 4 <= p1; p += 4) {
    const __m128 vr = _mm_loadu_ps(r + p), vg = _mm_loadu_ps(g + p), vb = _mm_loadu_ps(b + p);
    const __m128 rg_lo = _mm_unpacklo_ps(vr, vg);  // r0 g0 r1 g1
    const __m128 rg_hi = _mm_unpackhi_ps(vr, vg);  // r2 g2 r3 g3
    const __m128 br_lo = _mm_unpacklo_ps(vb, vr);  // b0 r0 b1 r1
    const __m128 br_hi = _mm_unpackhi_ps(vb, vr);  // b2 r2 b3 r3
    const __m128 gb_lo = _mm_unpacklo_ps(vg, vb);  // g0 b0 g1 b1
    const __m128 gb_hi = _mm_unpackhi_ps(vg, vb);  // g2 b2 g3 b3
    float* d = dst + p * 3;
    _mm_storeu_ps(d, _mm_shuffle_ps(rg_lo, br_lo, _MM_SHUFFLE(3, 0, 1, 0)));      // r0 g0 b0 r1
    _mm_storeu_ps(d + 4, _mm_shuffle_ps(gb_lo, rg_hi, _MM_SHUFFLE(1, 0, 3, 2)));  // g1 b1 r2 g2
    _mm_storeu_ps(d + 8, _mm_shuffle_ps(br_hi, gb_hi, _MM_SHUFFLE(3, 2, 3, 0)));  // b2 r3 g3 b3
  }
  planes_to_pixels<3>(src, dst, hw, p, p1);
#else
  planes_to_pixels<3>(src, dst, hw, p0, p1);
#endif
}

#if defined(__SSE2__)
/// Pixels [p0, p1) of one image, channels [0, c4) (a multiple of 4), in 4x4 blocks: four
/// pixels' four channels loaded, transposed in registers, stored as four channels' four pixels
/// (or the reverse), a band of kBand pixels at a time so that the band's packed rows stay in
/// L1 while every plane is written (read) sequentially. The pixels past the last multiple of 4
/// are left to the caller.
void convert_blocks_sse(const float* src, float* dst, uint64_t c, uint64_t hw, uint64_t c4,
                        uint64_t p0, uint64_t p1, bool to_nhwc) {
  constexpr uint64_t kBand = 64;
  for (uint64_t b0 = p0; b0 + 4 <= p1; b0 += kBand) {
    const uint64_t b1 = b0 + kBand <= p1 ? b0 + kBand : p0 + (p1 - p0) / 4 * 4;
    for (uint64_t ch = 0; ch < c4; ch += 4) {
      for (uint64_t p = b0; p < b1; p += 4) {
        // Four rows of four floats `in_step` apart become four columns `out_step` apart:
        // planes' pixels to pixels' channels, or the reverse.
        const float* in = to_nhwc ? src + ch * hw + p : src + p * c + ch;
        float* out = to_nhwc ? dst + p * c + ch : dst + ch * hw + p;
        const uint64_t in_step = to_nhwc ? hw : c, out_step = to_nhwc ? c : hw;
        __m128 r0 = _mm_loadu_ps(in), r1 = _mm_loadu_ps(in + in_step);
        __m128 r2 = _mm_loadu_ps(in + 2 * in_step), r3 = _mm_loadu_ps(in + 3 * in_step);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(out, r0);
        _mm_storeu_ps(out + out_step, r1);
        _mm_storeu_ps(out + 2 * out_step, r2);
        _mm_storeu_ps(out + 3 * out_step, r3);
      }
    }
  }
}
#endif

/// dst[p][ch] = src[ch][p] (to NHWC) or dst[ch][p] = src[p][ch] (to NCHW) for pixels
/// [p0, p1) of one image whose planes are `hw` floats apart.
void convert_block(const Transpose& t, const float* src, float* dst, uint64_t p0, uint64_t p1) {
  const uint64_t c = t.c, hw = t.hw;
  if (t.to_nhwc && c == 3) return rgb_to_pixels(src, dst, hw, p0, p1);
  if (t.to_nhwc && c == 1) return planes_to_pixels<1>(src, dst, hw, p0, p1);
  // Elements [pixel][channel] not yet converted: all, or (SSE2) the channels past the last
  // multiple of 4 and the pixels past the last multiple of 4 of the range.
  uint64_t c_done = 0, p_done = p0;
#if defined(__SSE2__)
  if (c >= 4) {
    c_done = c / 4 * 4;
    p_done = p0 + (p1 - p0) / 4 * 4;
    convert_blocks_sse(src, dst, c, hw, c_done, p0, p1, t.to_nhwc);
  }
#endif
  auto copy = [&](uint64_t q0, uint64_t q1, uint64_t c0, uint64_t c1) {
    if (t.to_nhwc) {
      for (uint64_t p = q0; p < q1; ++p) {
        for (uint64_t ch = c0; ch < c1; ++ch) dst[p * c + ch] = src[ch * hw + p];
      }
    } else {
      for (uint64_t ch = c0; ch < c1; ++ch) {
        for (uint64_t p = q0; p < q1; ++p) dst[ch * hw + p] = src[p * c + ch];
      }
    }
  };
  if (c_done == 0 && c > kFewChannels) {
    // No SIMD blocks (another ISA): square tiles, so both sides stay in cache.
    for (uint64_t q0 = p0; q0 < p1; q0 += kTile) {
      const uint64_t q1 = q0 + kTile < p1 ? q0 + kTile : p1;
      for (uint64_t c0 = 0; c0 < c; c0 += kTile) copy(q0, q1, c0, c0 + kTile < c ? c0 + kTile : c);
    }
    return;
  }
  copy(p0, p_done, c_done, c);  // the last channels of the block pixels
  copy(p_done, p1, 0, c);       // the last pixels, every channel
}

void run_block(void* context, size_t task) {
  const Transpose& t = *static_cast<const Transpose*>(context);
  const uint64_t image = task / t.blocks_per_image;
  const uint64_t block = task % t.blocks_per_image;
  const uint64_t p0 = block * t.hw / t.blocks_per_image;
  const uint64_t p1 = (block + 1) * t.hw / t.blocks_per_image;
  const uint64_t offset = image * t.c * t.hw;
  convert_block(t, t.src + offset, t.dst + offset, p0, p1);
}

void convert(const float* src, float* dst, uint64_t n, uint64_t c, uint64_t hw, bool to_nhwc,
             pthreadpool_t pool) {
  Transpose t;
  t.src = src;
  t.dst = dst;
  t.n = n;
  t.c = c;
  t.hw = hw;
  t.to_nhwc = to_nhwc;
  if (t.n == 0 || t.c == 0 || t.hw == 0) return;
  const uint64_t threads = pool != nullptr ? pthreadpool_get_threads_count(pool) : 1;
  const uint64_t blocks = (t.hw * t.c + kPixelsPerTask - 1) / kPixelsPerTask;
  t.blocks_per_image = threads <= 1 ? 1 : (blocks < t.hw ? (blocks > 0 ? blocks : 1) : t.hw);
  const size_t tasks = static_cast<size_t>(t.n * t.blocks_per_image);
  if (threads <= 1 || tasks == 1) {
    for (size_t i = 0; i < tasks; ++i) run_block(&t, i);
    return;
  }
  pthreadpool_parallelize_1d(pool, &run_block, &t, tasks, kPoolFlags);
}

}  // namespace

void nchw_to_nhwc(const float* src, float* dst, uint64_t n, uint64_t c, uint64_t hw,
                  pthreadpool_t pool) {
  convert(src, dst, n, c, hw, /*to_nhwc=*/true, pool);
}

void nhwc_to_nchw(const float* src, float* dst, uint64_t n, uint64_t c, uint64_t hw,
                  pthreadpool_t pool) {
  convert(src, dst, n, c, hw, /*to_nhwc=*/false, pool);
}

}  // namespace tern::cpu
