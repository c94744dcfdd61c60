#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernels/portable/kernel_families.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern::portable {

Error register_elementwise_kernels() {
  static const KernelEntry kKernels[] = {
      {"tern::add", add},
      {"tern::sub", sub},
      {"tern::mul", mul},
      {"tern::div", div_kernel},
      {"tern::pow", pow_kernel},
      {"tern::maximum", maximum},
      {"tern::minimum", minimum},
      {"tern::eq", eq},
      {"tern::ne", ne},
      {"tern::lt", lt},
      {"tern::le", le},
      {"tern::gt", gt},
      {"tern::ge", ge},
      {"tern::logical_and", logical_and},
      {"tern::bitwise_and", bitwise_and},
      {"tern::bitwise_or", bitwise_or},
      {"tern::bitwise_xor", bitwise_xor},
      {"tern::bitwise_not", bitwise_not},
      {"tern::logical_or", logical_or},
      {"tern::logical_not", logical_not},
      {"tern::where", where},
      {"tern::neg", neg},
      {"tern::abs", abs_kernel},
      {"tern::exp", exp_kernel},
      {"tern::log", log_kernel},
      {"tern::expm1", expm1_kernel},
      {"tern::log1p", log1p_kernel},
      {"tern::acos", acos_kernel},
      {"tern::asin", asin_kernel},
      {"tern::atan", atan_kernel},
      {"tern::sqrt", sqrt_kernel},
      {"tern::rsqrt", rsqrt},
      {"tern::reciprocal", reciprocal},
      {"tern::sin", sin_kernel},
      {"tern::cos", cos_kernel},
      {"tern::tanh", tanh_kernel},
      {"tern::sigmoid", sigmoid},
      {"tern::erf", erf_kernel},
      {"tern::floor", floor_kernel},
      {"tern::ceil", ceil_kernel},
      {"tern::round", round_kernel},
      {"tern::relu", relu},
      {"tern::hardtanh", hardtanh},
      {"tern::clamp", clamp},
      {"tern::leaky_relu", leaky_relu},
      {"tern::elu", elu},
      {"tern::gelu", gelu},
      {"tern::silu", silu},
      {"tern::hardswish", hardswish},
      {"tern::hardsigmoid", hardsigmoid},
      {"tern::softplus", softplus},
      {"tern::cast", cast},
  };
  for (const KernelEntry& entry : kKernels) {
    TERN_RETURN_IF_ERROR(register_kernel(entry.name, entry.fn));
  }
  return Error::Ok;
}

}  // namespace tern::portable
