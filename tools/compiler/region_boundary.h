// Derivation of a delegate region's boundary values (internal to tools/compiler).
#pragma once

#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler {

/// The values crossing the boundary of the node range [first_node, last_node].
struct BoundarySets {
  /// Values read by the region's nodes and not produced inside it, in first-use order
  /// (tensors, constants and scalar attributes alike). A tensor list is never an input itself:
  /// each of its elements not produced inside is one, in list order (a region may read a list
  /// whose elements are made partly inside and partly outside it).
  std::vector<int> inputs;
  /// Values produced inside the region that a later node reads (directly or as a tensor-list
  /// element), that are method outputs, or that are state tensors; in production order. A
  /// tensor list a node writes counts element by element, like inputs.
  std::vector<int> outputs;
};

/// Computes the boundary of nodes [first_node, last_node] of `graph`. The caller guarantees the
/// node range and every value id in it are valid.
BoundarySets region_boundary(const Graph& graph, int first_node, int last_node);

}  // namespace tern::compiler
