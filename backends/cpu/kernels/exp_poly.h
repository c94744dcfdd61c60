// The exponential's constants shared by the cpu kernels' vector code (the SiLU and sigmoid
// epilogues, gemm_activation.cpp; the attention softmax rows, attention_softmax_row.cpp): e^z
// = 2^n · e^r with n = round(z · log2 e) and r = z − n · ln 2 (ln 2 in a 16-bit head and a
// tail, so n · head is exact), e^r by a degree-5 polynomial on r in [−ln2/2, ln2/2] (a relative
// minimax fit of our own: 2.1e-7 in f32).
#pragma once

namespace tern::cpu::exp_poly {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693145751953125f;
constexpr float kLn2Lo = 1.42860682030941723e-6f;
constexpr float kC5 = 0.008297616615891457f;
constexpr float kC4 = 0.04191537946462631f;
constexpr float kC3 = 0.16667574644088745f;
constexpr float kC2 = 0.49998894333839417f;
constexpr float kC1 = 0.9999997019767761f;
constexpr float kC0 = 1.0000001192092896f;

}  // namespace tern::cpu::exp_poly
