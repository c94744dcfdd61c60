#include "backends/cpu/compile/gather_map_plan.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {
namespace {

constexpr int64_t kMaxOutput = int64_t{1} << 24;  // elements of the map worked out whole
constexpr int64_t kMaxInput = int64_t{1} << 30;   // x's elements: offsets fit int32, step a param

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) s[d - 1] = s[d] * sizes[d];
  return s;
}

int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t d : sizes) n *= d;
  return n;
}

/// The constant int64 index's values (torch.gather's and index_select's index).
std::vector<int64_t> index_values(const Graph& g, int id, const char* op) {
  const Value& index = value_at(g, id);
  if (!index.is_tensor() || !index.is_constant || index.dtype != DType::I64 ||
      index.data.size() != static_cast<size_t>(numel_of(index.sizes)) * 8) {
    throw Unsupported(std::string(op) + ": the index is not a constant int64 tensor");
  }
  std::vector<int64_t> values(static_cast<size_t>(numel_of(index.sizes)));
  if (!values.empty()) std::memcpy(values.data(), index.data.data(), index.data.size());
  return values;
}

/// Folds the map `m` (one entry per run) of an output of `sizes` into the most rows it repeats
/// over.
GatherMapPlan fold_rows(const std::vector<int64_t>& m, const std::vector<int64_t>& sizes) {
  GatherMapPlan plan;
  const int64_t n = static_cast<int64_t>(m.size());
  int64_t outer = 1;
  std::vector<int64_t> prefixes;  // products of the output's leading dims, shortest first
  for (size_t d = 0; d + 1 < sizes.size(); ++d) prefixes.push_back(outer *= sizes[d]);
  for (size_t i = prefixes.size(); i-- > 0;) {
    const int64_t rows = prefixes[i];
    if (rows <= 1) break;
    const int64_t block = n / rows;
    const int64_t step = m[static_cast<size_t>(block)] - m[0];
    if (step < 0 || step > kMaxInput) continue;
    bool repeats = true;
    for (int64_t f = block; repeats && f < n; ++f) {
      repeats = m[static_cast<size_t>(f)] == (f / block) * step + m[static_cast<size_t>(f % block)];
    }
    if (!repeats) continue;
    plan.outer = rows;
    plan.step = step;
    plan.map.assign(m.begin(), m.begin() + block);
    return plan;
  }
  plan.map.assign(m.begin(), m.end());
  return plan;
}

}  // namespace

bool is_gather_map_op(const std::string& op) {
  return op == "tern::gather" || op == "tern::index_select";
}

GatherMapPlan gather_map_plan(const Graph& g, const Node& node) {
  const bool gather = node.op == "tern::gather";
  const char* name = gather ? "gather" : "index_select";
  if (node.args.size() != 3) throw Unsupported(std::string(name) + ": expected 3 arguments");
  const Value& x = activation_tensor(g, node.args[0], "x");
  const Value& out = single_output(g, node);
  if (out.dtype != DType::F32) throw Unsupported(std::string(name) + ": out dtype");
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  if (rank == 4 || out.sizes.size() == 4) {
    throw Unsupported(std::string(name) + ": a 4-D x or output (its bytes are not row-major "
                                          "in the delegate)");
  }
  int64_t dim = int_value(g, node.args[1], "dim");
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) throw Unsupported(std::string(name) + ": dim out of range");
  const std::vector<int64_t> index = index_values(g, node.args[2], name);
  const Value& iv = value_at(g, node.args[2]);
  const int64_t xn = numel_of(x.sizes), yn = numel_of(out.sizes);
  if (xn >= kMaxInput || yn > kMaxOutput || yn < 1) {
    throw Unsupported(std::string(name) + ": x of " + std::to_string(xn) + " and an output of " +
                      std::to_string(yn) + " elements (below 2^30 and 1..2^24 taken)");
  }
  const size_t d = static_cast<size_t>(dim);
  const int64_t size = x.sizes[d];
  for (int64_t v : index) {
    if (v < 0 || v >= size) {
      throw Unsupported(std::string(name) + ": index " + std::to_string(v) + " outside [0, " +
                        std::to_string(size) + ")");
    }
  }
  std::vector<int64_t> expect = gather ? iv.sizes : x.sizes;
  if (gather) {
    bool fits = iv.sizes.size() == x.sizes.size();
    for (size_t k = 0; fits && k < x.sizes.size(); ++k) {
      fits = k == d || iv.sizes[k] <= x.sizes[k];
    }
    if (!fits) {
      throw Unsupported("gather: index " + shape_str(iv.sizes) + " against x " +
                        shape_str(x.sizes) + " (the same rank, no larger in the other dims)");
    }
  } else {
    if (iv.sizes.size() != 1) throw Unsupported("index_select: the index is not 1-D");
    expect[d] = iv.sizes[0];
  }
  if (out.sizes != expect) throw Unsupported(std::string(name) + ": out shape");
  // The whole map: out's multi-index walked row-major, x's offset of each element.
  const std::vector<int64_t> xs = row_major_strides(x.sizes);
  std::vector<int64_t> m(static_cast<size_t>(yn));
  std::vector<int64_t> at(out.sizes.size(), 0);
  for (int64_t f = 0; f < yn; ++f) {
    int64_t offset = 0;
    for (size_t k = 0; k < at.size(); ++k) {
      const int64_t i = k == d ? index[static_cast<size_t>(gather ? f : at[k])] : at[k];
      offset += i * xs[k];
    }
    m[static_cast<size_t>(f)] = offset;
    for (size_t k = at.size(); k-- > 0;) {
      if (++at[k] < out.sizes[k]) break;
      at[k] = 0;
    }
  }
  return fold_map(m, out.sizes);
}

