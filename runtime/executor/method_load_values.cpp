// Program::load_method's value helpers (method_load_context.h): arenas, the value table
// (tensors, constants, scalars, lists, quantization), inputs and outputs, state.
#include <cstring>

#include "runtime/core/log.h"
#include "runtime/executor/method_load_context.h"
#include "runtime/executor/shared_state.h"

namespace tern {
namespace internal {

// ---- arenas -------------------------------------------------------------------------------

Error check_arenas(const LoadContext& c) {
  const auto* arenas = c.method->arenas();
  const uint32_t n = arenas ? arenas->size() : 0;
  if (n == 0) return Error::Ok;
  const HierarchicalAllocator* planned = c.memory->planned_memory;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(planned != nullptr, InvalidArgument, c.name,
                                    " plans %u arena(s) but the MemoryManager has no "
                                    "planned_memory",
                                    n);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(planned->num_arenas() >= n, InvalidArgument, c.name,
                                    " plans %u arena(s) but planned_memory holds %zu", n,
                                    planned->num_arenas());
  for (uint32_t a = 0; a < n; ++a) {
    const fb::Arena* arena = arenas->Get(a);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(arena != nullptr, InvalidProgram, c.name,
                                      ": arena %u is null", a);
    const uint64_t size = arena->size();
    const uint32_t alignment = arena->alignment();
    TERN_CHECK_METHOD_OR_RETURN_ERROR(is_power_of_two(alignment), InvalidProgram, c.name,
                                      ": arena %u has alignment %u, not a power of two", a,
                                      alignment);
    const Span<uint8_t> buffer = planned->arena(a);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(
        buffer.size() >= size, MemoryAllocationFailed, c.name,
        ": arena %u needs %llu bytes (MethodMeta::arena_size), the provided buffer "
        "has %zu bytes",
        a, static_cast<unsigned long long>(size), buffer.size());
    TERN_CHECK_METHOD_OR_RETURN_ERROR(buffer.data() != nullptr || size == 0, InvalidArgument,
                                      c.name, ": arena %u buffer is null", a);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(reinterpret_cast<uintptr_t>(buffer.data()) % alignment == 0,
                                      InvalidArgument, c.name,
                                      ": arena %u buffer at %p is not aligned to %u bytes "
                                      "(MethodMeta::arena_alignment)",
                                      a, static_cast<void*>(buffer.data()), alignment);
  }
  return Error::Ok;
}

// ---- values -------------------------------------------------------------------------------

namespace {

Error load_tensor(LoadContext& c, uint32_t index, const fb::Tensor* t, TensorView* tv) {
  const char* name = or_empty(fb_str(t->name()));
  tv->name = fb_str(t->name());
  const uint8_t raw_dtype = static_cast<uint8_t>(t->dtype());
  TERN_CHECK_METHOD_OR_RETURN_ERROR(is_valid_dtype(raw_dtype), InvalidProgram, c.name,
                                    ": value %u ('%s'): unknown dtype %u", index, name, raw_dtype);
  tv->dtype = static_cast<DType>(raw_dtype);
  const auto* sizes = t->sizes();
  const uint32_t rank = sizes ? sizes->size() : 0;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(rank <= kMaxRank, InvalidProgram, c.name,
                                    ": value %u ('%s'): rank %u exceeds the maximum of %zu", index,
                                    name, rank, kMaxRank);
  int64_t* dims = c.ints.take(rank);
  if (dims == nullptr && rank > 0) return pool_exhausted(c, "int64 entries");
  uint64_t numel = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    const int64_t size = sizes->Get(d);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(size >= 0, InvalidProgram, c.name,
                                      ": value %u ('%s'): size %lld of dim %u is negative", index,
                                      name, static_cast<long long>(size), d);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(checked_mul(numel, static_cast<uint64_t>(size), &numel),
                                      InvalidProgram, c.name,
                                      ": value %u ('%s'): element count overflows", index, name);
    dims[d] = size;
  }
  tv->rank = rank;
  tv->sizes = dims;
  uint64_t nbytes;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(dtype_nbytes(tv->dtype, numel, &nbytes), InvalidProgram, c.name,
                                    ": value %u ('%s'): byte size overflows", index, name);
  tv->nbytes = nbytes;

