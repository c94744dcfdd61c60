#include "backends/cpu/weights/weight_recipe.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/batch_matmul.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/quant_weight.h"
#include "backends/cpu/kernels/winograd_conv.h"
#include "runtime/core/checked_math.h"

namespace tern::cpu {
namespace {

constexpr uint64_t kMaxParam = uint64_t{1} << 30;
/// Most elements of any source or value (as the blob reader's values).
constexpr uint64_t kMaxElements = uint64_t{1} << 40;

/// a * b * c * d within kMaxElements, or false.
bool product(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t* out) {
  uint64_t p = 0;
  return checked_mul(a, b, &p) && checked_mul(p, c, &p) && checked_mul(p, d, &p) &&
         p <= kMaxElements && (*out = p, true);
}

bool fail(const char** why, const char* reason) {
  *why = reason;
  return false;
}

/// Params [from, kRecipeParams) are 0.
bool unused_params_zero(const BlobRecipe& r, uint32_t from) {
  for (uint32_t i = from; i < kRecipeParams; ++i) {
    if (r.params[i] != 0) return false;
  }
  return true;
}

/// Params [0, count) in 1..kMaxParam.
bool params_in_range(const BlobRecipe& r, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    if (r.params[i] < 1 || r.params[i] > kMaxParam) return false;
  }
  return true;
}

/// Slot `weight` (w_numel elements, required) and slot `bias` (bias_numel, optional).
void weight_and_bias(RecipeShape* s, uint32_t weight, uint64_t w_numel, uint32_t bias,
                     uint64_t bias_numel) {
  s->source_numel[weight] = w_numel;
  s->source_numel[bias] = bias_numel;
  s->optional[bias] = true;
}

const float* floats(const RecipeSource& s) { return static_cast<const float*>(s.data); }

/// y = float(double(x) * scale + shift), the shift added only when non-zero (so -0 stays -0).
inline float affine(float x, double scale, double shift) {
  const double v = static_cast<double>(x) * scale;
  return static_cast<float>(shift != 0.0 ? v + shift : v);
}

/// A hardsigmoid folded into a packed GEMM weight of `n` columns (packed_fc_floats(n, k) floats
/// at `packed`): every float / 6, then 1/2 added to the bias slots (in f32).
void fold_hardsigmoid(float* packed, uint64_t n, uint64_t k) {
  const uint64_t count = packed_fc_floats(n, k);
  const double sixth = 1.0 / 6.0;
  for (uint64_t i = 0; i < count; ++i) packed[i] = static_cast<float>(packed[i] * sixth);
  for (uint64_t col = 0; col < n; ++col) packed[(col / 16) * 16 * (k + 1) + col % 16] += 0.5f;
}

/// An OIHW filter [O, C, KH, KW] as the [O, KH*KW*C] matrix ((kh, kw, c) order) packed with
/// its bias, as pack_fc_weight packs that matrix (the same floats), written straight from the
/// filter with no intermediate matrix: panel j, K row (p, ch), lane l = out channel 16j + l.
void pack_conv(const float* w, const float* bias, uint64_t o, uint64_t c, uint64_t kh,
               uint64_t kw, float* out) {
  const uint64_t k = kh * kw * c, taps = kh * kw;
  const uint64_t panels = (o + 15) / 16;
  for (uint64_t j = 0; j < panels; ++j) {
    float* panel = out + j * 16 * (k + 1);
    const uint64_t cols = o - j * 16 < 16 ? o - j * 16 : 16;
    for (uint64_t l = 0; l < 16; ++l) {
      panel[l] = (l < cols && bias != nullptr) ? bias[j * 16 + l] : 0.0f;
    }
    // Each K row of the panel is one 64-byte line of 16 lanes, written whole; the 16 filters
    // are read front to back.
    const float* src = w + j * 16 * c * taps;  // filter of out channel 16j: [C][KH*KW]
    for (uint64_t ch = 0; ch < c; ++ch) {
      for (uint64_t p = 0; p < taps; ++p) {
        float* row = panel + 16 + (p * c + ch) * 16;
        const float* at = src + ch * taps + p;
        uint64_t l = 0;
        for (; l < cols; ++l) row[l] = at[l * c * taps];
        for (; l < 16; ++l) row[l] = 0.0f;
      }
    }
  }
}

/// A 1x1 conv's weight [O, I] and bias packed at `out`; returns the floats written.
uint64_t pack_pointwise(const float* w, const float* bias, uint64_t o, uint64_t i, float* out) {
  pack_fc_weight(w, bias, static_cast<int64_t>(o), static_cast<int64_t>(i), out);
  return packed_fc_floats(o, i);
}

bool bottleneck_shape(const BlobRecipe& r, RecipeShape* s, const char** why) {
  const uint32_t* q = r.params;
  if (!params_in_range(r, kBnS)) return fail(why, "a channel count or window is 0 or above 2^30");
  const uint64_t c = q[kBnC], e = q[kBnE], o = q[kBnO], kh = q[kBnKh], kw = q[kBnKw], se = q[kBnS];
  const uint32_t flags = q[kBnFlags];
  const bool expand = (flags & kBottleneckHasExpand) != 0;
  const bool project = (flags & kBottleneckHasProject) != 0;
  const bool has_se = (flags & kBottleneckHasSqueezeExcite) != 0;
  if ((flags & ~kBottleneckFlagBits) != 0 || (!expand && !project && has_se) ||
      (has_se && !project) || (has_se != (se > 0)) || se > kMaxParam) {
    return fail(why, "bottleneck flags or squeeze channels inconsistent");
  }
  if ((!expand && e != c) || (!project && o != e) || kh > kMaxBottleneckWindow ||
      q[kBnGate] > kLastSqueezeGate || (!has_se && q[kBnGate] != 0)) {
    return fail(why, "bottleneck channels, window or gate inconsistent");
  }
  uint64_t n = 0;
  if (expand) {
    if (!product(e, c, 1, 1, &n)) return fail(why, "expand weight too large");
    weight_and_bias(s, kBnExpandWeight, n, kBnExpandBias, e);
  }
  if (!product(e, kh, kw, 1, &n)) return fail(why, "depthwise weight too large");
  weight_and_bias(s, kBnDepthwiseWeight, n, kBnDepthwiseBias, e);
  if (project) {
    if (!product(o, e, 1, 1, &n)) return fail(why, "project weight too large");
    weight_and_bias(s, kBnProjectWeight, n, kBnProjectBias, o);
  }
  if (has_se) {
    if (!product(se, e, 1, 1, &n)) return fail(why, "squeeze weight too large");
    weight_and_bias(s, kBnSqueezeWeight, n, kBnSqueezeBias, se);
    weight_and_bias(s, kBnExciteWeight, n, kBnExciteBias, e);
  }
  s->out_floats = bottleneck_weight_floats(expand, project, c, e, o, kh, kw, se);
  return true;
}

bool quant_desc(const BlobRecipe& r, QuantWeightDesc* d, QuantWeightLayout* layout) {
  const uint32_t* q = r.params;
  if (q[kQuantFormat] < 1 || q[kQuantFormat] > kLastQuantWeightFormat ||
      q[kQuantGranularity] > kLastFp8Granularity) {
    return false;
  }
  *d = quant_weight_desc(q);
  return quant_weight_layout(*d, layout);
}

/// A matrix of `n` packed columns (ceil(n / 16) panels of `panel_floats` floats each) cut into
/// parts of whole panels, about kRecipePartFloats floats each.
struct PanelSplit {
  uint64_t panels = 0;    ///< panels of the matrix
  uint64_t per_part = 1;  ///< panels per part (the last part may have fewer)
  uint64_t parts = 1;
};

PanelSplit panel_split(uint64_t n, uint64_t panel_floats) {
  PanelSplit s;
  s.panels = (n + kPanelWidth - 1) / kPanelWidth;
  s.per_part = panel_floats >= kRecipePartFloats ? 1 : kRecipePartFloats / panel_floats;
  s.parts = s.panels == 0 ? 1 : (s.panels + s.per_part - 1) / s.per_part;
  return s;
}

/// Part `part` of a split: its first column and its column count (of `n`).
void part_columns(const PanelSplit& s, uint64_t n, uint64_t part, uint64_t* col0,
                  uint64_t* cols) {
  const uint64_t first = part * s.per_part;
  const uint64_t end = first + s.per_part < s.panels ? first + s.per_part : s.panels;
  *col0 = first * kPanelWidth;
  *cols = (end * kPanelWidth < n ? end * kPanelWidth : n) - *col0;
}

WinogradTile winograd_tile(const uint32_t* q) {
  return q[2] == kWinogradTileF4x4 ? WinogradTile::F4x4 : WinogradTile::F2x2;
}

/// How a packed recipe's matrix splits into parts: PackFc's [N, K], one conv group's
/// (PackConv: O/G columns, K = C*KH*KW) and PackWinograd's columns across all its position
/// matrices; one part for the other ops.
PanelSplit packed_split(const BlobRecipe& r) {
  const uint32_t* q = r.params;
  switch (static_cast<RecipeOp>(r.op)) {
    case RecipeOp::PackFc:
      return panel_split(q[0], kPanelWidth * (uint64_t{q[1]} + 1));
    case RecipeOp::PackConv:
      return panel_split(q[0] / conv_groups(q[4]),
                         kPanelWidth * (uint64_t{q[1]} * q[2] * q[3] + 1));
    case RecipeOp::PackWinograd:
      return panel_split(q[0], kPanelWidth * (uint64_t{q[1]} + 1) *
                                   static_cast<uint64_t>(winograd_positions(winograd_tile(q))));
    default:
      return PanelSplit();
  }
}

}  // namespace

