// grid_sample's coordinate rules (ATen's grid_sampler_compute_source_index and its helpers), in
// f32, for the portable grid_sample2d kernel and the cpu backend's grid-sample node: one set of
// expressions, so both read the same taps with the same weights.
#pragma once

#include <cmath>
#include <cstdint>

namespace tern {
namespace portable {

enum class GridInterp : int64_t { Bilinear = 0, Nearest = 1 };
enum class GridPadding : int64_t { Zeros = 0, Border = 1, Reflection = 2 };

/// ATen's grid_sampler_unnormalize: [-1, 1] to pixel coordinates.
inline float grid_unnormalize(float coord, int64_t size, bool align_corners) {
  const float s = static_cast<float>(size);
  return align_corners ? ((coord + 1.0f) / 2.0f) * (s - 1.0f) : ((coord + 1.0f) * s - 1.0f) / 2.0f;
}

inline float grid_clip(float coord, int64_t size) {
  return std::fmin(static_cast<float>(size - 1), std::fmax(coord, 0.0f));
}

/// ATen's reflect_coordinates: coord reflected into [twice_low / 2, twice_high / 2].
inline float grid_reflect(float coord, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0.0f;
  const float lo = static_cast<float>(twice_low) / 2.0f;
  const float span = static_cast<float>(twice_high - twice_low) / 2.0f;
  coord = std::fabs(coord - lo);
  const float extra = std::fmod(coord, span);
  const int flips = static_cast<int>(std::floor(coord / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

/// ATen's grid_sampler_compute_source_index (a NaN stays NaN: no tap is in bounds).
inline float grid_source_index(float coord, int64_t size, GridPadding padding,
                               bool align_corners) {
  coord = grid_unnormalize(coord, size, align_corners);
  if (padding == GridPadding::Border) return grid_clip(coord, size);
  if (padding == GridPadding::Reflection) {
    coord = align_corners ? grid_reflect(coord, 0, 2 * (size - 1))
                          : grid_reflect(coord, -1, 2 * size - 1);
    return grid_clip(coord, size);
  }
  return coord;
}

inline bool grid_in_bounds(int64_t y, int64_t x, int64_t h, int64_t w) {
  return y >= 0 && y < h && x >= 0 && x < w;
}

/// A source index far outside every image (or not finite) reads nothing; checked before the
/// conversion to an integer, which would overflow.
inline bool grid_index_usable(float index) { return std::fabs(index) < 1e9f; }

/// The four bilinear taps of source point (ix, iy) in an h x w image: their pixel offsets and
/// ATen's weights (each the area of the opposite sub-rectangle), a tap outside the image with
/// weight use false. Order: north-west, north-east, south-west, south-east.
struct BilinearTaps {
  int64_t offset[4] = {0, 0, 0, 0};
  float weight[4] = {0, 0, 0, 0};
  bool inside[4] = {false, false, false, false};
};

inline BilinearTaps grid_bilinear_taps(float ix, float iy, int64_t h, int64_t w) {
  BilinearTaps t;
  const float fx = std::floor(ix), fy = std::floor(iy);
  const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
  const int64_t xs[4] = {x0, x0 + 1, x0, x0 + 1};
  const int64_t ys[4] = {y0, y0, y0 + 1, y0 + 1};
  t.weight[0] = (fx + 1.0f - ix) * (fy + 1.0f - iy);
  t.weight[1] = (ix - fx) * (fy + 1.0f - iy);
  t.weight[2] = (fx + 1.0f - ix) * (iy - fy);
  t.weight[3] = (ix - fx) * (iy - fy);
  for (int k = 0; k < 4; ++k) {
    t.inside[k] = grid_in_bounds(ys[k], xs[k], h, w);
    t.offset[k] = t.inside[k] ? ys[k] * w + xs[k] : 0;
  }
  return t;
}

}  // namespace portable
}  // namespace tern
