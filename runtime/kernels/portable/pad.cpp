// tern::pad(x, pad, mode, value, out): constant (negative pads crop) or reflect padding of the
// trailing dims, pad listed last dim first as torch.nn.functional.pad.
#include <cinttypes>
#include <cmath>
#include <cstring>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/strided_copy.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers
namespace {

// `value` as one element of `dtype` into `bytes` (8 bytes available).
Error fill_value(const char* op, DType dtype, double value, uint8_t* bytes) {
  std::memset(bytes, 0, 8);
  switch (dtype) {
    case DType::F32: {
      const float f = static_cast<float>(value);
      std::memcpy(bytes, &f, 4);
      return Error::Ok;
    }
    case DType::Bool: bytes[0] = value != 0.0; return Error::Ok;
    case DType::I64: case DType::I32: case DType::I16: case DType::I8: case DType::U8: break;
    default:
      TERN_CHECK_OR_RETURN_ERROR(value == 0.0, InvalidArgument,
                                 "%s: value: only 0 can pad a %s tensor, found %g", op,
                                 to_string(dtype), value);
      return Error::Ok;
  }
  TERN_CHECK_OR_RETURN_ERROR(std::isfinite(value) && std::fabs(value) < 9.2e18, InvalidArgument,
                             "%s: value %g is not representable as %s", op, value,
                             to_string(dtype));
  const int64_t i = static_cast<int64_t>(value);
  switch (dtype) {
    case DType::I64: std::memcpy(bytes, &i, 8); break;
    case DType::I32: { const int32_t v = static_cast<int32_t>(i); std::memcpy(bytes, &v, 4); break; }
    case DType::I16: { const int16_t v = static_cast<int16_t>(i); std::memcpy(bytes, &v, 2); break; }
    default: bytes[0] = static_cast<uint8_t>(i); break;
  }
  return Error::Ok;
}

// Source coordinate of output coordinate `o` in a dim of `size` padded by `before`, or -1
// (constant fill).
inline int64_t source_index(int64_t o, int64_t size, int64_t before, bool reflect) {
  int64_t s = o - before;
  if (!reflect) return s >= 0 && s < size ? s : -1;
  if (s < 0) s = -s;
  if (s >= size) s = 2 * (size - 1) - s;
  return s;
}

}  // namespace

