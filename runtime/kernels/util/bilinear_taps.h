// The source taps of bilinear interpolation as ATen computes them (its
// compute_source_index_and_lambda with area_pixel_compute_source_index), in f32: shared by the
// portable upsample_bilinear2d and the cpu backend's resize to planes, which must agree bit for
// bit.
#pragma once

#include <cmath>
#include <cstdint>

namespace tern::portable {

/// Output index o reads source indices i0 and i1 with weights w0 and w1.
struct BilinearTaps {
  int64_t i0, i1;
  float w0, w1;
};

/// The taps of output index `o` of `out` from `in` source indices, `scale` being ATen's
/// area_pixel_compute_scale for the pair.
inline BilinearTaps bilinear_taps(int64_t o, int64_t in, int64_t out, float scale,
                                  bool align_corners) {
  if (in == out) return {o, o, 1.0f, 0.0f};
  float real = align_corners ? scale * static_cast<float>(o)
                             : scale * (static_cast<float>(o) + 0.5f) - 0.5f;
  if (real < 0.0f) real = 0.0f;
  const int64_t floor_index = static_cast<int64_t>(std::floor(real));
  const int64_t i0 = floor_index < in - 1 ? floor_index : in - 1;
  float lambda = real - static_cast<float>(i0);
  lambda = lambda < 0.0f ? 0.0f : lambda > 1.0f ? 1.0f : lambda;
  return {i0, i0 < in - 1 ? i0 + 1 : i0, 1.0f - lambda, lambda};
}

}  // namespace tern::portable