GatherMapPlan fold_map(const std::vector<int64_t>& m, const std::vector<int64_t>& sizes) {
  // The run: the innermost dims, outward while every run of their product reads consecutive
  // elements (if dims k.. do, so do dims k+1..).
  size_t kept = sizes.size();
  int64_t run = 1;
  const int64_t n = static_cast<int64_t>(m.size());
  while (kept > 0 && n > 0) {
    const int64_t r = run * sizes[kept - 1];
    bool consecutive = true;
    for (int64_t f = 0; consecutive && f < n; ++f) {
      consecutive = m[static_cast<size_t>(f)] == m[static_cast<size_t>(f - f % r)] + f % r;
    }
    if (!consecutive) break;
    run = r;
    --kept;
  }
  std::vector<int64_t> starts;
  starts.reserve(static_cast<size_t>(n / std::max<int64_t>(run, 1)));
  for (int64_t f = 0; f < n; f += run) starts.push_back(m[static_cast<size_t>(f)]);
  GatherMapPlan plan =
      fold_rows(starts, std::vector<int64_t>(sizes.begin(), sizes.begin() + kept));
  plan.run = run;
  return plan;
}

void check_reflect_pad(const std::vector<int64_t>& x_sizes, const std::vector<int64_t>& pre,
                       const std::vector<int64_t>& post) {
  int64_t xn = 1, yn = 1;
  for (size_t d = 0; d < x_sizes.size(); ++d) {
    const int64_t size = x_sizes[d];
    if ((pre[d] > 0 || post[d] > 0) && (pre[d] >= size || post[d] >= size)) {
      throw Unsupported("pad: reflect padding (" + std::to_string(pre[d]) + ", " +
                        std::to_string(post[d]) + ") of dim " + std::to_string(d) + " of size " +
                        std::to_string(size) + " (each below the size)");
    }
    xn *= size;
    yn *= size + pre[d] + post[d];
  }
  if (xn >= kMaxInput || yn > kMaxOutput || yn < 1) {
    throw Unsupported("pad: reflect padding of x " + shape_str(x_sizes) + " to " +
                      std::to_string(yn) + " elements (x below 2^30 and 1..2^24 taken)");
  }
}

GatherMapPlan reflect_pad_plan(const std::vector<int64_t>& x_sizes, const std::vector<int64_t>& pre,
                               const std::vector<int64_t>& post,
                               const std::vector<size_t>& order) {
  check_reflect_pad(x_sizes, pre, post);
  const size_t rank = x_sizes.size();
  std::vector<int64_t> xo(rank), yo(rank);  // sizes in byte order
  for (size_t k = 0; k < rank; ++k) {
    xo[k] = x_sizes[order[k]];
    yo[k] = xo[k] + pre[order[k]] + post[order[k]];
  }
  const std::vector<int64_t> xs = row_major_strides(xo);
  const int64_t yn = numel_of(yo);
  std::vector<int64_t> m(static_cast<size_t>(yn));
  std::vector<int64_t> at(rank, 0);
  for (int64_t f = 0; f < yn; ++f) {
    int64_t offset = 0;
    for (size_t k = 0; k < rank; ++k) {
      int64_t s = at[k] - pre[order[k]];  // torch's reflection: the edge itself not repeated
      if (s < 0) s = -s;
      if (s >= xo[k]) s = 2 * (xo[k] - 1) - s;
      offset += s * xs[k];
    }
    m[static_cast<size_t>(f)] = offset;
    for (size_t k = rank; k-- > 0;) {
      if (++at[k] < yo[k]) break;
      at[k] = 0;
    }
  }
  return fold_map(m, yo);
}

}  // namespace tern::compiler::cpu_compile
