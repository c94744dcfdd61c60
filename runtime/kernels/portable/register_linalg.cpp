#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernels/portable/kernel_families.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern::portable {

Error register_linalg_kernels() {
  static const KernelEntry kKernels[] = {
      {"tern::linear", linear},
      {"tern::matmul", matmul},
      {"tern::bmm", bmm},
      {"tern::grouped_mm", grouped_mm},
      {"tern::grouped_linear", grouped_linear},
      {"tern::addmm", addmm},
      {"tern::conv1d", conv1d},
      {"tern::conv2d", conv2d},
      {"tern::conv3d", conv3d},
      {"tern::conv_transpose2d", conv_transpose2d},
      {"tern::max_pool2d", max_pool2d},
      {"tern::avg_pool2d", avg_pool2d},
      {"tern::adaptive_avg_pool2d", adaptive_avg_pool2d},
  };
  for (const KernelEntry& entry : kKernels) {
    TERN_RETURN_IF_ERROR(register_kernel(entry.name, entry.fn));
  }
  return Error::Ok;
}

}  // namespace tern::portable
