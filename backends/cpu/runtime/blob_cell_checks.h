// parse_blob's checks of the fused recurrent cells (internal to backends/cpu/runtime): the LSTM
// cell (op 37: the hidden size, the gates' and the cell state's element counts and last dims,
// the optional second gates operand, the output's [2, R, H]) and the GRU cell (op 40: both
// gates operands against the hidden state, the output h's element count and last dim). Errors
// name the node, the field, what was expected and what was found.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Node `n` (op 37) with values `v` (already checked to exist and be made before the node; the
/// gates data values, c a data value or a constant).
Error check_lstm_cell(uint32_t n, const BlobNode& node, const BlobValue* v);

/// Node `n` (op 40) with values `v` (gi, gh data values, h a data value or a constant).
Error check_gru_cell(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
