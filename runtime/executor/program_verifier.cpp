#include "runtime/executor/program_verifier.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/core/checked_math.h"
#include "runtime/core/dtype.h"
#include "runtime/core/tensor_view.h"
#include "runtime/executor/flatbuffer_verifier.h"
#include "runtime/executor/shared_state.h"
#include "schema/program_generated.h"

namespace tern {
namespace internal {
namespace {

using ull = unsigned long long;

/// A heap scratch array freed on scope exit (load time only).
template <typename T>
class Scratch {
 public:
  explicit Scratch(size_t count) {
    data_ = static_cast<T*>(std::calloc(count == 0 ? 1 : count, sizeof(T)));
  }
  ~Scratch() { std::free(data_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
};

/// What verify_segments and verify_method_names sort: a segment's offset or a method's name,
/// then the index (so the order, and which pair an error names, does not depend on the sort).
struct SortKey {
  uint64_t offset;
  const char* name;
  uint32_t index;
};

int compare_keys(const void* a, const void* b) {
  const SortKey& x = *static_cast<const SortKey*>(a);
  const SortKey& y = *static_cast<const SortKey*>(b);
  if (x.name != nullptr) {
    const int c = strcmp(x.name, y.name);
    if (c != 0) return c;
  } else if (x.offset != y.offset) {
    return x.offset < y.offset ? -1 : 1;
  }
  return x.index < y.index ? -1 : (x.index > y.index ? 1 : 0);
}

/// One sort for both (the C library's: no template instance per comparison in the runtime).
void sort_keys(SortKey* keys, uint32_t count) {
  std::qsort(keys, count, sizeof(SortKey), compare_keys);
}

template <typename V>
uint32_t count_of(const V* vector) {
  return vector == nullptr ? 0 : vector->size();
}

/// Whether the elements of a FlatBuffer vector are aligned for their type. The FlatBuffers
/// verifier checks only the 4-byte length prefix, so a crafted file can place a [long] or
/// [double] 4 bytes off, and reading it would be a misaligned (undefined) load. The structure
/// buffer itself is at least 8-byte aligned (the header puts it at a multiple of 8 and the
/// loader keeps that alignment, data_loader.h), so address alignment is offset alignment.
template <typename T>
bool elements_aligned(const flatbuffers::Vector<T>* vector) {
  // An empty vector is never read, and FlatBuffers does not align it.
  return vector == nullptr || vector->size() == 0 ||
         reinterpret_cast<uintptr_t>(vector->data()) % alignof(T) == 0;
}

const char* value_kind_name(fb::Value kind) {
  switch (kind) {
    case fb::Value::NONE:
      return "no value";
    case fb::Value::Tensor:
      return "tensor";
    case fb::Value::Int:
      return "int";
    case fb::Value::Double:
      return "double";
    case fb::Value::Bool:
      return "bool";
    case fb::Value::IntList:
      return "int list";
    case fb::Value::DoubleList:
      return "double list";
    case fb::Value::String:
      return "string";
    case fb::Value::None:
      return "none";
    case fb::Value::TensorList:
      return "tensor list";
  }
  return "unknown value kind";
}

/// Bytes per element for offset alignment (1 for sub-byte types).
uint64_t element_alignment(DType dtype) {
  const uint32_t bits = bits_per_element(dtype);
  return bits < 8 ? 1 : bits / 8;
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

constexpr uint8_t kFlagInput = 1;
constexpr uint8_t kFlagState = 2;

/// Checks one method of a program; every message starts with "method 'NAME'".
class MethodChecker {
 public:
  MethodChecker(const fb::Program* program, const fb::Method* method, uint32_t num_segments)
      : program_(program),
        method_(method),
        name_(method->name()->c_str()),
        num_values_(count_of(method->values())),
        num_segments_(num_segments),
        num_arenas_(count_of(method->arenas())),
        num_operators_(count_of(method->operators())),
        num_delegates_(count_of(method->delegates())),
        num_fallback_(count_of(method->fallback_instructions())),
        flags_(num_values_) {}

  Error check();

 private:
  Error check_value(uint32_t index);
  Error check_tensor(uint32_t index, const fb::Tensor* tensor);
  Error check_quant(uint32_t index, const fb::Tensor* tensor, uint64_t numel);
  Error check_quant_ref(uint32_t index, const char* field, int32_t ref, DType dtype,
                        uint64_t expected_numel);
  Error check_args(const char* list, uint32_t index, const flatbuffers::Vector<int32_t>* args);
  Error check_instruction(const char* list, uint32_t index, const fb::Instruction* instruction,
                          bool fallback);
  Error check_delegate(uint32_t index, const fb::Delegate* delegate);
  Error check_arena(uint32_t index, const fb::Arena* arena);
  Error check_state(uint32_t index, const fb::StateTensor* state);
  const fb::Segment* segment(uint32_t index) const { return program_->segments()->Get(index); }

  const fb::Program* program_;
  const fb::Method* method_;
  const char* name_;
  uint32_t num_values_;
  uint32_t num_segments_;
  uint32_t num_arenas_;
  uint32_t num_operators_;
  uint32_t num_delegates_;
  uint32_t num_fallback_;
  Scratch<uint8_t> flags_;  // per value: kFlagInput | kFlagState
};

Error MethodChecker::check() {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(flags_.get() != nullptr, MemoryAllocationFailed, name_,
                                    ": cannot allocate %u bytes of verification scratch",
                                    num_values_);
  // Inputs and outputs first: the tensor checks need to know which values are inputs.
  const auto* inputs = method_->inputs();
  for (uint32_t i = 0; i < count_of(inputs); ++i) {
    const uint32_t v = inputs->Get(i);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(v < num_values_, InvalidProgram, name_,
                                      " input %u: value index %u out of range (%u values)", i, v,
                                      num_values_);
    flags_.get()[v] |= kFlagInput;
  }
  const auto* outputs = method_->outputs();
  for (uint32_t i = 0; i < count_of(outputs); ++i) {
    const uint32_t v = outputs->Get(i);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(v < num_values_, InvalidProgram, name_,
                                      " output %u: value index %u out of range (%u values)", i, v,
                                      num_values_);
  }
  for (uint32_t i = 0; i < num_arenas_; ++i) {
    TERN_RETURN_IF_ERROR(check_arena(i, method_->arenas()->Get(i)));
  }
  for (uint32_t i = 0; i < num_values_; ++i) {
    TERN_RETURN_IF_ERROR(check_value(i));
  }
  for (uint32_t i = 0; i < count_of(inputs); ++i) {
    const uint32_t v = inputs->Get(i);
    const fb::Tensor* t = method_->values()->Get(v)->value_as_Tensor();
    TERN_CHECK_METHOD_OR_RETURN_ERROR(
        t == nullptr || t->storage() != fb::StorageKind::Constant, InvalidProgram, name_,
        " input %u: value %u is a constant tensor; inputs need arena or caller storage", i, v);
  }
  for (uint32_t i = 0; i < num_operators_; ++i) {
    const flatbuffers::String* op = method_->operators()->Get(i);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(op != nullptr && op->size() > 0, InvalidProgram, name_,
                                      " operator %u: missing or empty name", i);
  }
  for (uint32_t i = 0; i < num_delegates_; ++i) {
    TERN_RETURN_IF_ERROR(check_delegate(i, method_->delegates()->Get(i)));
  }
  const auto* instructions = method_->instructions();
  for (uint32_t i = 0; i < count_of(instructions); ++i) {
    TERN_RETURN_IF_ERROR(check_instruction("instruction", i, instructions->Get(i), false));
  }
  const auto* fallback = method_->fallback_instructions();
  for (uint32_t i = 0; i < num_fallback_; ++i) {
    TERN_RETURN_IF_ERROR(check_instruction("fallback instruction", i, fallback->Get(i), true));
  }
  const auto* state = method_->state();
  for (uint32_t i = 0; i < count_of(state); ++i) {
    TERN_RETURN_IF_ERROR(check_state(i, state->Get(i)));
  }
  Scratch<uint8_t> is_state(num_values_);
  TERN_CHECK_OR_RETURN_ERROR(is_state.get() != nullptr, MemoryAllocationFailed,
                             "method '%s': cannot allocate %u bytes of verification scratch", name_,
                             num_values_);
  for (uint32_t v = 0; v < num_values_; ++v) {
    is_state.get()[v] = (flags_.get()[v] & kFlagState) != 0 ? 1 : 0;
  }
  TERN_RETURN_IF_ERROR(check_shared_state_listed(method_, name_, is_state.get()));
  return verify_dynamic_shapes(method_, name_, is_state.get());
}

Error MethodChecker::check_arena(uint32_t index, const fb::Arena* arena) {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(arena != nullptr, InvalidProgram, name_, " arena %u: missing",
                                    index);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(is_power_of_two(arena->alignment()), InvalidProgram, name_,
                                    " arena %u: alignment %u is not a power of two", index,
                                    arena->alignment());
  TERN_CHECK_METHOD_OR_RETURN_ERROR(arena->size() <= SIZE_MAX, InvalidProgram, name_,
                                    " arena %u: size %llu does not fit in memory", index,
                                    static_cast<ull>(arena->size()));
  TERN_CHECK_METHOD_OR_RETURN_ERROR(arena->lower_bound() <= arena->size(), InvalidProgram, name_,
                                    " arena %u: lower bound %llu exceeds its size %llu", index,
                                    static_cast<ull>(arena->lower_bound()),
                                    static_cast<ull>(arena->size()));
  return Error::Ok;
}

Error MethodChecker::check_value(uint32_t index) {
  const fb::EValue* value = method_->values()->Get(index);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(value != nullptr, InvalidProgram, name_, " value %u: missing",
                                    index);
  const fb::Value kind = value->value_type();
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      kind >= fb::Value::Tensor && kind <= fb::Value::TensorList && value->value() != nullptr,
      InvalidProgram, name_, " value %u: no value (union type %u, %s)", index,
      static_cast<unsigned>(kind), value->value() == nullptr ? "payload absent" : "unknown type");
  switch (kind) {
    case fb::Value::Tensor:
      return check_tensor(index, value->value_as_Tensor());
    case fb::Value::String:
      TERN_CHECK_METHOD_OR_RETURN_ERROR(value->value_as_String()->value() != nullptr,
                                        InvalidProgram, name_, " value %u: string without text",
                                        index);
      return Error::Ok;
    case fb::Value::IntList:
      TERN_CHECK_METHOD_OR_RETURN_ERROR(elements_aligned(value->value_as_IntList()->items()),
                                        InvalidProgram, name_,
                                        " value %u: int list items are not 8-byte aligned", index);
      return Error::Ok;
    case fb::Value::DoubleList:
      TERN_CHECK_METHOD_OR_RETURN_ERROR(
          elements_aligned(value->value_as_DoubleList()->items()), InvalidProgram, name_,
          " value %u: double list items are not 8-byte aligned", index);
      return Error::Ok;
    case fb::Value::TensorList: {
      const auto* items = value->value_as_TensorList()->items();
      for (uint32_t k = 0; k < count_of(items); ++k) {
        const int32_t item = items->Get(k);
        TERN_CHECK_METHOD_OR_RETURN_ERROR(
            item >= 0 && static_cast<uint32_t>(item) < num_values_, InvalidProgram, name_,
            " value %u: tensor list item %u is value %d, out of range (%u values)", index, k, item,
            num_values_);
        const fb::EValue* target = method_->values()->Get(static_cast<uint32_t>(item));
        TERN_CHECK_METHOD_OR_RETURN_ERROR(
            target != nullptr && target->value_as_Tensor() != nullptr, InvalidProgram, name_,
            " value %u: tensor list item %u is value %d, a %s, not a tensor", index, k, item,
            target == nullptr ? "missing value" : value_kind_name(target->value_type()));
      }
      return Error::Ok;
    }
    default:
      return Error::Ok;
  }
}

Error MethodChecker::check_tensor(uint32_t index, const fb::Tensor* tensor) {
  const uint8_t raw_dtype = static_cast<uint8_t>(tensor->dtype());
  TERN_CHECK_METHOD_OR_RETURN_ERROR(is_valid_dtype(raw_dtype), InvalidProgram, name_,
                                    " value %u: unknown dtype %u (known: 0..%u)", index, raw_dtype,
                                    kNumDTypes - 1);
  const DType dtype = static_cast<DType>(raw_dtype);
  const auto* sizes = tensor->sizes();
  const uint32_t rank = count_of(sizes);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(elements_aligned(sizes), InvalidProgram, name_,
                                    " value %u: tensor sizes are not 8-byte aligned", index);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(rank <= kMaxRank, InvalidProgram, name_,
                                    " value %u: rank %u exceeds the maximum rank %zu", index, rank,
                                    kMaxRank);
  uint64_t numel = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    const int64_t size = sizes->Get(d);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(size >= 0, InvalidProgram, name_,
                                      " value %u: size %lld of dim %u is negative", index,
                                      static_cast<long long>(size), d);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(checked_mul(numel, static_cast<uint64_t>(size), &numel),
                                      InvalidProgram, name_,
                                      " value %u: element count overflows at dim %u", index, d);
  }
  uint64_t nbytes = 0;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(dtype_nbytes(dtype, numel, &nbytes), InvalidProgram, name_,
                                    " value %u: byte size of %llu %s elements overflows", index,
                                    static_cast<ull>(numel), to_string(dtype));
  const auto* dim_order = tensor->dim_order();
  if (dim_order != nullptr) {
    TERN_CHECK_METHOD_OR_RETURN_ERROR(dim_order->size() == rank, InvalidProgram, name_,
                                      " value %u: dim order has %u entries for rank %u", index,
                                      dim_order->size(), rank);
    uint32_t seen = 0;
    for (uint32_t d = 0; d < rank; ++d) {
      const uint8_t dim = dim_order->Get(d);
      TERN_CHECK_METHOD_OR_RETURN_ERROR(dim < rank && (seen & (1u << dim)) == 0, InvalidProgram,
                                        name_,
                                        " value %u: dim order entry %u is %u; not a "
                                        "permutation of 0..%u",
                                        index, d, dim, rank - 1);
      seen |= 1u << dim;
    }
  }
  const uint8_t dynamism = static_cast<uint8_t>(tensor->dynamism());
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      dynamism <= static_cast<uint8_t>(fb::ShapeDynamism::DynamicBound), InvalidProgram, name_,
      " value %u: unknown shape dynamism %u", index, dynamism);

