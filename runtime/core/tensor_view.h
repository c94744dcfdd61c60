// TensorView: a non-owning view of a tensor's metadata and bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/dtype.h"
#include "runtime/core/span.h"

namespace tern {

constexpr size_t kMaxRank = 8;

/// Quantization parameters of a tensor, resolved to pointers at method load (QUANT.md).
/// Null pointers mean absent.
struct QuantView {
  enum class Scheme : uint8_t { None = 0, NF4 = 1, NF4DoubleQuant = 2, FP8 = 3 };
  enum class Granularity : uint8_t { PerTensor = 0, PerChannel = 1, Block2D = 2 };
  Scheme scheme = Scheme::None;
  uint32_t block_size = 64;
  const float* absmax = nullptr;
  const uint8_t* dq_codes = nullptr;
  const float* dq_absmax2 = nullptr;
  const float* dq_table = nullptr;
  float dq_offset = 0.0f;
  uint32_t dq_block_size = 256;
  const float* scale = nullptr;
  Granularity granularity = Granularity::PerChannel;
  uint32_t block_rows = 128;
  uint32_t block_cols = 128;
};

/// Dtype, sizes, dim order and a data pointer. Owns nothing: the sizes/dim_order arrays and
/// the data belong to whoever made the view (the Method's allocator, or the caller).
struct TensorView {
  DType dtype = DType::F32;
  uint32_t rank = 0;
  const int64_t* sizes = nullptr;      ///< rank entries
  const uint8_t* dim_order = nullptr;  ///< rank entries, or null for contiguous
  void* data = nullptr;
  uint64_t nbytes = 0;
  const QuantView* quant = nullptr;    ///< null unless the dtype is quantized
  const char* name = nullptr;          ///< debug name, may be null

  Span<const int64_t> shape() const { return Span<const int64_t>(sizes, rank); }
  int64_t size(uint32_t dim) const { return sizes[dim]; }
  /// Product of sizes (1 for rank 0). Sizes were verified at load, so this cannot overflow.
  uint64_t numel() const {
    uint64_t n = 1;
    for (uint32_t i = 0; i < rank; ++i) n *= static_cast<uint64_t>(sizes[i]);
    return n;
  }
  template <typename T>
  T* data_as() const { return static_cast<T*>(data); }
  bool is_contiguous() const {
    if (dim_order == nullptr) return true;
    for (uint32_t i = 0; i < rank; ++i) {
      if (dim_order[i] != i) return false;
    }
    return true;
  }
};

/// Formats sizes as "[1, 3, 224, 224]" into `buf` (always terminated). Returns buf.
const char* format_shape(Span<const int64_t> sizes, char* buf, size_t buf_size);

}  // namespace tern
