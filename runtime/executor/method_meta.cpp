// MethodMeta over a verified fb::Method (every index was checked by Program::load).
#include "runtime/executor/method_meta.h"

#include "runtime/executor/method_layout.h"
#include "runtime/executor/program_verifier.h"
#include "schema/program_generated.h"

namespace tern {
namespace {

template <typename V>
size_t count_of(const V* vector) {
  return vector == nullptr ? 0 : vector->size();
}

EValue::Tag tag_of(fb::Value kind) {
  switch (kind) {
    case fb::Value::Tensor:
      return EValue::Tag::Tensor;
    case fb::Value::Int:
      return EValue::Tag::Int;
    case fb::Value::Double:
      return EValue::Tag::Double;
    case fb::Value::Bool:
      return EValue::Tag::Bool;
    case fb::Value::IntList:
      return EValue::Tag::IntList;
    case fb::Value::DoubleList:
      return EValue::Tag::DoubleList;
    case fb::Value::String:
      return EValue::Tag::String;
    case fb::Value::TensorList:
      return EValue::Tag::TensorList;
    case fb::Value::None:
    case fb::Value::NONE:
      return EValue::Tag::None;
  }
  return EValue::Tag::None;
}

/// The value behind entry `index` of `list` ("input"/"output"); InvalidArgument out of range.
Result<const fb::EValue*> io_value(const fb::Method* method,
                                   const flatbuffers::Vector<uint32_t>* list, size_t index,
                                   const char* what) {
  const size_t n = count_of(list);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(index < n, InvalidArgument, method->name()->c_str(),
                                    ": %s %zu out of range (%zu %ss)", what, index, n, what);
  return method->values()->Get(list->Get(static_cast<uint32_t>(index)));
}

Result<TensorInfo> tensor_info(const fb::Method* method, const flatbuffers::Vector<uint32_t>* list,
                               size_t index, const char* what) {
  TERN_ASSIGN_OR_RETURN(const fb::EValue* value, io_value(method, list, index, what));
  const fb::Tensor* tensor = value->value_as_Tensor();
  TERN_CHECK_METHOD_OR_RETURN_ERROR(tensor != nullptr, InvalidArgument, method->name()->c_str(),
                                    ": %s %zu is a %s, not a tensor", what, index,
                                    to_string(tag_of(value->value_type())));
  TensorInfo info;
  info.dtype = static_cast<DType>(tensor->dtype());
  if (tensor->sizes() != nullptr) {
    info.sizes = Span<const int64_t>(tensor->sizes()->data(), tensor->sizes()->size());
  }
  uint64_t numel = 0;
  if (!internal::tensor_numel_nbytes(tensor, &numel, &info.nbytes)) {
    TERN_RETURN_METHOD_ERROR(InvalidProgram, method->name()->c_str(), ": %s %zu has invalid sizes",
                             what, index);
  }
  info.name = tensor->name() == nullptr ? nullptr : tensor->name()->c_str();
  if (tensor->dynamism() == fb::ShapeDynamism::DynamicBound && tensor->dim_symbols() != nullptr) {
    info.dim_symbols =
        Span<const int32_t>(tensor->dim_symbols()->data(), tensor->dim_symbols()->size());
  }
  return info;
}

}  // namespace

const char* MethodMeta::name() const { return method_->name()->c_str(); }

size_t MethodMeta::num_inputs() const { return count_of(method_->inputs()); }

size_t MethodMeta::num_outputs() const { return count_of(method_->outputs()); }

Result<EValue::Tag> MethodMeta::input_tag(size_t index) const {
  TERN_ASSIGN_OR_RETURN(const fb::EValue* value,
                        io_value(method_, method_->inputs(), index, "input"));
  return tag_of(value->value_type());
}

Result<EValue::Tag> MethodMeta::output_tag(size_t index) const {
  TERN_ASSIGN_OR_RETURN(const fb::EValue* value,
                        io_value(method_, method_->outputs(), index, "output"));
  return tag_of(value->value_type());
}

Result<TensorInfo> MethodMeta::input_tensor_info(size_t index) const {
  return tensor_info(method_, method_->inputs(), index, "input");
}

Result<TensorInfo> MethodMeta::output_tensor_info(size_t index) const {
  return tensor_info(method_, method_->outputs(), index, "output");
}

size_t MethodMeta::num_symbols() const { return count_of(method_->symbols()); }

Result<DimSymbolInfo> MethodMeta::symbol(size_t index) const {
  TERN_CHECK_OR_RETURN_ERROR(index < num_symbols(), InvalidArgument,
                             "method '%s': symbol %zu out of range (%zu symbols)", name(), index,
                             num_symbols());
  const fb::DimSymbol* s = method_->symbols()->Get(static_cast<uint32_t>(index));
  DimSymbolInfo info;
  info.name = s->name()->c_str();
  info.min = s->min();
  info.max = s->max();
  return info;
}

size_t MethodMeta::num_arenas() const { return count_of(method_->arenas()); }

Result<uint64_t> MethodMeta::arena_size(size_t index) const {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(index < num_arenas(), InvalidArgument, name(),
                                    ": arena %zu out of range (%zu arenas)", index, num_arenas());
  return method_->arenas()->Get(static_cast<uint32_t>(index))->size();
}

Result<uint32_t> MethodMeta::arena_alignment(size_t index) const {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(index < num_arenas(), InvalidArgument, name(),
                                    ": arena %zu out of range (%zu arenas)", index, num_arenas());
  return method_->arenas()->Get(static_cast<uint32_t>(index))->alignment();
}

Result<uint64_t> MethodMeta::arena_lower_bound(size_t index) const {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(index < num_arenas(), InvalidArgument, name(),
                                    ": arena %zu out of range (%zu arenas)", index, num_arenas());
  return method_->arenas()->Get(static_cast<uint32_t>(index))->lower_bound();
}

size_t MethodMeta::num_instructions() const { return count_of(method_->instructions()); }

uint64_t MethodMeta::temp_allocator_bytes() const { return method_->temp_size(); }

size_t MethodMeta::num_delegates() const { return count_of(method_->delegates()); }

uint64_t MethodMeta::method_allocator_bytes() const {
  return internal::method_layout_bytes(internal::compute_method_layout(method_));
}

}  // namespace tern
