// Scratch (temp allocator) bytes each portable kernel needs, as pure functions of shapes.
//
// The compiler (tools/compiler/kernel_scratch.cpp) plans MethodMeta::temp_allocator_bytes()
// with these functions, and each kernel asks its temp allocator for exactly what its function
// says, so the two cannot drift apart. A kernel whose scratch does not fit returns
// MemoryAllocationFailed naming the op, the bytes needed and the bytes available.
#pragma once

#include <cstdint>

namespace tern::portable {

/// Alignment of every scratch allocation (and the slack the planner adds per allocation).
constexpr uint64_t kScratchAlignment = 64;

// --- tern::scaled_dot_product_attention ---
// Scores a block of query rows at a time: rows x S f32 scores (S = kv_len, the second-to-last
// size of k). It asks for sdpa_block_scratch_bytes() and, when the temp allocator has less
// (programs planned before blocks existed hold one row), takes as many rows as fit, down to
// one row (sdpa_scratch_bytes); the result is the same either way, only slower.

/// Most query rows scored at once.
constexpr uint64_t kSdpaMaxBlockRows = 64;
/// Target size of the score block (256 KiB): fewer rows when S is long, never fewer than one.
constexpr uint64_t kSdpaScoresBudgetBytes = uint64_t{256} << 10;

/// Bytes of one row of `kv_len` f32 scores: the least the kernel needs. Saturates instead of
/// overflowing.
inline uint64_t sdpa_scratch_bytes(uint64_t kv_len) {
  return kv_len > UINT64_MAX / sizeof(float) ? UINT64_MAX : kv_len * sizeof(float);
}

/// Query rows per score block for q_len query rows and kv_len keys: as many as
/// kSdpaScoresBudgetBytes holds, at most kSdpaMaxBlockRows and q_len, at least 1.
inline uint64_t sdpa_block_rows(uint64_t q_len, uint64_t kv_len) {
  const uint64_t row = sdpa_scratch_bytes(kv_len);
  uint64_t rows = row == 0 ? kSdpaMaxBlockRows : kSdpaScoresBudgetBytes / row;
  if (rows > kSdpaMaxBlockRows) rows = kSdpaMaxBlockRows;
  if (rows > q_len) rows = q_len;
  return rows < 1 ? 1 : rows;
}

/// Bytes the kernel asks its temp allocator for, and the compiler plans: sdpa_block_rows()
/// rows of scores. Saturates instead of overflowing.
inline uint64_t sdpa_block_scratch_bytes(uint64_t q_len, uint64_t kv_len) {
  uint64_t bytes;
  return __builtin_mul_overflow(sdpa_block_rows(q_len, kv_len), sdpa_scratch_bytes(kv_len), &bytes)
             ? UINT64_MAX
             : bytes;
}

// --- Convolution (conv1d, conv2d, conv3d, conv_transpose2d) ---
// conv2d lowers to GEMM over an im2col buffer and conv_transpose2d to GEMM then col2im; both
// build their column buffer for a tile of pixels at a time, so their scratch is bounded:
// at most max(kConvScratchBudgetBytes, k_dim x kConvMinTilePixels x 4) bytes, where k_dim is
// the buffer's row count (C/groups*kh*kw for conv2d, O/groups*kh*kw for conv_transpose2d).

/// Target size of a convolution's column buffer (4 MiB).
constexpr uint64_t kConvScratchBudgetBytes = uint64_t{4} << 20;
/// Fewest pixels per column tile, whatever the budget (keeps the GEMM's N dimension useful).
constexpr uint64_t kConvMinTilePixels = 64;

/// a * b, or UINT64_MAX when that overflows.
inline uint64_t conv_saturating_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/// Pixels per column tile for a buffer of `k_dim` rows over `pixels` pixels: as many as fit
/// the budget, at least kConvMinTilePixels, at most `pixels`.
inline uint64_t conv_tile_pixels(uint64_t k_dim, uint64_t pixels) {
  uint64_t tile = k_dim == 0 ? pixels : kConvScratchBudgetBytes / sizeof(float) / k_dim;
  if (tile < kConvMinTilePixels) tile = kConvMinTilePixels;
  return tile < pixels ? tile : pixels;
}

/// Bytes of a column buffer of `k_dim` rows by conv_tile_pixels() columns (saturating).
inline uint64_t conv_columns_bytes(uint64_t k_dim, uint64_t pixels) {
  return conv_saturating_mul(conv_saturating_mul(k_dim, conv_tile_pixels(k_dim, pixels)),
                             sizeof(float));
}

/// True when tern::conv2d (and conv1d as conv2d with kh = 1) builds an im2col buffer: not a
/// depthwise conv (one input channel per group: a direct loop) and not a 1x1, stride-1,
/// unpadded conv (the input already is the column matrix).
inline bool conv2d_uses_im2col(int64_t in_channels, int64_t groups, int64_t kh, int64_t kw,
                               int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w) {
  if (groups > 0 && in_channels == groups) return false;
  if (kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0) {
    return false;
  }
  return true;
}

/// Bytes tern::conv2d / tern::conv1d ask their temp allocator for: x [N, C, H, W] (conv1d:
/// H = 1), weight [O, C/groups, kh, kw], output spatial size out_h x out_w.
inline uint64_t conv2d_scratch_bytes(int64_t in_channels, int64_t groups, int64_t kh, int64_t kw,
                                     int64_t stride_h, int64_t stride_w, int64_t pad_h,
                                     int64_t pad_w, int64_t out_h, int64_t out_w) {
  if (in_channels < 0 || groups <= 0 || kh < 0 || kw < 0 || out_h < 0 || out_w < 0) return 0;
  if (!conv2d_uses_im2col(in_channels, groups, kh, kw, stride_h, stride_w, pad_h, pad_w)) {
    return 0;
  }
  const uint64_t k_dim = conv_saturating_mul(
      conv_saturating_mul(static_cast<uint64_t>(in_channels / groups), static_cast<uint64_t>(kh)),
      static_cast<uint64_t>(kw));
  return conv_columns_bytes(
      k_dim, conv_saturating_mul(static_cast<uint64_t>(out_h), static_cast<uint64_t>(out_w)));
}

/// True when tern::conv3d builds an im2col buffer: as conv2d_uses_im2col, one dimension up.
inline bool conv3d_uses_im2col(int64_t in_channels, int64_t groups, int64_t kd, int64_t kh,
                               int64_t kw, int64_t stride_d, int64_t stride_h, int64_t stride_w,
                               int64_t pad_d, int64_t pad_h, int64_t pad_w) {
  if (groups > 0 && in_channels == groups) return false;
  return !(kd == 1 && kh == 1 && kw == 1 && stride_d == 1 && stride_h == 1 && stride_w == 1 &&
           pad_d == 0 && pad_h == 0 && pad_w == 0);
}

/// Bytes tern::conv3d asks its temp allocator for: x [N, C, D, H, W], weight
/// [O, C/groups, kd, kh, kw], output spatial size out_d x out_h x out_w.
inline uint64_t conv3d_scratch_bytes(int64_t in_channels, int64_t groups, int64_t kd, int64_t kh,
                                     int64_t kw, int64_t stride_d, int64_t stride_h,
                                     int64_t stride_w, int64_t pad_d, int64_t pad_h, int64_t pad_w,
                                     int64_t out_d, int64_t out_h, int64_t out_w) {
  if (in_channels < 0 || groups <= 0 || kd < 0 || kh < 0 || kw < 0 || out_d < 0 || out_h < 0 ||
      out_w < 0) {
    return 0;
  }
  if (!conv3d_uses_im2col(in_channels, groups, kd, kh, kw, stride_d, stride_h, stride_w, pad_d,
                          pad_h, pad_w)) {
    return 0;
  }
  const uint64_t taps = conv_saturating_mul(
      conv_saturating_mul(static_cast<uint64_t>(kd), static_cast<uint64_t>(kh)),
      static_cast<uint64_t>(kw));
  const uint64_t k_dim = conv_saturating_mul(static_cast<uint64_t>(in_channels / groups), taps);
  const uint64_t voxels = conv_saturating_mul(
      conv_saturating_mul(static_cast<uint64_t>(out_d), static_cast<uint64_t>(out_h)),
      static_cast<uint64_t>(out_w));
  return conv_columns_bytes(k_dim, voxels);
}

/// True when tern::conv_transpose2d needs a column buffer (every case but 1x1, stride 1,
/// unpadded, where the GEMM writes the output directly).
inline bool conv_transpose2d_uses_columns(int64_t kh, int64_t kw, int64_t stride_h,
                                          int64_t stride_w, int64_t pad_h, int64_t pad_w) {
  return !(kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0);
}

/// Bytes tern::conv_transpose2d asks its temp allocator for: weight [C, O/groups, kh, kw]
/// (out_per_group = O/groups), input spatial size in_h x in_w.
inline uint64_t conv_transpose2d_scratch_bytes(int64_t out_per_group, int64_t kh, int64_t kw,
                                               int64_t stride_h, int64_t stride_w, int64_t pad_h,
                                               int64_t pad_w, int64_t in_h, int64_t in_w) {
  if (out_per_group < 0 || kh < 0 || kw < 0 || in_h < 0 || in_w < 0) return 0;
  if (!conv_transpose2d_uses_columns(kh, kw, stride_h, stride_w, pad_h, pad_w)) return 0;
  const uint64_t k_dim = conv_saturating_mul(
      conv_saturating_mul(static_cast<uint64_t>(out_per_group), static_cast<uint64_t>(kh)),
      static_cast<uint64_t>(kw));
  return conv_columns_bytes(
      k_dim, conv_saturating_mul(static_cast<uint64_t>(in_h), static_cast<uint64_t>(in_w)));
}

// --- Quantized weights (linear, matmul with a constant b) ---
// tern::linear whose weight [out, in] is nf4/fp8 dequantizes a panel of weight rows at a time
// into scratch (weights stay packed in the program) and runs the f32 GEMM on it; tern::matmul
// whose b [k, n] is quantized does the same over panels of b's rows. A panel holds as many
// rows as kQuantPanelBudgetBytes allows, at least one, at most all. Given less scratch than
// planned, the kernels take as many rows as fit (down to one): same result, only slower.

/// Target size of a dequantized weight panel (256 KiB).
constexpr uint64_t kQuantPanelBudgetBytes = uint64_t{256} << 10;

/// Rows of `row_elems` f32 values per panel, for a weight of `rows` rows: as many as the budget
/// holds, at least 1, at most `rows` (0 when rows is 0).
inline uint64_t quant_panel_rows(uint64_t rows, uint64_t row_elems) {
  if (rows == 0) return 0;
  const uint64_t row_bytes = row_elems > UINT64_MAX / sizeof(float) ? UINT64_MAX
                                                                     : row_elems * sizeof(float);
  uint64_t n = row_bytes == 0 ? rows : kQuantPanelBudgetBytes / row_bytes;
  if (n < 1) n = 1;
  return n < rows ? n : rows;
}

/// Bytes tern::linear (weight [out_features, in_features]) or tern::matmul (b [k, n]: rows = k,
/// row_elems = n) asks its temp allocator for when that weight is quantized (saturating).
inline uint64_t quant_panel_scratch_bytes(uint64_t rows, uint64_t row_elems) {
  uint64_t bytes;
  if (__builtin_mul_overflow(quant_panel_rows(rows, row_elems), row_elems, &bytes) ||
      __builtin_mul_overflow(bytes, uint64_t{sizeof(float)}, &bytes)) {
    return UINT64_MAX;
  }
  return bytes;
}

}  // namespace tern::portable
