#include "backends/cpu/runtime/blob_copy_checks.h"

#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/checked_math.h"

namespace tern::cpu {

Error check_f32_data_inputs(uint32_t n, const BlobNode& node, const BlobValue* v,
                            uint32_t count, uint32_t first) {
  for (uint32_t i = first; i < count; ++i) {
    const BlobValue& x = v[node.inputs[i]];
    TERN_CHECK_OR_RETURN_ERROR(
        !is_constant_kind(x) && x.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
        InvalidProgram,
        "cpu blob: node %u (%s): input %u (value %u) must be an f32 data value, found a "
        "constant or int64 one",
        n, node_op_name(node.op), i, node.inputs[i]);
  }
  return Error::Ok;
}

Error check_strided_copy(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const uint32_t* q = node.params;
  const uint32_t r = q[kCopyRank];
  TERN_CHECK_OR_RETURN_ERROR(r >= 1 && r <= kMaxDims, InvalidProgram,
                             "cpu blob: node %u (strided_copy): rank %u, expected 1..%u", n, r,
                             kMaxDims);
  for (uint32_t i = 0; i < kNodeParams; ++i) {
    const bool extent = i >= kCopyExtent && i < kCopyExtent + kMaxDims;
    const bool stride = i >= kCopyStride && i < kCopyStride + kMaxDims;
    const uint32_t d = extent ? i - kCopyExtent : stride ? i - kCopyStride : 0;
    const bool used = i == kCopyRank || i == kCopyOffset || ((extent || stride) && d < r);
    // Strides are int32 (a negative one reads backwards): |stride| <= 2^30.
    const uint32_t magnitude = stride && static_cast<int32_t>(q[i]) < 0 ? 0u - q[i] : q[i];
    TERN_CHECK_OR_RETURN_ERROR(used ? magnitude <= kMaxParam : q[i] == 0, InvalidProgram,
                               "cpu blob: node %u (strided_copy): parameter %u is %u, expected "
                               "%s",
                               n, i, q[i],
                               !used    ? "0 (unused)"
                               : stride ? "a stride in [-2^30, 2^30]"
                                        : "at most 2^30");
    TERN_CHECK_OR_RETURN_ERROR(!extent || !used || q[i] >= 1, InvalidProgram,
                               "cpu blob: node %u (strided_copy): extent %u is 0", n, d);
  }
  // The lowest and highest elements read: the offset plus each dim's last step, backwards for
  // a negative stride (each term below 2^60 in magnitude: extent and |stride| <= 2^30).
  uint64_t count = 1;
  int64_t first = q[kCopyOffset], last = q[kCopyOffset];
  for (uint32_t d = 0; d < r; ++d) {
    TERN_CHECK_OR_RETURN_ERROR(
        checked_mul(count, uint64_t{q[kCopyExtent + d]}, &count) && count <= (1ull << 40),
        InvalidProgram, "cpu blob: node %u (strided_copy): element count overflows", n);
    const int64_t reach = static_cast<int64_t>(q[kCopyExtent + d] - 1u) *
                          static_cast<int32_t>(q[kCopyStride + d]);
    (reach < 0 ? first : last) += reach;
  }
  TERN_CHECK_OR_RETURN_ERROR(first >= 0, InvalidProgram,
                             "cpu blob: node %u (strided_copy): reads element %lld of x (value "
                             "%u), before its first",
                             n, static_cast<long long>(first), node.inputs[0]);
  const BlobValue& x = v[node.inputs[0]];
  TERN_CHECK_OR_RETURN_ERROR(
      !is_constant_kind(x) && x.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
      InvalidProgram,
      "cpu blob: node %u (strided_copy): x (value %u) must be an f32 data "
      "value",
      n, node.inputs[0]);
  TERN_CHECK_OR_RETURN_ERROR(static_cast<uint64_t>(last) < value_numel(x), InvalidProgram,
                             "cpu blob: node %u (strided_copy): reads element %llu of x (value "
                             "%u), which has %llu",
                             n, static_cast<unsigned long long>(last), node.inputs[0],
                             static_cast<unsigned long long>(value_numel(x)));
  TERN_CHECK_OR_RETURN_ERROR(count == value_numel(v[node.output]), InvalidProgram,
                             "cpu blob: node %u (strided_copy): output value %u has %llu "
                             "elements, the extents give %llu",
                             n, node.output,
                             static_cast<unsigned long long>(value_numel(v[node.output])),
                             static_cast<unsigned long long>(count));
  return Error::Ok;
}

Error check_row_concat(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const uint32_t* q = node.params;
  const uint32_t inputs = node.num_inputs;  // checked: 2..3
  for (uint32_t i = 0; i < kNodeParams; ++i) {
    const bool per_input = i >= kRowConcatWidth && i < kRowConcatParamCount;
    const uint32_t k = per_input ? (i - kRowConcatWidth) % kMaxConcatInputs : 0;
    const bool used = i < kRowConcatWidth || (per_input && k < inputs);
    TERN_CHECK_OR_RETURN_ERROR(used ? q[i] <= kMaxParam : q[i] == 0, InvalidProgram,
                               "cpu blob: node %u (row_concat): parameter %u is %u, expected %s",
                               n, i, q[i], used ? "at most 2^30" : "0 (unused)");
  }
  const uint64_t rows = q[kRowConcatRows], unit = q[kRowConcatUnit];
  TERN_CHECK_OR_RETURN_ERROR(rows >= 1, InvalidProgram, "cpu blob: node %u (row_concat): 0 rows",
                             n);
  uint64_t out_width = 0;
  for (uint32_t i = 0; i < inputs; ++i) {
    const uint64_t w = q[kRowConcatWidth + i], s = q[kRowConcatStride + i],
                   o = q[kRowConcatOffset + i];
    const BlobValue& x = v[node.inputs[i]];
    // A constant part (a class token) is read in place like a data one; that one input at
    // least is data is checked with every node's inputs (since version 14).
    TERN_CHECK_OR_RETURN_ERROR(x.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
                               InvalidProgram,
                               "cpu blob: node %u (row_concat): input %u (value %u) must be f32 "
                               "(a data value or a constant)",
                               n, i, node.inputs[i]);
    TERN_CHECK_OR_RETURN_ERROR(w >= 1, InvalidProgram,
                               "cpu blob: node %u (row_concat): input %u has width 0", n, i);
    TERN_CHECK_OR_RETURN_ERROR(unit == 0 || (w == q[kRowConcatWidth] && w % unit == 0),
                               InvalidProgram,
                               "cpu blob: node %u (row_concat): input %u has width %llu, expected "
                               "input 0's %u, a multiple of the unit %llu",
                               n, i, static_cast<unsigned long long>(w), q[kRowConcatWidth],
                               static_cast<unsigned long long>(unit));
    const uint64_t last = o + (rows - 1) * s + w;  // one past the last float read (< 2^61)
    TERN_CHECK_OR_RETURN_ERROR(last <= value_numel(x), InvalidProgram,
                               "cpu blob: node %u (row_concat): input %u reads up to element "
                               "%llu of value %u, which has %llu",
                               n, i, static_cast<unsigned long long>(last - 1), node.inputs[i],
                               static_cast<unsigned long long>(value_numel(x)));
    out_width += w;
  }
  uint64_t count = 0;
  TERN_CHECK_OR_RETURN_ERROR(checked_mul(rows, out_width, &count), InvalidProgram,
                             "cpu blob: node %u (row_concat): element count overflows", n);
  TERN_CHECK_OR_RETURN_ERROR(count == value_numel(v[node.output]), InvalidProgram,
                             "cpu blob: node %u (row_concat): output value %u has %llu elements, "
                             "%llu rows of %llu give %llu",
                             n, node.output,
                             static_cast<unsigned long long>(value_numel(v[node.output])),
                             static_cast<unsigned long long>(rows),
                             static_cast<unsigned long long>(out_width),
                             static_cast<unsigned long long>(count));
  return Error::Ok;
}

}  // namespace tern::cpu
