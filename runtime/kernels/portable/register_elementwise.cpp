#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/kernel_families.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern::portable {

Error register_elementwise_kernels() {
  static const KernelEntry kKernels[] = {
      {"tern::add", add},
      {"tern::mul", mul},
      {"tern::relu", relu},
  };
  for (const KernelEntry& entry : kKernels) {
    TERN_RETURN_IF_ERROR(register_kernel(entry.name, entry.fn));
  }
  return Error::Ok;
}

}  // namespace tern::portable
