// Lowering of a delegate region to a cpu blob (internal to backends/cpu/compile).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/compile/cpu_options.h"
#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// Serializes `region` (every node already checked as supported) into a version-1 cpu blob:
/// values (4-D activations NHWC), nodes, and constants re-laid out for XNNPACK. Throws
/// std::invalid_argument when the region is malformed (a tensor read before it is made).
/// `options`: the backend's compile options (which Winograd convs a conv may become).
std::vector<uint8_t> lower_region(const Graph& graph, const DelegateRegion& region,
                                  const CpuOptions& options = {});

}  // namespace tern::compiler::cpu_compile
