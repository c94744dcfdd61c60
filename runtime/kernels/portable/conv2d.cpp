// tern::conv2d and tern::conv1d (a conv2d of height 1), f32.
//
// Three paths: depthwise (one input channel per group: a direct loop over output rows),
// 1x1 stride-1 unpadded (the input already is the GEMM's right operand), and the general
// im2col + GEMM per group, the column buffer built for a tile of output pixels at a time in
// scratch from the temp allocator (scratch_sizes.h: conv2d_scratch_bytes).
#include <cinttypes>
#include <cstring>

#include "runtime/kernels/portable/conv_geometry.h"
#include "runtime/kernels/portable/gemm.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/linalg_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/util/scratch_sizes.h"

namespace tern {
namespace portable {
namespace {

// out (one image, [O, OH*OW]) = bias per channel, or 0.
void fill_bias(const ConvGeometry& g, const float* bias, float* out) {
  const int64_t plane = g.out_h * g.out_w;
  for (int64_t o = 0; o < g.out_channels; ++o) {
    const float v = bias ? bias[o] : 0.0f;
    float* p = out + o * plane;
    for (int64_t i = 0; i < plane; ++i) p[i] = v;
  }
}

// Depthwise: output channel o reads input channel o / (O / C) only. out holds the bias.
void conv_depthwise(const ConvGeometry& g, const float* x, const float* w, float* out) {
  const int64_t multiplier = g.out_channels / g.in_channels;
  const int64_t sh = g.stride[0], sw = g.stride[1];
  for (int64_t o = 0; o < g.out_channels; ++o) {
    const float* plane = x + (o / multiplier) * g.in_h * g.in_w;
    const float* wo = w + o * g.kh * g.kw;
    float* out_o = out + o * g.out_h * g.out_w;
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      float* __restrict out_row = out_o + oy * g.out_w;
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const int64_t iy = oy * sh - g.pad[0] + ky * g.dilation[0];
        if (iy < 0 || iy >= g.in_h) continue;
        const float* __restrict in_row = plane + iy * g.in_w;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          const float wv = wo[ky * g.kw + kx];
          const int64_t offset = kx * g.dilation[1] - g.pad[1];
          int64_t lo, hi;
          valid_output_range(g.in_w, g.out_w, sw, offset, &lo, &hi);
          if (sw == 1) {
            for (int64_t ox = lo; ox < hi; ++ox) out_row[ox] += wv * in_row[ox + offset];
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) out_row[ox] += wv * in_row[ox * sw + offset];
          }
        }
      }
    }
  }
}

// Columns for output pixels [pix0, pix0 + count) of one group: col[(c*kh + ky)*kw + kx][t] is
// the input under kernel tap (ky, kx) of channel c for pixel pix0 + t (0 in the padding).
void im2col(const ConvGeometry& g, int64_t channels, const float* x, int64_t pix0,
            int64_t count, float* col) {
  const int64_t sh = g.stride[0], sw = g.stride[1];
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = x + c * g.in_h * g.in_w;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        float* dst = col + ((c * g.kh + ky) * g.kw + kx) * count;
        const int64_t offset = kx * g.dilation[1] - g.pad[1];
        int64_t lo, hi;
        valid_output_range(g.in_w, g.out_w, sw, offset, &lo, &hi);
        int64_t t = 0;
        int64_t oy = pix0 / g.out_w;
        int64_t ox = pix0 % g.out_w;
        while (t < count) {
          const int64_t len = g.out_w - ox < count - t ? g.out_w - ox : count - t;
          const int64_t end = ox + len;
          const int64_t iy = oy * sh - g.pad[0] + ky * g.dilation[0];
          float* d = dst + t;  // d[o - ox] is output column o's slot
          if (iy < 0 || iy >= g.in_h) {
            for (int64_t o = ox; o < end; ++o) d[o - ox] = 0.0f;
          } else {
            const float* row = plane + iy * g.in_w;
            const int64_t a = lo > ox ? lo : ox;
            const int64_t b = hi < end ? hi : end;
            int64_t o = ox;
            for (; o < a && o < end; ++o) d[o - ox] = 0.0f;
            if (sw == 1) {
              for (; o < b; ++o) d[o - ox] = row[o + offset];
            } else {
              for (; o < b; ++o) d[o - ox] = row[o * sw + offset];
            }
            for (; o < end; ++o) d[o - ox] = 0.0f;
          }
          t += len;
          ox = 0;
          ++oy;
        }
      }
    }
  }
}

