#include "runtime/kernels/portable/register_portable_kernels.h"

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {

Error register_portable_kernels() {
  struct Entry {
    const char* name;
    KernelFn fn;
  };
  static const Entry kKernels[] = {
      {"tern::add", portable::add},
      {"tern::mul", portable::mul},
      {"tern::relu", portable::relu},
      {"tern::linear", portable::linear},
      {"tern::reshape", portable::reshape},
  };
  for (const Entry& entry : kKernels) {
    TERN_RETURN_IF_ERROR(register_kernel(entry.name, entry.fn));
  }
  return Error::Ok;
}

}  // namespace tern
