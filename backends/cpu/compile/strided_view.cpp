#include "backends/cpu/compile/strided_view.h"

#include <utility>

namespace tern::compiler::cpu_compile {

StridedView whole_value(uint32_t base, const std::vector<int64_t>& sizes, bool nhwc) {
  StridedView v;
  v.base = base;
  v.sizes = sizes;
  v.strides.assign(sizes.size(), 1);
  uint64_t numel = 1;
  for (int64_t d : sizes) numel *= static_cast<uint64_t>(d);
  v.base_numel = numel;
  if (nhwc && (sizes.size() == 4 || sizes.size() == 5)) {
    // Channels last: the channel dim innermost, the spatial dims row-major outside it.
    int64_t s = sizes[1];
    v.strides[1] = 1;
    for (size_t i = sizes.size(); i-- > 2;) {
      v.strides[i] = s;
      s *= sizes[i];
    }
    v.strides[0] = s;
    return v;
  }
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    v.strides[i] = s;
    s *= sizes[i];
  }
  return v;
}

StridedView permuted(const StridedView& v, const std::vector<int64_t>& perm) {
  StridedView out = v;
  for (size_t i = 0; i < perm.size(); ++i) {
    out.sizes[i] = v.sizes[static_cast<size_t>(perm[i])];
    out.strides[i] = v.strides[static_cast<size_t>(perm[i])];
  }
  return out;
}

std::vector<int64_t> swapped_dims(size_t rank, size_t a, size_t b) {
  std::vector<int64_t> perm(rank);
  for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(d);
  std::swap(perm[a], perm[b]);
  return perm;
}

StridedView last_two_transposed(const StridedView& v) {
  const size_t r = v.sizes.size();
  return permuted(v, swapped_dims(r, r - 2, r - 1));
}

StridedView sliced(const StridedView& v, size_t dim, int64_t start, int64_t step, int64_t size) {
  StridedView out = v;
  out.offset += start * v.strides[dim];
  out.strides[dim] = v.strides[dim] * step;
  out.sizes[dim] = size;
  return out;
}

StridedView flipped(const StridedView& v, size_t dim) {
  StridedView out = v;
  out.offset += (v.sizes[dim] - 1) * v.strides[dim];
  out.strides[dim] = -v.strides[dim];
  return out;
}

StridedView selected(const StridedView& v, size_t dim, int64_t index) {
  StridedView out = v;
  out.offset += index * v.strides[dim];
  out.sizes.erase(out.sizes.begin() + static_cast<std::ptrdiff_t>(dim));
  out.strides.erase(out.strides.begin() + static_cast<std::ptrdiff_t>(dim));
  return out;
}

StridedView expanded(const StridedView& v, const std::vector<int64_t>& sizes) {
  StridedView out = v;
  const size_t lead = sizes.size() - v.sizes.size();
  out.sizes = sizes;
  out.strides.assign(sizes.size(), 0);
  for (size_t i = 0; i < v.sizes.size(); ++i) {
    out.strides[lead + i] = v.sizes[i] == sizes[lead + i] ? v.strides[i] : 0;
  }
  return out;
}

bool reshaped(const StridedView& v, const std::vector<int64_t>& sizes, StridedView* out) {
  *out = v;
  out->sizes = sizes;
  out->strides.assign(sizes.size(), 0);
  if (v.sizes.empty()) return false;
  // PyTorch's computeStride: each run of input dims that is contiguous among itself maps onto
  // a run of output dims of the same element count.
  int64_t view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = v.strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(v.sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= v.sizes[static_cast<size_t>(d)];
    if (d == 0 || (v.sizes[static_cast<size_t>(d - 1)] != 1 &&
                   v.strides[static_cast<size_t>(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 &&
             (view_numel < tensor_numel || sizes[static_cast<size_t>(view_d)] == 1)) {
        out->strides[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= sizes[static_cast<size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = v.strides[static_cast<size_t>(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

bool regrouped(const StridedView& v, const std::vector<int64_t>& sizes, StridedView* out,
               std::vector<size_t>* groups) {
  *out = v;
  out->sizes.clear();
  out->strides.clear();
  groups->assign(1, 0);
  size_t i = 0;                                      // v's dim being split
  int64_t left = v.sizes.empty() ? 1 : v.sizes[0];  // of its extent, what no group has taken
  for (int64_t need : sizes) {
    while (need > 1) {
      while (left == 1 && i + 1 < v.sizes.size()) left = v.sizes[++i];
      if (left == 1) return false;  // v has run out of elements
      if (left <= need) {           // the rest of dim i joins this group
        if (need % left != 0) return false;
        out->sizes.push_back(left);
        out->strides.push_back(v.strides[i]);
        need /= left;
        left = 1;
      } else {  // the group takes dim i's outer `need`, the next groups its inner rest
        if (left % need != 0) return false;
        left /= need;
        out->sizes.push_back(need);
        out->strides.push_back(v.strides[i] * left);
        need = 1;
      }
    }
    groups->push_back(out->sizes.size());
  }
  while (left == 1 && i + 1 < v.sizes.size()) left = v.sizes[++i];
  return left == 1;
}

CopyPlan copy_plan(const StridedView& v, bool out_nhwc) {
  std::vector<size_t> order;
  if (out_nhwc && v.sizes.size() == 4) {
    order = {0, 2, 3, 1};
  } else if (out_nhwc && v.sizes.size() == 5) {
    order = {0, 2, 3, 4, 1};
  } else {
    for (size_t i = 0; i < v.sizes.size(); ++i) order.push_back(i);
  }
  CopyPlan p;
  p.offset = v.offset;
  for (size_t i : order) {
    if (v.sizes[i] == 1) continue;
    if (!p.extent.empty() && p.stride.back() == v.strides[i] * v.sizes[i]) {
      p.extent.back() *= v.sizes[i];  // contiguous with the dim before: one dim
      p.stride.back() = v.strides[i];
      continue;
    }
    p.extent.push_back(v.sizes[i]);
    p.stride.push_back(v.strides[i]);
  }
  if (p.extent.empty()) {
    p.extent.push_back(1);
    p.stride.push_back(1);
  }
  p.identity = p.offset == 0 && p.extent.size() == 1 && p.stride[0] == 1 &&
               static_cast<uint64_t>(p.extent[0]) == v.base_numel;
  return p;
}

}  // namespace tern::compiler::cpu_compile
