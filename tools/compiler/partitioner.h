// The partitioner: hands maximal regions of a method's nodes to backends (docs/partitioning.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler {

/// A node left on the portable kernels after partitioning, and why each backend did not take it.
struct PortableNode {
  int node = -1;  ///< index in the partitioned graph
  std::string op;
  std::string debug_name;
  /// One entry per backend, in priority order: the backend's name and its reason — its
  /// why_unsupported() text, or why a node it supports stayed out (a bounded-dynamic tensor it
  /// cannot run on, or a run of nodes it declined: accepts_region()).
  std::vector<std::pair<std::string, std::string>> reasons;
};

/// Partitions `graph` among `backends` (registered backend compiler names, highest priority
/// first), appending one DelegateRegion per region it delegates; the region's nodes stay in
/// the graph and become its portable fallback. For each backend in turn:
///
///  1. the candidates are the nodes not yet in a region that the backend supports();
///  2. the nodes are reordered topologically so that candidates cluster where dependencies
///     allow (deterministic: a greedy list schedule that keeps taking ready nodes of the kind it
///     took last, lowest current index first, starting with the non-candidates when any is
///     ready; existing regions move as one unit and stay
///     contiguous). The new order is kept only when it has fewer candidate runs than the
///     current one, so an already clustered graph is left as it is;
///  3. each maximal contiguous run of candidates is offered to accepts_region(); an accepted
///     run gets its boundary (region_boundary: inputs are every value its nodes read and do not
///     produce, constants and scalar attributes included, in first-use order, a tensor list's
///     elements one by one and never the list; outputs the values it produces that later nodes
///     read, method outputs and state), is lowered with lower(),
///     and appended to graph.delegates. A vetoed run stays with later backends and the portable
///     kernels.
///
/// Regions already in the graph (from graph.json) are kept and never re-partitioned. At the end
/// the regions are sorted by first node and the graph is validated. An empty `backends` leaves
/// the graph as it is.
///
/// A backend may be given with options, "name:options" (e.g. "cuda:f32"): the registered
/// compiler's with_options() gets the text after the first ':' and may refuse it.
///
/// Throws std::invalid_argument when a name is not a registered backend compiler (the message
/// lists the registered ones), a name is given twice, with_options() refuses the options (its
/// message), or lower() fails (its message, prefixed with the method and backend).
///
/// When `left` is not null it receives, in node order, each node that stays on the portable
/// kernels and why (PortableNode), for `tern compile --explain`.
void partition(Graph& graph, const std::vector<std::string>& backends,
               std::vector<PortableNode>* left = nullptr);

}  // namespace tern::compiler
