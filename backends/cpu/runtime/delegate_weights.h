// The first prepare's weights: the Derived values' buffers (allocated at init) and the
// recipes run into them at the first prepare, in batches over the delegate's pool, handing the
// program's constants back to the loader as soon as nothing reads them.
#ifndef TERN_BACKENDS_CPU_RUNTIME_DELEGATE_WEIGHTS_H_
#define TERN_BACKENDS_CPU_RUNTIME_DELEGATE_WEIGHTS_H_

#include "backends/cpu/runtime/cpu_delegate.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"

namespace tern {
namespace cpu {

/// Allocates (once, at init) the buffers of the Derived values that a recipe fills at prepare,
/// and notes which Sources an Alias recipe reads in place.
Error allocate_derived(CpuDelegate* d);

/// The first prepare: checks every Source argument, runs every recipe, creates the XNNPACK
/// runtimes (which pack their static weights from the Derived buffers, the blob's embedded
/// constants and the arguments), frees what only XNNPACK's packing read, and hands back to the
/// loader the constants no one reads again. Later calls check the Sources are the same
/// constants (the same bytes) and do nothing else.
Error make_weights(CpuDelegate* d, Span<EValue*> args);

}  // namespace cpu
}  // namespace tern

#endif  // TERN_BACKENDS_CPU_RUNTIME_DELEGATE_WEIGHTS_H_
