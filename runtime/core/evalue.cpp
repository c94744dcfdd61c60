#include "runtime/core/evalue.h"

namespace tern {

const char* to_string(EValue::Tag tag) {
  switch (tag) {
    case EValue::Tag::None: return "none";
    case EValue::Tag::Tensor: return "tensor";
    case EValue::Tag::Int: return "int";
    case EValue::Tag::Double: return "double";
    case EValue::Tag::Bool: return "bool";
    case EValue::Tag::IntList: return "int list";
    case EValue::Tag::DoubleList: return "double list";
    case EValue::Tag::String: return "string";
    case EValue::Tag::TensorList: return "tensor list";
  }
  return "invalid";
}

}  // namespace tern