  const uint64_t offset = tensor->offset();
  const uint64_t element_align = element_alignment(dtype);
  switch (tensor->storage()) {
    case fb::StorageKind::Caller:
      TERN_CHECK_METHOD_OR_RETURN_ERROR((flags_.get()[index] & kFlagInput) != 0, InvalidProgram,
                                        name_,
                                        " value %u: caller-bound storage is only allowed for "
                                        "method inputs",
                                        index);
      break;
    case fb::StorageKind::Constant: {
      const uint32_t seg = tensor->location();
      TERN_CHECK_METHOD_OR_RETURN_ERROR(seg < num_segments_, InvalidProgram, name_,
                                        " value %u: constant segment %u out of range (%u "
                                        "segments)",
                                        index, seg, num_segments_);
      const uint64_t seg_size = segment(seg)->size();
      TERN_CHECK_METHOD_OR_RETURN_ERROR(
          range_within(offset, nbytes, seg_size), InvalidProgram, name_,
          " value %u: tensor bytes [%llu, +%llu) exceed segment %u of %llu bytes", index,
          static_cast<ull>(offset), static_cast<ull>(nbytes), seg, static_cast<ull>(seg_size));
      TERN_CHECK_METHOD_OR_RETURN_ERROR(offset % element_align == 0, InvalidProgram, name_,
                                        " value %u: offset %llu in segment %u is not a "
                                        "multiple of the %llu-byte %s element",
                                        index, static_cast<ull>(offset), seg,
                                        static_cast<ull>(element_align), to_string(dtype));
      break;
    }
    case fb::StorageKind::Arena: {
      const uint32_t arena = tensor->location();
      TERN_CHECK_METHOD_OR_RETURN_ERROR(arena < num_arenas_, InvalidProgram, name_,
                                        " value %u: arena %u out of range (%u arenas)", index,
                                        arena, num_arenas_);
      const uint64_t arena_size = method_->arenas()->Get(arena)->size();
      TERN_CHECK_METHOD_OR_RETURN_ERROR(
          range_within(offset, nbytes, arena_size), InvalidProgram, name_,
          " value %u: tensor bytes [%llu, +%llu) exceed arena %u of %llu bytes", index,
          static_cast<ull>(offset), static_cast<ull>(nbytes), arena, static_cast<ull>(arena_size));
      TERN_CHECK_METHOD_OR_RETURN_ERROR(offset % element_align == 0, InvalidProgram, name_,
                                        " value %u: offset %llu in arena %u is not a multiple "
                                        "of the %llu-byte %s element",
                                        index, static_cast<ull>(offset), arena,
                                        static_cast<ull>(element_align), to_string(dtype));
      break;
    }
    case fb::StorageKind::SharedState:
      TERN_RETURN_IF_ERROR(check_shared_state_view(program_, name_, index, tensor,
                                                   (flags_.get()[index] & kFlagInput) != 0));
      break;
    default:
      TERN_RETURN_METHOD_ERROR(InvalidProgram, name_, " value %u: unknown storage kind %u", index,
                               static_cast<unsigned>(tensor->storage()));
  }
  const bool quantized_dtype =
      dtype == DType::NF4 || dtype == DType::FP8E4M3 || dtype == DType::FP8E5M2;
  if (tensor->quant() != nullptr || quantized_dtype) {
    const Error err = check_quant(index, tensor, numel);
    if (err != Error::Ok) {
      // Name the tensor: a corrupt quantized weight is reported as that weight.
      const char* tensor_name = tensor->name() != nullptr ? tensor->name()->c_str() : "";
      if (tensor_name[0] != '\0') {
        char cause[1024];
        std::snprintf(cause, sizeof cause, "%s", last_error_message());
        return set_error_message(err, "%s (value %u is the %s tensor '%s')", cause, index,
                                 to_string(dtype), tensor_name);
      }
      return err;
    }
  }
  return Error::Ok;
}

Error MethodChecker::check_quant_ref(uint32_t index, const char* field, int32_t ref, DType dtype,
                                     uint64_t expected_numel) {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(ref >= 0 && static_cast<uint32_t>(ref) < num_values_,
                                    InvalidProgram, name_,
                                    " value %u: quant %s is value %d, out of range (%u "
                                    "values)",
                                    index, field, ref, num_values_);
  const fb::EValue* value = method_->values()->Get(static_cast<uint32_t>(ref));
  const fb::Tensor* t = value == nullptr ? nullptr : value->value_as_Tensor();
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      t != nullptr && t->storage() == fb::StorageKind::Constant, InvalidProgram, name_,
      " value %u: quant %s (value %d) must be a constant tensor", index, field, ref);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      t->dtype() == static_cast<fb::DType>(dtype), InvalidProgram, name_,
      " value %u: quant %s (value %d) has dtype %s, expected %s", index, field, ref,
      is_valid_dtype(static_cast<uint8_t>(t->dtype())) ? to_string(static_cast<DType>(t->dtype()))
                                                       : "invalid",
      to_string(dtype));
  uint64_t numel = 0;
  uint64_t nbytes = 0;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(tensor_numel_nbytes(t, &numel, &nbytes), InvalidProgram, name_,
                                    " value %u: quant %s (value %d) has invalid sizes", index,
                                    field, ref);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(numel == expected_numel, InvalidProgram, name_,
                                    " value %u: quant %s (value %d) has %llu elements, "
                                    "expected %llu",
                                    index, field, ref, static_cast<ull>(numel),
                                    static_cast<ull>(expected_numel));
  return Error::Ok;
}

Error MethodChecker::check_quant(uint32_t index, const fb::Tensor* tensor, uint64_t numel) {
  const fb::QuantParams* q = tensor->quant();
  const DType dtype = static_cast<DType>(tensor->dtype());
  const fb::QuantScheme scheme = q != nullptr ? q->scheme() : fb::QuantScheme::None;
  if (scheme == fb::QuantScheme::None) {
    TERN_CHECK_METHOD_OR_RETURN_ERROR(
        dtype != DType::NF4 && dtype != DType::FP8E4M3 && dtype != DType::FP8E5M2, InvalidProgram,
        name_, " value %u: %s tensor without quantization parameters", index, to_string(dtype));
    return Error::Ok;
  }
  switch (scheme) {
    case fb::QuantScheme::None:
      return Error::Ok;
    case fb::QuantScheme::NF4:
    case fb::QuantScheme::NF4DoubleQuant: {
      TERN_CHECK_METHOD_OR_RETURN_ERROR(dtype == DType::NF4, InvalidProgram, name_,
                                        " value %u: NF4 quantization on a %s tensor", index,
                                        to_string(dtype));
      const uint32_t block = q->block_size();
      TERN_CHECK_METHOD_OR_RETURN_ERROR(is_power_of_two(block) && block >= 32 && block <= 4096,
                                        InvalidProgram, name_,
                                        " value %u: NF4 block size %u is not a power of two "
                                        "in [32, 4096]",
                                        index, block);
      const uint64_t num_blocks = ceil_div(numel, block);
      if (q->scheme() == fb::QuantScheme::NF4) {
        return check_quant_ref(index, "absmax", q->absmax(), DType::F32, num_blocks);
      }
      TERN_CHECK_METHOD_OR_RETURN_ERROR(q->dq_block_size() > 0, InvalidProgram, name_,
                                        " value %u: double-quant block size is 0", index);
      TERN_CHECK_METHOD_OR_RETURN_ERROR(std::isfinite(q->dq_offset()), InvalidProgram, name_,
                                        " value %u: double-quant offset is not finite", index);
      TERN_RETURN_IF_ERROR(
          check_quant_ref(index, "dq_codes", q->dq_codes(), DType::U8, num_blocks));
      TERN_RETURN_IF_ERROR(check_quant_ref(index, "dq_absmax2", q->dq_absmax2(), DType::F32,
                                           ceil_div(num_blocks, q->dq_block_size())));
      return check_quant_ref(index, "dq_table", q->dq_table(), DType::F32, 256);
    }
    case fb::QuantScheme::FP8: {
      TERN_CHECK_METHOD_OR_RETURN_ERROR(
          dtype == DType::FP8E4M3 || dtype == DType::FP8E5M2, InvalidProgram, name_,
          " value %u: FP8 quantization on a %s tensor", index, to_string(dtype));
      const auto* sizes = tensor->sizes();
      const uint64_t rows = count_of(sizes) >= 1 ? static_cast<uint64_t>(sizes->Get(0)) : 1;
      const uint64_t cols = rows == 0 ? 0 : numel / rows;
      uint64_t scales = 0;
      switch (q->granularity()) {
        case fb::ScaleGranularity::PerTensor:
          scales = 1;
          break;
        case fb::ScaleGranularity::PerChannel:
          scales = rows;
          break;
        case fb::ScaleGranularity::Block2D:
          TERN_CHECK_METHOD_OR_RETURN_ERROR(count_of(sizes) == 2, InvalidProgram, name_,
                                            " value %u: FP8 2-D block scales need a rank-2 "
                                            "tensor, found rank %u",
                                            index, count_of(sizes));
          TERN_CHECK_METHOD_OR_RETURN_ERROR(
              q->block_rows() > 0 && q->block_cols() > 0, InvalidProgram, name_,
              " value %u: FP8 block %ux%u is empty", index, q->block_rows(), q->block_cols());
          // Both factors are at most numel, so the product cannot overflow past numel^2 < 2^64
          // unless numel is huge; check anyway.
          TERN_CHECK_METHOD_OR_RETURN_ERROR(checked_mul(ceil_div(rows, q->block_rows()),
                                                        ceil_div(cols, q->block_cols()), &scales),
                                            InvalidProgram, name_,
                                            " value %u: FP8 block count overflows", index);
          break;
        default:
          TERN_RETURN_METHOD_ERROR(InvalidProgram, name_, " value %u: unknown scale granularity %u",
                                   index, static_cast<unsigned>(q->granularity()));
      }
      return check_quant_ref(index, "scale", q->scale(), DType::F32, scales);
    }
    default:
      TERN_RETURN_METHOD_ERROR(InvalidProgram, name_, " value %u: unknown quantization scheme %u",
                               index, static_cast<unsigned>(q->scheme()));
  }
}

Error MethodChecker::check_args(const char* list, uint32_t index,
                                const flatbuffers::Vector<int32_t>* args) {
  for (uint32_t k = 0; k < count_of(args); ++k) {
    const int32_t arg = args->Get(k);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(arg >= 0 && static_cast<uint32_t>(arg) < num_values_,
                                      InvalidProgram, name_,
                                      " %s %u: argument %u is value %d, out of range (%u "
                                      "values)",
                                      list, index, k, arg, num_values_);
  }
  return Error::Ok;
}

Error MethodChecker::check_instruction(const char* list, uint32_t index,
                                       const fb::Instruction* instruction, bool fallback) {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(instruction != nullptr, InvalidProgram, name_,
                                    " %s %u: missing", list, index);
  if (const fb::KernelCall* call = instruction->kind_as_KernelCall()) {
    TERN_CHECK_METHOD_OR_RETURN_ERROR(call->op() < num_operators_, InvalidProgram, name_,
                                      " %s %u: operator %u out of range (%u operators)", list,
                                      index, call->op(), num_operators_);
    return check_args(list, index, call->args());
  }
  if (const fb::DelegateCall* call = instruction->kind_as_DelegateCall()) {
    TERN_CHECK_METHOD_OR_RETURN_ERROR(!fallback, InvalidProgram, name_,
                                      " %s %u: a fallback may only hold kernel calls, found "
                                      "a delegate call",
                                      list, index);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(call->delegate() < num_delegates_, InvalidProgram, name_,
                                      " %s %u: delegate %u out of range (%u delegates)", list,
                                      index, call->delegate(), num_delegates_);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(
        call->fallback_begin() <= call->fallback_end() && call->fallback_end() <= num_fallback_,
        InvalidProgram, name_,
        " %s %u: fallback range [%u, %u) is not inside the %u fallback instructions", list, index,
        call->fallback_begin(), call->fallback_end(), num_fallback_);
    return check_args(list, index, call->args());
  }
  TERN_RETURN_METHOD_ERROR(InvalidProgram, name_, " %s %u: no instruction (kind %u%s)", list, index,
                           static_cast<unsigned>(instruction->kind_type()),
                           instruction->kind() == nullptr ? ", payload absent" : ", unknown kind");
}

Error MethodChecker::check_delegate(uint32_t index, const fb::Delegate* delegate) {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(delegate != nullptr, InvalidProgram, name_,
                                    " delegate %u: missing", index);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      delegate->backend() != nullptr && delegate->backend()->size() > 0, InvalidProgram, name_,
      " delegate %u: missing backend name", index);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(delegate->segment() < num_segments_, InvalidProgram, name_,
                                    " delegate %u (%s): blob segment %u out of range (%u "
                                    "segments)",
                                    index, delegate->backend()->c_str(), delegate->segment(),
                                    num_segments_);
  const auto* specs = delegate->compile_specs();
  for (uint32_t k = 0; k < count_of(specs); ++k) {
    const fb::CompileSpec* spec = specs->Get(k);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(spec != nullptr && spec->key() != nullptr, InvalidProgram,
                                      name_, " delegate %u: compile spec %u has no key", index, k);
  }
  return Error::Ok;
}

