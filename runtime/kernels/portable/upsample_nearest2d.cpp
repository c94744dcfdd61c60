// tern::upsample_nearest2d(x [N, C, H, W], scale_h, scale_w, out [N, C, OH, OW]): ATen's
// "nearest": src = min(floor(dst * scale), in - 1) in float, scale = 1 / scale_factor when
// given (> 0), else in / out.
#include <cmath>
#include <cstring>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers
namespace {

// ATen's nearest_idx, shortcuts included (they decide ties of float rounding).
inline int64_t nearest_index(int64_t o, int64_t in, int64_t out, float scale) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  const int64_t s = static_cast<int64_t>(std::floor(static_cast<float>(o) * scale));
  return s < in - 1 ? s : in - 1;
}

}  // namespace

Error upsample_nearest2d(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::upsample_nearest2d";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  bool has_h = false, has_w = false;
  double scale_h = 0.0, scale_w = 0.0;
  TERN_RETURN_IF_ERROR(optional_double_arg(op, args, 1, "scale_h", &has_h, &scale_h));
  TERN_RETURN_IF_ERROR(optional_double_arg(op, args, 2, "scale_w", &has_w, &scale_w));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 3, "out"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  Upsample2dSizes s;
  TERN_RETURN_IF_ERROR(check_upsample2d(op, *x, *out, &s));
  const int64_t h = s.h, w = s.w, oh = s.oh, ow = s.ow;
  const float sh = upsample_scale(has_h, scale_h, h, oh);
  const float sw = upsample_scale(has_w, scale_w, w, ow);
  const uint64_t planes = static_cast<uint64_t>(x->sizes[0]) * static_cast<uint64_t>(x->sizes[1]);
  const size_t es = element_size(x->dtype);
  const uint8_t* src = static_cast<const uint8_t*>(x->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  for (uint64_t p = 0; p < planes; ++p) {
    const uint8_t* plane = src + p * static_cast<uint64_t>(h * w) * es;
    for (int64_t i = 0; i < oh; ++i) {
      const uint8_t* srow = plane + nearest_index(i, h, oh, sh) * w * es;
      uint8_t* drow = dst;
      for (int64_t j = 0; j < ow; ++j) {
        std::memcpy(drow + j * es, srow + nearest_index(j, w, ow, sw) * es, es);
      }
      dst += ow * es;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
