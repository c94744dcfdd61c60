// tern::conv3d, f32: x [N, C, D, H, W] (or unbatched [C, D, H, W]), weight [O, C/g, kd, kh, kw].
//
// The paths of conv2d one dimension up: depthwise (one input channel per group: a direct loop
// over output rows), 1x1x1 stride-1 unpadded (the input already is the GEMM's right operand),
// and the general im2col + GEMM per group, the column buffer built for a tile of output voxels
// at a time in scratch from the temp allocator (scratch_sizes.h: conv3d_scratch_bytes).
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

constexpr const char* kOp = "tern::conv3d";

/// One 3-D convolution: dims in depth, height, width order.
struct Conv3dGeometry {
  int64_t batch = 1;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t groups = 1;
  int64_t in[3] = {0, 0, 0};
  int64_t k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  int64_t out[3] = {0, 0, 0};

  int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  int64_t out_volume() const { return out[0] * out[1] * out[2]; }
  int64_t taps() const { return k[0] * k[1] * k[2]; }
  /// Input index along dim d under output position o and tap t (may lie in the padding).
  int64_t input_at(int d, int64_t o, int64_t t) const {
    return o * stride[d] - pad[d] + t * dilation[d];
  }
};

// out (one sample, [O, OD*OH*OW]) = bias per channel, or 0.
void fill_bias(const Conv3dGeometry& g, const float* bias, float* out) {
  const int64_t volume = g.out_volume();
  for (int64_t o = 0; o < g.out_channels; ++o) {
    const float v = bias ? bias[o] : 0.0f;
    float* p = out + o * volume;
    for (int64_t i = 0; i < volume; ++i) p[i] = v;
  }
}

// Depthwise: output channel o reads input channel o / (O / C) only. out holds the bias.
void conv_depthwise(const Conv3dGeometry& g, const float* x, const float* w, float* out) {
  const int64_t multiplier = g.out_channels / g.in_channels;
  const int64_t sw = g.stride[2];
  for (int64_t o = 0; o < g.out_channels; ++o) {
    const float* vol = x + (o / multiplier) * g.in_volume();
    const float* wo = w + o * g.taps();
    float* out_o = out + o * g.out_volume();
    for (int64_t oz = 0; oz < g.out[0]; ++oz) {
      for (int64_t oy = 0; oy < g.out[1]; ++oy) {
        float* __restrict out_row = out_o + (oz * g.out[1] + oy) * g.out[2];
        for (int64_t kz = 0; kz < g.k[0]; ++kz) {
          const int64_t iz = g.input_at(0, oz, kz);
          if (iz < 0 || iz >= g.in[0]) continue;
          for (int64_t ky = 0; ky < g.k[1]; ++ky) {
            const int64_t iy = g.input_at(1, oy, ky);
            if (iy < 0 || iy >= g.in[1]) continue;
            const float* __restrict in_row = vol + (iz * g.in[1] + iy) * g.in[2];
            for (int64_t kx = 0; kx < g.k[2]; ++kx) {
              const float wv = wo[(kz * g.k[1] + ky) * g.k[2] + kx];
              const int64_t offset = g.input_at(2, 0, kx);
              int64_t lo, hi;
              valid_output_range(g.in[2], g.out[2], sw, offset, &lo, &hi);
              for (int64_t ox = lo; ox < hi; ++ox) out_row[ox] += wv * in_row[ox * sw + offset];
            }
          }
        }
      }
    }
  }
}

