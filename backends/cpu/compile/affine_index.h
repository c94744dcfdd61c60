// index_select by a constant index that is an affine walk (internal to backends/cpu/compile):
// index[flat] = start + Σ_j i_j · steps[j] as (i_0, .., i_k) walks `sizes` row-major. An
// unfold's windows flattened (ConvBERT's dynamic conv: index[c, k, l] = 24 c + k + l over
// [32, 9, 16]) and a plain run (start + i · step) both are; the cpu delegate then reads the
// selection as a strided view of x (the selected dim replaced by `sizes` with strides
// steps[j] · its own) and writes it with one StridedCopy.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct AffineIndex {
  int64_t start = 0;
  std::vector<int64_t> sizes;  ///< outermost first, each >= 1; their product the index count
  std::vector<int64_t> steps;  ///< one per size
};

/// Whether `index` (at least one value) is such a walk: *out gets the fewest dims found by
/// splitting off, innermost first, the longest run of one step (a dim of the walk).
bool affine_index(const std::vector<int64_t>& index, AffineIndex* out);

/// index_select(x, dim, index) node `node` the cpu delegate takes: x an f32 activation, dim an
/// int, index a constant 1-D int64 tensor whose values are an affine walk within x's dim, the
/// output not 4-D (its bytes row-major), x's rank - 1 + the walk's dims at most 6. Throws
/// Unsupported otherwise; returns the walk and sets *dim (wrapped).
AffineIndex index_select_walk(const Graph& g, const Node& node, size_t* dim);

/// Whether index_select_walk takes `node` (else a constant index may still be a GatherMap:
/// gather_map_plan.h).
bool is_affine_index_select(const Graph& g, const Node& node);

}  // namespace tern::compiler::cpu_compile