Error MethodChecker::check_state(uint32_t index, const fb::StateTensor* state) {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(state != nullptr, InvalidProgram, name_, " state %u: missing",
                                    index);
  const uint32_t v = state->value();
  TERN_CHECK_METHOD_OR_RETURN_ERROR(v < num_values_, InvalidProgram, name_,
                                    " state %u: value %u out of range (%u values)", index, v,
                                    num_values_);
  const fb::Tensor* t = method_->values()->Get(v)->value_as_Tensor();
  const bool shared = t != nullptr && t->storage() == fb::StorageKind::SharedState;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      t != nullptr && (t->storage() == fb::StorageKind::Arena || shared), InvalidProgram, name_,
      " state %u: value %u must be a tensor in an arena", index, v);
  TERN_CHECK_METHOD_OR_RETURN_ERROR((flags_.get()[v] & kFlagState) == 0, InvalidProgram, name_,
                                    " state %u: value %u is listed as state twice", index, v);
  flags_.get()[v] |= kFlagState;
  const int32_t init = state->init_segment();
  if (shared) return check_shared_state_init(name_, index, v, init);
  if (init == -1) {
    return Error::Ok;
  }
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      init >= 0 && static_cast<uint32_t>(init) < num_segments_, InvalidProgram, name_,
      " state %u: init segment %d out of range (%u segments)", index, init, num_segments_);
  uint64_t numel = 0;
  uint64_t nbytes = 0;
  (void)tensor_numel_nbytes(t, &numel, &nbytes);  // checked with the values
  const uint64_t seg_size = segment(static_cast<uint32_t>(init))->size();
  TERN_CHECK_METHOD_OR_RETURN_ERROR(seg_size == nbytes, InvalidProgram, name_,
                                    " state %u: init segment %d has %llu bytes, value %u "
                                    "needs %llu",
                                    index, init, static_cast<ull>(seg_size), v,
                                    static_cast<ull>(nbytes));
  return Error::Ok;
}

