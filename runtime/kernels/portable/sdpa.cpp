// tern::scaled_dot_product_attention(q [..., L, E], k [..., S, E], v [..., S, Ev],
// attn_mask?, is_causal, scale?, out [..., L, Ev]), f32.
//
// This file checks the arguments, walks the batch and takes the scratch; sdpa_block.cpp computes
// each head a block of query rows at a time: the block's scores (rows x S floats from the temp
// allocator: sdpa_block_scratch_bytes(L, S), or as many rows as fit, down to one row,
// sdpa_scratch_bytes(S), for programs planned with less), softmax, then P V. Batch dims of
// q, k, v broadcast; the mask (bool: true attends; f32: added to the scores) broadcasts to
// [..., L, S]; is_causal keeps keys j <= i (top-left aligned, as torch). A row with no attended
// key (every score -inf) gives zeros, as torch.
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"
#include "runtime/kernels/util/scratch_sizes.h"
#include "runtime/kernels/portable/sdpa_block.h"

namespace tern {
namespace portable {
namespace {

struct Dims {
  int64_t l = 0, s = 0, e = 0, ev = 0;
};

// Score rows from the temp allocator: `want` rows of `row_bytes` when they fit, else as many
// as the free space holds, else one. Null when not even one row fits.
float* take_score_rows(MemoryAllocator* temp, uint64_t row_bytes, uint64_t want, int64_t* rows) {
  if (temp == nullptr || row_bytes > SIZE_MAX) return nullptr;
  uint64_t bytes = 0;
  if (!__builtin_mul_overflow(want, row_bytes, &bytes) && bytes <= SIZE_MAX) {
    if (void* p = temp->allocate(static_cast<size_t>(bytes), kScratchAlignment)) {
      *rows = static_cast<int64_t>(want);
      return static_cast<float*>(p);
    }
  }
  // What fits after aligning the next free byte.
  const uintptr_t next = reinterpret_cast<uintptr_t>(temp->base()) + temp->used();
  const uintptr_t start = (next + (kScratchAlignment - 1)) & ~uintptr_t{kScratchAlignment - 1};
  const uintptr_t end = reinterpret_cast<uintptr_t>(temp->base()) + temp->size();
  uint64_t fit = start < end && row_bytes > 0 ? (end - start) / row_bytes : 0;
  if (fit >= want) fit = want - 1;
  if (fit > 1) {
    if (void* p = temp->allocate(static_cast<size_t>(fit * row_bytes), kScratchAlignment)) {
      *rows = static_cast<int64_t>(fit);
      return static_cast<float*>(p);
    }
  }
  if (want > 1) {
    if (void* p = temp->allocate(static_cast<size_t>(row_bytes), kScratchAlignment)) {
      *rows = 1;
      return static_cast<float*>(p);
    }
  }
  return nullptr;
}

}  // namespace

Error scaled_dot_product_attention(KernelContext& context, Span<EValue*> args) {
  const char* op = "tern::scaled_dot_product_attention";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 7, 7));
  TERN_ASSIGN_OR_RETURN(TensorView * q, tensor_arg(op, args, 0, "q"));
  TERN_ASSIGN_OR_RETURN(TensorView * k, tensor_arg(op, args, 1, "k"));
  TERN_ASSIGN_OR_RETURN(TensorView * v, tensor_arg(op, args, 2, "v"));
  TERN_ASSIGN_OR_RETURN(TensorView * mask_t,
                        reduction::optional_tensor_arg(op, args, 3, "attn_mask"));
  TERN_ASSIGN_OR_RETURN(const bool causal, reduction::bool_arg(op, args, 4, "is_causal"));
  bool default_scale = reduction::is_none_arg(args, 5);
  double scale = 0.0;
  if (!default_scale) {
    TERN_ASSIGN_OR_RETURN(scale, reduction::double_arg(op, args, 5, "scale"));
  }
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 6, "out"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "q", *q, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "k", *k, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "v", *v, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  const TensorView* qkv[3] = {q, k, v};
  const char* names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    TERN_CHECK_OR_RETURN_ERROR(qkv[i]->rank >= 2, InvalidArgument,
                               "%s: %s: expected rank >= 2 [..., len, features], found rank %u", op,
                               names[i], qkv[i]->rank);
  }
  Dims d;
  d.l = q->sizes[q->rank - 2];
  d.e = q->sizes[q->rank - 1];
  d.s = k->sizes[k->rank - 2];
  d.ev = v->sizes[v->rank - 1];
  TERN_CHECK_OR_RETURN_ERROR(k->sizes[k->rank - 1] == d.e, InvalidArgument,
                             "%s: k: expected last dim %" PRId64 " (q's embedding), found %" PRId64,
                             op, d.e, k->sizes[k->rank - 1]);
  TERN_CHECK_OR_RETURN_ERROR(v->sizes[v->rank - 2] == d.s, InvalidArgument,
                             "%s: v: expected second-to-last dim %" PRId64
                             " (k's sequence length), found %" PRId64,
                             op, d.s, v->sizes[v->rank - 2]);
  TERN_CHECK_OR_RETURN_ERROR(!(causal && mask_t != nullptr), InvalidArgument,
                             "%s: expected either attn_mask or is_causal, found both (as torch, "
                             "an explicit mask excludes is_causal)",
                             op);

  // Batch shape: q, k and v's leading dims broadcast together.
  FixedShape qk_batch;
  FixedShape batch;
  TERN_RETURN_IF_ERROR(broadcast_shapes(op, Span<const int64_t>(q->sizes, q->rank - 2),
                                        Span<const int64_t>(k->sizes, k->rank - 2), &qk_batch));
  TERN_RETURN_IF_ERROR(
      broadcast_shapes(op, qk_batch.span(), Span<const int64_t>(v->sizes, v->rank - 2), &batch));
  TERN_CHECK_OR_RETURN_ERROR(batch.rank + 2 <= kMaxRank, InvalidArgument,
                             "%s: batch rank %u exceeds the maximum %zu", op, batch.rank,
                             kMaxRank - 2);
  FixedShape want_out = batch;
  want_out.sizes[want_out.rank++] = d.l;
  want_out.sizes[want_out.rank++] = d.ev;
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, want_out.span()));

  // The mask broadcasts to [batch..., L, S] without changing it.
  SdpaHead head;
  FixedShape scores_shape = batch;
  scores_shape.sizes[scores_shape.rank++] = d.l;
  scores_shape.sizes[scores_shape.rank++] = d.s;
  int64_t mask_strides[kMaxRank] = {};
  if (mask_t != nullptr) {
    static const DType kMaskTypes[] = {DType::Bool, DType::F32};
    TERN_RETURN_IF_ERROR(check_dtype_in(op, "attn_mask", *mask_t, Span<const DType>(kMaskTypes)));
    bool fits = mask_t->rank <= scores_shape.rank;
    for (uint32_t i = 0; fits && i < mask_t->rank; ++i) {
      const int64_t ms = mask_t->sizes[mask_t->rank - 1 - i];
      const int64_t ss = scores_shape.sizes[scores_shape.rank - 1 - i];
      fits = ms == ss || ms == 1;
    }
    if (!fits) {
      char want[160];
      char found[160];
      format_shape(scores_shape.span(), want, sizeof(want));
      format_shape(mask_t->shape(), found, sizeof(found));
      TERN_RETURN_ERROR(InvalidArgument,
                        "%s: attn_mask: expected a shape that broadcasts to %s, found %s", op, want,
                        found);
    }
    broadcast_strides(mask_t->shape(), scores_shape.span(), mask_strides);
    head.mask = mask_t->data;
    head.mask_is_bool = mask_t->dtype == DType::Bool;
    head.mask_stride_l = mask_strides[batch.rank];
    head.mask_stride_s = mask_strides[batch.rank + 1];
  }

  uint64_t batch_n = 1;
  for (uint32_t i = 0; i < batch.rank; ++i) batch_n *= static_cast<uint64_t>(batch.sizes[i]);
  if (batch_n == 0 || d.l == 0 || d.ev == 0) return Error::Ok;
  float* dst = out->data_as<float>();
  if (d.s == 0) {  // no keys: softmax over nothing, P . V is zero
    std::memset(dst, 0, static_cast<size_t>(out->numel()) * sizeof(float));
    return Error::Ok;
  }

  const uint64_t row_bytes = sdpa_scratch_bytes(static_cast<uint64_t>(d.s));
  int64_t block_rows = 0;
  float* scores = take_score_rows(
      context.temp_allocator, row_bytes,
      sdpa_block_rows(static_cast<uint64_t>(d.l), static_cast<uint64_t>(d.s)), &block_rows);
  TERN_CHECK_OR_RETURN_ERROR(scores != nullptr, MemoryAllocationFailed,
                             "%s: needs %" PRIu64 " bytes of temp allocator for a row of %" PRId64
                             " scores, found %zu bytes available",
                             op, row_bytes, d.s,
                             context.temp_allocator
                                 ? context.temp_allocator->size() - context.temp_allocator->used()
                                 : static_cast<size_t>(0));

  // Element strides of each batch dim for q, k, v (in units of their [len, features] blocks).
  int64_t qs[kMaxRank] = {};
  int64_t ks[kMaxRank] = {};
  int64_t vs[kMaxRank] = {};
  broadcast_strides(Span<const int64_t>(q->sizes, q->rank - 2), batch.span(), qs);
  broadcast_strides(Span<const int64_t>(k->sizes, k->rank - 2), batch.span(), ks);
  broadcast_strides(Span<const int64_t>(v->sizes, v->rank - 2), batch.span(), vs);
  head.scale =
      static_cast<float>(default_scale ? 1.0 / std::sqrt(static_cast<double>(d.e)) : scale);
  head.causal = causal;
  head.l = d.l;
  head.s = d.s;
  head.e = d.e;
  head.ev = d.ev;
  const float* qd = q->data_as<const float>();
  const float* kd = k->data_as<const float>();
  const float* vd = v->data_as<const float>();
  int64_t index[kMaxRank] = {};
  for (uint64_t b = 0; b < batch_n; ++b) {
    int64_t qo = 0, ko = 0, vo = 0, mo = 0;
    for (uint32_t i = 0; i < batch.rank; ++i) {
      qo += index[i] * qs[i];
      ko += index[i] * ks[i];
      vo += index[i] * vs[i];
      mo += index[i] * mask_strides[i];
    }
    head.q = qd + qo * d.l * d.e;
    head.k = kd + ko * d.s * d.e;
    head.v = vd + vo * d.s * d.ev;
    head.out = dst + static_cast<int64_t>(b) * d.l * d.ev;
    head.mask_offset = mo;
    sdpa_head(head, scores, block_rows);
    for (uint32_t i = batch.rank; i-- > 0;) {
      if (++index[i] < batch.sizes[i]) break;
      index[i] = 0;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
