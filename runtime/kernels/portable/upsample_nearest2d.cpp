// tern::upsample_nearest2d(x [N, C, H, W], scale_h, scale_w, out [N, C, OH, OW]): ATen's
// "nearest": src = min(floor(dst * scale), in - 1) in float, scale = 1 / scale_factor when
// given (> 0), else in / out.
#include <cinttypes>
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

float nearest_scale(bool has_scale, double scale, int64_t in, int64_t out) {
  return has_scale && scale > 0.0 ? static_cast<float>(1.0 / scale)
                                   : static_cast<float>(in) / static_cast<float>(out);
}

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
  TERN_CHECK_OR_RETURN_ERROR(x->rank == 4, InvalidArgument,
                             "%s: x: expected rank 4 [N, C, H, W], found rank %u", op, x->rank);
  TERN_CHECK_OR_RETURN_ERROR(out->rank == 4, InvalidArgument,
                             "%s: out: expected rank 4 [N, C, OH, OW], found rank %u", op,
                             out->rank);
  const int64_t h = x->sizes[2], w = x->sizes[3];
  const int64_t oh = out->sizes[2], ow = out->sizes[3];
  TERN_CHECK_OR_RETURN_ERROR(h > 0 && w > 0 && oh > 0 && ow > 0, InvalidArgument,
                             "%s: input (%" PRId64 ", %" PRId64 ") and output (%" PRId64
                             ", %" PRId64 ") sizes must be greater than 0",
                             op, h, w, oh, ow);
  const int64_t expected[4] = {x->sizes[0], x->sizes[1], oh, ow};
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(expected, 4)));
  const float sh = nearest_scale(has_h, scale_h, h, oh);
  const float sw = nearest_scale(has_w, scale_w, w, ow);
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
