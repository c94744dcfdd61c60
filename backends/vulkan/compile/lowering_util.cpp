// The helpers of lowering_util.h.
#include "backends/vulkan/compile/lowering_util.h"

#include <string>
#include <vector>

namespace tern::compiler::vulkan_compile {

using vulkan::NodeOp;

const Value& val(const Graph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) throw Unsupported("bad value id");
  return g.values[static_cast<size_t>(id)];
}
int arg(const Node& n, size_t i) {
  if (i >= n.args.size()) throw Unsupported("missing argument " + std::to_string(i));
  return n.args[i];
}
bool has_arg(const Node& n, size_t i) { return i < n.args.size(); }
bool is_none(const Graph& g, int id) { return val(g, id).kind == Value::Kind::None; }
const Dims& shape(const Graph& g, int id) {
  const Value& v = val(g, id);
  if (!v.is_tensor()) throw Unsupported("argument is not a tensor");
  return v.sizes;
}
int64_t int_of(const Graph& g, int id) {
  const Value& v = val(g, id);
  if (v.kind != Value::Kind::Int || v.is_tensor()) throw Unsupported("expected an Int");
  return v.int_value;
}
double num_of(const Graph& g, int id) {
  const Value& v = val(g, id);
  if (v.kind == Value::Kind::Int) return static_cast<double>(v.int_value);
  if (v.kind == Value::Kind::Double) return v.double_value;
  throw Unsupported("expected a number");
}
bool bool_of(const Graph& g, int id) {
  const Value& v = val(g, id);
  if (v.kind != Value::Kind::Bool) throw Unsupported("expected a Bool");
  return v.bool_value;
}
std::vector<int64_t> ints_of(const Graph& g, int id) {
  const Value& v = val(g, id);
  if (v.kind == Value::Kind::Int) return {v.int_value};
  if (v.kind != Value::Kind::IntList) throw Unsupported("expected an IntList");
  return v.ints;
}
int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}
Dims contiguous_strides(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}
int64_t norm_dim(int64_t dim, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r) throw Unsupported("dim " + std::to_string(dim) + " out of range");
  return dim < 0 ? dim + r : dim;
}
int out_id(const Node& n, size_t i) {
  if (i >= n.outputs.size()) throw Unsupported("missing output");
  return n.outputs[i];
}

/// Pads dims/strides to 6 on the left (index space of the strided shaders).
void pad6(Dims* dims, Dims* strides) {
  if (dims->size() > 6) throw Unsupported("rank > 6");
  while (dims->size() < 6) {
    dims->insert(dims->begin(), 1);
    strides->insert(strides->begin(), 0);
  }
}

/// Strides of `in` broadcast to `out` (right-aligned), 0 where broadcast.
Dims broadcast_strides(const Dims& in, const Dims& out) {
  if (in.size() > out.size()) throw Unsupported("operand of higher rank than the output");
  const Dims s = contiguous_strides(in);
  Dims r(out.size(), 0);
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[off + i]) {
      r[off + i] = in[i] == 1 ? 0 : s[i];
    } else if (in[i] != 1) {
      throw Unsupported("shapes do not broadcast");
    }
  }
  return r;
}

namespace {

/// Most copy nodes one copy may become when it has more than 6 dims after merging.
constexpr int64_t kMaxSplitCopies = 256;

/// One copy node of at most 6 dims.
void copy_node6(BlobBuilder& b, uint32_t src, uint32_t dst, Dims dims, Dims src_strides,
                int64_t src_off, Dims dst_strides, int64_t dst_off) {
  Dims d2 = dims;
  pad6(&dims, &src_strides);
  pad6(&d2, &dst_strides);
  std::vector<int32_t> p(21, 0);
  for (int i = 0; i < 6; ++i) {
    p[1 + i] = param(dims[static_cast<size_t>(i)], "copy dim");
    // A source stride may be negative (flip: read backwards; blob version 7).
    const int64_t ss = src_strides[static_cast<size_t>(i)];
    p[7 + i] = ss < 0 ? -param(-ss, "copy stride") : param(ss, "copy stride");
    p[13 + i] = param(dst_strides[static_cast<size_t>(i)], "copy stride");
  }
  p[19] = param(src_off, "copy offset");
  p[20] = param(dst_off, "copy offset");
  b.node(NodeOp::Copy, {src}, dst, p);
}

}  // namespace

void copy_node(BlobBuilder& b, uint32_t src, uint32_t dst, Dims dims, Dims src_strides,
               int64_t src_off, Dims dst_strides, int64_t dst_off) {
  // Dims of 1 dropped; dim k merged into dim k - 1 where both walks step over it contiguously
  // (a permute's untouched neighbours, a repeat's runs).
  Dims md, ms, mt;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) continue;
    if (!md.empty() && ms.back() == src_strides[k] * dims[k] &&
        mt.back() == dst_strides[k] * dims[k]) {
      md.back() *= dims[k];
      ms.back() = src_strides[k];
      mt.back() = dst_strides[k];
    } else {
      md.push_back(dims[k]), ms.push_back(src_strides[k]), mt.push_back(dst_strides[k]);
    }
  }
  if (md.empty()) md.push_back(1), ms.push_back(0), mt.push_back(0);
  if (md.size() <= 6) {
    copy_node6(b, src, dst, md, ms, src_off, mt, dst_off);
    return;
  }
  // Still more than 6 (a 3-D pixel shuffle: [C, F, p, H, p, W, p]): one node per index of the
  // leading dims beyond 6.
  const size_t extra = md.size() - 6;
  int64_t copies = 1;
  for (size_t k = 0; k < extra; ++k) {
    copies *= md[k];
    if (copies > kMaxSplitCopies) {
      throw Unsupported("a copy of " + std::to_string(md.size()) + " dims would take more than " +
                        std::to_string(kMaxSplitCopies) + " copy nodes");
    }
  }
  const Dims inner(md.begin() + static_cast<std::ptrdiff_t>(extra), md.end());
  const Dims inner_src(ms.begin() + static_cast<std::ptrdiff_t>(extra), ms.end());
  const Dims inner_dst(mt.begin() + static_cast<std::ptrdiff_t>(extra), mt.end());
  for (int64_t c = 0; c < copies; ++c) {
    int64_t rest = c, so = src_off, dof = dst_off;
    for (size_t k = extra; k-- > 0;) {
      const int64_t i = rest % md[k];
      rest /= md[k];
      so += i * ms[k];
      dof += i * mt[k];
    }
    copy_node6(b, src, dst, inner, inner_src, so, inner_dst, dof);
  }
}

}  // namespace tern::compiler::vulkan_compile
