// tern's layer norm over the last dim of a row-major tensor (the cpu delegate's op 25): each
// row of `cols` floats shifted by its mean and scaled by 1 / sqrt(biased variance + eps), then
// gamma and beta per column; or (rms) scaled by 1 / sqrt(mean of squares + eps), then gamma. Used inside the delegate for a channel layer norm of an NHWC
// tensor (ConvNeXt's permute -> layer_norm, whose rows are the pixels) and for a plain
// layer_norm over the last dim.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

struct LayerNormProblem {
  const float* x = nullptr;  ///< [rows, cols]
  float* y = nullptr;        ///< [rows, cols]; may be x
  int64_t rows = 0;
  int64_t cols = 0;              ///< >= 1
  const float* gamma = nullptr;  ///< [cols]
  const float* beta = nullptr;   ///< [cols]
  float eps = 0.0f;              ///< > 0
  /// RMS norm (the blob's op 25 with params[0] = 1): no mean taken off, the scale
  /// 1 / sqrt(mean of squares + eps), beta unused (may be null).
  bool rms = false;
};

/// Normalizes every row of `p` (two passes over the row for the mean and the variance, sums in
/// 16 lanes), split over `pool` in bands of rows (null: the caller's thread). Never allocates.
void layer_norm_rows(const LayerNormProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
