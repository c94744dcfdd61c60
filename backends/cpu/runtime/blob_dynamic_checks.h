// parse_blob's checks of bounded-dynamic values (internal to backends/cpu/runtime; blob
// version 12, BlobValue::dynamic_mask, README "Bounded-dynamic rows"): which values may vary
// per execution and which nodes may read or make them — only the GEMMs whose row count follows
// the actual size (ops 17 and 23), so that no XNNPACK runtime or other kernel ever sees a size
// other than the one it was built for. Errors name the value or node, expected and found.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Whether value `v` varies per execution.
inline bool is_dynamic_value(const BlobValue& v) { return v.dynamic_mask != 0; }

/// The dim of `v` that varies (its dynamic_mask's lowest bit), or kNoValue.
inline uint32_t dynamic_dim_of(const BlobValue& v) {
  if (v.dynamic_mask == 0) return kNoValue;
  uint32_t d = 0;
  while (((v.dynamic_mask >> d) & 1u) == 0) ++d;
  return d;
}

/// Value `i`'s dynamic_mask field: 0, or one bit on a Plain internal / external
/// input / external output of rank >= 2, for a dim before its last.
Error check_dynamic_value(uint32_t i, const BlobValue& v);

/// Node `n` with values `v` (operands already checked to exist): a dynamic operand only as x
/// (input 0) of op 17 / 23 or op 17's residual (input 2), with the output dynamic at the same
/// dim exactly when x is.
Error check_dynamic_node(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
