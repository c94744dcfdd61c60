// MethodMeta: what a method needs and takes, readable before any memory is allocated.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/dtype.h"
#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace tern {
namespace fb { struct Method; }

/// Dtype and shape of a method input or output. Points into the Program. For a tensor with
/// bounded-dynamic dims (docs/dynamic-shapes.md), `sizes` and `nbytes` are the upper bounds and
/// `dim_symbols` has one entry per dim: -1 for a static dim, else the index of its symbol
/// (MethodMeta::symbol); it is empty for a static tensor.
struct TensorInfo {
  DType dtype = DType::F32;
  Span<const int64_t> sizes;
  uint64_t nbytes = 0;
  const char* name = nullptr;  ///< may be null
  Span<const int32_t> dim_symbols;
};

/// A named dynamic dimension of a method: every dim tagged with it has one size in
/// [min, max] per execution. Points into the Program.
struct DimSymbolInfo {
  const char* name = nullptr;
  int64_t min = 1;
  int64_t max = 0;
};

/// A cheap view of one verified method of a Program; valid while the Program lives.
class MethodMeta {
 public:
  explicit MethodMeta(const fb::Method* method) : method_(method) {}

  const char* name() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  /// Kind of input i (a method input may be a scalar); InvalidArgument when out of range.
  Result<EValue::Tag> input_tag(size_t index) const;
  Result<EValue::Tag> output_tag(size_t index) const;
  /// InvalidArgument when out of range or when the value is not a tensor.
  Result<TensorInfo> input_tensor_info(size_t index) const;
  Result<TensorInfo> output_tensor_info(size_t index) const;

  /// Dynamic dimension symbols (0 for a static method).
  size_t num_symbols() const;
  /// Symbol `index`; InvalidArgument when out of range.
  Result<DimSymbolInfo> symbol(size_t index) const;

  size_t num_arenas() const;
  Result<uint64_t> arena_size(size_t index) const;
  Result<uint32_t> arena_alignment(size_t index) const;
  Result<uint64_t> arena_lower_bound(size_t index) const;

  /// Bytes of temp allocator the kernels of this method need (planned by the compiler).
  uint64_t temp_allocator_bytes() const;

  size_t num_instructions() const;
  size_t num_delegates() const;
  /// Bytes of method allocator that Method load needs (an upper bound, exact enough that
  /// a buffer of this size always suffices; backends' own allocations are not included).
  uint64_t method_allocator_bytes() const;

  const fb::Method* flatbuffer() const { return method_; }

 private:
  const fb::Method* method_;
};

}  // namespace tern
