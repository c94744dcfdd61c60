// Copies of strided views into contiguous tensors, by element size (dtype-agnostic): the
// engine of permute, transpose, expand and friends.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/core/tensor_view.h"

namespace tern::portable::dm {

/// Writes, in row-major order of `shape` (rank <= kMaxRank), the elements of the view of
/// `src` that has element strides `src_strides` (one per dim; 0 repeats an element, a negative
/// one walks backwards from `src`: a flip)
/// into contiguous `dst`. `elem_size` bytes per element. Adjacent dims that are contiguous in
/// the source are merged; an innermost run contiguous in the source is one memcpy; when the
/// source's unit-stride dim is not the innermost (a transpose) the copy goes in cache-sized
/// 2-D tiles. The caller guarantees every addressed byte is inside both buffers, and that
/// `dst` does not overlap `src`. Does nothing for an empty shape product.
void strided_copy(void* dst, const void* src, size_t elem_size, Span<const int64_t> shape,
                  const int64_t* src_strides);

/// Copies elements start, start + step, ... (`len` of them) along dim `dim` of the contiguous
/// tensor `x` into contiguous `out` (x's shape with that dim `len`; the caller checked shapes,
/// bounds and dtypes). When the piece is one contiguous run of x (the dims before `dim` hold
/// one index or the piece is all of `dim`, and step 1 or len 1) and out.data is already its
/// address (the planner made out an alias at that offset), nothing is copied.
void copy_piece(const TensorView& x, uint32_t dim, int64_t start, int64_t len, int64_t step,
                const TensorView& out);

/// Row-major element strides of a contiguous tensor of `shape` into `strides`.
void contiguous_strides(Span<const int64_t> shape, int64_t* strides);

/// Fills `count` elements of `elem_size` bytes at `dst` with the element at `value`.
void fill_elements(void* dst, const void* value, size_t elem_size, uint64_t count);

}  // namespace tern::portable::dm
