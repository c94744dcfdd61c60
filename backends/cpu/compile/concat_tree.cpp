#include "backends/cpu/compile/concat_tree.h"

#include <limits>

namespace tern::compiler::cpu_compile {
namespace {

constexpr size_t kMaxSearched = 48;

/// Interval search: best[i][j] the cheapest tree over parts i..j, cost = floats copied, then
/// nodes; split[i][j] the ends of its groups but the last.
struct Search {
  const std::vector<int64_t>& w;
  size_t fan_in;
  std::vector<int64_t> prefix;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> best;  // (copies, nodes)
  std::vector<std::vector<std::vector<size_t>>> split;

  Search(const std::vector<int64_t>& widths, size_t f) : w(widths), fan_in(f) {
    const size_t n = w.size();
    prefix.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + w[i];
    best.assign(n, std::vector<std::pair<int64_t, int64_t>>(n, {0, 0}));
    split.assign(n, std::vector<std::vector<size_t>>(n));
    for (size_t len = 2; len <= n; ++len) {
      for (size_t i = 0; i + len <= n; ++i) solve(i, i + len - 1);
    }
  }

  /// Groups of [i, j] into 2..fan_in consecutive runs: every choice of cut points, depth-first.
  void solve(size_t i, size_t j) {
    std::pair<int64_t, int64_t> top = {std::numeric_limits<int64_t>::max(), 0};
    std::vector<size_t> cuts, chosen;
    search_cuts(i, j, i, &cuts, &top, &chosen);
    best[i][j] = {top.first + prefix[j + 1] - prefix[i], top.second + 1};
    split[i][j] = chosen;
  }

  void search_cuts(size_t i, size_t j, size_t from, std::vector<size_t>* cuts,
                   std::pair<int64_t, int64_t>* top, std::vector<size_t>* chosen) {
    if (!cuts->empty()) {  // the groups so far, the rest one group
      std::pair<int64_t, int64_t> c = {0, 0};
      size_t start = i;
      for (size_t end : *cuts) {
        c.first += best[start][end].first;
        c.second += best[start][end].second;
        start = end + 1;
      }
      c.first += best[start][j].first;
      c.second += best[start][j].second;
      if (c < *top) {
        *top = c;
        *chosen = *cuts;
      }
    }
    if (cuts->size() + 2 > fan_in) return;
    for (size_t end = from; end < j; ++end) {
      cuts->push_back(end);
      search_cuts(i, j, end + 1, cuts, top, chosen);
      cuts->pop_back();
    }
  }

  size_t build(ConcatTree* t, size_t i, size_t j) const {
    const size_t id = t->nodes.size();
    t->nodes.push_back({i, j, {}});
    if (i == j) return id;
    size_t start = i;
    std::vector<size_t> children;
    for (size_t end : split[i][j]) {
      children.push_back(build(t, start, end));
      start = end + 1;
    }
    children.push_back(build(t, start, j));
    t->nodes[id].children = children;
    return id;
  }
};

}  // namespace

ConcatTree concat_tree(const std::vector<int64_t>& widths, size_t fan_in) {
  ConcatTree t;
  const size_t n = widths.size();
  if (n == 0) return t;
  if (fan_in < 2) fan_in = 2;
  if (n <= kMaxSearched) {
    const Search s(widths, fan_in);
    t.root = s.build(&t, 0, n - 1);
    return t;
  }
  // A chain: the first fan_in parts, then the result and fan_in - 1 more each time.
  size_t acc = 0;
  t.nodes.push_back({0, 0, {}});
  size_t next = 1;
  while (next < n) {
    ConcatTree::Node node{0, 0, {acc}};
    while (node.children.size() < fan_in && next < n) {
      node.children.push_back(t.nodes.size());
      t.nodes.push_back({next, next, {}});
      ++next;
    }
    node.last = next - 1;
    acc = t.nodes.size();
    t.nodes.push_back(node);
  }
  t.root = acc;
  return t;
}

int64_t concat_tree_copies(const ConcatTree& tree, const std::vector<int64_t>& widths) {
  int64_t copies = 0;
  for (const ConcatTree::Node& node : tree.nodes) {
    if (node.children.empty()) continue;
    for (size_t p = node.first; p <= node.last; ++p) copies += widths[p];
  }
  return copies;
}

}  // namespace tern::compiler::cpu_compile
