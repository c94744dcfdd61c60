// The vulkan delegate's arguments at its edges: how each external value of the blob is held in
// the staging buffer (f32 as is or as f16; bools as 0 / 1 floats; an argmax's int64 indices as
// floats; i64 / i32 indices raw), the check of each argument at prepare and execute, and the
// copies between the arguments and the staging buffer (no allocation).
#pragma once

#include <cstdint>

#include "backends/vulkan/vulkan_blob_format.h"
#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"

namespace tern::vulkan {

/// One argument of the delegate call the delegate reads or writes, and where it lives in the
/// staging buffer.
struct External {
  uint32_t value = 0;
  uint32_t arg = 0;
  bool input = false;
  DType dtype = DType::F32;     ///< the argument's: f32, bool, or i64 / i32 (indices, ends)
  bool f16 = false;             ///< an f32 / bool argument held as f16 (an f16-storage blob)
  /// An i64 argument held as the storage's floats (ValueType::I64AsFloat, I64CastToFloat):
  /// converted at the edges; an input beyond `exact` refused unless `rounded` (an input read
  /// only by casts: any value, rounded as ATen's cast rounds it).
  bool int_as_float = false;
  bool rounded = false;
  int64_t exact = 0;
  uint64_t bytes = 0;           ///< the argument tensor's bytes
  uint64_t staging_bytes = 0;   ///< its bytes on the device and in `staging`
  uint64_t staging_offset = 0;
  uint32_t rank = 0;
  int64_t sizes[kMaxDims] = {};
};

/// Fills *x for external value `v` (blob value `index`) of a blob of `storage`, its staging
/// bytes at `staging_offset`.
void describe_external(const BlobValue& v, uint32_t index, uint32_t storage,
                       uint64_t staging_offset, External* x);

/// Checks argument `x` of a call: a tensor of the blob's element type and sizes (an argument of
/// rank above kMaxDims compared with its leading dims merged, as the compiler recorded it).
Error check_arg(const External& x, Span<EValue*> args);

/// An input argument's data `src` into its place in `staging`, converted to the device's form;
/// an integer held as floats beyond the storage's exact ones is InvalidArgument.
Error copy_in(const External& x, const void* src, uint8_t* staging);

/// An output's device form in `staging` into the argument's data `dst`.
void copy_out(const External& x, const uint8_t* staging, void* dst);

}  // namespace tern::vulkan
