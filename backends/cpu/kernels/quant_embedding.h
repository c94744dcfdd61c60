// tern's gather of embedding rows from an NF4 or FP8 table kept packed (op 24 of the cpu blob):
// out[i, :] = dequantize(table[index[i], :]), each element exactly as the portable reference
// computes it (code value x scale in f32). Runtime code: no exceptions, no RTTI, no allocation.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

#include "backends/cpu/kernels/quant_weight.h"

namespace tern::cpu {

/// Writes `count` rows of table.desc.cols floats to `out`, row i from table row indices[i].
/// Checks every index first: returns -1 when all are in [0, V) (V = table.desc.rows, as the
/// portable kernel), else the position of the first that is not, having written nothing. Split over `pool` (null: the caller's thread).
int64_t quant_embedding(const QuantWeightView& table, const int64_t* indices, int64_t count,
                        float* out, pthreadpool_t pool);

}  // namespace tern::cpu
