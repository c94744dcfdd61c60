// tern::conv_transpose2d, f32: per group, columns = W_g^T x_g by the shared GEMM for a tile of
// input pixels at a time (scratch from the temp allocator, scratch_sizes.h:
// conv_transpose2d_scratch_bytes), then col2im adds each column into the output. A 1x1,
// stride-1, unpadded kernel needs no columns: the GEMM accumulates into the output directly.
#include <cinttypes>

#include "runtime/kernels/portable/conv_geometry.h"
#include "runtime/kernels/portable/gemm.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/linalg_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/util/scratch_sizes.h"

namespace tern {
namespace portable {
namespace {

// Adds columns for input pixels [pix0, pix0 + count) into out (one group, [og, OH, OW]):
// col[(o*kh + ky)*kw + kx][t] lands on output (iy*sh - ph + ky*dh, ix*sw - pw + kx*dw).
// Here g.in_* is the transposed conv's input and g.out_* its output.
void col2im(const ConvGeometry& g, int64_t og, const float* col, int64_t pix0, int64_t count,
            float* out) {
  const int64_t sh = g.stride[0], sw = g.stride[1];
  for (int64_t o = 0; o < og; ++o) {
    float* plane = out + o * g.out_h * g.out_w;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const float* src = col + ((o * g.kh + ky) * g.kw + kx) * count;
        const int64_t offset = kx * g.dilation[1] - g.pad[1];
        int64_t lo, hi;  // input columns ix whose output column lies inside
        valid_output_range(g.out_w, g.in_w, sw, offset, &lo, &hi);
        int64_t t = 0;
        int64_t iy = pix0 / g.in_w;
        int64_t ix = pix0 % g.in_w;
        while (t < count) {
          const int64_t len = g.in_w - ix < count - t ? g.in_w - ix : count - t;
          const int64_t end = ix + len;
          const int64_t oy = iy * sh - g.pad[0] + ky * g.dilation[0];
          if (oy >= 0 && oy < g.out_h) {
            float* row = plane + oy * g.out_w;
            const float* s = src + t;  // s[i - ix] is input column i's value
            const int64_t a = lo > ix ? lo : ix;
            const int64_t b = hi < end ? hi : end;
            for (int64_t i = a; i < b; ++i) row[i * sw + offset] += s[i - ix];
          }
          t += len;
          ix = 0;
          ++iy;
        }
      }
    }
  }
}

}  // namespace

