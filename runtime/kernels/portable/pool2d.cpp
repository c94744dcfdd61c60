// tern::max_pool2d, tern::avg_pool2d and tern::adaptive_avg_pool2d, f32, over x [N, C, H, W]
// or [C, H, W]. Window bounds follow ATen: max pooling skips the padding (as if -inf) and
// propagates NaN; average pooling divides by the window clipped to the padded input
// (count_include_pad), to the input, or by divisor_override.
#include <cinttypes>
#include <cmath>
#include <limits>

#include "runtime/kernels/portable/conv_geometry.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/linalg_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

// Planes (N*C), input and checked output sizes of a pooling op.
struct PoolShape {
  int64_t planes = 0;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
};

// x [N, C, H, W] or [C, H, W]; kernel/stride/padding/dilation read at the given indices
// (dilation_index < 0: dilation 1). Fills `shape` and `g` (kernel, stride, pad, dilation).
Error pool_window_args(const char* op, Span<EValue*> args, const TensorView& x,
                       int dilation_index, bool ceil_mode, PoolShape* shape, ConvGeometry* g) {
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "x", x, 3, 4));
  int64_t kernel[2], stride[2], pad[2], dilation[2] = {1, 1};
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 1, "kernel_size", 2, 1, nullptr, kernel));
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 2, "stride", 2, 1, kernel, stride));
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 3, "padding", 2, 0, nullptr, pad));
  if (dilation_index >= 0) {
    TERN_RETURN_IF_ERROR(spatial_arg(op, args, static_cast<size_t>(dilation_index), "dilation", 2,
                                     1, nullptr, dilation));
  }
  for (int d = 0; d < 2; ++d) {
    TERN_CHECK_OR_RETURN_ERROR(pad[d] <= kernel[d] / 2, InvalidArgument,
                               "%s: padding %" PRId64 " should be at most half the kernel size "
                               "(%" PRId64 ")",
                               op, pad[d], kernel[d]);
  }
  shape->planes = x.rank == 4 ? x.sizes[0] * x.sizes[1] : x.sizes[0];
  shape->in_h = x.sizes[x.rank - 2];
  shape->in_w = x.sizes[x.rank - 1];
  TERN_RETURN_IF_ERROR(window_output_size(op, "height", shape->in_h, kernel[0], stride[0],
                                          pad[0], dilation[0], ceil_mode, &shape->out_h));
  TERN_RETURN_IF_ERROR(window_output_size(op, "width", shape->in_w, kernel[1], stride[1],
                                          pad[1], dilation[1], ceil_mode, &shape->out_w));
  g->kh = kernel[0];
  g->kw = kernel[1];
  for (int d = 0; d < 2; ++d) {
    g->stride[d] = stride[d];
    g->pad[d] = pad[d];
    g->dilation[d] = dilation[d];
  }
  return Error::Ok;
}

// out must be x's shape with the last two dims replaced by out_h, out_w.
Error check_pool_out(const char* op, const TensorView& x, const TensorView& out, int64_t out_h,
                     int64_t out_w) {
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", out, DType::F32));
  int64_t want[4];
  for (uint32_t d = 0; d < x.rank; ++d) want[d] = x.sizes[d];
  want[x.rank - 2] = out_h;
  want[x.rank - 1] = out_w;
  TERN_RETURN_IF_ERROR(check_shape(op, "out", out, Span<const int64_t>(want, x.rank)));
  TERN_RETURN_IF_ERROR(check_no_overlap(op, out, x, "x"));
  return Error::Ok;
}

}  // namespace

Error max_pool2d(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::max_pool2d";
  // x, kernel_size, stride, padding, dilation, ceil_mode, out
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 7, 7));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 6, "out"));
  TERN_ASSIGN_OR_RETURN(const bool ceil_mode, bool_arg(op, args, 5, "ceil_mode"));
  PoolShape s;
  ConvGeometry g;
  TERN_RETURN_IF_ERROR(pool_window_args(op, args, *x, 4, ceil_mode, &s, &g));
  TERN_RETURN_IF_ERROR(check_pool_out(op, *x, *out, s.out_h, s.out_w));
  if (out->numel() == 0) return Error::Ok;
  const float* px = x->data_as<const float>();
  float* po = out->data_as<float>();
  const int64_t dh = g.dilation[0], dw = g.dilation[1];
  for (int64_t p = 0; p < s.planes; ++p) {
    const float* plane = px + p * s.in_h * s.in_w;
    float* dst = po + p * s.out_h * s.out_w;
    for (int64_t oy = 0; oy < s.out_h; ++oy) {
      int64_t y0 = oy * g.stride[0] - g.pad[0];
      const int64_t y_end_raw = y0 + (g.kh - 1) * dh + 1;
      const int64_t y1 = y_end_raw < s.in_h ? y_end_raw : s.in_h;
      while (y0 < 0) y0 += dh;
      for (int64_t ox = 0; ox < s.out_w; ++ox) {
        int64_t x0 = ox * g.stride[1] - g.pad[1];
        const int64_t x_end_raw = x0 + (g.kw - 1) * dw + 1;
        const int64_t x1 = x_end_raw < s.in_w ? x_end_raw : s.in_w;
        while (x0 < 0) x0 += dw;
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t iy = y0; iy < y1; iy += dh) {
          const float* row = plane + iy * s.in_w;
          for (int64_t ix = x0; ix < x1; ix += dw) {
            const float v = row[ix];
            if (v > best || std::isnan(v)) best = v;
          }
        }
        dst[oy * s.out_w + ox] = best;
      }
    }
  }
  return Error::Ok;
}

