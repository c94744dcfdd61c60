// Overflow-checked size arithmetic for anything computed from untrusted input.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern {

/// *out = a + b; false on overflow (then *out is unspecified).
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
/// *out = a * b; false on overflow.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
/// Rounds `value` up to a multiple of `alignment` (a power of two); false on overflow.
inline bool checked_align_up(uint64_t value, uint64_t alignment, uint64_t* out) {
  uint64_t sum;
  if (!checked_add(value, alignment - 1, &sum)) {
    return false;
  }
  *out = sum & ~(alignment - 1);
  return true;
}
inline bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/// True when [offset, offset + size) lies inside [0, limit), overflow-safe.
inline bool range_within(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

}  // namespace tern
