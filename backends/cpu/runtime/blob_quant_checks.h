// parse_blob's checks of the quantized-weight nodes (internal to backends/cpu/runtime): the
// nf4 / fp8 fully connected, grouped (experts') and embedding nodes — the scheme, block size,
// packed and scale sizes against the value's bytes in the data section, and the shapes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

Error check_quant_fc(uint32_t n, const BlobNode& node, const BlobValue* v, const uint8_t* data);

/// Op 47: the weight as op 23's, E dividing its rows into experts quant_rows_split_ok accepts,
/// x [S, K] plain, the ends an external [E] input, the output [S, N] plain.
Error check_quant_grouped(uint32_t n, const BlobNode& node, const BlobValue* v,
                          const uint8_t* data);

Error check_quant_embedding(uint32_t n, const BlobNode& node, const BlobValue* v,
                            const uint8_t* data);

}  // namespace tern::cpu
