// Result<T>: a value or an Error, without exceptions.
#pragma once

#include <new>
#include <type_traits>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/core/platform.h"

namespace tern {

/// Holds either a T or a non-Ok Error. Accessing the value of an error Result is a bug in the
/// caller and aborts in debug builds (TERN_DCHECK).
template <typename T>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  /* implicit */ Result(Error error) : error_(error), has_value_(false) {
    if (error_ == Error::Ok) {
      error_ = Error::Internal;  // An Ok error without a value is a bug; report it, never UB.
    }
  }
  /* implicit */ Result(T&& value) : error_(Error::Ok), has_value_(true) {
    new (&storage_) T(std::move(value));
  }
  /* implicit */ Result(const T& value) : error_(Error::Ok), has_value_(true) {
    new (&storage_) T(value);
  }
  Result(Result&& other) noexcept : error_(other.error_), has_value_(other.has_value_) {
    if (has_value_) {
      new (&storage_) T(std::move(other.get()));
    }
  }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&& other) noexcept {
    if (this != &other) {
      reset();
      error_ = other.error_;
      has_value_ = other.has_value_;
      if (has_value_) {
        new (&storage_) T(std::move(other.get()));
      }
    }
    return *this;
  }
  ~Result() { reset(); }

  bool ok() const { return has_value_; }
  Error error() const { return error_; }

  T& get() {
    TERN_DCHECK(has_value_);
    return *std::launder(reinterpret_cast<T*>(&storage_));
  }
  const T& get() const {
    TERN_DCHECK(has_value_);
    return *std::launder(reinterpret_cast<const T*>(&storage_));
  }
  T& operator*() { return get(); }
  const T& operator*() const { return get(); }
  T* operator->() { return &get(); }
  const T* operator->() const { return &get(); }

 private:
  void reset() {
    if (has_value_) {
      get().~T();
      has_value_ = false;
    }
  }
  typename std::aligned_storage<sizeof(T), alignof(T)>::type storage_;
  Error error_;
  bool has_value_;
};

}  // namespace tern

#define TERN_CONCAT_INNER__(a, b) a##b
#define TERN_CONCAT__(a, b) TERN_CONCAT_INNER__(a, b)

/// `TERN_ASSIGN_OR_RETURN(auto x, expr);` evaluates a Result-returning expr; on error returns
/// the error from the enclosing function, otherwise moves the value into the declaration.
#define TERN_ASSIGN_OR_RETURN(decl, expr) \
  TERN_ASSIGN_OR_RETURN_IMPL__(TERN_CONCAT__(tern_result__, __LINE__), decl, expr)
#define TERN_ASSIGN_OR_RETURN_IMPL__(tmp, decl, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) {                                    \
    return tmp.error();                               \
  }                                                   \
  decl = std::move(tmp.get())
