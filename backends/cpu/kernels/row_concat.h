// tern's row concat for the cpu backend (the delegate's op 29): output row r is each input's
// row r in turn — w floats read at x + offset + r * stride, so an input may be a channel slice
// of an NHWC tensor read in place — or, with a unit u >= 1, the inputs' u-float units
// interleaved: unit k of input 0, of input 1, ..., then unit k + 1. With u = 1 and the channel
// rows of an NHWC tensor that is ShuffleNet's cat + channel shuffle written in one pass.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

/// Most inputs of a row concat (the blob's kMaxConcatInputs).
constexpr int kRowConcatMaxInputs = 3;

struct RowConcatProblem {
  const float* x[kRowConcatMaxInputs] = {};  ///< each input's row 0 (its offset applied)
  int64_t width[kRowConcatMaxInputs] = {};   ///< floats of a row, >= 1
  int64_t stride[kRowConcatMaxInputs] = {};  ///< floats from one row to the next
  int inputs = 0;                            ///< 1..kRowConcatMaxInputs
  int64_t rows = 0;
  int64_t unit = 0;  ///< 0: rows one after another; >= 1: units interleaved (equal widths)
  float* y = nullptr;  ///< rows * sum(width) floats; must not overlap any input
};

/// y = the row concat of p (above). Split over `pool` in bands of rows from 2^17 output floats
/// on (below, and with a null pool: the caller's thread).
void row_concat(const RowConcatProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
