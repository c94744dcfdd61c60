// tern's fused attention for the cpu backend (the delegate's op 32): out = softmax(q · kᵀ ·
// scale + mask) · v for every batch (head), a block of query rows at a time, so the scores
// never leave the cache. Per head, K (as the GEMM's Kᵀ panels) and V are packed once into the
// task's scratch slot; per block of query rows, the scores come from the packed GEMM's
// microkernels into an L2-sized buffer, each row is scaled, masked and turned into softmax
// numerators in place (one pass for the maximum, one for e^(x - max) and the sum), the block
// times V is the second GEMM, and each output row is divided by its sum last. Causal rows skip
// the keys after the block's last row in both products, and with a mask neither product reads
// the keys after the last one any row attends (a value other than -inf: a decode step over a
// KV cache filled to its position reads K and V up to the position only).
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

/// Most batch dims a mask's broadcast is described over.
constexpr int kAttentionMaxMaskDims = 4;

struct AttentionProblem {
  int64_t batch = 1;  ///< heads (the product of the batch dims), >= 1
  int64_t l = 0;      ///< query rows, >= 1
  int64_t s = 0;      ///< keys, >= 1
  int64_t e = 0;      ///< q and k features, >= 1
  int64_t ev = 0;     ///< v features, >= 1
  const float* q = nullptr;  ///< [batch, l, e] row-major
  /// [batch, s, e] row-major, or [batch, e, s] (kᵀ as a bmm's right operand) with k_transposed
  const float* k = nullptr;
  bool k_transposed = false;
  const float* v = nullptr;  ///< [batch, s, ev] row-major
  float* out = nullptr;      ///< [batch, l, ev] row-major; must not overlap the inputs
  float scale = 1.0f;        ///< multiplies every score before the mask is added
  /// 0: no causal limit. Else query row i attends keys j <= i mod causal_period (top-left
  /// aligned; the period is l, or the rows of one query head when grouped heads are folded
  /// into the rows).
  int64_t causal_period = 0;
  /// Optional additive mask (null: none), element (b, i, j) at mask[offset(b) + i *
  /// mask_row_stride + j], where b is decomposed row-major over mask_batch_dims (their product
  /// is `batch`; none when mask_batch_rank is 0 and batch is 1) and offset(b) = sum of index_d
  /// * mask_batch_strides[d] (0 for a broadcast dim). mask_row_stride is 0 (one row for every
  /// query) or >= s.
  const float* mask = nullptr;
  int mask_batch_rank = 0;
  int64_t mask_batch_dims[kAttentionMaxMaskDims] = {1, 1, 1, 1};
  int64_t mask_batch_strides[kAttentionMaxMaskDims] = {0, 0, 0, 0};
  int64_t mask_row_stride = 0;
  /// A row whose every key is masked out (-inf): NaN in every output column, as softmax then
  /// a product give (true), or zeros, as scaled_dot_product_attention gives (false).
  bool empty_rows_nan = false;
};

/// Query rows per block: the scores of a block take about 256 KiB (at least 1 row, at most l
/// and 256; causal blocks at most 32).
int64_t attention_block_rows(const AttentionProblem& p);

/// Scratch floats fused_attention needs on a pool of up to `threads` threads (0 or 1: the
/// caller's thread): per task, one head's packed K and V, a block of scores and its row sums.
uint64_t attention_scratch_floats(const AttentionProblem& p, int64_t threads);

/// Computes p.out. Split over `pool` (null: the caller's thread) into one task per thread,
/// each a run of (head, row block) items of about equal cost; products of fewer than 2^19
/// multiply-adds in all run on the caller's thread. `scratch` holds
/// attention_scratch_floats(p, threads of pool) floats.
///
/// Results: NaN in the scores propagates to the row; a key of weight 0 whose value row holds
/// inf or NaN makes the row NaN (0 · inf), where the portable kernel skips it — except keys
/// after the last attended one, which neither reads.
void fused_attention(const AttentionProblem& p, float* scratch, pthreadpool_t pool);

}  // namespace tern::cpu