// Runs a checked convolution. x [N, C, H, W], w [O, C/groups, kh, kw], out [N, O, OH, OW].
Error conv2d_run(KernelContext& context, const char* op, const ConvGeometry& g,
                 const float* x, const float* w, const float* bias, float* out) {
  const int64_t cg = g.in_channels / g.groups;
  const int64_t og = g.out_channels / g.groups;
  const int64_t pixels = g.out_h * g.out_w;
  const int64_t in_plane = g.in_h * g.in_w;
  const int64_t k_dim = cg * g.kh * g.kw;
  const bool im2col_path = conv2d_uses_im2col(g.in_channels, g.groups, g.kh, g.kw, g.stride[0],
                                              g.stride[1], g.pad[0], g.pad[1]);
  float* col = nullptr;
  if (im2col_path && g.batch > 0 && pixels > 0) {
    const uint64_t bytes = conv2d_scratch_bytes(g.in_channels, g.groups, g.kh, g.kw, g.stride[0],
                                                g.stride[1], g.pad[0], g.pad[1], g.out_h, g.out_w);
    TERN_RETURN_IF_ERROR(allocate_scratch(op, context.temp_allocator, bytes, &col));
  }
  const int64_t tile = static_cast<int64_t>(
      conv_tile_pixels(static_cast<uint64_t>(k_dim), static_cast<uint64_t>(pixels)));
  for (int64_t n = 0; n < g.batch; ++n) {
    const float* xn = x + n * g.in_channels * in_plane;
    float* on = out + n * g.out_channels * pixels;
    fill_bias(g, bias, on);
    if (pixels == 0) continue;
    if (g.groups == g.in_channels) {
      conv_depthwise(g, xn, w, on);
      continue;
    }
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const float* wg = w + grp * og * k_dim;
      const float* xg = xn + grp * cg * in_plane;
      float* og_out = on + grp * og * pixels;
      if (!im2col_path) {
        gemm_f32(false, false, og, pixels, cg, 1.0f, wg, cg, xg, in_plane, 1.0f, og_out, pixels);
        continue;
      }
      for (int64_t pix0 = 0; pix0 < pixels; pix0 += tile) {
        const int64_t count = pixels - pix0 < tile ? pixels - pix0 : tile;
        im2col(g, cg, xg, pix0, count, col);
        gemm_f32(false, false, og, count, k_dim, 1.0f, wg, k_dim, col, count, 1.0f,
                 og_out + pix0, pixels);
      }
    }
  }
  return Error::Ok;
}

// Checks and runs conv1d (spatial == 1) or conv2d (spatial == 2):
// x, weight, bias?, stride, padding, dilation, groups, out.
Error conv_kernel(KernelContext& context, Span<EValue*> args, const char* op, uint32_t spatial) {
  ConvTensors t;
  TERN_RETURN_IF_ERROR(conv_tensor_args(op, args, 8, spatial, &t));
  const TensorView* x = t.x;
  const TensorView* w = t.weight;
  int64_t stride[2], pad[2], dilation[2];
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 3, "stride", spatial, 1, nullptr, stride));
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 4, "padding", spatial, 0, nullptr, pad));
  TERN_RETURN_IF_ERROR(spatial_arg(op, args, 5, "dilation", spatial, 1, nullptr, dilation));
  TERN_ASSIGN_OR_RETURN(const int64_t groups, int_arg(op, args, 6, "groups"));
  TERN_CHECK_OR_RETURN_ERROR(groups >= 1, InvalidArgument,
                             "%s: groups: expected >= 1, found %" PRId64, op, groups);

  const bool batched = x->rank == spatial + 2;
  const uint32_t c_dim = batched ? 1 : 0;
  ConvGeometry g;
  g.batch = batched ? x->sizes[0] : 1;
  g.in_channels = x->sizes[c_dim];
  g.in_h = spatial == 2 ? x->sizes[c_dim + 1] : 1;
  g.in_w = x->sizes[x->rank - 1];
  g.out_channels = w->sizes[0];
  g.kh = spatial == 2 ? w->sizes[2] : 1;
  g.kw = w->sizes[w->rank - 1];
  g.groups = groups;
  if (spatial == 2) {
    for (int d = 0; d < 2; ++d) {
      g.stride[d] = stride[d];
      g.pad[d] = pad[d];
      g.dilation[d] = dilation[d];
    }
  } else {
    g.stride[1] = stride[0];
    g.pad[1] = pad[0];
    g.dilation[1] = dilation[0];
  }
  TERN_CHECK_OR_RETURN_ERROR(g.in_channels % groups == 0 && g.out_channels % groups == 0,
                             InvalidArgument,
                             "%s: groups %" PRId64 " must divide the input channels (%" PRId64
                             ") and the output channels (%" PRId64 ")",
                             op, groups, g.in_channels, g.out_channels);
  TERN_CHECK_OR_RETURN_ERROR(w->sizes[1] == g.in_channels / groups, InvalidArgument,
                             "%s: weight: expected %" PRId64 " input channels per group (dim 1), "
                             "found %" PRId64,
                             op, g.in_channels / groups, w->sizes[1]);
  TERN_CHECK_OR_RETURN_ERROR(g.kh >= 1 && g.kw >= 1, InvalidArgument,
                             "%s: weight: expected a kernel of at least 1x1, found %" PRId64
                             "x%" PRId64,
                             op, g.kh, g.kw);
  TERN_CHECK_OR_RETURN_ERROR(g.out_channels >= 1 && g.in_channels >= 1, InvalidArgument,
                             "%s: expected at least one input and one output channel", op);
  if (spatial == 2) {
    TERN_RETURN_IF_ERROR(window_output_size(op, "height", g.in_h, g.kh, g.stride[0], g.pad[0],
                                            g.dilation[0], false, &g.out_h));
  }
  TERN_RETURN_IF_ERROR(window_output_size(op, spatial == 2 ? "width" : "length", g.in_w, g.kw,
                                          g.stride[1], g.pad[1], g.dilation[1], false, &g.out_w));
  TERN_RETURN_IF_ERROR(check_conv_output(op, g, spatial, batched, t));
  if (t.out->numel() == 0) return Error::Ok;
  return conv2d_run(context, op, g, x->data_as<const float>(), w->data_as<const float>(),
                    t.bias ? t.bias->data_as<const float>() : nullptr, t.out->data_as<float>());
}

}  // namespace

Error conv1d(KernelContext& context, Span<EValue*> args) {
  return conv_kernel(context, args, "tern::conv1d", 1);
}

Error conv2d(KernelContext& context, Span<EValue*> args) {
  return conv_kernel(context, args, "tern::conv2d", 2);
}

}  // namespace portable
}  // namespace tern
