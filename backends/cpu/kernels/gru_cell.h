// tern's fused GRU cell (the cpu delegate's op 40): one step of an nn.GRU after its two
// products. For each row r of `rows` and column j of `hidden` (H), with the input side's gates
// gi = x W_ih + b_ih and the hidden side's gh = h W_hh + b_hh (each 3H floats, PyTorch's order
// r, z, n):
//   r = σ(gi_r + gh_r), z = σ(gi_z + gh_z), n = tanh(gi_n + r · gh_n)
//   h'[r, j] = (h[r, j] - n) · z + n
// tanh(x) is computed as 2 σ(2x) − 1 with the GEMM epilogue's vectorized sigmoid.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <cstdint>

namespace tern::cpu {

struct GruCellProblem {
  const float* gi = nullptr;  ///< [rows, 3H]
  const float* gh = nullptr;  ///< [rows, 3H]
  const float* h = nullptr;   ///< [rows, H], the previous hidden state
  float* out = nullptr;       ///< [rows, H]; never aliases the inputs
  int64_t rows = 0;
  int64_t hidden = 0;  ///< H >= 1
};

/// Floats of scratch gru_cell needs: one row of gates.
inline uint64_t gru_cell_scratch_floats(int64_t hidden) {
  return 3 * static_cast<uint64_t>(hidden);
}

/// Runs the cell on the caller's thread. `scratch`: gru_cell_scratch_floats(hidden) floats.
void gru_cell(const GruCellProblem& p, float* scratch);

}  // namespace tern::cpu