Error verify_segments(const fb::Program* program, const FileHeader& header) {
  const auto* segments = program->segments();
  const uint32_t n = count_of(segments);
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Segment* seg = segments->Get(i);
    TERN_CHECK_OR_RETURN_ERROR(seg != nullptr, InvalidProgram, "segment %u: missing", i);
    const uint32_t align = seg->alignment();
    TERN_CHECK_OR_RETURN_ERROR(is_power_of_two(align), InvalidProgram,
                               "segment %u: alignment %u is not a power of two", i, align);
    TERN_CHECK_OR_RETURN_ERROR(seg->offset() % align == 0, InvalidProgram,
                               "segment %u: offset %llu is not a multiple of its alignment %u", i,
                               static_cast<ull>(seg->offset()), align);
    TERN_CHECK_OR_RETURN_ERROR(header.segment_area_offset % align == 0, InvalidProgram,
                               "segment %u: the segment area's file offset %llu is not a "
                               "multiple of the segment's alignment %u",
                               i, static_cast<ull>(header.segment_area_offset), align);
    TERN_CHECK_OR_RETURN_ERROR(range_within(seg->offset(), seg->size(), header.segment_area_size),
                               InvalidProgram,
                               "segment %u: bytes [%llu, +%llu) exceed the %llu-byte segment area",
                               i, static_cast<ull>(seg->offset()), static_cast<ull>(seg->size()),
                               static_cast<ull>(header.segment_area_size));
  }
  // Overlaps: sort the non-empty segments by offset and compare each with the furthest end.
  Scratch<SortKey> order(n);
  TERN_CHECK_OR_RETURN_ERROR(order.get() != nullptr, MemoryAllocationFailed,
                             "cannot allocate scratch to check %u segments", n);
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Segment* seg = segments->Get(i);
    if (seg->size() > 0) order.get()[m++] = SortKey{seg->offset(), nullptr, i};
  }
  sort_keys(order.get(), m);
  uint64_t furthest_end = 0;
  uint32_t furthest = 0;
  for (uint32_t k = 0; k < m; ++k) {
    const uint32_t i = order.get()[k].index;
    const fb::Segment* seg = segments->Get(i);
    TERN_CHECK_OR_RETURN_ERROR(k == 0 || seg->offset() >= furthest_end, InvalidProgram,
                               "segment %u: bytes [%llu, +%llu) overlap segment %u, which ends "
                               "at %llu",
                               i, static_cast<ull>(seg->offset()), static_cast<ull>(seg->size()),
                               furthest, static_cast<ull>(furthest_end));
    const uint64_t end = seg->offset() + seg->size();  // in range: checked above
    if (end > furthest_end) {
      furthest_end = end;
      furthest = i;
    }
  }
  return Error::Ok;
}

