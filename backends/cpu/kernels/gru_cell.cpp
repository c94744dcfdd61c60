#include "backends/cpu/kernels/gru_cell.h"

#include "backends/cpu/kernels/gemm_activation.h"

namespace tern::cpu {

void gru_cell(const GruCellProblem& p, float* scratch) {
  const int64_t h = p.hidden;
  const ActivationFn sigmoid = gemm_activation_fn(GemmActivation::Sigmoid);
  float* rz = scratch;         // [2H]: σ of the r and z sums
  float* n = scratch + 2 * h;  // [H]: the candidate's doubled pre-activation, then σ of it
  for (int64_t row = 0; row < p.rows; ++row) {
    const float* gi = p.gi + row * 3 * h;
    const float* gh = p.gh + row * 3 * h;
    for (int64_t j = 0; j < 2 * h; ++j) rz[j] = gh[j] + gi[j];
    sigmoid(rz, 1, 2 * h, 2 * h, 0.0f);
    for (int64_t j = 0; j < h; ++j) n[j] = 2.0f * (gi[2 * h + j] + gh[2 * h + j] * rz[j]);
    sigmoid(n, 1, h, h, 0.0f);
    const float* hp = p.h + row * h;
    float* out = p.out + row * h;
    for (int64_t j = 0; j < h; ++j) {
      const float cand = 2.0f * n[j] - 1.0f;
      out[j] = (hp[j] - cand) * rz[h + j] + cand;
    }
  }
}

}  // namespace tern::cpu
