// EValue: the tagged value an instruction argument refers to.
#pragma once

#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/core/tensor_view.h"

namespace tern {

/// One value of a method: a tensor, a scalar, a list, a string or none. Non-owning: the
/// Method's allocator holds the pointed-to data for the Method's lifetime.
struct EValue {
  enum class Tag : uint8_t {
    None = 0, Tensor, Int, Double, Bool, IntList, DoubleList, String, TensorList
  };

  Tag tag = Tag::None;
  union Payload {
    TensorView* tensor;
    int64_t i;
    double d;
    bool b;
    struct { const int64_t* data; size_t size; } int_list;
    struct { const double* data; size_t size; } double_list;
    struct { const char* data; size_t size; } string;
    struct { TensorView* const* data; size_t size; } tensor_list;
  } payload{};

  static EValue none() { return EValue(); }
  static EValue from_tensor(TensorView* t) { EValue v; v.tag = Tag::Tensor; v.payload.tensor = t; return v; }
  static EValue from_int(int64_t i) { EValue v; v.tag = Tag::Int; v.payload.i = i; return v; }
  static EValue from_double(double d) { EValue v; v.tag = Tag::Double; v.payload.d = d; return v; }
  static EValue from_bool(bool b) { EValue v; v.tag = Tag::Bool; v.payload.b = b; return v; }
  static EValue from_int_list(Span<const int64_t> s) { EValue v; v.tag = Tag::IntList; v.payload.int_list = {s.data(), s.size()}; return v; }
  static EValue from_double_list(Span<const double> s) { EValue v; v.tag = Tag::DoubleList; v.payload.double_list = {s.data(), s.size()}; return v; }
  static EValue from_string(const char* s, size_t n) { EValue v; v.tag = Tag::String; v.payload.string = {s, n}; return v; }
  static EValue from_tensor_list(Span<TensorView* const> s) { EValue v; v.tag = Tag::TensorList; v.payload.tensor_list = {s.data(), s.size()}; return v; }

  bool is_none() const { return tag == Tag::None; }
  bool is_tensor() const { return tag == Tag::Tensor; }
  bool is_int() const { return tag == Tag::Int; }
  bool is_double() const { return tag == Tag::Double; }
  bool is_bool() const { return tag == Tag::Bool; }
  bool is_int_list() const { return tag == Tag::IntList; }
  bool is_double_list() const { return tag == Tag::DoubleList; }
  bool is_string() const { return tag == Tag::String; }
  bool is_tensor_list() const { return tag == Tag::TensorList; }

  // Accessors: the caller checks the tag first (kernels do, and return InvalidArgument).
  TensorView& to_tensor() const { TERN_DCHECK(is_tensor()); return *payload.tensor; }
  int64_t to_int() const { TERN_DCHECK(is_int()); return payload.i; }
  double to_double() const { TERN_DCHECK(is_double()); return payload.d; }
  bool to_bool() const { TERN_DCHECK(is_bool()); return payload.b; }
  Span<const int64_t> to_int_list() const { TERN_DCHECK(is_int_list()); return {payload.int_list.data, payload.int_list.size}; }
  Span<const double> to_double_list() const { TERN_DCHECK(is_double_list()); return {payload.double_list.data, payload.double_list.size}; }
  Span<TensorView* const> to_tensor_list() const { TERN_DCHECK(is_tensor_list()); return {payload.tensor_list.data, payload.tensor_list.size}; }
};

/// "tensor", "int", ... for messages.
const char* to_string(EValue::Tag tag);

}  // namespace tern
