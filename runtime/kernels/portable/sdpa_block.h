// The compute of tern::scaled_dot_product_attention for one attention head (sdpa.cpp checks
// arguments, walks the batch and finds the scratch): a block of query rows at a time, scores
// = scale * Q_blk K^T and out_blk = softmax(scores) V as register-tiled products, the softmax
// vectorized in between (sdpa_block.cpp).
#pragma once

#include <cstdint>

namespace tern::portable {

/// One head: q [l, e], k [s, e], v [s, ev], out [l, ev], each contiguous; l, s, ev > 0, e >= 0.
struct SdpaHead {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  int64_t l = 0, s = 0, e = 0, ev = 0;
  float scale = 1.0f;
  bool causal = false;  ///< query row i attends keys j <= i (top-left aligned)
  /// Optional mask read as [l, s]: element (i, j) at mask_offset + i * mask_stride_l +
  /// j * mask_stride_s; bool (true attends) or f32 (added to the scores). Null: no mask.
  const void* mask = nullptr;
  bool mask_is_bool = false;
  int64_t mask_offset = 0, mask_stride_l = 0, mask_stride_s = 0;
};

/// out = softmax(q k^T * scale + mask) v for one head, `block_rows` (>= 1) query rows at a
/// time, with `scores` holding block_rows * s floats. A row with no attended key gives zeros;
/// NaN propagates as in a row-by-row loop; a key whose weight is 0 contributes nothing even
/// when its value row holds inf or NaN. Every output element is bitwise the same whatever
/// block_rows is: each is computed by the same sequence of operations in every block shape,
/// so a smaller temp allocator changes the speed, never the result.
void sdpa_head(const SdpaHead& head, float* scores, int64_t block_rows);

}  // namespace tern::portable
