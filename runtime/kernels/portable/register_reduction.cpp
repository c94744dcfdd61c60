#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/kernel_families.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern::portable {

Error register_reduction_kernels() {
  // This family's kernels are added here as they land (docs/ops.md).
  return Error::Ok;
}

}  // namespace tern::portable
