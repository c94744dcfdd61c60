// parse_blob's checks of bounded-dynamic values (internal to backends/cpu/runtime; blob
// version 12, BlobValue::dynamic_mask, README "Bounded-dynamic rows"): which values may vary
// per execution and which nodes may read or make them. Buffers are sized at the bound and the
// actual elements come first, so every kernel reads and writes inside its buffers whatever the
// actual size: the GEMMs (ops 17 and 23) and the layer norm (op 25) run the actual rows, and
// since version 25 the rows maps among XNNPACK's nodes and tern's elementwise kernels run all
// the bound's rows (the rows past the actual ones are never read back). What the checks keep
// is the rows structure: a node on dynamic values makes a dynamic value varying in the same
// dim with the same dims before it, and a static operand of a binary node is the same for
// every row. Errors name the value or node, expected and found.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Whether node op `op` may read dynamic values as a rows map (check_dynamic_node).
bool is_dynamic_rows_op(uint32_t op);

/// Whether value `v` varies per execution.
inline bool is_dynamic_value(const BlobValue& v) { return v.dynamic_mask != 0; }

/// The dim of `v` that varies (its dynamic_mask's lowest bit), or kNoValue.
inline uint32_t dynamic_dim_of(const BlobValue& v) {
  if (v.dynamic_mask == 0) return kNoValue;
  uint32_t d = 0;
  while (((v.dynamic_mask >> d) & 1u) == 0) ++d;
  return d;
}

/// The bound of v's dynamic dim (0 for a static v).
inline uint64_t dynamic_bound(const BlobValue& v) {
  const uint32_t d = dynamic_dim_of(v);
  return d < kMaxDims ? v.dims[d] : 0;
}

/// Ops 17 and 23, tern's GEMMs: they run (and write) the actual rows of a dynamic x only.
inline bool is_gemm_op(uint32_t op) {
  return op == static_cast<uint32_t>(NodeOp::PackedFullyConnected) ||
         op == static_cast<uint32_t>(NodeOp::QuantizedFullyConnected);
}

/// Value `i`'s dynamic_mask field: 0, or one bit on a Plain internal / external
/// input / external output of rank >= 2, for a dim before its last.
Error check_dynamic_value(uint32_t i, const BlobValue& v);

/// Node `n` with values `v` (operands already checked to exist): dynamic operands only on rows
/// maps — as x (input 0) of ops 3, 17, 23 and 25 or op 17's residual or multiplier; any data
/// input of ops 4–11, 16, 20, 28, 35, 36 and 38 — with the output dynamic exactly when an
/// input is, in the same dim and with the same dims before it (a reshape's output in any dim,
/// by the same bound); a static operand of ops 4–7, 35 and 36 is 1 in every dim up to that
/// one (right-aligned against the output).
Error check_dynamic_node(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
