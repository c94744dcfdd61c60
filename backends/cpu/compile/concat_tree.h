// The shape of a long concatenation as nested Concat nodes (internal to backends/cpu/compile):
// a Concat node takes at most a few parts and writes every float of them once, so a cat of
// more parts is a tree of nodes, and how they nest decides how often each part is copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tern::compiler::cpu_compile {

struct ConcatTree {
  struct Node {
    size_t first = 0, last = 0;  ///< the parts [first, last] it concatenates, in order
    std::vector<size_t> children;  ///< its inputs (tree nodes), in order; none for one part
  };
  std::vector<Node> nodes;
  size_t root = 0;
};

/// The tree of nodes of at most `fan_in` (>= 2) inputs over parts of `widths` (their extents
/// along the cat dim, >= 1 part) that copies the fewest floats in all (each node copies the
/// sum of its parts' widths), and of those the fewest nodes. Up to 48 parts; more are one
/// left-to-right chain (each node the previous result and fan_in - 1 parts more).
ConcatTree concat_tree(const std::vector<int64_t>& widths, size_t fan_in);

/// The floats (in units of the widths) a tree copies: the sum over its nodes with children.
int64_t concat_tree_copies(const ConcatTree& tree, const std::vector<int64_t>& widths);

}  // namespace tern::compiler::cpu_compile