Error verify_method_names(const fb::Program* program) {
  const auto* methods = program->methods();
  const uint32_t n = count_of(methods);
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Method* method = methods->Get(i);
    TERN_CHECK_OR_RETURN_ERROR(method != nullptr, InvalidProgram, "method %u: missing", i);
    TERN_CHECK_OR_RETURN_ERROR(method->name() != nullptr && method->name()->size() > 0,
                               InvalidProgram, "method %u: missing or empty name", i);
  }
  Scratch<SortKey> order(n);
  TERN_CHECK_OR_RETURN_ERROR(order.get() != nullptr, MemoryAllocationFailed,
                             "cannot allocate scratch to check %u method names", n);
  for (uint32_t i = 0; i < n; ++i) {
    order.get()[i] = SortKey{0, methods->Get(i)->name()->c_str(), i};
  }
  sort_keys(order.get(), n);
  for (uint32_t k = 1; k < n; ++k) {
    const SortKey& a = order.get()[k - 1];
    const SortKey& b = order.get()[k];
    TERN_CHECK_OR_RETURN_ERROR(strcmp(a.name, b.name) != 0, InvalidProgram,
                               "methods %u and %u are both named '%s'", a.index, b.index, a.name);
  }
  return Error::Ok;
}

}  // namespace

bool tensor_numel_nbytes(const fb::Tensor* tensor, uint64_t* numel, uint64_t* nbytes) {
  if (tensor == nullptr || !is_valid_dtype(static_cast<uint8_t>(tensor->dtype()))) return false;
  const auto* sizes = tensor->sizes();
  const uint32_t rank = count_of(sizes);
  // Also called on tensors referenced before their own check (quantization parameters).
  if (rank > kMaxRank || !elements_aligned(sizes)) return false;
  uint64_t n = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    const int64_t size = sizes->Get(d);
    if (size < 0 || !checked_mul(n, static_cast<uint64_t>(size), &n)) return false;
  }
  *numel = n;
  return dtype_nbytes(static_cast<DType>(tensor->dtype()), n, nbytes);
}