// Columns for output voxels [pix0, pix0 + count) of one group: row ((c*kd + kz)*kh + ky)*kw + kx
// holds, for voxel pix0 + t, the input under tap (kz, ky, kx) of channel c (0 in the padding).
void im2col(const Conv3dGeometry& g, int64_t channels, const float* x, int64_t pix0,
            int64_t count, float* col) {
  const int64_t sw = g.stride[2];
  const int64_t ow = g.out[2];
  for (int64_t c = 0; c < channels; ++c) {
    const float* vol = x + c * g.in_volume();
    for (int64_t kz = 0; kz < g.k[0]; ++kz) {
      for (int64_t ky = 0; ky < g.k[1]; ++ky) {
        for (int64_t kx = 0; kx < g.k[2]; ++kx) {
          float* dst = col + (((c * g.k[0] + kz) * g.k[1] + ky) * g.k[2] + kx) * count;
          const int64_t offset = g.input_at(2, 0, kx);
          int64_t lo, hi;
          valid_output_range(g.in[2], ow, sw, offset, &lo, &hi);
          int64_t t = 0;
          int64_t row = pix0 / ow;  // output row index over (oz, oy)
          int64_t ox = pix0 % ow;
          while (t < count) {
            const int64_t len = ow - ox < count - t ? ow - ox : count - t;
            const int64_t end = ox + len;
            const int64_t iz = g.input_at(0, row / g.out[1], kz);
            const int64_t iy = g.input_at(1, row % g.out[1], ky);
            float* d = dst + t - ox;  // d[o] is output column o's slot
            if (iz < 0 || iz >= g.in[0] || iy < 0 || iy >= g.in[1]) {
              for (int64_t o = ox; o < end; ++o) d[o] = 0.0f;
            } else {
              const float* in_row = vol + (iz * g.in[1] + iy) * g.in[2];
              const int64_t a = lo > ox ? lo : ox;
              const int64_t b = hi < end ? hi : end;
              int64_t o = ox;
              for (; o < a && o < end; ++o) d[o] = 0.0f;
              for (; o < b; ++o) d[o] = in_row[o * sw + offset];
              for (; o < end; ++o) d[o] = 0.0f;
            }
            t += len;
            ox = 0;
            ++row;
          }
        }
      }
    }
  }
}

Error run(KernelContext& context, const Conv3dGeometry& g, const float* x, const float* w,
          const float* bias, float* out) {
  const int64_t cg = g.in_channels / g.groups;
  const int64_t og = g.out_channels / g.groups;
  const int64_t voxels = g.out_volume();
  const int64_t in_volume = g.in_volume();
  const int64_t k_dim = cg * g.taps();
  const bool im2col_path =
      conv3d_uses_im2col(g.in_channels, g.groups, g.k[0], g.k[1], g.k[2], g.stride[0],
                         g.stride[1], g.stride[2], g.pad[0], g.pad[1], g.pad[2]);
  float* col = nullptr;
  if (im2col_path && g.batch > 0 && voxels > 0) {
    const uint64_t bytes = conv3d_scratch_bytes(
        g.in_channels, g.groups, g.k[0], g.k[1], g.k[2], g.stride[0], g.stride[1], g.stride[2],
        g.pad[0], g.pad[1], g.pad[2], g.out[0], g.out[1], g.out[2]);
    TERN_RETURN_IF_ERROR(allocate_scratch(kOp, context.temp_allocator, bytes, &col));
  }
  const int64_t tile = static_cast<int64_t>(
      conv_tile_pixels(static_cast<uint64_t>(k_dim), static_cast<uint64_t>(voxels)));
  for (int64_t n = 0; n < g.batch; ++n) {
    const float* xn = x + n * g.in_channels * in_volume;
    float* on = out + n * g.out_channels * voxels;
    fill_bias(g, bias, on);
    if (voxels == 0) continue;
    if (g.groups == g.in_channels) {
      conv_depthwise(g, xn, w, on);
      continue;
    }
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const float* wg = w + grp * og * k_dim;
      const float* xg = xn + grp * cg * in_volume;
      float* og_out = on + grp * og * voxels;
      if (!im2col_path) {
        gemm_f32(false, false, og, voxels, cg, 1.0f, wg, cg, xg, in_volume, 1.0f, og_out, voxels);
        continue;
      }
      for (int64_t pix0 = 0; pix0 < voxels; pix0 += tile) {
        const int64_t count = voxels - pix0 < tile ? voxels - pix0 : tile;
        im2col(g, cg, xg, pix0, count, col);
        gemm_f32(false, false, og, count, k_dim, 1.0f, wg, k_dim, col, count, 1.0f,
                 og_out + pix0, voxels);
      }
    }
  }
  return Error::Ok;
}

}  // namespace