  if (const auto* order = t->dim_order()) {
    TERN_CHECK_METHOD_OR_RETURN_ERROR(order->size() == rank, InvalidProgram, c.name,
                                      ": value %u ('%s'): dim_order has %u entries, "
                                      "expected rank %u",
                                      index, name, order->size(), rank);
    uint32_t seen = 0;
    for (uint32_t d = 0; d < rank; ++d) {
      const uint8_t o = order->Get(d);
      TERN_CHECK_METHOD_OR_RETURN_ERROR(o < rank && (seen & (1u << o)) == 0, InvalidProgram, c.name,
                                        ": value %u ('%s'): dim_order is not a permutation "
                                        "of 0..%u",
                                        index, name, rank - 1);
      seen |= 1u << o;
    }
    tv->dim_order = rank > 0 ? order->data() : nullptr;
  }

  switch (t->storage()) {
    case fb::StorageKind::Caller:
      tv->data = nullptr;
      break;
    case fb::StorageKind::Constant: {
      const uint32_t segment = t->location();
      TERN_CHECK_METHOD_OR_RETURN_ERROR(segment < c.program->num_segments(), InvalidProgram, c.name,
                                        ": value %u ('%s'): constant segment %u out of range "
                                        "(the program has %zu segments)",
                                        index, name, segment, c.program->num_segments());
      auto bytes = c.program->segment_data(segment);
      if (!bytes.ok()) return bytes.error();
      TERN_CHECK_METHOD_OR_RETURN_ERROR(
          range_within(t->offset(), nbytes, bytes->size()), InvalidProgram, c.name,
          ": value %u ('%s'): bytes [%llu, +%llu) lie outside segment %u of %zu "
          "bytes",
          index, name, static_cast<unsigned long long>(t->offset()),
          static_cast<unsigned long long>(nbytes), segment, bytes->size());
      tv->data = const_cast<uint8_t*>(bytes->data()) + t->offset();
      break;
    }
    case fb::StorageKind::Arena: {
      const uint32_t arena = t->location();
      const auto* arenas = c.method->arenas();
      TERN_CHECK_METHOD_OR_RETURN_ERROR(arenas != nullptr && arena < arenas->size(), InvalidProgram,
                                        c.name,
                                        ": value %u ('%s'): arena %u out of range (the "
                                        "method plans %u arenas)",
                                        index, name, arena, arenas ? arenas->size() : 0);
      const uint64_t arena_size = arenas->Get(arena)->size();
      TERN_CHECK_METHOD_OR_RETURN_ERROR(
          range_within(t->offset(), nbytes, arena_size), InvalidProgram, c.name,
          ": value %u ('%s'): bytes [%llu, +%llu) lie outside arena %u of %llu bytes", index, name,
          static_cast<unsigned long long>(t->offset()), static_cast<unsigned long long>(nbytes),
          arena, static_cast<unsigned long long>(arena_size));
      auto address = c.memory->planned_memory->get_offset_address(arena, t->offset(), nbytes);
      if (!address.ok()) return address.error();
      tv->data = address.get();
      break;
    }
    case fb::StorageKind::SharedState: {
      auto address = bind_shared_state(c.program->flatbuffer(), c.memory->shared_state, c.name,
                                       index, t->location());
      if (!address.ok()) return address.error();
      tv->data = address.get();
      break;
    }
    default:
      TERN_RETURN_METHOD_ERROR(InvalidProgram, c.name, ": value %u ('%s'): unknown storage kind %u",
                               index, name, static_cast<unsigned>(t->storage()));
  }
  return Error::Ok;
}

}  // namespace

/// Pass 1: every value's own payload (tensor views, scalars, lists of numbers).
Error load_values(LoadContext& c) {
  const auto* values = c.method->values();
  for (uint32_t i = 0; i < c.num_values; ++i) {
    const fb::EValue* value = values->Get(i);
    EValue& out = c.values[i];
    out = EValue();
    if (value == nullptr) continue;
    switch (value->value_type()) {
      case fb::Value::NONE:
      case fb::Value::None:
        break;
      case fb::Value::Tensor: {
        TensorView* tv = c.tensors.take(1);
        if (tv == nullptr) return pool_exhausted(c, "tensors");
        new (tv) TensorView();
        TERN_RETURN_IF_ERROR(load_tensor(c, i, value->value_as_Tensor(), tv));
        out = EValue::from_tensor(tv);
        break;
      }
      case fb::Value::Int:
        out = EValue::from_int(value->value_as_Int()->value());
        break;
      case fb::Value::Double:
        out = EValue::from_double(value->value_as_Double()->value());
        break;
      case fb::Value::Bool:
        out = EValue::from_bool(value->value_as_Bool()->value());
        break;
      case fb::Value::IntList: {
        const auto* items = value->value_as_IntList()->items();
        const uint32_t n = items ? items->size() : 0;
        int64_t* data = c.ints.take(n);
        if (data == nullptr && n > 0) return pool_exhausted(c, "int64 entries");
        for (uint32_t k = 0; k < n; ++k) data[k] = items->Get(k);
        out = EValue::from_int_list(Span<const int64_t>(data, n));
        break;
      }
      case fb::Value::DoubleList: {
        const auto* items = value->value_as_DoubleList()->items();
        const uint32_t n = items ? items->size() : 0;
        double* data = c.doubles.take(n);
        if (data == nullptr && n > 0) return pool_exhausted(c, "doubles");
        for (uint32_t k = 0; k < n; ++k) data[k] = items->Get(k);
        out = EValue::from_double_list(Span<const double>(data, n));
        break;
      }
      case fb::Value::String: {
        const flatbuffers::String* s = value->value_as_String()->value();
        out = s ? EValue::from_string(s->c_str(), s->size()) : EValue::from_string("", 0);
        break;
      }
      case fb::Value::TensorList:
        out.tag = EValue::Tag::TensorList;  // items resolved in pass 2
        break;
      default:
        TERN_RETURN_METHOD_ERROR(InvalidProgram, c.name, ": value %u has unknown kind %u", i,
                                 static_cast<unsigned>(value->value_type()));
    }
  }
  return Error::Ok;
}

namespace {

/// Resolves quant parameter `ref` of tensor `index` to a constant tensor of `dtype` with
/// `numel` elements; -1 leaves *out null unless `required`.
Error resolve_quant_ref(const LoadContext& c, uint32_t index, const char* field, int32_t ref,
                        DType dtype, uint64_t numel, bool required, const void** out) {
  const char* name = value_name(c.method->values()->Get(index));
  *out = nullptr;
  if (ref == -1 && !required) return Error::Ok;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(ref >= 0 && static_cast<uint32_t>(ref) < c.num_values,
                                    InvalidProgram, c.name,
                                    ": value %u ('%s'): quant %s refers to value %d, out of "
                                    "range (%u values)",
                                    index, name, field, ref, c.num_values);
  const EValue& v = c.values[ref];
  const fb::Tensor* ft = c.method->values()->Get(ref)->value_as_Tensor();
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      v.is_tensor() && ft != nullptr && ft->storage() == fb::StorageKind::Constant, InvalidProgram,
      c.name,
      ": value %u ('%s'): quant %s (value %d) is not a "
      "constant tensor",
      index, name, field, ref);
  const TensorView& t = *v.payload.tensor;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(t.dtype == dtype, InvalidProgram, c.name,
                                    ": value %u ('%s'): quant %s (value %d) is %s, expected "
                                    "%s",
                                    index, name, field, ref, to_string(t.dtype), to_string(dtype));
  TERN_CHECK_METHOD_OR_RETURN_ERROR(t.numel() == numel, InvalidProgram, c.name,
                                    ": value %u ('%s'): quant %s (value %d) has %llu "
                                    "elements, expected %llu",
                                    index, name, field, ref,
                                    static_cast<unsigned long long>(t.numel()),
                                    static_cast<unsigned long long>(numel));
  *out = t.data;
  return Error::Ok;
}

}  // namespace

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

