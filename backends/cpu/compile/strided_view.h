// A tern value the cpu delegate has not copied yet, as a strided view of a blob value (internal
// to backends/cpu/compile). Permutes, transposes, slices, selects, expands, clones and views of
// such values compose into one view; a reader that needs the value's bytes gets one
// StridedCopy node (op 27) from the view, or a plain copy when the view is the whole value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tern::compiler::cpu_compile {

struct StridedView {
  uint32_t base = 0;             ///< the blob value read
  uint64_t base_numel = 0;       ///< its element count
  std::vector<int64_t> sizes;    ///< tern dims of the view
  std::vector<int64_t> strides;  ///< base elements per step of each dim
  int64_t offset = 0;            ///< base element of index 0
};

/// Blob value `base` holding a tern tensor of `sizes`: row-major, or channels last for a 4-D or
/// 5-D value with `nhwc` (NHWC: strides [H*W*C, 1, W*C, C] over tern dims [N, C, H, W]; NDHWC
/// alike over [N, C, D, H, W]).
StridedView whole_value(uint32_t base, const std::vector<int64_t>& sizes, bool nhwc);
/// permute(v, perm) (perm[i]: the input dim of output dim i).
StridedView permuted(const StridedView& v, const std::vector<int64_t>& perm);
/// The permutation of `rank` dims that swaps dims a and b (a transpose; its own inverse).
std::vector<int64_t> swapped_dims(size_t rank, size_t a, size_t b);
/// v with its last two dims swapped (rank >= 2).
StridedView last_two_transposed(const StridedView& v);
/// v's `dim` from `start` in steps of `step`, `size` elements.
StridedView sliced(const StridedView& v, size_t dim, int64_t start, int64_t step, int64_t size);
/// v's `dim` in reverse order (its stride negated, index 0 its last element).
StridedView flipped(const StridedView& v, size_t dim);
/// v's `dim` at `index`, the dim dropped.
StridedView selected(const StridedView& v, size_t dim, int64_t index);
/// v broadcast to `sizes` (v's dims of 1 get stride 0; new leading dims too).
StridedView expanded(const StridedView& v, const std::vector<int64_t>& sizes);
/// v viewed as `sizes` (same element count, row-major order of v's indices) when strides can
/// express it (PyTorch's view rule); false otherwise.
bool reshaped(const StridedView& v, const std::vector<int64_t>& sizes, StridedView* out);

/// v viewed as `sizes` when strides cannot express it (reshaped() is false), in the form a copy
/// can still write: v's dims split (never merged) until each dim of `sizes` is a run of them;
/// `groups[j]`..`groups[j+1]` are the dims of out making `sizes[j]` (a dim of 1 an empty run).
/// False when no such split exists (a dim of v straddles two of `sizes` unevenly).
bool regrouped(const StridedView& v, const std::vector<int64_t>& sizes, StridedView* out,
               std::vector<size_t>* groups);

/// The copy that writes view `v` into a new value: extents and strides in the output's order
/// (tern dims, or with `out_nhwc` channels last for a 4-D or 5-D view: N, H, W, C or N, D, H, W,
/// C), dims of 1 dropped and contiguous ones merged.
struct CopyPlan {
  std::vector<int64_t> extent;
  std::vector<int64_t> stride;
  int64_t offset = 0;
  /// The copy reads the whole base in order (a plain copy).
  bool identity = false;
};
CopyPlan copy_plan(const StridedView& v, bool out_nhwc);

}  // namespace tern::compiler::cpu_compile