// x, weight, bias?, stride, padding, dilation, groups, out.
Error conv3d(KernelContext& context, Span<EValue*> args) {
  ConvTensors t;
  TERN_RETURN_IF_ERROR(conv_tensor_args(kOp, args, 8, 3, &t));
  const TensorView* x = t.x;
  const TensorView* w = t.weight;
  Conv3dGeometry g;
  TERN_RETURN_IF_ERROR(spatial_arg(kOp, args, 3, "stride", 3, 1, nullptr, g.stride));
  TERN_RETURN_IF_ERROR(spatial_arg(kOp, args, 4, "padding", 3, 0, nullptr, g.pad));
  TERN_RETURN_IF_ERROR(spatial_arg(kOp, args, 5, "dilation", 3, 1, nullptr, g.dilation));
  TERN_ASSIGN_OR_RETURN(g.groups, int_arg(kOp, args, 6, "groups"));
  TERN_CHECK_OR_RETURN_ERROR(g.groups >= 1, InvalidArgument,
                             "%s: groups: expected >= 1, found %" PRId64, kOp, g.groups);
  const bool batched = x->rank == 5;
  const uint32_t c_dim = batched ? 1 : 0;
  g.batch = batched ? x->sizes[0] : 1;
  g.in_channels = x->sizes[c_dim];
  g.out_channels = w->sizes[0];
  for (int d = 0; d < 3; ++d) {
    g.in[d] = x->sizes[c_dim + 1 + d];
    g.k[d] = w->sizes[2 + d];
  }
  TERN_CHECK_OR_RETURN_ERROR(g.in_channels % g.groups == 0 && g.out_channels % g.groups == 0,
                             InvalidArgument,
                             "%s: groups %" PRId64 " must divide the input channels (%" PRId64
                             ") and the output channels (%" PRId64 ")",
                             kOp, g.groups, g.in_channels, g.out_channels);
  TERN_CHECK_OR_RETURN_ERROR(w->sizes[1] == g.in_channels / g.groups, InvalidArgument,
                             "%s: weight: expected %" PRId64 " input channels per group (dim 1), "
                             "found %" PRId64,
                             kOp, g.in_channels / g.groups, w->sizes[1]);
  TERN_CHECK_OR_RETURN_ERROR(g.k[0] >= 1 && g.k[1] >= 1 && g.k[2] >= 1, InvalidArgument,
                             "%s: weight: expected a kernel of at least 1x1x1, found %" PRId64
                             "x%" PRId64 "x%" PRId64,
                             kOp, g.k[0], g.k[1], g.k[2]);
  TERN_CHECK_OR_RETURN_ERROR(g.out_channels >= 1 && g.in_channels >= 1, InvalidArgument,
                             "%s: expected at least one input and one output channel", kOp);
  static const char* const kDims[3] = {"depth", "height", "width"};
  for (int d = 0; d < 3; ++d) {
    TERN_RETURN_IF_ERROR(window_output_size(kOp, kDims[d], g.in[d], g.k[d], g.stride[d], g.pad[d],
                                            g.dilation[d], false, &g.out[d]));
  }
  if (t.bias != nullptr) {
    TERN_RETURN_IF_ERROR(check_dtype(kOp, "bias", *t.bias, DType::F32));
    const int64_t want_bias[1] = {g.out_channels};
    TERN_RETURN_IF_ERROR(check_shape(kOp, "bias", *t.bias, Span<const int64_t>(want_bias)));
  }
  int64_t want[5];
  uint32_t rank = 0;
  if (batched) want[rank++] = g.batch;
  want[rank++] = g.out_channels;
  for (int d = 0; d < 3; ++d) want[rank++] = g.out[d];
  TERN_RETURN_IF_ERROR(check_shape(kOp, "out", *t.out, Span<const int64_t>(want, rank)));
  TERN_RETURN_IF_ERROR(check_no_overlap(kOp, *t.out, *x, "x"));
  TERN_RETURN_IF_ERROR(check_no_overlap(kOp, *t.out, *w, "weight"));
  if (t.bias != nullptr) TERN_RETURN_IF_ERROR(check_no_overlap(kOp, *t.out, *t.bias, "bias"));
  if (t.out->numel() == 0) return Error::Ok;
  return run(context, g, x->data_as<const float>(), w->data_as<const float>(),
             t.bias ? t.bias->data_as<const float>() : nullptr, t.out->data_as<float>());
}

}  // namespace portable
}  // namespace tern