Error avg_pool2d(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::avg_pool2d";
  // x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, out
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 8, 8));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 7, "out"));
  TERN_ASSIGN_OR_RETURN(const bool ceil_mode, bool_arg(op, args, 4, "ceil_mode"));
  TERN_ASSIGN_OR_RETURN(const bool count_include_pad, bool_arg(op, args, 5, "count_include_pad"));
  int64_t divisor = 0;
  TERN_CHECK_OR_RETURN_ERROR(args[6] != nullptr, InvalidArgument,
                             "%s: argument 6 (divisor_override) is a null EValue", op);
  if (!args[6]->is_none()) {
    TERN_ASSIGN_OR_RETURN(divisor, int_arg(op, args, 6, "divisor_override"));
    TERN_CHECK_OR_RETURN_ERROR(divisor != 0, InvalidArgument,
                               "%s: divisor_override: expected a nonzero int or None, found 0",
                               op);
  }
  PoolShape s;
  ConvGeometry g;
  TERN_RETURN_IF_ERROR(pool_window_args(op, args, *x, -1, ceil_mode, &s, &g));
  TERN_RETURN_IF_ERROR(check_pool_out(op, *x, *out, s.out_h, s.out_w));
  if (out->numel() == 0) return Error::Ok;
  const float* px = x->data_as<const float>();
  float* po = out->data_as<float>();
  for (int64_t p = 0; p < s.planes; ++p) {
    const float* plane = px + p * s.in_h * s.in_w;
    float* dst = po + p * s.out_h * s.out_w;
    for (int64_t oy = 0; oy < s.out_h; ++oy) {
      int64_t y0 = oy * g.stride[0] - g.pad[0];
      int64_t y1 = y0 + g.kh < s.in_h + g.pad[0] ? y0 + g.kh : s.in_h + g.pad[0];
      const int64_t span_y = y1 - y0;
      if (y0 < 0) y0 = 0;
      if (y1 > s.in_h) y1 = s.in_h;
      for (int64_t ox = 0; ox < s.out_w; ++ox) {
        int64_t x0 = ox * g.stride[1] - g.pad[1];
        int64_t x1 = x0 + g.kw < s.in_w + g.pad[1] ? x0 + g.kw : s.in_w + g.pad[1];
        const int64_t span_x = x1 - x0;
        if (x0 < 0) x0 = 0;
        if (x1 > s.in_w) x1 = s.in_w;
        if (y0 >= y1 || x0 >= x1) {
          dst[oy * s.out_w + ox] = 0.0f;
          continue;
        }
        float sum = 0.0f;
        for (int64_t iy = y0; iy < y1; ++iy) {
          const float* row = plane + iy * s.in_w;
          for (int64_t ix = x0; ix < x1; ++ix) sum += row[ix];
        }
        const int64_t count = divisor != 0         ? divisor
                              : count_include_pad ? span_y * span_x
                                                  : (y1 - y0) * (x1 - x0);
        dst[oy * s.out_w + ox] = sum / static_cast<float>(count);
      }
    }
  }
  return Error::Ok;
}

Error adaptive_avg_pool2d(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::adaptive_avg_pool2d";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "x", *x, 3, 4));
  int64_t size[2];
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 1, "output_size", 2, 0, nullptr, size));
  const int64_t in_h = x->sizes[x->rank - 2];
  const int64_t in_w = x->sizes[x->rank - 1];
  TERN_CHECK_OR_RETURN_ERROR((in_h > 0 && in_w > 0) || size[0] == 0 || size[1] == 0,
                             InvalidArgument,
                             "%s: x: expected non-empty spatial dims, found %" PRId64 "x%" PRId64,
                             op, in_h, in_w);
  TERN_RETURN_IF_ERROR(check_pool_out(op, *x, *out, size[0], size[1]));
  if (out->numel() == 0) return Error::Ok;
  const int64_t planes = x->rank == 4 ? x->sizes[0] * x->sizes[1] : x->sizes[0];
  const float* px = x->data_as<const float>();
  float* po = out->data_as<float>();
  const int64_t out_h = size[0], out_w = size[1];
  for (int64_t p = 0; p < planes; ++p) {
    const float* plane = px + p * in_h * in_w;
    float* dst = po + p * out_h * out_w;
    for (int64_t oy = 0; oy < out_h; ++oy) {
      // [floor(oy * H / OH), ceil((oy + 1) * H / OH))
      const int64_t y0 = oy * in_h / out_h;
      const int64_t y1 = ((oy + 1) * in_h + out_h - 1) / out_h;
      for (int64_t ox = 0; ox < out_w; ++ox) {
        const int64_t x0 = ox * in_w / out_w;
        const int64_t x1 = ((ox + 1) * in_w + out_w - 1) / out_w;
        float sum = 0.0f;
        for (int64_t iy = y0; iy < y1; ++iy) {
          const float* row = plane + iy * in_w;
          for (int64_t ix = x0; ix < x1; ++ix) sum += row[ix];
        }
        dst[oy * out_w + ox] = sum / static_cast<float>((y1 - y0) * (x1 - x0));
      }
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