Error conv_transpose2d(KernelContext& context, Span<EValue*> args) {
  const char* op = "tern::conv_transpose2d";
  // x, weight, bias?, stride, padding, output_padding, groups, dilation, out
  ConvTensors t;
  TERN_RETURN_IF_ERROR(conv_tensor_args(op, args, 9, /*spatial=*/2, &t));
  const TensorView* x = t.x;
  const TensorView* w = t.weight;
  const TensorView* bias = t.bias;
  TensorView* out = t.out;
  int64_t stride[2], pad[2], out_pad[2], dilation[2];
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 3, "stride", 2, 1, nullptr, stride));
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 4, "padding", 2, 0, nullptr, pad));
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 5, "output_padding", 2, 0, nullptr, out_pad));
  TERN_ASSIGN_OR_RETURN(const int64_t groups, int_arg(op, args, 6, "groups"));
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 7, "dilation", 2, 1, nullptr, dilation));
  TERN_CHECK_OR_RETURN_ERROR(groups >= 1, InvalidArgument,
                             "%s: groups: expected >= 1, found %" PRId64, op, groups);
  for (int d = 0; d < 2; ++d) {
    TERN_CHECK_OR_RETURN_ERROR(out_pad[d] < stride[d] || out_pad[d] < dilation[d],
                               InvalidArgument,
                               "%s: output_padding %" PRId64 " must be smaller than the stride "
                               "(%" PRId64 ") or the dilation (%" PRId64 ")",
                               op, out_pad[d], stride[d], dilation[d]);
  }
  const bool batched = x->rank == 4;
  const uint32_t c_dim = batched ? 1 : 0;
  ConvGeometry g;
  g.batch = batched ? x->sizes[0] : 1;
  g.in_channels = x->sizes[c_dim];
  g.in_h = x->sizes[c_dim + 1];
  g.in_w = x->sizes[c_dim + 2];
  g.kh = w->sizes[2];
  g.kw = w->sizes[3];
  g.groups = groups;
  for (int d = 0; d < 2; ++d) {
    g.stride[d] = stride[d];
    g.pad[d] = pad[d];
    g.dilation[d] = dilation[d];
  }
  TERN_CHECK_OR_RETURN_ERROR(w->sizes[0] == g.in_channels, InvalidArgument,
                             "%s: weight: expected %" PRId64 " input channels (dim 0), found %" PRId64,
                             op, g.in_channels, w->sizes[0]);
  TERN_CHECK_OR_RETURN_ERROR(g.in_channels % groups == 0, InvalidArgument,
                             "%s: groups %" PRId64 " must divide the input channels (%" PRId64 ")",
                             op, groups, g.in_channels);
  const int64_t og = w->sizes[1];
  TERN_CHECK_OR_RETURN_ERROR(!__builtin_mul_overflow(og, groups, &g.out_channels), InvalidArgument,
                             "%s: output channel count overflows", op);
  TERN_CHECK_OR_RETURN_ERROR(g.kh >= 1 && g.kw >= 1 && g.in_channels >= 1 && og >= 1,
                             InvalidArgument,
                             "%s: weight: expected at least one channel and a 1x1 kernel, found "
                             "[%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]",
                             op, w->sizes[0], w->sizes[1], w->sizes[2], w->sizes[3]);
  const int64_t in_sizes[2] = {g.in_h, g.in_w};
  const int64_t ks[2] = {g.kh, g.kw};
  int64_t out_sizes[2];
  for (int d = 0; d < 2; ++d) {
    // (in - 1) * stride - 2 * pad + dilation * (k - 1) + output_padding + 1
    int64_t v = 0, t = 0;
    bool ok = !__builtin_mul_overflow(in_sizes[d] - 1, stride[d], &v) &&
              !__builtin_mul_overflow(dilation[d], ks[d] - 1, &t) &&
              !__builtin_add_overflow(v, t, &v) &&
              !__builtin_add_overflow(v, out_pad[d] + 1, &v) &&
              !__builtin_mul_overflow(pad[d], int64_t{2}, &t) &&
              !__builtin_sub_overflow(v, t, &v);
    TERN_CHECK_OR_RETURN_ERROR(ok && v >= 1, InvalidArgument,
                               "%s: %s: output size would be below 1 (or overflows)", op,
                               d == 0 ? "height" : "width");
    out_sizes[d] = v;
  }
  g.out_h = out_sizes[0];
  g.out_w = out_sizes[1];
  TERN_RETURN_IF_ERROR(check_conv_output(op, g, /*spatial=*/2, batched, t));
  if (out->numel() == 0) return Error::Ok;

  const int64_t cg = g.in_channels / groups;
  const int64_t in_plane = g.in_h * g.in_w;
  const int64_t out_plane = g.out_h * g.out_w;
  const int64_t k_dim = og * g.kh * g.kw;
  const bool columns = conv_transpose2d_uses_columns(g.kh, g.kw, g.stride[0], g.stride[1],
                                                     g.pad[0], g.pad[1]);
  float* col = nullptr;
  if (columns && in_plane > 0) {
    const uint64_t bytes = conv_transpose2d_scratch_bytes(og, g.kh, g.kw, g.stride[0],
                                                          g.stride[1], g.pad[0], g.pad[1],
                                                          g.in_h, g.in_w);
    TERN_RETURN_IF_ERROR(allocate_scratch(op, context.temp_allocator, bytes, &col));
  }
  const int64_t tile = static_cast<int64_t>(
      conv_tile_pixels(static_cast<uint64_t>(k_dim), static_cast<uint64_t>(in_plane)));
  const float* px = x->data_as<const float>();
  const float* pw = w->data_as<const float>();
  const float* pb = bias ? bias->data_as<const float>() : nullptr;
  float* po = out->data_as<float>();
  for (int64_t n = 0; n < g.batch; ++n) {
    const float* xn = px + n * g.in_channels * in_plane;
    float* on = po + n * g.out_channels * out_plane;
    for (int64_t o = 0; o < g.out_channels; ++o) {
      const float v = pb ? pb[o] : 0.0f;
      for (int64_t i = 0; i < out_plane; ++i) on[o * out_plane + i] = v;
    }
    if (in_plane == 0) continue;
    for (int64_t grp = 0; grp < groups; ++grp) {
      const float* xg = xn + grp * cg * in_plane;
      const float* wg = pw + grp * cg * k_dim;  // [cg, og * kh * kw]
      float* out_g = on + grp * og * out_plane;
      if (!columns) {
        // 1x1: out[o, iy, ix] += sum_c w[c, o] x[c, iy, ix]; rows apart when output_padding
        // (allowed below the dilation) widens the output.
        if (g.out_w == g.in_w && g.out_h == g.in_h) {
          gemm_f32(true, false, og, in_plane, cg, 1.0f, wg, og, xg, in_plane, 1.0f, out_g,
                   out_plane);
        } else {
          for (int64_t iy = 0; iy < g.in_h; ++iy) {
            gemm_f32(true, false, og, g.in_w, cg, 1.0f, wg, og, xg + iy * g.in_w, in_plane,
                     1.0f, out_g + iy * g.out_w, out_plane);
          }
        }
        continue;
      }
      for (int64_t pix0 = 0; pix0 < in_plane; pix0 += tile) {
        const int64_t count = in_plane - pix0 < tile ? in_plane - pix0 : tile;
        gemm_f32(true, false, k_dim, count, cg, 1.0f, wg, k_dim, xg + pix0, in_plane, 0.0f, col,
                 count);
        col2im(g, og, col, pix0, count, out_g);
      }
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