Error verify_flatbuffer(const uint8_t* data, size_t size) {
  TERN_CHECK_OR_RETURN_ERROR(data != nullptr && size >= 8, InvalidProgram,
                             "FlatBuffer of %zu bytes is too small", size);
  TERN_CHECK_OR_RETURN_ERROR(size < FLATBUFFERS_MAX_BUFFER_SIZE, InvalidProgram,
                             "FlatBuffer of %zu bytes exceeds the FlatBuffers limit of %zu", size,
                             static_cast<size_t>(FLATBUFFERS_MAX_BUFFER_SIZE));
  TERN_CHECK_OR_RETURN_ERROR(fb::ProgramBufferHasIdentifier(data), InvalidProgram,
                             "FlatBuffer identifier is \"%c%c%c%c\", expected \"%s\"",
                             data[4] >= 0x20 && data[4] < 0x7f ? data[4] : '?',
                             data[5] >= 0x20 && data[5] < 0x7f ? data[5] : '?',
                             data[6] >= 0x20 && data[6] < 0x7f ? data[6] : '?',
                             data[7] >= 0x20 && data[7] < 0x7f ? data[7] : '?',
                             kFlatbufferIdentifier);
  // The checks of the FlatBuffers verifier, table-driven (flatbuffer_verifier.h).
  TERN_CHECK_OR_RETURN_ERROR(verify_program_flatbuffer(data, size), InvalidProgram,
                             "the FlatBuffer (%zu bytes) failed the FlatBuffers verifier: an "
                             "offset, length or alignment is out of bounds",
                             size);
  return Error::Ok;
}