namespace {

Error load_quant(LoadContext& c, uint32_t index, const fb::Tensor* ft, TensorView* tv) {
  const char* name = or_empty(tv->name);
  const fb::QuantParams* qp = ft->quant();
  const fb::QuantScheme scheme = qp ? qp->scheme() : fb::QuantScheme::None;
  const bool is_nf4 = tv->dtype == DType::NF4;
  const bool is_fp8 = tv->dtype == DType::FP8E4M3 || tv->dtype == DType::FP8E5M2;
  if (scheme == fb::QuantScheme::None) {
    TERN_CHECK_METHOD_OR_RETURN_ERROR(!is_nf4 && !is_fp8, InvalidProgram, c.name,
                                      ": value %u ('%s'): %s tensor has no quantization "
                                      "parameters",
                                      index, name, to_string(tv->dtype));
    return Error::Ok;
  }
  const bool nf4_scheme =
      scheme == fb::QuantScheme::NF4 || scheme == fb::QuantScheme::NF4DoubleQuant;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      (nf4_scheme && is_nf4) || (scheme == fb::QuantScheme::FP8 && is_fp8), InvalidProgram, c.name,
      ": value %u ('%s'): quant scheme %u does not fit dtype %s", index, name,
      static_cast<unsigned>(scheme), to_string(tv->dtype));
  QuantView* q = c.quants.take(1);
  if (q == nullptr) return pool_exhausted(c, "quant views");
  new (q) QuantView();
  q->scheme = static_cast<QuantView::Scheme>(scheme);
  const uint64_t numel = tv->numel();
  const void* p = nullptr;
  if (nf4_scheme) {
    const uint32_t block = qp->block_size();
    TERN_CHECK_METHOD_OR_RETURN_ERROR(is_power_of_two(block) && block >= 32 && block <= 4096,
                                      InvalidProgram, c.name,
                                      ": value %u ('%s'): NF4 block size %u is not a power "
                                      "of two in [32, 4096]",
                                      index, name, block);
    q->block_size = block;
    const uint64_t blocks = ceil_div(numel, block);
    if (scheme == fb::QuantScheme::NF4) {
      TERN_RETURN_IF_ERROR(
          resolve_quant_ref(c, index, "absmax", qp->absmax(), DType::F32, blocks, true, &p));
      q->absmax = static_cast<const float*>(p);
    } else {
      const uint32_t dq_block = qp->dq_block_size();
      TERN_CHECK_METHOD_OR_RETURN_ERROR(dq_block > 0, InvalidProgram, c.name,
                                        ": value %u ('%s'): dq_block_size is 0", index, name);
      q->dq_block_size = dq_block;
      q->dq_offset = qp->dq_offset();
      TERN_RETURN_IF_ERROR(
          resolve_quant_ref(c, index, "dq_codes", qp->dq_codes(), DType::U8, blocks, true, &p));
      q->dq_codes = static_cast<const uint8_t*>(p);
      TERN_RETURN_IF_ERROR(resolve_quant_ref(c, index, "dq_absmax2", qp->dq_absmax2(), DType::F32,
                                             ceil_div(blocks, dq_block), true, &p));
      q->dq_absmax2 = static_cast<const float*>(p);
      TERN_RETURN_IF_ERROR(
          resolve_quant_ref(c, index, "dq_table", qp->dq_table(), DType::F32, 256, true, &p));
      q->dq_table = static_cast<const float*>(p);
    }
  } else {
    const uint8_t raw_granularity = static_cast<uint8_t>(qp->granularity());
    uint64_t scales = 1;
    switch (qp->granularity()) {
      case fb::ScaleGranularity::PerTensor:
        break;
      case fb::ScaleGranularity::PerChannel:
        scales = tv->rank > 0 ? static_cast<uint64_t>(tv->sizes[0]) : 1;
        break;
      case fb::ScaleGranularity::Block2D:
        TERN_CHECK_METHOD_OR_RETURN_ERROR(
            tv->rank == 2 && qp->block_rows() > 0 && qp->block_cols() > 0, InvalidProgram, c.name,
            ": value %u ('%s'): Block2D FP8 scales need a 2-D "
            "tensor and non-zero block sizes",
            index, name);
        scales = ceil_div(static_cast<uint64_t>(tv->sizes[0]), qp->block_rows()) *
                 ceil_div(static_cast<uint64_t>(tv->sizes[1]), qp->block_cols());
        break;
      default:
        TERN_RETURN_METHOD_ERROR(InvalidProgram, c.name,
                                 ": value %u ('%s'): unknown scale granularity %u", index, name,
                                 raw_granularity);
    }
    q->granularity = static_cast<QuantView::Granularity>(raw_granularity);
    q->block_rows = qp->block_rows();
    q->block_cols = qp->block_cols();
    TERN_RETURN_IF_ERROR(
        resolve_quant_ref(c, index, "scale", qp->scale(), DType::F32, scales, true, &p));
    q->scale = static_cast<const float*>(p);
  }
  tv->quant = q;
  return Error::Ok;
}

}  // namespace

