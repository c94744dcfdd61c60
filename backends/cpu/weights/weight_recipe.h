// The cpu blob's recipes (cpu_blob_format.h BlobRecipe): how a weight the delegate needs in its
// own layout (packed GEMM panels, re-laid-out filters, quantized codes in SIMD order, scaled
// operands) is made from the program's constants. Shared by both halves (library
// tern::cpu_weights): the runtime half runs the recipes at prepare on the delegate call's
// constant arguments; the compile half sizes its values with recipe_shape() and runs the
// recipes of the few small constants it embeds instead (kEmbedMaxBytes), so there is one
// implementation of every transform.
//
// Runtime code: no exceptions, no RTTI; run_recipe() never allocates.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"

namespace tern::cpu {

/// What a recipe reads and makes, from its op, flags and params alone.
struct RecipeShape {
  /// Floats of the value it makes (for Alias: the source's, seen in place).
  uint64_t out_floats = 0;
  /// Elements each source slot must have (0: the slot must be kNoValue).
  uint64_t source_numel[kRecipeSources] = {};
  /// Whether a slot with a non-zero count may be left out (kNoValue): biases.
  bool optional[kRecipeSources] = {};
  /// Slot 0 is a quantized weight (QuantWeight) of this element type; others read f32.
  SourceType quantized = SourceType::F32;
  /// Permute: the value's dims must be exactly these (rank 4); other ops: out_dims_rank 0 (any
  /// dims holding out_floats elements; the packed ops' values are rank 1, checked by the node).
  uint32_t out_rank = 0;
  uint64_t out_dims[4] = {};
};

/// Fills *out for `r` making a value of `value_numel` elements (Alias and Affine take their
/// size from it; the other ops compute theirs, which the caller compares). False when an op,
/// flag, param, scale or shift is illegal, with *why (a static string) saying which. Params
/// are bounded (each <= 2^30, products checked) so no size overflows.
bool recipe_shape(const BlobRecipe& r, uint64_t value_numel, RecipeShape* out, const char** why);

/// One source as a recipe reads it: its bytes, and for a quantized weight the scheme's tensors
/// (the argument's QuantView; null where the format has none).
struct RecipeSource {
  const void* data = nullptr;
  const float* absmax = nullptr;
  const uint8_t* dq_codes = nullptr;
  const float* dq_absmax2 = nullptr;
  const float* dq_table = nullptr;
  float dq_offset = 0.0f;
  const float* scale = nullptr;
};

/// Makes the value of `r` (checked by recipe_shape, giving `shape`) into `out`
/// (shape.out_floats floats, any alignment; every float written) from `sources[kRecipeSources]`,
/// each as large as shape says (data null for a slot left out). Alias writes nothing (the caller
/// uses the source in place). Never allocates.
void run_recipe(const BlobRecipe& r, const RecipeShape& shape, const RecipeSource* sources,
                float* out);

/// How many parts run_recipe_part() makes the value of `r` (checked by recipe_shape) in: the
/// packed GEMM ops split into ranges of panels of about kRecipePartFloats floats (within each
/// conv group or expert), the other ops are one part. Parts write disjoint floats and read only
/// the sources, so they may run in any order or at once on several threads (the cpu backend
/// packs a method's weights over its pool at the first prepare).
uint64_t recipe_parts(const BlobRecipe& r);

/// Floats a part of a packed recipe aims at (at least one panel).
constexpr uint64_t kRecipePartFloats = uint64_t{1} << 18;

/// Part `part` (< recipe_parts(r)) of run_recipe: writes that part's floats of `out`.
/// Running every part once is run_recipe. Never allocates.
void run_recipe_part(const BlobRecipe& r, const RecipeShape& shape, const RecipeSource* sources,
                     float* out, uint64_t part);

/// The recipe op's name as messages show it ("pack_conv").
const char* recipe_op_name(uint32_t op);

}  // namespace tern::cpu
