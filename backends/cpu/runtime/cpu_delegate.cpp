// CpuDelegate's buffers and its teardown.
#include "backends/cpu/runtime/cpu_delegate.h"

#include <cstdlib>
#include <cstring>

#include "backends/cpu/runtime/threadpool_cache.h"
#include "runtime/core/checked_math.h"

namespace tern {
namespace cpu {

void free_delegate(CpuDelegate* d) {
  if (d == nullptr) return;
  if (d->xnn != nullptr) {
    for (uint32_t s = 0; s < d->stages.num_stages; ++s) free_xnn_stage(&d->xnn[s]);
    std::free(d->xnn);
  }
  release_threadpool(d->pool);
  std::free(d->staging);
  std::free(d->workspace);
  std::free(d->scratch);
  std::free(d->numel);
  std::free(d->labels);
  if (d->borrowed != nullptr) {
    for (uint32_t i = 0; i < d->plan.header.num_values; ++i) weight_block_release(d->borrowed[i]);
    std::free(d->borrowed);
  }
  if (d->kept_block != nullptr) {
    weight_cache_forget(d->kept_block);   // no one else finds these values from now on
    weight_block_release(d->kept_block);  // frees derived_kept unless others still read it
  } else {
    std::free(d->derived_kept);
  }
  std::free(d->derived_transient);
  std::free(d->source_data);
  std::free(d->aliased_source);
  std::free(d->last_recipe_reader);
  std::free(d->externals);
  std::free(d->addr);
  free_stage_plan(&d->stages);
  free_blob_plan(&d->plan);
  d->~CpuDelegate();
  std::free(d);
}

/// Bytes of the buffer of a value of `numel` floats: XNN_EXTRA_BYTES of slack (XNNPACK may
/// read that far past an input), rounded to kStageAlignment.
bool buffer_bytes(uint64_t numel, uint64_t* out) {
  return checked_align_up(numel * sizeof(float) + kExtraBytes, kStageAlignment, out);
}

/// Allocates `bytes` (zeroed unless `zero` is false, kStageAlignment-aligned) into *out;
/// nothing for 0 bytes.
Error allocate_buffers(uint64_t bytes, const char* what, void** out, bool zero) {
  if (bytes == 0) return Error::Ok;
  TERN_CHECK_OR_RETURN_ERROR(bytes <= SIZE_MAX, DelegateMemoryAllocationFailed,
                             "cpu backend: %s of %llu bytes", what,
                             static_cast<unsigned long long>(bytes));
  *out = std::aligned_alloc(kStageAlignment, static_cast<size_t>(bytes));
  TERN_CHECK_OR_RETURN_ERROR(*out != nullptr, DelegateMemoryAllocationFailed,
                             "cpu backend: no memory for %llu bytes of %s",
                             static_cast<unsigned long long>(bytes), what);
  if (zero) std::memset(*out, 0, static_cast<size_t>(bytes));
  return Error::Ok;
}

}  // namespace cpu
}  // namespace tern