/// Pass 2: references between values (quant parameters, tensor lists).
Error link_values(LoadContext& c) {
  const auto* values = c.method->values();
  for (uint32_t i = 0; i < c.num_values; ++i) {
    const fb::EValue* value = values->Get(i);
    if (value == nullptr) continue;
    if (const fb::Tensor* t = value->value_as_Tensor()) {
      TERN_RETURN_IF_ERROR(load_quant(c, i, t, c.values[i].payload.tensor));
    } else if (const fb::TensorList* list = value->value_as_TensorList()) {
      const auto* items = list->items();
      const uint32_t n = items ? items->size() : 0;
      TensorView** refs = c.tensor_refs.take(n);
      if (refs == nullptr && n > 0) return pool_exhausted(c, "tensor list entries");
      for (uint32_t k = 0; k < n; ++k) {
        const int32_t item = items->Get(k);
        TERN_CHECK_METHOD_OR_RETURN_ERROR(
            item >= 0 && static_cast<uint32_t>(item) < c.num_values && c.values[item].is_tensor(),
            InvalidProgram, c.name,
            ": value %u: tensor list item %u refers to value "
            "%d, which is not a tensor of this method",
            i, k, item);
        refs[k] = c.values[item].payload.tensor;
      }
      c.values[i] = EValue::from_tensor_list(Span<TensorView* const>(refs, n));
    }
  }
  return Error::Ok;
}

