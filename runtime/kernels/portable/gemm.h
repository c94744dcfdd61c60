// The portable kernels' shared f32 matrix multiply (linear, matmul, bmm, addmm, conv).
//
// A cache-blocked GEMM in plain C++: the K dimension in blocks, the M dimension in blocks whose
// A rows stay in L2, a sliver of B columns packed into a stack panel that stays in L1, and a
// register tile of MR x NR accumulators that the compiler vectorizes (gemm.cpp). Single-
// threaded. No heap allocation and no caller scratch: its working memory is one packed B panel
// on the stack (at most 32 KiB) plus, for a single-row product, a 4 KiB copy of that row.
#pragma once

#include <cstdint>

namespace tern::portable {

/// Rows of the baseline register tile.
constexpr int kGemmMR = 4;
/// Columns of the baseline register tile (and width of a packed B sliver).
constexpr int kGemmNR = 16;

/// Instruction-set variants of the GEMM. Baseline is the plain build; on x86-64 (GCC/Clang)
/// the same code is also compiled for AVX2+FMA and AVX-512 with wider tiles.
enum class GemmVariant : uint8_t { Auto = 0, Baseline = 1, Avx2 = 2, Avx512 = 3 };

/// Restricts later GEMM calls to `variant` (Auto: the best the CPU supports, the default).
/// Returns false, changing nothing, when this build or CPU lacks it. Not thread-safe: for
/// tests and benchmarks only.
bool gemm_select_variant(GemmVariant variant);

/// C = alpha * op(A) * op(B) + beta * C, f32, with element strides for every operand.
///
/// op(A) is m x k with element (i, p) at a[i * rs_a + p * cs_a]; op(B) is k x n with element
/// (p, j) at b[p * rs_b + j * cs_b]; C is m x n with element (i, j) at c[i * rs_c + j * cs_c].
/// Strides may be any values that keep every accessed element inside the caller's buffers
/// (the caller checks shapes; this function trusts them). When beta == 0, C is only written
/// (NaN or garbage in C is ignored, as BLAS does). k == 0 gives C = beta * C. C must not
/// overlap A or B. m, n, k >= 0.
void gemm_f32_strided(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                      int64_t rs_a, int64_t cs_a, const float* b, int64_t rs_b, int64_t cs_b,
                      float beta, float* c, int64_t rs_c, int64_t cs_c);

/// C = alpha * op(A) * op(B) + beta * C for row-major matrices, BLAS-style: op(A) is m x k and
/// is A (m x k, leading dimension lda) or, with trans_a, A^T where A is k x m; op(B) is k x n
/// and is B (k x n, ldb) or, with trans_b, B^T where B is n x k; C is m x n with leading
/// dimension ldc. Semantics as gemm_f32_strided.
void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc);

}  // namespace tern::portable
