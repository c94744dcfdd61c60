// Quantized (nf4 / fp8) weights in the portable kernels: argument checks and the scratch panel
// a kernel dequantizes weight rows into (docs/quantization.md). The dequantization itself is
// runtime/kernels/util/quant_formats.h.
#pragma once

#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/tensor_view.h"

namespace tern {
namespace portable {

/// InvalidArgument unless `t` is a quantized (nf4, fp8_e4m3, fp8_e5m2) tensor of rank 2 whose
/// quantization parameters fit its dtype (as Method loading resolved them).
Error check_quantized_weight(const char* op, const char* name, const TensorView& t);

/// InvalidArgument when the f32 tensor `out` shares memory with the quantized weight `w`
/// (byte ranges: out's numel x 4, w's packed size).
Error check_no_overlap_quantized(const char* op, const TensorView& out, const TensorView& w,
                                 const char* name);

/// A scratch panel of up to `want_rows` rows of `row_elems` f32 from `temp`: all of them when
/// they fit, else as many as fit, else one row. Null (with *rows = 0) when not even one row
/// fits; the caller then reports MemoryAllocationFailed with quant_panel_error().
float* take_quant_panel(MemoryAllocator* temp, uint64_t want_rows, uint64_t row_elems,
                        uint64_t* rows);

/// MemoryAllocationFailed naming `op`, the bytes one row needs and the bytes free.
Error quant_panel_error(const char* op, MemoryAllocator* temp, uint64_t row_elems);

}  // namespace portable
}  // namespace tern
