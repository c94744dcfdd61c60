// Where each output of tern::split lies along the split dim. Shared by the kernel and the
// compiler's memory planner (tools/compiler/memory_planner.cpp aliases contiguous pieces), so the
// two cannot disagree.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern::portable {

/// The piece `k` of splitting a dim of `dim_size` elements into `num_outputs` pieces by
/// `split_sizes` (`count` entries), as [*start, *start + *len). Two forms, as torch.split:
///  - one size per output (`count == num_outputs`), sizes non-negative and summing to dim_size;
///  - a single chunk size s (`count == 1`): pieces of s, the last one smaller, and
///    `num_outputs` must be ceil(dim_size / s) (1 when dim_size is 0; s may be 0 only then).
/// The first form is tried first. False when neither fits or `k >= num_outputs`.
inline bool split_piece(const int64_t* split_sizes, size_t count, int64_t dim_size,
                        size_t num_outputs, size_t k, int64_t* start, int64_t* len) {
  if (k >= num_outputs || dim_size < 0 || (count > 0 && split_sizes == nullptr)) return false;
  if (count == num_outputs) {
    int64_t sum = 0;
    int64_t piece_start = 0;
    bool valid = true;
    for (size_t i = 0; i < count && valid; ++i) {
      const int64_t s = split_sizes[i];
      valid = s >= 0 && s <= dim_size - sum;
      if (i == k) piece_start = sum;
      if (valid) sum += s;
    }
    if (valid && sum == dim_size) {
      *start = piece_start;
      *len = split_sizes[k];
      return true;
    }
  }
  if (count == 1) {
    const int64_t s = split_sizes[0];
    if (s < 0 || (s == 0 && dim_size != 0)) return false;
    const int64_t chunks = dim_size == 0 ? 1 : dim_size / s + (dim_size % s != 0 ? 1 : 0);
    if (static_cast<uint64_t>(chunks) != num_outputs) return false;
    const int64_t begin = static_cast<int64_t>(k) * s;
    *start = begin;
    *len = dim_size - begin < s ? dim_size - begin : s;
    return true;
  }
  return false;
}

}  // namespace tern::portable
