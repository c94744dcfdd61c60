// tern::grid_sample2d(x [N, C, H, W], grid [N, HO, WO, 2], mode, padding_mode, align_corners,
// out [N, C, HO, WO]): ATen's grid_sampler_2d in f32 -- each output pixel reads x at the point
// grid[n, i, j] = (gx, gy) in [-1, 1] coordinates (-1 the left / top edge: the first pixel's
// centre with align_corners, its outer edge without), bilinear or nearest, with zeros, border or
// reflection padding. Mask2Former's deformable attention, RAFT's warping, spatial transformers.
#include <cinttypes>
#include <cmath>

#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

namespace {

enum class Interp : int64_t { Bilinear = 0, Nearest = 1 };
enum class Padding : int64_t { Zeros = 0, Border = 1, Reflection = 2 };

// ATen's grid_sampler_unnormalize.
float unnormalize(float coord, int64_t size, bool align_corners) {
  const float s = static_cast<float>(size);
  return align_corners ? ((coord + 1.0f) / 2.0f) * (s - 1.0f) : ((coord + 1.0f) * s - 1.0f) / 2.0f;
}

float clip(float coord, int64_t size) {
  return std::fmin(static_cast<float>(size - 1), std::fmax(coord, 0.0f));
}

// ATen's reflect_coordinates: coord reflected into [twice_low / 2, twice_high / 2].
float reflect(float coord, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0.0f;
  const float lo = static_cast<float>(twice_low) / 2.0f;
  const float span = static_cast<float>(twice_high - twice_low) / 2.0f;
  coord = std::fabs(coord - lo);
  const float extra = std::fmod(coord, span);
  const int flips = static_cast<int>(std::floor(coord / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

// ATen's grid_sampler_compute_source_index (a NaN stays NaN: no tap is in bounds).
float source_index(float coord, int64_t size, Padding padding, bool align_corners) {
  coord = unnormalize(coord, size, align_corners);
  if (padding == Padding::Border) return clip(coord, size);
  if (padding == Padding::Reflection) {
    coord = align_corners ? reflect(coord, 0, 2 * (size - 1)) : reflect(coord, -1, 2 * size - 1);
    return clip(coord, size);
  }
  return coord;
}

bool in_bounds(int64_t y, int64_t x, int64_t h, int64_t w) {
  return y >= 0 && y < h && x >= 0 && x < w;
}

// A source index far outside every image (or not finite) reads nothing; checked before the
// conversion to an integer, which would overflow.
bool usable(float index) { return std::fabs(index) < 1e9f; }

}  // namespace

Error grid_sample2d(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::grid_sample2d";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 6, 6));
  TERN_ASSIGN_OR_RETURN(const TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const TensorView* grid, tensor_arg(op, args, 1, "grid"));
  TERN_ASSIGN_OR_RETURN(const int64_t mode, int_arg(op, args, 2, "mode"));
  TERN_ASSIGN_OR_RETURN(const int64_t padding_mode, int_arg(op, args, 3, "padding_mode"));
  TERN_ASSIGN_OR_RETURN(const bool align_corners, bool_arg(op, args, 4, "align_corners"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 5, "out"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "x", *x, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "grid", *grid, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  TERN_CHECK_OR_RETURN_ERROR(mode == 0 || mode == 1, InvalidArgument,
                             "%s: mode: expected 0 (bilinear) or 1 (nearest), found %" PRId64, op,
                             mode);
  TERN_CHECK_OR_RETURN_ERROR(padding_mode >= 0 && padding_mode <= 2, InvalidArgument,
                             "%s: padding_mode: expected 0 (zeros), 1 (border) or 2 (reflection), "
                             "found %" PRId64,
                             op, padding_mode);
  TERN_CHECK_OR_RETURN_ERROR(x->rank == 4, InvalidArgument,
                             "%s: x: expected rank 4 [N, C, H, W], found rank %u", op, x->rank);
  char gs[160];
  TERN_CHECK_OR_RETURN_ERROR(
      grid->rank == 4 && grid->sizes[0] == x->sizes[0] && grid->sizes[3] == 2, InvalidArgument,
      "%s: grid: expected [%" PRId64 ", HO, WO, 2] (x's batch, then (x, y) pairs), found %s", op,
      x->sizes[0], format_shape(grid->shape(), gs, sizeof(gs)));
  const int64_t n = x->sizes[0], c = x->sizes[1], h = x->sizes[2], w = x->sizes[3];
  const int64_t ho = grid->sizes[1], wo = grid->sizes[2];
  const int64_t expected[4] = {n, c, ho, wo};
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(expected, 4)));
  const Interp interp = static_cast<Interp>(mode);
  const Padding padding = static_cast<Padding>(padding_mode);
  const float* src = x->data_as<const float>();
  const float* g = grid->data_as<const float>();
  float* dst = out->data_as<float>();
  const int64_t plane = h * w, out_plane = ho * wo;
  for (int64_t b = 0; b < n; ++b) {
    const float* xb = src + b * c * plane;
    float* ob = dst + b * c * out_plane;
    for (int64_t p = 0; p < out_plane; ++p) {
      const float* point = g + (b * out_plane + p) * 2;
      const float ix = source_index(point[0], w, padding, align_corners);
      const float iy = source_index(point[1], h, padding, align_corners);
      if (!usable(ix) || !usable(iy)) {
        // Far outside: nothing read. A NaN or infinite point: NaN from bilinear weights, as
        // ATen's products with them give (nearest reads nothing).
        const bool nan = interp == Interp::Bilinear && !(std::isfinite(ix) && std::isfinite(iy));
        for (int64_t ch = 0; ch < c; ++ch) ob[ch * out_plane + p] = nan ? NAN : 0.0f;
        continue;
      }
      if (interp == Interp::Nearest) {
        const int64_t xn = static_cast<int64_t>(std::nearbyint(ix));
        const int64_t yn = static_cast<int64_t>(std::nearbyint(iy));
        const bool inside = in_bounds(yn, xn, h, w);
        for (int64_t ch = 0; ch < c; ++ch) {
          ob[ch * out_plane + p] = inside ? xb[ch * plane + yn * w + xn] : 0.0f;
        }
        continue;
      }
      const float fx = std::floor(ix), fy = std::floor(iy);
      const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
      const int64_t x1 = x0 + 1, y1 = y0 + 1;
      // ATen's weights: each the area of the opposite sub-rectangle.
      const float nw = (fx + 1.0f - ix) * (fy + 1.0f - iy);
      const float ne = (ix - fx) * (fy + 1.0f - iy);
      const float sw = (fx + 1.0f - ix) * (iy - fy);
      const float se = (ix - fx) * (iy - fy);
      const bool in_nw = in_bounds(y0, x0, h, w), in_ne = in_bounds(y0, x1, h, w);
      const bool in_sw = in_bounds(y1, x0, h, w), in_se = in_bounds(y1, x1, h, w);
      for (int64_t ch = 0; ch < c; ++ch) {
        const float* xc = xb + ch * plane;
        float v = 0.0f;
        if (in_nw) v += xc[y0 * w + x0] * nw;
        if (in_ne) v += xc[y0 * w + x1] * ne;
        if (in_sw) v += xc[y1 * w + x0] * sw;
        if (in_se) v += xc[y1 * w + x1] * se;
        ob[ch * out_plane + p] = v;
      }
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
