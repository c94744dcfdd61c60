#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernels/portable/kernel_families.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern::portable {

Error register_reduction_kernels() {
  static const KernelEntry kKernels[] = {
      {"tern::sum", sum},
      {"tern::prod", prod},
      {"tern::mean", mean},
      {"tern::amax", amax},
      {"tern::amin", amin},
      {"tern::argmax", argmax},
      {"tern::argmin", argmin},
      {"tern::cumsum", cumsum},
      {"tern::argsort", argsort},
      {"tern::topk_indices", topk_indices},
      {"tern::histc", histc},
      {"tern::softmax", softmax},
      {"tern::log_softmax", log_softmax},
      {"tern::layer_norm", layer_norm},
      {"tern::rms_norm", rms_norm},
      {"tern::group_norm", group_norm},
      {"tern::batch_norm", batch_norm},
      {"tern::scaled_dot_product_attention", scaled_dot_product_attention},
  };
  for (const KernelEntry& entry : kKernels) {
    TERN_RETURN_IF_ERROR(register_kernel(entry.name, entry.fn));
  }
  return Error::Ok;
}

}  // namespace tern::portable