uint64_t recipe_parts(const BlobRecipe& r) {
  switch (static_cast<RecipeOp>(r.op)) {
    case RecipeOp::PackFc:
    case RecipeOp::PackWinograd:
      return packed_split(r).parts;
    case RecipeOp::PackConv:
      return conv_groups(r.params[4]) * packed_split(r).parts;
    case RecipeOp::PackGroupedKn:
      return r.params[0];
    default:
      return 1;
  }
}

const char* recipe_op_name(uint32_t op) {
  switch (static_cast<RecipeOp>(op)) {
    case RecipeOp::Alias:
      return "alias";
    case RecipeOp::Affine:
      return "affine";
    case RecipeOp::Permute:
      return "permute";
    case RecipeOp::PackFc:
      return "pack_fc";
    case RecipeOp::PackConv:
      return "pack_conv";
    case RecipeOp::PackWinograd:
      return "pack_winograd";
    case RecipeOp::PackBottleneck:
      return "pack_bottleneck";
    case RecipeOp::QuantWeight:
      return "quant_weight";
    case RecipeOp::PackGroupedKn:
      return "pack_grouped_kn";
  }
  return "?";
}

bool recipe_shape(const BlobRecipe& r, uint64_t value_numel, RecipeShape* s, const char** why) {
  *s = RecipeShape();
  const RecipeOp op = static_cast<RecipeOp>(r.op);
  const bool scaled = op == RecipeOp::Affine || op == RecipeOp::Permute;
  if (scaled ? !(std::isfinite(r.scale) && std::isfinite(r.shift))
             : !(r.scale == 1.0 && r.shift == 0.0)) {
    return fail(why, scaled ? "scale or shift not finite" : "scale/shift not 1/0");
  }
  const bool foldable = op == RecipeOp::PackFc || op == RecipeOp::PackConv;
  const uint32_t known = foldable ? kRecipeFoldHardsigmoid
                         : op == RecipeOp::Permute ? kRecipeFlat
                                                   : 0u;
  if ((r.flags & ~known) != 0) {
    return fail(why, "unknown flags");
  }
  uint64_t n = 0;
  switch (op) {
    case RecipeOp::Alias:
    case RecipeOp::Affine:
      if (!unused_params_zero(r, 0)) return fail(why, "unused params not 0");
      s->source_numel[0] = value_numel;
      s->out_floats = value_numel;
      return true;
    case RecipeOp::Permute: {
      if (!params_in_range(r, 4) || !unused_params_zero(r, 8)) {
        return fail(why, "dims not in 1..2^30");
      }
      bool seen[4] = {};
      for (uint32_t i = 0; i < 4; ++i) {
        const uint32_t p = r.params[4 + i];
        if (p > 3 || seen[p]) return fail(why, "params 4..7 not a permutation of 0..3");
        seen[p] = true;
        s->out_dims[i] = r.params[p];
      }
      if (!product(r.params[0], r.params[1], r.params[2], r.params[3], &n)) {
        return fail(why, "too many elements");
      }
      s->source_numel[0] = n;
      s->out_floats = n;
      s->out_rank = (r.flags & kRecipeFlat) != 0 ? 0 : 4;  // flat: the value's dims, n elements
      return true;
    }
    case RecipeOp::PackFc: {
      if (!params_in_range(r, 2) || !unused_params_zero(r, 2)) {
        return fail(why, "N, K not in 1..2^30 or unused params not 0");
      }
      if (!product(r.params[0], r.params[1], 1, 1, &n)) return fail(why, "too many elements");
      weight_and_bias(s, 0, n, 1, r.params[0]);
      s->out_floats = packed_fc_floats(r.params[0], r.params[1]);
      return true;
    }
    case RecipeOp::PackConv: {
      if (!params_in_range(r, 4) || !unused_params_zero(r, 5) || r.params[4] > kMaxParam) {
        return fail(why, "O, C, KH, KW not in 1..2^30, groups above 2^30 or unused params not 0");
      }
      const uint64_t groups = conv_groups(r.params[4]);
      if (r.params[0] % groups != 0) return fail(why, "groups do not divide O");
      uint64_t k = 0;
      if (!product(r.params[0], r.params[1], r.params[2], r.params[3], &n) ||
          !product(r.params[1], r.params[2], r.params[3], 1, &k) || k > kMaxParam ||
          !product(groups, packed_fc_floats(r.params[0] / groups, k), 1, 1, &s->out_floats)) {
        return fail(why, "too many elements");
      }
      weight_and_bias(s, 0, n, 1, r.params[0]);
      return true;
    }
    case RecipeOp::PackGroupedKn: {
      if (!params_in_range(r, 3) || !unused_params_zero(r, 3)) {
        return fail(why, "E, K, N not in 1..2^30 or unused params not 0");
      }
      if (!product(r.params[0], r.params[1], r.params[2], 1, &n) ||
          !product(r.params[0], packed_fc_floats(r.params[2], r.params[1]), 1, 1,
                   &s->out_floats)) {
        return fail(why, "too many elements");
      }
      s->source_numel[0] = n;
      return true;
    }
    case RecipeOp::PackWinograd:
      if (!params_in_range(r, 2) || !unused_params_zero(r, 3)) {
        return fail(why, "O, C not in 1..2^30 or unused params not 0");
      }
      if (r.params[2] != kWinogradTileF2x2 && r.params[2] != kWinogradTileF4x4) {
        return fail(why, "tile field not 0 (F(2x2, 3x3)) or 4 (F(4x4, 3x3))");
      }
      if (!product(r.params[0], r.params[1], 9, 1, &n)) return fail(why, "too many elements");
      weight_and_bias(s, 0, n, 1, r.params[0]);
      s->out_floats = winograd_packed_floats(r.params[0], r.params[1], r.params[2]);
      return true;
    case RecipeOp::PackBottleneck:
      return bottleneck_shape(r, s, why);
    case RecipeOp::QuantWeight: {
      QuantWeightDesc d;
      QuantWeightLayout layout;
      if (!quant_desc(r, &d, &layout)) return fail(why, "illegal quantization parameters");
      s->source_numel[0] = d.rows * d.cols;
      s->quantized = d.format == QuantWeightFormat::Fp8E4M3   ? SourceType::Fp8E4M3
                     : d.format == QuantWeightFormat::Fp8E5M2 ? SourceType::Fp8E5M2
                                                              : SourceType::Nf4;
      s->out_floats = layout.total_bytes / 4;
      return true;
    }
  }
  return fail(why, "unknown op");
}

