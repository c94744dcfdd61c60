#include "runtime/kernels/portable/quant_weight.h"

#include <cstdint>

#include "runtime/kernels/util/quant_formats.h"
#include "runtime/kernels/util/scratch_sizes.h"

namespace tern {
namespace portable {

Error check_quantized_weight(const char* op, const char* name, const TensorView& t) {
  TERN_CHECK_OR_RETURN_ERROR(quant::is_quantized(t.dtype), InvalidArgument,
                             "%s: %s: expected f32, nf4, fp8_e4m3 or fp8_e5m2, found %s", op, name,
                             to_string(t.dtype));
  TERN_CHECK_OR_RETURN_ERROR(t.rank == 2, InvalidArgument,
                             "%s: %s: a quantized (%s) weight must have rank 2, found rank %u", op,
                             name, to_string(t.dtype), t.rank);
  const QuantView* q = t.quant;
  TERN_CHECK_OR_RETURN_ERROR(q != nullptr, InvalidArgument,
                             "%s: %s: %s weight without quantization parameters", op, name,
                             to_string(t.dtype));
  const bool nf4 = t.dtype == DType::NF4;
  bool ok = false;
  if (nf4 && q->scheme == QuantView::Scheme::NF4) {
    ok = q->absmax != nullptr && q->block_size > 0;
  } else if (nf4 && q->scheme == QuantView::Scheme::NF4DoubleQuant) {
    ok = q->dq_codes != nullptr && q->dq_absmax2 != nullptr && q->dq_table != nullptr &&
         q->block_size > 0 && q->dq_block_size > 0;
  } else if (!nf4 && q->scheme == QuantView::Scheme::FP8) {
    ok = q->scale != nullptr &&
         (q->granularity != QuantView::Granularity::Block2D ||
          (q->block_rows > 0 && q->block_cols > 0));
  }
  TERN_CHECK_OR_RETURN_ERROR(ok, InvalidArgument,
                             "%s: %s: quantization parameters (scheme %u) do not fit dtype %s", op,
                             name, static_cast<unsigned>(q->scheme), to_string(t.dtype));
  return Error::Ok;
}

Error check_no_overlap_quantized(const char* op, const TensorView& out, const TensorView& w,
                                 const char* name) {
  const uint64_t n_out = out.numel() * sizeof(float);
  uint64_t n_w = 0;
  if (!dtype_nbytes(w.dtype, w.numel(), &n_w)) n_w = UINT64_MAX;
  if (n_out == 0 || n_w == 0) return Error::Ok;
  const uintptr_t po = reinterpret_cast<uintptr_t>(out.data);
  const uintptr_t pw = reinterpret_cast<uintptr_t>(w.data);
  const bool overlap = po < pw ? pw - po < n_out : po - pw < n_w;
  TERN_CHECK_OR_RETURN_ERROR(!overlap, InvalidArgument, "%s: out must not share memory with %s",
                             op, name);
  return Error::Ok;
}

float* take_quant_panel(MemoryAllocator* temp, uint64_t want_rows, uint64_t row_elems,
                        uint64_t* rows) {
  *rows = 0;
  if (temp == nullptr || want_rows == 0 || row_elems > SIZE_MAX / sizeof(float)) return nullptr;
  const uint64_t row_bytes = row_elems * sizeof(float);
  uint64_t bytes = 0;
  if (!__builtin_mul_overflow(want_rows, row_bytes, &bytes) && bytes <= SIZE_MAX) {
    if (void* p = temp->allocate(static_cast<size_t>(bytes), kScratchAlignment)) {
      *rows = want_rows;
      return static_cast<float*>(p);
    }
  }
  if (temp->base() == nullptr || row_bytes == 0) return nullptr;
  // As many rows as the free space holds after aligning the next free byte.
  const uintptr_t next = reinterpret_cast<uintptr_t>(temp->base()) + temp->used();
  const uintptr_t start = (next + (kScratchAlignment - 1)) & ~uintptr_t{kScratchAlignment - 1};
  const uintptr_t end = reinterpret_cast<uintptr_t>(temp->base()) + temp->size();
  uint64_t fit = start < end ? (end - start) / row_bytes : 0;
  if (fit >= want_rows) fit = want_rows - 1;
  if (fit >= 1) {
    if (void* p = temp->allocate(static_cast<size_t>(fit * row_bytes), kScratchAlignment)) {
      *rows = fit;
      return static_cast<float*>(p);
    }
  }
  return nullptr;
}

Error quant_panel_error(const char* op, MemoryAllocator* temp, uint64_t row_elems) {
  const unsigned long long need = static_cast<unsigned long long>(row_elems) * sizeof(float);
  const unsigned long long free_bytes =
      temp != nullptr ? static_cast<unsigned long long>(temp->size() - temp->used()) : 0ULL;
  TERN_RETURN_ERROR(MemoryAllocationFailed,
                    "%s: dequantizing a quantized weight needs at least %llu bytes of scratch "
                    "(one row; planned: a panel of rows, scratch_sizes.h), the temp allocator "
                    "has %llu free",
                    op, need, free_bytes);
}

}  // namespace portable
}  // namespace tern
