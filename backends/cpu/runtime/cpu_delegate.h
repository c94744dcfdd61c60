// The cpu backend's DelegateHandle (CpuDelegate) and the arguments it reads and writes
// (External), shared by the backend (cpu_backend.cpp) and the first prepare's weight making
// (delegate_weights.cpp).
#ifndef TERN_BACKENDS_CPU_RUNTIME_CPU_DELEGATE_H_
#define TERN_BACKENDS_CPU_RUNTIME_CPU_DELEGATE_H_

#include <xnnpack.h>

#include <cstdint>

#include "backends/cpu/runtime/blob_reader.h"
#include "backends/cpu/runtime/stage_plan.h"
#include "backends/cpu/runtime/subgraph_builder.h"
#include "backends/cpu/runtime/weight_cache.h"
#include "runtime/backend/backend.h"

namespace tern {
namespace cpu {

constexpr size_t kStageAlignment = 64;
/// Bytes of one part label (a stage, or the edge copies) shown by profilers.
constexpr size_t kLabelBytes = 112;
/// XNN_EXTRA_BYTES: XNNPACK may read this far past an input.
constexpr uint64_t kExtraBytes = XNN_EXTRA_BYTES;

/// One delegate call argument the delegate reads or writes.
struct External {
  uint32_t value = 0;  ///< blob value index (= XNNPACK external id)
  uint32_t arg = 0;    ///< delegate call argument index
  bool input = false;
  bool nhwc = false;    ///< transposed at the edge
  bool staged = false;  ///< the stages work on `stage`, copied from/to the argument
  bool int64 = false;   ///< ValueLayout::Int64Plain: int64 elements (embedding indices)
  bool boolean = false;  ///< ValueLayout::BoolPlain: bool elements, a byte each (a condition)
  bool int32 = false;    ///< ValueLayout::Int32Plain: int32 elements (a grouped product's ends)
  uint64_t numel = 0;
  uint64_t n = 0, c = 0, hw = 0;  ///< NHWC externals: the tern tensor is [n, c, h, w]
  uint32_t rank = 0;              ///< the tern tensor's rank and sizes (a dynamic dim's bound)
  int64_t sizes[kMaxDims] = {};
  uint32_t dynamic_dim = kNoValue;  ///< dynamic_dim_of(its value) (Plain: a tern dim)
  float* stage = nullptr;
  void* bound = nullptr;  ///< unstaged outputs: the argument's data at prepare
};

/// Bytes of one element of external `x`'s argument.
inline uint64_t element_bytes(const External& x) {
  return x.int64 ? 8 : x.boolean ? 1 : x.int32 ? 4 : sizeof(float);
}

/// The cpu backend's DelegateHandle.
struct CpuDelegate {
  BlobPlan plan;
  FreeableBuffer blob;  ///< the blob segment: constants are read from it in place
  pthreadpool_t pool = nullptr;
  StagePlan stages;
  XnnStage* xnn = nullptr;  ///< per stage (empty for own-kernel stages)
  float** addr = nullptr;   ///< per blob value: its bytes (null for XnnInternal; Bound at prepare)
  External* externals = nullptr;
  uint32_t num_externals = 0;
  void* staging = nullptr;    ///< edge buffers of Staged externals
  void* workspace = nullptr;  ///< Workspace values
  float* scratch = nullptr;   ///< own kernels' scratch (the largest any node needs)
  /// Dynamic plans: per value, its element count at the current execution (else null). Static
  /// values keep the count set at init; an execute rewrites each dynamic one (its argument's
  /// count, or the node that makes it) before anything reads it.
  uint64_t* numel = nullptr;
  /// Derived values (recipes' outputs) read at execute: by tern's kernels, or in place by
  /// XNNPACK (a binary op's static operand). Alias recipes need no buffer. Owned by
  /// `kept_block` once init made it (weight_cache.h: other delegates may read from it).
  void* derived_kept = nullptr;
  WeightBlock* kept_block = nullptr;
  /// Per value: the block of another delegate (or this one) whose packed copy it reads
  /// (weight_cache.h), one reference each; null where the value is its own.
  WeightBlock** borrowed = nullptr;
  /// Derived values only XNNPACK's conv / depthwise / fully-connected nodes read: XNNPACK packs
  /// them into its own buffers when it creates the runtimes, after which these are freed.
  void* derived_transient = nullptr;
  /// Per value: a Source's argument data at the first prepare (null before, and for others).
  const void** source_data = nullptr;
  /// Per value: the value is a Source read by an Alias recipe (in place at execute: never
  /// released to the loader).
  bool* aliased_source = nullptr;
  /// Per value: for a Source, the last Derived value whose recipe reads it (kNoValue: none).
  uint32_t* last_recipe_reader = nullptr;
  /// BackendInitContext::release_constant and its cookie (null: none).
  void (*release_constant)(void* cookie, const void* data, size_t size) = nullptr;
  void* release_cookie = nullptr;
  /// The recipes have run and the XNNPACK runtimes exist (the first successful prepare).
  bool weights_ready = false;
  /// Profiler labels: one per stage, then "inputs in" and "outputs out" (kLabelBytes each).
  char* labels = nullptr;
  bool prepared = false;
};

/// Frees everything `d` owns (null: nothing).
void free_delegate(CpuDelegate* d);

/// Bytes of the buffer of a value of `numel` floats: XNN_EXTRA_BYTES of slack (XNNPACK may
/// read that far past an input), rounded to kStageAlignment.
bool buffer_bytes(uint64_t numel, uint64_t* out);

/// Allocates `bytes` (zeroed unless `zero` is false, kStageAlignment-aligned) into *out;
/// nothing for 0 bytes.
Error allocate_buffers(uint64_t bytes, const char* what, void** out, bool zero = true);

}  // namespace cpu
}  // namespace tern

#endif  // TERN_BACKENDS_CPU_RUNTIME_CPU_DELEGATE_H_
