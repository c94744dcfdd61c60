// Gathers by a constant index that is no affine walk (internal to backends/cpu/compile): a
// torch.gather (SEW-D's log-bucketed relative positions, index [B·H, L, L] into the last dim of
// [B·H, L, 2k]) or an index_select by any constant index, as tern's GatherMap node (op 42).
// The element map y[f] = x[M[f]] is worked out whole here, then folded: the longest prefix of
// the output's dims over which it repeats with a constant step (M[o·B + t] = o·step + M[t])
// becomes the node's outer rows, so the blob holds one block of int32 offsets.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct GatherMapPlan {
  int64_t outer = 1;         ///< rows the map repeats over (>= 1)
  int64_t step = 0;          ///< x's elements between two rows' reads (0 with one row)
  std::vector<int32_t> map;  ///< one row's offsets into x, each in [0, numel(x) - (outer-1)·step)
};

/// Whether `op` is a gather the cpu delegate may take as a map: tern::gather, tern::index_select.
bool is_gather_map_op(const std::string& op);

/// The map of gather / index_select node `node`: x an f32 activation that is not 4-D (its bytes
/// row-major), index a constant int64 tensor whose values lie inside x's dim (torch.gather's
/// index no larger than x in the other dims), the output not 4-D, at most 2^24 elements and x
/// fewer than 2^30. Throws Unsupported otherwise (an index_select by an affine walk is a
/// strided copy: affine_index.h).
GatherMapPlan gather_map_plan(const Graph& g, const Node& node);

}  // namespace tern::compiler::cpu_compile