Error pad(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::pad";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 5, 5));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const Span<const int64_t> pads,
                        int_list_arg(op, args, 1, "pad", 2 * kMaxRank));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 4, "out"));
  TERN_CHECK_OR_RETURN_ERROR(args[2] != nullptr && args[2]->is_string(), InvalidArgument,
                             "%s: argument 2 (mode): expected a string, found %s", op,
                             args[2] ? to_string(args[2]->tag) : "null");
  const bool reflect = string_equals(*args[2], "reflect");
  TERN_CHECK_OR_RETURN_ERROR(reflect || string_equals(*args[2], "constant"), InvalidArgument,
                             "%s: mode: expected \"constant\" or \"reflect\", found \"%.*s\"", op,
                             static_cast<int>(args[2]->payload.string.size > 32
                                                  ? 32
                                                  : args[2]->payload.string.size),
                             args[2]->payload.string.data ? args[2]->payload.string.data : "");
  bool has_value = false;
  double value = 0.0;
  TERN_RETURN_IF_ERROR(optional_double_arg(op, args, 3, "value", &has_value, &value));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_CHECK_OR_RETURN_ERROR(pads.size() % 2 == 0 && pads.size() / 2 <= x->rank, InvalidArgument,
                             "%s: pad: expected an even number of entries, at most 2 x rank %u, "
                             "found %zu",
                             op, x->rank, pads.size());
  uint8_t fill[8];
  TERN_RETURN_IF_ERROR(fill_value(op, x->dtype, has_value ? value : 0.0, fill));

  const uint32_t rank = x->rank;
  int64_t before[kMaxRank] = {};
  FixedShape shape;
  shape.rank = rank;
  for (uint32_t d = 0; d < rank; ++d) shape.sizes[d] = x->sizes[d];
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    const uint32_t d = rank - 1 - static_cast<uint32_t>(k);
    const int64_t b = pads[2 * k], a = pads[2 * k + 1];
    const int64_t size = x->sizes[d];
    TERN_CHECK_OR_RETURN_ERROR(b > -(INT64_MAX / 4) && b < INT64_MAX / 4 &&
                                   a > -(INT64_MAX / 4) && a < INT64_MAX / 4,
                               InvalidArgument, "%s: pad: (%" PRId64 ", %" PRId64 ") too large",
                               op, b, a);
    if (reflect) {
      TERN_CHECK_OR_RETURN_ERROR(b < size && a < size, InvalidArgument,
                                 "%s: pad: reflect padding (%" PRId64 ", %" PRId64 ") of dim %u "
                                 "must be less than its size %" PRId64,
                                 op, b, a, d, size);
    }
    const int64_t padded = size + b + a;
    TERN_CHECK_OR_RETURN_ERROR(padded >= 0 && (!reflect || padded > 0 || size == 0),
                               InvalidArgument,
                               "%s: pad: dim %u of size %" PRId64 " padded by (%" PRId64
                               ", %" PRId64 ") gives size %" PRId64,
                               op, d, size, b, a, padded);
    before[d] = b;
    shape.sizes[d] = padded;
  }
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, shape.span()));
  const uint64_t numel = out->numel();
  if (numel == 0) return Error::Ok;
  if (rank == 0) {
    std::memcpy(out->data, x->data, element_size(x->dtype));
    return Error::Ok;
  }
  TERN_CHECK_OR_RETURN_ERROR(x->numel() > 0 || !reflect, InvalidArgument,
                             "%s: reflect padding of an empty tensor %s", op, "is undefined");

  // Row by row over the output (all dims but the last): find the source row (or a fill row),
  // then the last dim as fill / one contiguous run / reflected edges.
  const size_t es = element_size(x->dtype);
  int64_t x_strides[kMaxRank];
  contiguous_strides(x->shape(), x_strides);
  const uint32_t last = rank - 1;
  const int64_t width = shape.sizes[last];
  const int64_t in_width = x->sizes[last];
  const int64_t lb = before[last];
  // The output columns [c0, c1) read source columns [c0 - lb, c1 - lb) in order.
  const int64_t c0 = lb > 0 ? lb : 0;
  int64_t c1 = lb + in_width;
  if (c1 > width) c1 = width;
  const uint8_t* src = static_cast<const uint8_t*>(x->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  const uint64_t rows = numel / static_cast<uint64_t>(width);
  int64_t coord[kMaxRank] = {};
  for (uint64_t r = 0; r < rows; ++r, dst += static_cast<size_t>(width) * es) {
    int64_t row_offset = 0;
    bool inside = true;
    for (uint32_t d = 0; d < last; ++d) {
      const int64_t s = source_index(coord[d], x->sizes[d], before[d], reflect);
      if (s < 0) inside = false;
      row_offset += s * x_strides[d];
    }
    if (!inside || in_width == 0) {
      fill_elements(dst, fill, es, static_cast<uint64_t>(width));
    } else {
      const uint8_t* srow = src + static_cast<size_t>(row_offset) * es;
      for (int64_t c = 0; c < c0 && c < width; ++c) {
        const int64_t s = source_index(c, in_width, lb, reflect);
        std::memcpy(dst + c * es, s < 0 ? fill : srow + s * es, es);
      }
      if (c1 > c0) {
        std::memcpy(dst + c0 * es, srow + (c0 - lb) * es, static_cast<size_t>(c1 - c0) * es);
      }
      for (int64_t c = c1 > c0 ? c1 : c0; c < width; ++c) {
        const int64_t s = source_index(c, in_width, lb, reflect);
        std::memcpy(dst + c * es, s < 0 ? fill : srow + s * es, es);
      }
    }
    for (int32_t d = static_cast<int32_t>(last) - 1; d >= 0; --d) {
      if (++coord[d] < shape.sizes[d]) break;
      coord[d] = 0;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
