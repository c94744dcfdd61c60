// The shallow convolution's driver (shallow_conv.h): the batch's output rows in one contiguous
// range per pool thread, each row by the ISA's row kernel, then the activation on the finished
// row (still in L1/L2).
#include "backends/cpu/kernels/shallow_conv.h"

#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_gemm.h"

namespace tern::cpu::shallow_detail {
namespace {

using gemm_detail::max64;
using gemm_detail::min64;
using gemm_detail::split_point;

struct Plan {
  const ConvProblem* p = nullptr;
  RowFn row = nullptr;
  RowsFn rows = nullptr;  ///< when set, runs a part's rows in one call instead of `row`
  ActivationFn act = nullptr;
  int64_t parts = 1;
};

void run_part(void* context, size_t part) {
  const Plan& plan = *static_cast<const Plan*>(context);
  const ConvProblem& p = *plan.p;
  const int64_t rows = p.batch * p.out_h;
  const int64_t r0 = split_point(rows, plan.parts, static_cast<int64_t>(part));
  const int64_t r1 = split_point(rows, plan.parts, static_cast<int64_t>(part) + 1);
  if (plan.rows != nullptr) {
    plan.rows(p, r0, r1);
    if (plan.act != nullptr) {
      plan.act(p.y + r0 * p.out_w * p.out_c, 1, (r1 - r0) * p.out_w * p.out_c, 0,
               p.activation_alpha);
    }
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    plan.row(p, r / p.out_h, r % p.out_h);
    if (plan.act != nullptr) {
      plan.act(p.y + r * p.out_w * p.out_c, 1, p.out_w * p.out_c, 0, p.activation_alpha);
    }
  }
}

}  // namespace

bool takes_one_group(const ConvProblem& p) {
  if (p.groups != 1) return false;
  if (p.kernel_h * p.kernel_w * p.in_c < kShallowConvTaps) return true;
  const GemmIsa isa = packed_gemm_isa();
  // One input channel: the implicit GEMM would gather one float per tap. On AVX-512 also a
  // few channels into one panel (DLA's 7x7 stem on RGB to 16 channels: 1.70 -> 1.25 ms at
  // 224 x 224 on two threads), where the GEMM's tiles run half empty.
  if (isa == GemmIsa::Avx512 && avx512_row() != nullptr) {
    return p.in_c == 1 || (p.in_c <= 4 && p.out_c <= kPanelWidth);
  }
  return p.in_c == 1 && isa == GemmIsa::Avx2 && avx2_row() != nullptr;
}

bool takes_grouped(const ConvProblem& p) {
  const GemmIsa isa = packed_gemm_isa();
  return p.groups > 1 && p.out_c / p.groups <= gemm_detail::conv_blocking().direct_group_max_cols &&
         (isa == GemmIsa::Avx2 || isa == GemmIsa::Avx512) &&
         packed_gemm_isa_supported(GemmIsa::Avx2) && avx2_row() != nullptr;
}

void shallow_conv_nhwc(const ConvProblem& p, pthreadpool_t pool) {
  Plan plan;
  plan.p = &p;
  const GemmIsa isa = packed_gemm_isa();
  plan.row = generic_row();
  if (p.groups > 1) {
    // Narrow groups (see the header): whole groups in a zmm where AVX-512 runs and their width
    // is 4 or 8 in and out, else group by group in ymm.
    plan.rows = isa == GemmIsa::Avx512 ? avx512_grouped_rows(p) : nullptr;
    plan.row = avx2_row();
  } else if (isa == GemmIsa::Avx512 && avx512_row() != nullptr) {
    plan.row = avx512_row();
  } else if (isa == GemmIsa::Avx2 && avx2_row() != nullptr) {
    plan.row = avx2_row();
  }
  plan.act = gemm_activation_fn(p.activation);
  plan.parts = max64(1, min64(gemm_detail::pool_threads(pool), p.batch * p.out_h));
  gemm_detail::run_tasks(pool, &run_part, &plan, plan.parts);
}

}  // namespace tern::cpu::shallow_detail
