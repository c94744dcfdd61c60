#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernels/portable/kernel_families.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern::portable {

Error register_data_movement_kernels() {
  static const KernelEntry kKernels[] = {
      {"tern::reshape", reshape},
      {"tern::view", view},
      {"tern::squeeze", squeeze},
      {"tern::unsqueeze", unsqueeze},
      {"tern::flatten", flatten},
      {"tern::permute", permute},
      {"tern::transpose", transpose},
      {"tern::flip", flip},
      {"tern::expand", expand},
      {"tern::cat", cat},
      {"tern::slice", slice},
      {"tern::select", select},
      {"tern::split", split},
      {"tern::index_select", index_select},
      {"tern::index_copy", index_copy},
      {"tern::gather", gather},
      {"tern::scatter", scatter},
      {"tern::embedding", embedding},
      {"tern::pad", pad},
      {"tern::repeat", repeat},
      {"tern::upsample_nearest2d", upsample_nearest2d},
      {"tern::upsample_bilinear2d", upsample_bilinear2d},
      {"tern::grid_sample2d", grid_sample2d},
      {"tern::triu", triu},
      {"tern::tril", tril},
      {"tern::clone", clone},
  };
  for (const KernelEntry& entry : kKernels) {
    TERN_RETURN_IF_ERROR(register_kernel(entry.name, entry.fn));
  }
  return Error::Ok;
}

}  // namespace tern::portable