void run_recipe(const BlobRecipe& r, const RecipeShape& shape, const RecipeSource* src,
                float* out) {
  const uint64_t parts = recipe_parts(r);
  for (uint64_t part = 0; part < parts; ++part) run_recipe_part(r, shape, src, out, part);
}

void run_recipe_part(const BlobRecipe& r, const RecipeShape& shape, const RecipeSource* src,
                     float* out, uint64_t part) {
  const uint32_t* q = r.params;
  switch (static_cast<RecipeOp>(r.op)) {
    case RecipeOp::Alias:
      return;
    case RecipeOp::Affine: {
      const float* x = floats(src[0]);
      for (uint64_t i = 0; i < shape.out_floats; ++i) out[i] = affine(x[i], r.scale, r.shift);
      return;
    }
    case RecipeOp::Permute: {
      const float* x = floats(src[0]);
      uint64_t stride[4];  // source strides, row-major
      stride[3] = 1;
      for (int i = 2; i >= 0; --i) stride[i] = stride[i + 1] * q[i + 1];
      const uint64_t* d = shape.out_dims;
      const uint64_t s0 = stride[q[4]], s1 = stride[q[5]], s2 = stride[q[6]], s3 = stride[q[7]];
      uint64_t o = 0;
      for (uint64_t a = 0; a < d[0]; ++a) {
        for (uint64_t b = 0; b < d[1]; ++b) {
          for (uint64_t c = 0; c < d[2]; ++c) {
            const float* row = x + a * s0 + b * s1 + c * s2;
            for (uint64_t e = 0; e < d[3]; ++e) out[o++] = affine(row[e * s3], r.scale, r.shift);
          }
        }
      }
      return;
    }
    case RecipeOp::PackFc: {
      // Panels [col0 / 16, ...) of the packed matrix are the packing of columns col0.. alone.
      const uint64_t n = q[0], k = q[1];
      uint64_t col0 = 0, cols = 0;
      part_columns(packed_split(r), n, part, &col0, &cols);
      const float* bias = floats(src[1]);
      float* at = out + col0 * (k + 1);
      pack_fc_weight(floats(src[0]) + col0 * k, bias != nullptr ? bias + col0 : nullptr,
                     static_cast<int64_t>(cols), static_cast<int64_t>(k), at);
      if (r.flags & kRecipeFoldHardsigmoid) fold_hardsigmoid(at, cols, k);
      return;
    }
    case RecipeOp::PackConv: {
      // Each group's O/G filters (and bias) packed as a weight of their own, one after another;
      // a part is a range of one group's panels.
      const uint64_t groups = conv_groups(q[4]), o = q[0] / groups, k = uint64_t{q[1]} * q[2] * q[3];
      const PanelSplit split = packed_split(r);
      const uint64_t g = part / split.parts;
      uint64_t col0 = 0, cols = 0;
      part_columns(split, o, part % split.parts, &col0, &cols);
      const float* bias = floats(src[1]);
      float* at = out + g * packed_fc_floats(o, k) + col0 * (k + 1);
      pack_conv(floats(src[0]) + (g * o + col0) * k,
                bias != nullptr ? bias + g * o + col0 : nullptr, cols, q[1], q[2], q[3], at);
      if (r.flags & kRecipeFoldHardsigmoid) fold_hardsigmoid(at, cols, k);
      return;
    }
    case RecipeOp::PackWinograd: {
      const uint64_t per_part = packed_split(r).per_part, first = part * per_part;
      pack_winograd_weight_panels(floats(src[0]), floats(src[1]), q[0], q[1], out,
                                  winograd_tile(q), static_cast<int64_t>(first),
                                  static_cast<int64_t>(first + per_part));
      return;
    }
    case RecipeOp::PackBottleneck: {
      const uint64_t c = q[kBnC], e = q[kBnE], o = q[kBnO], kh = q[kBnKh], kw = q[kBnKw],
                     se = q[kBnS];
      std::memset(out, 0, shape.out_floats * sizeof(float));
      float* at = out;
      if (q[kBnFlags] & kBottleneckHasExpand) {
        at += pack_pointwise(floats(src[kBnExpandWeight]), floats(src[kBnExpandBias]), e, c, at);
      }
      const float* w = floats(src[kBnDepthwiseWeight]);  // [E, 1, KH, KW]
      const float* b = floats(src[kBnDepthwiseBias]);
      const uint64_t taps = kh * kw;
      for (uint64_t ch = 0; ch < e; ++ch) {
        for (uint64_t t = 0; t < taps; ++t) at[t * e + ch] = w[ch * taps + t];
        at[taps * e + ch] = b != nullptr ? b[ch] : 0.0f;
      }
      at += bottleneck_depthwise_floats(kh, kw, e);
      if (q[kBnFlags] & kBottleneckHasProject) {
        at += pack_pointwise(floats(src[kBnProjectWeight]), floats(src[kBnProjectBias]), o, e,
                             at);
      }
      if (q[kBnFlags] & kBottleneckHasSqueezeExcite) {
        at += pack_pointwise(floats(src[kBnSqueezeWeight]), floats(src[kBnSqueezeBias]), se, e,
                             at);
        float* excite = at;
        at += pack_pointwise(floats(src[kBnExciteWeight]), floats(src[kBnExciteBias]), e, se,
                             at);
        if (q[kBnGate] == static_cast<uint32_t>(SqueezeGate::Clamp01)) {
          fold_hardsigmoid(excite, e, se);
        }
      }
      return;
    }
    case RecipeOp::PackGroupedKn: {
      // A part is one expert's matrix.
      const uint64_t k = q[1], n = q[2], each = packed_fc_floats(n, k), g = part;
      pack_kn_weight(floats(src[0]) + g * k * n, static_cast<int64_t>(k), static_cast<int64_t>(n),
                     out + g * each);
      return;
    }
    case RecipeOp::QuantWeight: {
      QuantWeightDesc d;
      QuantWeightLayout layout;
      (void)quant_desc(r, &d, &layout);  // recipe_shape checked it
      std::memset(out, 0, layout.total_bytes);
      const RecipeSource& w = src[0];
      pack_quant_weight(d, layout, static_cast<const uint8_t*>(w.data), w.absmax, w.dq_codes,
                        w.dq_absmax2, w.dq_table, w.dq_offset, w.scale,
                        reinterpret_cast<uint8_t*>(out));
      return;
    }
  }
}

}  // namespace tern::cpu
