// Registration of each family of portable kernels (one registration file per family).
#pragma once

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"
#include "runtime/kernel/kernel_registry.h"

namespace tern::portable {

/// Each registers its family's kernels with register_kernel(); called by
/// register_portable_kernels(). Families: docs/ops.md sections.
Error register_elementwise_kernels();     // register_elementwise.cpp
Error register_reduction_kernels();       // register_reduction.cpp (reductions, norms, attention)
Error register_linalg_kernels();          // register_linalg.cpp (linear algebra, conv, pooling)
Error register_data_movement_kernels();   // register_data_movement.cpp

/// A kernel name and its function, for the family tables.
struct KernelEntry {
  const char* name;
  KernelFn fn;
};

}  // namespace tern::portable
