// tern's gather along one dim by a run-time int64 index (the cpu delegate's op 45): out's slice k
// along the dim is x's slice index[k]. index_select and f32 embeddings whose ids the delegate
// receives (CLIP's end-of-text pooling). Exact: bytes are copied.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <cstdint>

namespace tern::cpu {

struct IndexRowsProblem {
  int64_t outer = 1;  ///< product of x's dims before the indexed one
  int64_t rows = 1;   ///< x's indexed dim
  int64_t inner = 1;  ///< product of x's dims after it (floats per slice)
  const float* x = nullptr;
  const int64_t* index = nullptr;
  int64_t count = 0;  ///< entries of index
  float* out = nullptr;  ///< [outer, count, inner]; must not overlap x
};

/// Copies the slices; returns -1, or the position of the first index outside [0, rows) (then
/// the output is incomplete and must not be used).
int64_t index_rows(const IndexRowsProblem& p);

}  // namespace tern::cpu
