#include "runtime/kernels/portable/register_portable_kernels.h"

#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernels/portable/kernel_families.h"

namespace tern {
namespace {

// Kernels whose output sizes follow from their inputs' actual sizes and their int / int-list
// arguments (which the runtime keeps in step with the dimension symbols), so they compute
// correctly on a bounded-dynamic tensor (docs/dynamic-shapes.md). Convolutions, pooling,
// upsampling, padding, repeat and the batch/group norms are not listed yet: a method that
// gives them a dynamic tensor fails at load.
constexpr const char* kDynamicShapeKernels[] = {
    // data movement
    "tern::reshape",
    "tern::view",
    "tern::squeeze",
    "tern::unsqueeze",
    "tern::flatten",
    "tern::permute",
    "tern::transpose",
    "tern::expand",
    "tern::cat",
    "tern::slice",
    "tern::select",
    "tern::split",
    "tern::index_select",
    "tern::index_copy",
    "tern::gather",
    "tern::scatter",
    "tern::embedding",
    "tern::triu",
    "tern::tril",
    "tern::clone",
    // elementwise (broadcasting binary, unary, comparisons, where, cast)
    "tern::add",
    "tern::sub",
    "tern::mul",
    "tern::div",
    "tern::pow",
    "tern::maximum",
    "tern::minimum",
    "tern::eq",
    "tern::ne",
    "tern::lt",
    "tern::le",
    "tern::gt",
    "tern::ge",
    "tern::logical_and",
    "tern::logical_or",
    "tern::logical_not",
    "tern::where",
    "tern::neg",
    "tern::abs",
    "tern::exp",
    "tern::log",
    "tern::expm1",
    "tern::log1p",
    "tern::acos",
    "tern::asin",
    "tern::atan",
    "tern::sqrt",
    "tern::rsqrt",
    "tern::reciprocal",
    "tern::sin",
    "tern::cos",
    "tern::tanh",
    "tern::sigmoid",
    "tern::erf",
    "tern::floor",
    "tern::ceil",
    "tern::round",
    "tern::relu",
    "tern::hardtanh",
    "tern::clamp",
    "tern::leaky_relu",
    "tern::elu",
    "tern::gelu",
    "tern::silu",
    "tern::hardswish",
    "tern::hardsigmoid",
    "tern::softplus",
    "tern::cast",
    // linear algebra
    "tern::linear",
    "tern::matmul",
    "tern::bmm",
    "tern::addmm",
    // reductions and normalization
    "tern::sum",
    "tern::prod",
    "tern::mean",
    "tern::amax",
    "tern::amin",
    "tern::argmax",
    "tern::argmin",
    "tern::cumsum",
    "tern::softmax",
    "tern::log_softmax",
    "tern::layer_norm",
    "tern::rms_norm",
    "tern::scaled_dot_product_attention",
};

}  // namespace

Error register_portable_kernels() {
  TERN_RETURN_IF_ERROR(portable::register_elementwise_kernels());
  TERN_RETURN_IF_ERROR(portable::register_reduction_kernels());
  TERN_RETURN_IF_ERROR(portable::register_linalg_kernels());
  TERN_RETURN_IF_ERROR(portable::register_data_movement_kernels());
  for (const char* name : kDynamicShapeKernels) {
    TERN_RETURN_IF_ERROR(mark_kernel_dynamic_shapes(name));
  }
  return Error::Ok;
}

}  // namespace tern
