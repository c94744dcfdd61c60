#include "runtime/kernels/portable/register_portable_kernels.h"

#include "runtime/kernels/portable/kernel_families.h"

namespace tern {

Error register_portable_kernels() {
  TERN_RETURN_IF_ERROR(portable::register_elementwise_kernels());
  TERN_RETURN_IF_ERROR(portable::register_reduction_kernels());
  TERN_RETURN_IF_ERROR(portable::register_linalg_kernels());
  TERN_RETURN_IF_ERROR(portable::register_data_movement_kernels());
  return Error::Ok;
}

}  // namespace tern
