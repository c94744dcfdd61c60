// tern's elementwise select (the cpu delegate's op 44): y = cond ? a : b with NumPy broadcasting
// over the output's dims, cond a bool tensor of one byte an element (nonzero: true) made outside
// the delegate (XLM's padding mask fills the masked scores), or a comparison of an f32 tensor x
// with a number s evaluated in place (Apertus' xIELU branches on x > 0). Exact: values are
// copied, never computed, NaN and infinities included (x NaN: only != holds, as in IEEE).
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

constexpr int kSelectMaxDims = 6;

struct SelectProblem {
  int rank = 1;                      ///< 1..kSelectMaxDims, the output's
  int64_t dims[kSelectMaxDims] = {};  ///< the output's dims, each >= 1
  /// Each operand's element stride per output dim (0 where it broadcasts).
  int64_t cond_stride[kSelectMaxDims] = {};
  int64_t a_stride[kSelectMaxDims] = {};
  int64_t b_stride[kSelectMaxDims] = {};
  const uint8_t* cond = nullptr;  ///< compare == 0: the bool condition (cond_stride)
  /// compare 1..6 (cpu::SelectMode: >, >=, <, <=, ==, !=): cond = x OP s, x read with
  /// cond_stride.
  int compare = 0;
  const float* x = nullptr;
  float s = 0.0f;
  const float* a = nullptr;
  const float* b = nullptr;
  float* y = nullptr;  ///< never aliases cond; may alias a or b only where they are y's shape
};

/// Runs the select, the output's rows (all dims but the last) split over `pool` (null: the
/// caller's thread).
void select_where(const SelectProblem& p, pthreadpool_t pool);

/// p's strides for an operand of `rank` dims `dims` (right-aligned against the output's, each
/// equal to the output's or 1): row-major strides, 0 where the operand broadcasts.
void select_strides(const SelectProblem& p, int rank, const uint64_t* dims, int64_t* stride);

}  // namespace tern::cpu
