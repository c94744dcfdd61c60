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
#include "runtime/kernels/util/grid_sample_coords.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

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
  const GridInterp interp = static_cast<GridInterp>(mode);
  const GridPadding padding = static_cast<GridPadding>(padding_mode);
  const float* src = x->data_as<const float>();
  const float* g = grid->data_as<const float>();
  float* dst = out->data_as<float>();
  const int64_t plane = h * w, out_plane = ho * wo;
  for (int64_t b = 0; b < n; ++b) {
    const float* xb = src + b * c * plane;
    float* ob = dst + b * c * out_plane;
    for (int64_t p = 0; p < out_plane; ++p) {
      const float* point = g + (b * out_plane + p) * 2;
      const float ix = grid_source_index(point[0], w, padding, align_corners);
      const float iy = grid_source_index(point[1], h, padding, align_corners);
      if (!grid_index_usable(ix) || !grid_index_usable(iy)) {
        // Far outside: nothing read. A NaN or infinite point: NaN from bilinear weights, as
        // ATen's products with them give (nearest reads nothing).
        const bool nan =
            interp == GridInterp::Bilinear && !(std::isfinite(ix) && std::isfinite(iy));
        for (int64_t ch = 0; ch < c; ++ch) ob[ch * out_plane + p] = nan ? NAN : 0.0f;
        continue;
      }
      if (interp == GridInterp::Nearest) {
        const int64_t xn = static_cast<int64_t>(std::nearbyint(ix));
        const int64_t yn = static_cast<int64_t>(std::nearbyint(iy));
        const bool inside = grid_in_bounds(yn, xn, h, w);
        for (int64_t ch = 0; ch < c; ++ch) {
          ob[ch * out_plane + p] = inside ? xb[ch * plane + yn * w + xn] : 0.0f;
        }
        continue;
      }
      const BilinearTaps t = grid_bilinear_taps(ix, iy, h, w);
      for (int64_t ch = 0; ch < c; ++ch) {
        const float* xc = xb + ch * plane;
        float v = 0.0f;
        for (int k = 0; k < 4; ++k) {
          if (t.inside[k]) v += xc[t.offset[k]] * t.weight[k];
        }
        ob[ch * out_plane + p] = v;
      }
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