/// Reads the input or output index list into `out` (null when empty).
Error load_io(const LoadContext& c, const flatbuffers::Vector<uint32_t>* list, const char* what,
              uint32_t* out) {
  const uint32_t n = list ? list->size() : 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t v = list->Get(i);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(v < c.num_values, InvalidProgram, c.name,
                                      ": %s %u refers to value %u, out of range (%u values)", what,
                                      i, v, c.num_values);
    out[i] = v;
  }
  return Error::Ok;
}

/// Every Caller-storage tensor must be a method input (nothing else can bind it).
Error check_caller_tensors(const LoadContext& c) {
  const auto* values = c.method->values();
  const auto* inputs = c.method->inputs();
  for (uint32_t i = 0; i < c.num_values; ++i) {
    const fb::Tensor* t = values->Get(i) ? values->Get(i)->value_as_Tensor() : nullptr;
    if (t == nullptr || t->storage() != fb::StorageKind::Caller) continue;
    bool is_input = false;
    for (uint32_t k = 0; inputs != nullptr && k < inputs->size(); ++k) {
      is_input = is_input || inputs->Get(k) == i;
    }
    TERN_CHECK_METHOD_OR_RETURN_ERROR(is_input, InvalidProgram, c.name,
                                      ": value %u ('%s') has caller storage but is not a "
                                      "method input",
                                      i, or_empty(fb_str(t->name())));
  }
  return Error::Ok;
}

/// Zero-fills or copies the initial value of every state tensor (load and reset_state()).
Error init_state(const Program* program, const fb::Method* method, const EValue* values,
                 size_t num_values) {
  const char* name = method_name_of(method);
  const auto* states = method->state();
  const uint32_t n = states ? states->size() : 0;
  for (uint32_t i = 0; i < n; ++i) {
    const fb::StateTensor* state = states->Get(i);
    const uint32_t v = state->value();
    TERN_CHECK_METHOD_OR_RETURN_ERROR(v < num_values && values[v].is_tensor(), InvalidProgram, name,
                                      ": state %u refers to value %u, which is not a tensor "
                                      "of this method",
                                      i, v);
    const fb::Tensor* ft = method->values()->Get(v)->value_as_Tensor();
    TensorView& t = *values[v].payload.tensor;
    // Shared state is the program's: Program::init_shared_state() sets it, not a method.
    if (ft->storage() == fb::StorageKind::SharedState) continue;
    TERN_CHECK_METHOD_OR_RETURN_ERROR(ft->storage() == fb::StorageKind::Arena, InvalidProgram, name,
                                      ": state %u (value %u, '%s') is not planned in an arena", i,
                                      v, or_empty(t.name));
    const int32_t segment = state->init_segment();
    if (segment < 0) {
      if (t.nbytes > 0) std::memset(t.data, 0, t.nbytes);
      continue;
    }
    TERN_CHECK_METHOD_OR_RETURN_ERROR(static_cast<size_t>(segment) < program->num_segments(),
                                      InvalidProgram, name,
                                      ": state %u ('%s'): init segment %d out of range (the "
                                      "program has %zu segments)",
                                      i, or_empty(t.name), segment, program->num_segments());
    auto bytes = program->segment_data(static_cast<uint32_t>(segment));
    if (!bytes.ok()) return bytes.error();
    TERN_CHECK_METHOD_OR_RETURN_ERROR(bytes->size() == t.nbytes, InvalidProgram, name,
                                      ": state %u ('%s'): init segment %d has %zu bytes, "
                                      "expected %llu",
                                      i, or_empty(t.name), segment, bytes->size(),
                                      static_cast<unsigned long long>(t.nbytes));
    if (t.nbytes > 0) std::memcpy(t.data, bytes->data(), t.nbytes);
  }
  return Error::Ok;
}

}  // namespace internal
}  // namespace tern
