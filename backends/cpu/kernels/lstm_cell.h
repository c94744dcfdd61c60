// tern's fused LSTM cell (the cpu delegate's op 37): one pass over a step's gates instead of
// a dozen elementwise nodes. For each row r of `rows` and column j of `hidden` (H), with the
// gates row g = gates[r] (+ gates2[r]) of 4H floats in PyTorch's order i, f, g, o:
//   c'[r, j] = sigmoid(g[H + j]) * c[r, j] + sigmoid(g[j]) * tanh(g[2H + j])
//   h'[r, j] = sigmoid(g[3H + j]) * tanh(c'[r, j])
// written as out = [c' (rows x H), h' (rows x H)]. tanh(x) is computed as 2 sigmoid(2x) - 1
// with the GEMM epilogue's vectorized sigmoid (gemm_activation.h).
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <cstdint>

namespace tern::cpu {

struct LstmCellProblem {
  const float* gates = nullptr;   ///< [rows, 4H]
  const float* gates2 = nullptr;  ///< null, or [rows, 4H] added to the gates
  const float* c = nullptr;       ///< [rows, H], the previous cell state
  float* out = nullptr;           ///< [2, rows, H]: the new cell state, then the new hidden state
  int64_t rows = 0;
  int64_t hidden = 0;  ///< H >= 1
};

/// Floats of scratch lstm_cell needs: one row of gates.
inline uint64_t lstm_cell_scratch_floats(int64_t hidden) {
  return 4 * static_cast<uint64_t>(hidden);
}

/// Runs the cell on the caller's thread (a step's few hundred elements cost less than waking a
/// pool). `scratch`: lstm_cell_scratch_floats(hidden) floats; out never aliases the inputs.
void lstm_cell(const LstmCellProblem& p, float* scratch);

}  // namespace tern::cpu
