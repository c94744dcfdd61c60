// Activations tern's GEMM applies to its output tiles after the last K block, while they are
// still in L1 (a fused epilogue, no pass of its own): hardswish (MobileNetV3's expand convs),
// GELU (a transformer MLP's first linear), SiLU (EfficientNet's convs), sigmoid (a
// squeeze-excitation gate), the square (StarReLU) and leaky ReLU (DarkNet's convs), each built
// for AVX-512, AVX2+FMA and baseline.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <cstdint>

namespace tern::cpu {

/// What follows the clamp in the GEMM's epilogue. The values are stored in cpu blobs.
enum class GemmActivation : uint8_t {
  None = 0,
  Hardswish = 1,  ///< x · min(max(x + 3, 0), 6) / 6
  GeluErf = 2,    ///< x/2 · (1 + erf(x / √2)), the portable kernel's form (≤ 5.6 ulp)
  GeluTanh = 3,   ///< the tanh approximation, the portable kernel's form
  Silu = 4,       ///< x · sigmoid(x) = x / (1 + e^-x) (SiLU / swish: EfficientNet's)
  Sigmoid = 5,    ///< 1 / (1 + e^-x)
  Square = 6,     ///< x · x (PoolFormerV2's StarReLU, relu(x)²: the clamp then the square)
  LeakyRelu = 7,  ///< x > 0 ? x : x · alpha (the negative slope; DarkNet's 0.1)
};
constexpr uint32_t kLastGemmActivation = 7;

/// x[r * ld + c] = act(x[r * ld + c]) for r < rows, c < cols, in place (a GEMM's finished tile:
/// rows of a few vectors each, which the SIMD forms take together). `alpha`: the activation's
/// parameter (LeakyRelu's negative slope; the others ignore it).
using ActivationFn = void (*)(float* x, int64_t rows, int64_t cols, int64_t ld, float alpha);

/// The function for `act` in the ISA packed_gemm_isa() names (null for None).
ActivationFn gemm_activation_fn(GemmActivation act);

/// c[r * ld + j] = c[r * ld + j] OP m[r * ld + j] for r < rows, j < cols: a finished tile and
/// an operand of its shape, after its activation (OP: the GEMM's multiplier, a gated product;
/// or the add of the fused bottleneck's residual to a depthwise output row).
using OperandFn = void (*)(float* c, const float* m, int64_t rows, int64_t cols, int64_t ld);

/// The multiply, and the add, in the ISA packed_gemm_isa() names.
OperandFn gemm_multiply_fn();
OperandFn gemm_add_fn();

/// c[r * ld + j] = c[r * ld + j] · scale[j] + shift[j] for r < rows, j < cols: a per-column
/// (per-channel) affine on a finished tile after its activation — a batch norm that follows
/// the activation (ConvMixer's conv → ReLU → batch norm), which does not fold into the weights.
using AffineFn = void (*)(float* c, const float* scale, const float* shift, int64_t rows,
                          int64_t cols, int64_t ld);

/// The affine in the ISA packed_gemm_isa() names.
AffineFn gemm_affine_fn();

}  // namespace tern::cpu
