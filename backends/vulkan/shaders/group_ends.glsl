// The group of a row of a grouped product (grouped_matmul.comp, quant_grouped_linear.comp):
// the ends are the running row counts of the E groups (group e is rows [ends[e - 1], ends[e]),
// group 0 from row 0), int32 or int64 read as its low word (params[4]: words per end, 1 or 2;
// the runtime checks on the host, before each submit, that every end lies in [the previous
// end, S], so the low word is the whole value). Before including: #define ENDS_BINDING.

layout(std430, binding = ENDS_BINDING) readonly buffer GroupEnds { int ends[]; };

// The first group whose end is past row `s` (a binary search: the ends never go backwards), or
// `groups` when `s` is at or after the last end (such rows are zeros).
uint group_of_row(uint s, uint groups) {
  uint words = uint(pc.p[4]);
  uint lo = 0u, hi = groups;
  while (lo < hi) {
    uint mid = (lo + hi) / 2u;
    if (uint(ends[mid * words]) > s) {
      hi = mid;
    } else {
      lo = mid + 1u;
    }
  }
  return lo;
}
