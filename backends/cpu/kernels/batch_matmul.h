// tern's batched product of two activations for the cpu backend (the delegate's op 26; not in
// this XNNPACK snapshot): C[b] = A[b] · B[b] or A[b] · B[b]ᵀ, attention's Q·Kᵀ and P·V. Each
// batch's B is packed at run time into the packed GEMM's panel layout (packed_gemm.h) in a
// scratch buffer, then multiplied by the packed GEMM's microkernels.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

struct BatchMatMulProblem {
  int64_t batch = 1, m = 0, k = 0, n = 0;  ///< each >= 1
  const float* a = nullptr;                ///< [batch, m, k] row-major
  const float* b = nullptr;  ///< [batch, k, n] row-major, or [batch, n, k] with trans_b
  bool trans_b = false;
  float* c = nullptr;  ///< [batch, m, n] row-major; must not overlap a or b
};

/// Scratch floats batch_matmul needs: one packed B per batch.
uint64_t batch_matmul_scratch_floats(const BatchMatMulProblem& p);

/// Packs B [k, n] (row-major, the right operand of A · B) into the packed GEMM's layout with
/// zero bias (packed_weight_floats(n, k) floats): panel j, row r, lane c = B[r][16j + c].
void pack_kn_weight(const float* b, int64_t k, int64_t n, float* out);

/// C[b] = A[b] · op(B[b]) for every batch; `scratch` holds batch_matmul_scratch_floats(p)
/// floats. Split over `pool` by batches when there are at least as many as threads, else each
/// product over the pool; below 2^19 multiply-adds in all (and with a null pool) on the
/// caller's thread.
void batch_matmul(const BatchMatMulProblem& p, float* scratch, pthreadpool_t pool);

}  // namespace tern::cpu
