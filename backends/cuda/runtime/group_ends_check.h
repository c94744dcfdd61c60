// The host's check of a grouped product's ends before an execute (internal to the cuda
// backend; host code, testable without a GPU). The kernels check them too (error flag bit
// kErrorGroupEnds), but only the host can say which end is wrong and by how much, as the
// portable kernels do.
#pragma once

#include "backends/cuda/runtime/blob_reader.h"
#include "runtime/core/evalue.h"

namespace tern::cuda {

/// For every GroupedMatmul / QuantGroupedLinear node of `plan` whose ends are an external
/// input (args[value.arg]: i32 or i64 [E], checked by the caller against the blob), checks that
/// each end lies in [the previous end, S] (S: x's rows); InvalidArgument naming the node, the
/// end, its value and the range it had. Ends made inside the delegate are left to the kernels.
Error check_group_ends_args(const BlobPlan& plan, Span<EValue*> args);

}  // namespace tern::cuda
