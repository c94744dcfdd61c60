// tern::upsample_bilinear2d(x [N, C, H, W], align_corners, scale_h, scale_w, out): ATen's
// bilinear interpolation with its area-pixel source index computation, in f32.
#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/util/bilinear_taps.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers
namespace {

// ATen's area_pixel_compute_scale.
float area_scale(int64_t in, int64_t out, bool align_corners, bool has_scale, double scale) {
  if (align_corners) {
    return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  }
  return upsample_scale(has_scale, scale, in, out);
}


}  // namespace

Error upsample_bilinear2d(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::upsample_bilinear2d";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 5, 5));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const bool align_corners, bool_arg(op, args, 1, "align_corners"));
  bool has_h = false, has_w = false;
  double scale_h = 0.0, scale_w = 0.0;
  TERN_RETURN_IF_ERROR(optional_double_arg(op, args, 2, "scale_h", &has_h, &scale_h));
  TERN_RETURN_IF_ERROR(optional_double_arg(op, args, 3, "scale_w", &has_w, &scale_w));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 4, "out"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "x", *x, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  Upsample2dSizes s;
  TERN_RETURN_IF_ERROR(check_upsample2d(op, *x, *out, &s));
  const int64_t h = s.h, w = s.w, oh = s.oh, ow = s.ow;
  const float sh = area_scale(h, oh, align_corners, has_h, scale_h);
  const float sw = area_scale(w, ow, align_corners, has_w, scale_w);
  const uint64_t planes = static_cast<uint64_t>(x->sizes[0]) * static_cast<uint64_t>(x->sizes[1]);
  const float* src = x->data_as<const float>();
  float* dst = out->data_as<float>();
  for (uint64_t p = 0; p < planes; ++p) {
    const float* plane = src + p * static_cast<uint64_t>(h * w);
    for (int64_t i = 0; i < oh; ++i) {
      const BilinearTaps th = bilinear_taps(i, h, oh, sh, align_corners);
      const float* r0 = plane + th.i0 * w;
      const float* r1 = plane + th.i1 * w;
      for (int64_t j = 0; j < ow; ++j) {
        const BilinearTaps tw = bilinear_taps(j, w, ow, sw, align_corners);
        *dst++ = th.w0 * (tw.w0 * r0[tw.i0] + tw.w1 * r0[tw.i1]) +
                 th.w1 * (tw.w0 * r1[tw.i0] + tw.w1 * r1[tw.i1]);
      }
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
