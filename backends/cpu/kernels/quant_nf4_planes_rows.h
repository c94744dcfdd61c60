// The walk over weight rows shared by the byte-plane NF4 kernels (quant_nf4_planes_avx2.cpp,
// quant_nf4_planes_neon.cpp; internal to backends/cpu/kernels): weight rows in pairs (a single
// one at the end), rows of A in pairs (a single one at the end), the ISA's tile instantiated
// for the weight's blocks per 128-column chunk (G = 4, 2 or 1 for blocks of 32, 64 or >= 128
// columns). `Tile<MR, NR, G>::run(p, am, n, r0)` computes output columns [n, n + NR) of rows
// [r0, r0 + MR) of C.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/quant_gemm.h"

namespace tern::cpu::quant_detail {

template <template <int, int, int> class Tile, int NR, int G>
void nf4_planes_row_group(const QuantGemmProblem& p, const Nf4Absmax& am, int64_t n) {
  for (int64_t r0 = 0; r0 < p.m; r0 += 2) {
    if (p.m - r0 >= 2) {
      Tile<2, NR, G>::run(p, am, n, r0);
    } else {
      Tile<1, NR, G>::run(p, am, n, r0);
    }
  }
}

template <template <int, int, int> class Tile, int G>
void nf4_planes_rows_of_blocks(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  constexpr int NR = 2;
  const Nf4Absmax am(p.w);
  int64_t n = n0;
  for (; n + NR <= n1; n += NR) nf4_planes_row_group<Tile, NR, G>(p, am, n);
  if (n < n1) nf4_planes_row_group<Tile, 1, G>(p, am, n);
}

/// Output columns [n0, n1) of every row of C.
template <template <int, int, int> class Tile>
void nf4_planes_rows(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  switch (p.w.desc.block_size) {
    case 32:
      return nf4_planes_rows_of_blocks<Tile, 4>(p, n0, n1);
    case 64:
      return nf4_planes_rows_of_blocks<Tile, 2>(p, n0, n1);
    default:
      return nf4_planes_rows_of_blocks<Tile, 1>(p, n0, n1);
  }
}

}  // namespace tern::cpu::quant_detail
