// Gathers by a constant index that is no affine walk (internal to backends/cpu/compile): a
// torch.gather (SEW-D's log-bucketed relative positions, index [B·H, L, L] into the last dim of
// [B·H, L, 2k]) or an index_select by any constant index, as tern's GatherMap node (op 42).
// The element map y[f] = x[M[f]] is worked out whole here, then folded: the longest suffix of
// the output's dims over which it reads consecutive elements (M[t·R + r] = M[t·R] + r) becomes
// the node's run R, the longest prefix over which it repeats with a constant step (M[o·B·R +
// t·R] = o·step + M[t·R]) its outer rows, so the blob holds one block of int32 offsets, one per
// run. A reflect pad and a nearest resize by no integer factor are such maps too.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct GatherMapPlan {
  int64_t outer = 1;         ///< rows the map repeats over (>= 1)
  int64_t step = 0;          ///< x's elements between two rows' reads (0 with one row)
  int64_t run = 1;           ///< consecutive elements each offset copies (>= 1)
  std::vector<int32_t> map;  ///< one row's offsets into x, each in [0, numel(x) - (outer-1)·step
                             ///< - run]
};

/// Folds the element map `m` (y's f-th element, in the order its bytes lie, is x's m[f]-th)
/// of an output whose bytes lie as dims `sizes` row-major: the run, then the outer rows. Every
/// m[f] in [0, 2^30), m at most 2^24 long.
GatherMapPlan fold_map(const std::vector<int64_t>& m, const std::vector<int64_t>& sizes);

/// Throws Unsupported unless a reflect pad of an x of `x_sizes` by `pre` / `post` (elements
/// before and after, per dim) is one torch computes (each pad below its dim's size) and its map
/// is small enough (an output of at most 2^24 elements, x below 2^30).
void check_reflect_pad(const std::vector<int64_t>& x_sizes, const std::vector<int64_t>& pre,
                       const std::vector<int64_t>& post);

/// The map of that reflect pad, x's and the output's bytes lying in dim order `order` (tern
/// dims, outermost first: {0, 1, 2, 3} row-major, {0, 2, 3, 1} NHWC).
GatherMapPlan reflect_pad_plan(const std::vector<int64_t>& x_sizes, const std::vector<int64_t>& pre,
                               const std::vector<int64_t>& post,
                               const std::vector<size_t>& order);

/// Whether `op` is a gather the cpu delegate may take as a map: tern::gather, tern::index_select.
bool is_gather_map_op(const std::string& op);

/// The map of gather / index_select node `node`: x an f32 activation that is not 4-D (its bytes
/// row-major), index a constant int64 tensor whose values lie inside x's dim (torch.gather's
/// index no larger than x in the other dims), the output not 4-D, at most 2^24 elements and x
/// fewer than 2^30. Throws Unsupported otherwise (an index_select by an affine walk is a
/// strided copy: affine_index.h).
GatherMapPlan gather_map_plan(const Graph& g, const Node& node);

}  // namespace tern::compiler::cpu_compile
