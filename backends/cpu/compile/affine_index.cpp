#include "backends/cpu/compile/affine_index.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {

bool affine_index(const std::vector<int64_t>& index, AffineIndex* out) {
  if (index.empty()) return false;
  *out = AffineIndex();
  out->start = index[0];
  std::vector<int64_t> level = index;  // the walk's starts at the dims not split off yet
  std::vector<int64_t> sizes, steps;   // innermost first
  while (level.size() > 1) {
    const int64_t step = level[1] - level[0];
    size_t run = 1;
    while (run < level.size() && level[run] - level[run - 1] == step) ++run;
    if (level.size() % run != 0) return false;
    std::vector<int64_t> next;
    for (size_t r = 0; r < level.size(); r += run) {
      for (size_t c = 0; c < run; ++c) {
        if (level[r + c] != level[r] + static_cast<int64_t>(c) * step) return false;
      }
      next.push_back(level[r]);
    }
    sizes.push_back(static_cast<int64_t>(run));
    steps.push_back(step);
    level.swap(next);
  }
  if (sizes.empty()) {  // one index
    sizes.push_back(1);
    steps.push_back(0);
  }
  out->sizes.assign(sizes.rbegin(), sizes.rend());
  out->steps.assign(steps.rbegin(), steps.rend());
  return true;
}

AffineIndex index_select_walk(const Graph& g, const Node& node, size_t* dim) {
  if (node.args.size() != 3) throw Unsupported("index_select: expected 3 arguments");
  const Value& x = activation_tensor(g, node.args[0], "x");
  const Value& out = single_output(g, node);
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  int64_t d = int_value(g, node.args[1], "dim");
  if (d < 0) d += rank;
  if (d < 0 || d >= rank) throw Unsupported("index_select: dim out of range");
  const Value& index = value_at(g, node.args[2]);
  if (!index.is_tensor() || !index.is_constant || index.dtype != DType::I64 ||
      index.sizes.size() != 1 || index.sizes[0] < 1 ||
      index.data.size() != static_cast<size_t>(index.sizes[0]) * 8) {
    throw Unsupported("index_select: the index is not a constant 1-D int64 tensor");
  }
  if (out.sizes.size() == 4) throw Unsupported("index_select: a 4-D output");
  std::vector<int64_t> values(static_cast<size_t>(index.sizes[0]));
  std::memcpy(values.data(), index.data.data(), index.data.size());
  const int64_t size = x.sizes[static_cast<size_t>(d)];
  for (int64_t v : values) {  // first: the walk's differences then never overflow
    if (v < 0 || v >= size) {
      throw Unsupported("index_select: index " + std::to_string(v) + " outside [0, " +
                        std::to_string(size) + ")");
    }
  }
  AffineIndex walk;
  if (!affine_index(values, &walk)) {
    throw Unsupported("index_select: the index is no affine walk (start + sum of i_j * step_j)");
  }
  if (x.sizes.size() - 1 + walk.sizes.size() > 6) {
    throw Unsupported("index_select: the walk and x's other dims exceed 6 dims");
  }
  *dim = static_cast<size_t>(d);
  return walk;
}

bool is_affine_index_select(const Graph& g, const Node& node) {
  try {
    size_t dim = 0;
    (void)index_select_walk(g, node, &dim);
    return true;
  } catch (const Unsupported&) {
    return false;
  }
}

}  // namespace tern::compiler::cpu_compile
