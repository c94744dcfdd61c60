// Element counts of a dynamic plan's values at one execution (internal to backends/cpu/runtime;
// README "Bounded-dynamic rows"): every node on dynamic values is a rows map
// (blob_dynamic_checks.h), so a value's count is the actual size of its dynamic dim times its
// other dims, and that size passes from the node's dynamic inputs to its output.
#pragma once

#include <cstdint>

#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Sets numel[v] for every dynamic value a node makes, node by node, from the counts already
/// in numel (the external inputs' this time; static values keep their own). InvalidArgument
/// when two dynamic inputs of one node disagree on the actual size of their dynamic dim.
Error propagate_dynamic_counts(const BlobPlan& plan, uint64_t* numel);

}  // namespace tern::cpu