Error verify_program(const fb::Program* program, const FileHeader& header) {
  TERN_CHECK_OR_RETURN_ERROR(program != nullptr, InvalidProgram, "the FlatBuffer has no root");
  const uint32_t header_version = static_cast<uint32_t>(header.version_major) * 1000u +
                                  static_cast<uint32_t>(header.version_minor);
  TERN_CHECK_OR_RETURN_ERROR(program->version() == header_version, InvalidProgram,
                             "program version %u does not match the file header's version %u.%u "
                             "(%u)",
                             program->version(), header.version_major, header.version_minor,
                             header_version);
  TERN_RETURN_IF_ERROR(verify_segments(program, header));
  TERN_RETURN_IF_ERROR(verify_method_names(program));
  TERN_RETURN_IF_ERROR(verify_shared_state(program, count_of(program->segments())));
  const auto* metadata = program->metadata();
  for (uint32_t i = 0; i < count_of(metadata); ++i) {
    const fb::KeyValue* kv = metadata->Get(i);
    TERN_CHECK_OR_RETURN_ERROR(kv != nullptr && kv->key() != nullptr, InvalidProgram,
                               "metadata entry %u has no key", i);
  }
  const uint32_t num_segments = count_of(program->segments());
  const auto* methods = program->methods();
  for (uint32_t i = 0; i < count_of(methods); ++i) {
    MethodChecker checker(program, methods->Get(i), num_segments);
    TERN_RETURN_IF_ERROR(checker.check());
  }
  return Error::Ok;
}

}  // namespace internal
}  // namespace tern
