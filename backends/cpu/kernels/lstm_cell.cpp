#include "backends/cpu/kernels/lstm_cell.h"

#include "backends/cpu/kernels/gemm_activation.h"

namespace tern::cpu {

void lstm_cell(const LstmCellProblem& p, float* scratch) {
  const int64_t h = p.hidden;
  const ActivationFn sigmoid = gemm_activation_fn(GemmActivation::Sigmoid);
  float* c_out = p.out;
  float* h_out = p.out + p.rows * h;
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* g = p.gates + r * 4 * h;
    const float* g2 = p.gates2 != nullptr ? p.gates2 + r * 4 * h : nullptr;
    // s = the gates, the cell candidate's quarter doubled (tanh(x) = 2 sigmoid(2x) - 1).
    for (int64_t j = 0; j < 4 * h; ++j) {
      const float v = g2 != nullptr ? g[j] + g2[j] : g[j];
      scratch[j] = j >= 2 * h && j < 3 * h ? 2.0f * v : v;
    }
    sigmoid(scratch, 1, 4 * h, 4 * h, 0.0f);
    const float* c = p.c + r * h;
    float* cr = c_out + r * h;
    float* twice = scratch + 2 * h;  // the candidate's quarter is free once read
    for (int64_t j = 0; j < h; ++j) {
      const float candidate = 2.0f * scratch[2 * h + j] - 1.0f;
      const float next = scratch[h + j] * c[j] + scratch[j] * candidate;
      cr[j] = next;
      twice[j] = 2.0f * next;
    }
    sigmoid(twice, 1, h, h, 0.0f);
    float* hr = h_out + r * h;
    for (int64_t j = 0; j < h; ++j) hr[j] = scratch[3 * h + j] * (2.0f * twice[j] - 1.0f);
  }
}

}  // namespace tern::cpu
