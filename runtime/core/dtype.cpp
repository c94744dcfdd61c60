#include "runtime/core/dtype.h"

namespace tern {

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    case DType::I16: return "i16";
    case DType::I8: return "i8";
    case DType::U8: return "u8";
    case DType::Bool: return "bool";
    case DType::NF4: return "nf4";
    case DType::FP8E4M3: return "fp8_e4m3";
    case DType::FP8E5M2: return "fp8_e5m2";
  }
  return "invalid";
}

}  // namespace tern
