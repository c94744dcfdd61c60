// Span<T>: a non-owning view of a contiguous array, passed by value.
#pragma once

#include <cstddef>

#include "runtime/core/platform.h"

namespace tern {

/// A pointer and a count. Owns nothing: whoever made it keeps the elements alive.
template <typename T>
class Span {
 public:
  constexpr Span() = default;
  constexpr Span(T* data, size_t size) : data_(data), size_(size) {}
  template <size_t N>
  constexpr Span(T (&array)[N]) : data_(array), size_(N) {}
  /// A Span<T> converts to Span<const T>.
  template <typename U>
  constexpr Span(const Span<U>& other) : data_(other.data()), size_(other.size()) {}

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }
  T& operator[](size_t i) const {
    TERN_DCHECK(i < size_);
    return data_[i];
  }
  /// Elements [offset, offset + count); the caller guarantees the range is inside.
  Span subspan(size_t offset, size_t count) const {
    TERN_DCHECK(offset <= size_ && count <= size_ - offset);
    return Span(data_ + offset, count);
  }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tern
