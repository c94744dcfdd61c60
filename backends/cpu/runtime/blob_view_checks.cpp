#include "backends/cpu/runtime/blob_view_checks.h"

#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/checked_math.h"

namespace tern::cpu {

Error check_view_value(uint32_t i, const BlobValue* values, uint32_t nv) {
  const BlobValue& v = values[i];
  if (!is_view_value(v)) {
    TERN_CHECK_OR_RETURN_ERROR(v.view_base == 0, InvalidProgram,
                               "cpu blob: value %u: view_base field %u on a value that is no "
                               "view, expected 0",
                               i, v.view_base);
    return Error::Ok;
  }
  TERN_CHECK_OR_RETURN_ERROR(v.view_base < i && v.view_base < nv, InvalidProgram,
                             "cpu blob: value %u (view): base value %u, expected an earlier "
                             "value (< %u)",
                             i, v.view_base, i);
  const BlobValue& base = values[v.view_base];
  TERN_CHECK_OR_RETURN_ERROR(base.kind == static_cast<uint32_t>(ValueKind::Internal),
                             InvalidProgram,
                             "cpu blob: value %u (view): base value %u is of kind %u, expected "
                             "an internal value (kind 0)",
                             i, v.view_base, base.kind);
  TERN_CHECK_OR_RETURN_ERROR(v.layout == static_cast<uint32_t>(ValueLayout::Plain) &&
                                 v.dynamic_mask == 0 && base.dynamic_mask == 0,
                             InvalidProgram,
                             "cpu blob: value %u (view): layout %u, dynamic mask 0x%x (base "
                             "0x%x), expected a plain static view of a static value",
                             i, v.layout, v.dynamic_mask, base.dynamic_mask);
  TERN_CHECK_OR_RETURN_ERROR(v.data_bytes == 0, InvalidProgram,
                             "cpu blob: value %u (view): %llu data bytes, expected 0", i,
                             static_cast<unsigned long long>(v.data_bytes));
  uint64_t end = 0;
  const uint64_t base_numel = value_numel(base);
  TERN_CHECK_OR_RETURN_ERROR(
      checked_add(v.data_offset, value_numel(v), &end) && end <= base_numel, InvalidProgram,
      "cpu blob: value %u (view): elements [%llu, +%llu) of value %u, which has %llu", i,
      static_cast<unsigned long long>(v.data_offset),
      static_cast<unsigned long long>(value_numel(v)), v.view_base,
      static_cast<unsigned long long>(base_numel));
  return Error::Ok;
}

}  // namespace tern::cpu
