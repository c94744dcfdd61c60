// Method: load (Program::load_method) and execute.
//
// Load takes memory only from the caller's method allocator, in the arrays counted by
// internal::MethodLayout (method_layout.h), so MethodMeta::method_allocator_bytes() is an exact
// upper bound. Execute is a loop over resolved steps and never allocates.
#include "runtime/executor/method.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "runtime/core/log.h"
#include "runtime/executor/method_layout.h"
#include "runtime/executor/program.h"
#include "schema/program_generated.h"

namespace tern {

struct Method::Step : internal::MethodStepData {};
struct Method::DelegateSlot : internal::MethodDelegateSlotData {};

namespace {

constexpr size_t kMessageCopy = 1024;

const char* or_empty(const char* s) { return s ? s : ""; }

const char* fb_str(const flatbuffers::String* s) { return s ? s->c_str() : nullptr; }

const char* method_name_of(const fb::Method* method) {
  return method ? or_empty(fb_str(method->name())) : "";
}

/// Where a delegate step's parts go: the observer and the step index.
struct PartSink {
  ExecutionObserver* observer;
  size_t step;
};

void forward_delegate_part(void* sink, const char* label, uint64_t begin_ns, uint64_t end_ns) {
  const PartSink* s = static_cast<const PartSink*>(sink);
  s->observer->on_delegate_part(s->step, label, begin_ns, end_ns);
}

/// Copies this thread's last error message (set_error_message() overwrites it).
void copy_last_message(char* out, size_t size) {
  const char* msg = last_error_message();
  if (msg[0] == '\0') msg = "(no message)";
  std::snprintf(out, size, "%s", msg);
}

/// Bump-allocates from a pre-sized pool, failing (never overflowing) past its capacity.
template <typename T>
struct Pool {
  T* data = nullptr;
  uint64_t capacity = 0;
  uint64_t used = 0;
  T* take(uint64_t n) {
    if (n > capacity - used) return nullptr;
    T* p = data + used;
    used += n;
    return p;
  }
};

/// Allocates `count` T from `allocator` into `pool`; false when it does not fit.
template <typename T>
bool allocate_pool(MemoryAllocator* allocator, uint64_t count, Pool<T>* pool) {
  pool->capacity = count;
  pool->used = 0;
  if (count == 0) {
    pool->data = nullptr;
    return true;
  }
  if (count > SIZE_MAX / sizeof(T)) return false;
  pool->data = allocator->allocate_array<T>(static_cast<size_t>(count));
  return pool->data != nullptr;
}

/// Everything the load helpers share.
struct LoadContext {
  const Program* program = nullptr;
  const fb::Method* method = nullptr;
  const char* name = "";
  MemoryManager* memory = nullptr;
  EValue* values = nullptr;
  uint32_t num_values = 0;
  Pool<TensorView> tensors;
  Pool<int64_t> ints;
  Pool<double> doubles;
  Pool<QuantView> quants;
  Pool<TensorView*> tensor_refs;
  Pool<EValue*> step_args;
  Pool<CompileSpecView> specs;
};

Error pool_exhausted(const LoadContext& c, const char* what) {
  TERN_RETURN_ERROR(Internal, "method '%s': load used more %s than its layout counted (a bug)",
                    c.name, what);
}

const char* value_name(const fb::EValue* value) {
  const fb::Tensor* t = value ? value->value_as_Tensor() : nullptr;
  return t ? or_empty(fb_str(t->name())) : "";
}

// ---- arenas -------------------------------------------------------------------------------

Error check_arenas(const LoadContext& c) {
  const auto* arenas = c.method->arenas();
  const uint32_t n = arenas ? arenas->size() : 0;
  if (n == 0) return Error::Ok;
  const HierarchicalAllocator* planned = c.memory->planned_memory;
  TERN_CHECK_OR_RETURN_ERROR(planned != nullptr, InvalidArgument,
                             "method '%s' plans %u arena(s) but the MemoryManager has no "
                             "planned_memory",
                             c.name, n);
  TERN_CHECK_OR_RETURN_ERROR(planned->num_arenas() >= n, InvalidArgument,
                             "method '%s' plans %u arena(s) but planned_memory holds %zu", c.name,
                             n, planned->num_arenas());
  for (uint32_t a = 0; a < n; ++a) {
    const fb::Arena* arena = arenas->Get(a);
    TERN_CHECK_OR_RETURN_ERROR(arena != nullptr, InvalidProgram, "method '%s': arena %u is null",
                               c.name, a);
    const uint64_t size = arena->size();
    const uint32_t alignment = arena->alignment();
    TERN_CHECK_OR_RETURN_ERROR(is_power_of_two(alignment), InvalidProgram,
                               "method '%s': arena %u has alignment %u, not a power of two", c.name,
                               a, alignment);
    const Span<uint8_t> buffer = planned->arena(a);
    TERN_CHECK_OR_RETURN_ERROR(
        buffer.size() >= size, MemoryAllocationFailed,
        "method '%s': arena %u needs %llu bytes (MethodMeta::arena_size), the provided buffer "
        "has %zu bytes",
        c.name, a, static_cast<unsigned long long>(size), buffer.size());
    TERN_CHECK_OR_RETURN_ERROR(buffer.data() != nullptr || size == 0, InvalidArgument,
                               "method '%s': arena %u buffer is null", c.name, a);
    TERN_CHECK_OR_RETURN_ERROR(reinterpret_cast<uintptr_t>(buffer.data()) % alignment == 0,
                               InvalidArgument,
                               "method '%s': arena %u buffer at %p is not aligned to %u bytes "
                               "(MethodMeta::arena_alignment)",
                               c.name, a, static_cast<void*>(buffer.data()), alignment);
  }
  return Error::Ok;
}

// ---- values -------------------------------------------------------------------------------

Error load_tensor(LoadContext& c, uint32_t index, const fb::Tensor* t, TensorView* tv) {
  const char* name = or_empty(fb_str(t->name()));
  tv->name = fb_str(t->name());
  const uint8_t raw_dtype = static_cast<uint8_t>(t->dtype());
  TERN_CHECK_OR_RETURN_ERROR(is_valid_dtype(raw_dtype), InvalidProgram,
                             "method '%s': value %u ('%s'): unknown dtype %u", c.name, index, name,
                             raw_dtype);
  tv->dtype = static_cast<DType>(raw_dtype);
  const auto* sizes = t->sizes();
  const uint32_t rank = sizes ? sizes->size() : 0;
  TERN_CHECK_OR_RETURN_ERROR(rank <= kMaxRank, InvalidProgram,
                             "method '%s': value %u ('%s'): rank %u exceeds the maximum of %zu",
                             c.name, index, name, rank, kMaxRank);
  int64_t* dims = c.ints.take(rank);
  if (dims == nullptr && rank > 0) return pool_exhausted(c, "int64 entries");
  uint64_t numel = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    const int64_t size = sizes->Get(d);
    TERN_CHECK_OR_RETURN_ERROR(size >= 0, InvalidProgram,
                               "method '%s': value %u ('%s'): size %lld of dim %u is negative",
                               c.name, index, name, static_cast<long long>(size), d);
    TERN_CHECK_OR_RETURN_ERROR(
        checked_mul(numel, static_cast<uint64_t>(size), &numel), InvalidProgram,
        "method '%s': value %u ('%s'): element count overflows", c.name, index, name);
    dims[d] = size;
  }
  tv->rank = rank;
  tv->sizes = dims;
  uint64_t nbytes;
  TERN_CHECK_OR_RETURN_ERROR(dtype_nbytes(tv->dtype, numel, &nbytes), InvalidProgram,
                             "method '%s': value %u ('%s'): byte size overflows", c.name, index,
                             name);
  tv->nbytes = nbytes;

  if (const auto* order = t->dim_order()) {
    TERN_CHECK_OR_RETURN_ERROR(order->size() == rank, InvalidProgram,
                               "method '%s': value %u ('%s'): dim_order has %u entries, "
                               "expected rank %u",
                               c.name, index, name, order->size(), rank);
    uint32_t seen = 0;
    for (uint32_t d = 0; d < rank; ++d) {
      const uint8_t o = order->Get(d);
      TERN_CHECK_OR_RETURN_ERROR(o < rank && (seen & (1u << o)) == 0, InvalidProgram,
                                 "method '%s': value %u ('%s'): dim_order is not a permutation "
                                 "of 0..%u",
                                 c.name, index, name, rank - 1);
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
      TERN_CHECK_OR_RETURN_ERROR(segment < c.program->num_segments(), InvalidProgram,
                                 "method '%s': value %u ('%s'): constant segment %u out of range "
                                 "(the program has %zu segments)",
                                 c.name, index, name, segment, c.program->num_segments());
      auto bytes = c.program->segment_data(segment);
      if (!bytes.ok()) return bytes.error();
      TERN_CHECK_OR_RETURN_ERROR(
          range_within(t->offset(), nbytes, bytes->size()), InvalidProgram,
          "method '%s': value %u ('%s'): bytes [%llu, +%llu) lie outside segment %u of %zu "
          "bytes",
          c.name, index, name, static_cast<unsigned long long>(t->offset()),
          static_cast<unsigned long long>(nbytes), segment, bytes->size());
      tv->data = const_cast<uint8_t*>(bytes->data()) + t->offset();
      break;
    }
    case fb::StorageKind::Arena: {
      const uint32_t arena = t->location();
      const auto* arenas = c.method->arenas();
      TERN_CHECK_OR_RETURN_ERROR(arenas != nullptr && arena < arenas->size(), InvalidProgram,
                                 "method '%s': value %u ('%s'): arena %u out of range (the "
                                 "method plans %u arenas)",
                                 c.name, index, name, arena, arenas ? arenas->size() : 0);
      const uint64_t arena_size = arenas->Get(arena)->size();
      TERN_CHECK_OR_RETURN_ERROR(
          range_within(t->offset(), nbytes, arena_size), InvalidProgram,
          "method '%s': value %u ('%s'): bytes [%llu, +%llu) lie outside arena %u of %llu bytes",
          c.name, index, name, static_cast<unsigned long long>(t->offset()),
          static_cast<unsigned long long>(nbytes), arena,
          static_cast<unsigned long long>(arena_size));
      auto address = c.memory->planned_memory->get_offset_address(arena, t->offset(), nbytes);
      if (!address.ok()) return address.error();
      tv->data = address.get();
      break;
    }
    default:
      TERN_RETURN_ERROR(InvalidProgram, "method '%s': value %u ('%s'): unknown storage kind %u",
                        c.name, index, name, static_cast<unsigned>(t->storage()));
  }
  return Error::Ok;
}

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
        TERN_RETURN_ERROR(InvalidProgram, "method '%s': value %u has unknown kind %u", c.name, i,
                          static_cast<unsigned>(value->value_type()));
    }
  }
  return Error::Ok;
}

/// Resolves quant parameter `ref` of tensor `index` to a constant tensor of `dtype` with
/// `numel` elements; -1 leaves *out null unless `required`.
Error resolve_quant_ref(const LoadContext& c, uint32_t index, const char* field, int32_t ref,
                        DType dtype, uint64_t numel, bool required, const void** out) {
  const char* name = value_name(c.method->values()->Get(index));
  *out = nullptr;
  if (ref == -1 && !required) return Error::Ok;
  TERN_CHECK_OR_RETURN_ERROR(ref >= 0 && static_cast<uint32_t>(ref) < c.num_values, InvalidProgram,
                             "method '%s': value %u ('%s'): quant %s refers to value %d, out of "
                             "range (%u values)",
                             c.name, index, name, field, ref, c.num_values);
  const EValue& v = c.values[ref];
  const fb::Tensor* ft = c.method->values()->Get(ref)->value_as_Tensor();
  TERN_CHECK_OR_RETURN_ERROR(
      v.is_tensor() && ft != nullptr && ft->storage() == fb::StorageKind::Constant, InvalidProgram,
      "method '%s': value %u ('%s'): quant %s (value %d) is not a "
      "constant tensor",
      c.name, index, name, field, ref);
  const TensorView& t = *v.payload.tensor;
  TERN_CHECK_OR_RETURN_ERROR(t.dtype == dtype, InvalidProgram,
                             "method '%s': value %u ('%s'): quant %s (value %d) is %s, expected "
                             "%s",
                             c.name, index, name, field, ref, to_string(t.dtype), to_string(dtype));
  TERN_CHECK_OR_RETURN_ERROR(t.numel() == numel, InvalidProgram,
                             "method '%s': value %u ('%s'): quant %s (value %d) has %llu "
                             "elements, expected %llu",
                             c.name, index, name, field, ref,
                             static_cast<unsigned long long>(t.numel()),
                             static_cast<unsigned long long>(numel));
  *out = t.data;
  return Error::Ok;
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

Error load_quant(LoadContext& c, uint32_t index, const fb::Tensor* ft, TensorView* tv) {
  const char* name = or_empty(tv->name);
  const fb::QuantParams* qp = ft->quant();
  const fb::QuantScheme scheme = qp ? qp->scheme() : fb::QuantScheme::None;
  const bool is_nf4 = tv->dtype == DType::NF4;
  const bool is_fp8 = tv->dtype == DType::FP8E4M3 || tv->dtype == DType::FP8E5M2;
  if (scheme == fb::QuantScheme::None) {
    TERN_CHECK_OR_RETURN_ERROR(!is_nf4 && !is_fp8, InvalidProgram,
                               "method '%s': value %u ('%s'): %s tensor has no quantization "
                               "parameters",
                               c.name, index, name, to_string(tv->dtype));
    return Error::Ok;
  }
  const bool nf4_scheme =
      scheme == fb::QuantScheme::NF4 || scheme == fb::QuantScheme::NF4DoubleQuant;
  TERN_CHECK_OR_RETURN_ERROR(
      (nf4_scheme && is_nf4) || (scheme == fb::QuantScheme::FP8 && is_fp8), InvalidProgram,
      "method '%s': value %u ('%s'): quant scheme %u does not fit dtype %s", c.name, index, name,
      static_cast<unsigned>(scheme), to_string(tv->dtype));
  QuantView* q = c.quants.take(1);
  if (q == nullptr) return pool_exhausted(c, "quant views");
  new (q) QuantView();
  q->scheme = static_cast<QuantView::Scheme>(scheme);
  const uint64_t numel = tv->numel();
  const void* p = nullptr;
  if (nf4_scheme) {
    const uint32_t block = qp->block_size();
    TERN_CHECK_OR_RETURN_ERROR(is_power_of_two(block) && block >= 32 && block <= 4096,
                               InvalidProgram,
                               "method '%s': value %u ('%s'): NF4 block size %u is not a power "
                               "of two in [32, 4096]",
                               c.name, index, name, block);
    q->block_size = block;
    const uint64_t blocks = ceil_div(numel, block);
    if (scheme == fb::QuantScheme::NF4) {
      TERN_RETURN_IF_ERROR(
          resolve_quant_ref(c, index, "absmax", qp->absmax(), DType::F32, blocks, true, &p));
      q->absmax = static_cast<const float*>(p);
    } else {
      const uint32_t dq_block = qp->dq_block_size();
      TERN_CHECK_OR_RETURN_ERROR(dq_block > 0, InvalidProgram,
                                 "method '%s': value %u ('%s'): dq_block_size is 0", c.name, index,
                                 name);
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
        TERN_CHECK_OR_RETURN_ERROR(tv->rank == 2 && qp->block_rows() > 0 && qp->block_cols() > 0,
                                   InvalidProgram,
                                   "method '%s': value %u ('%s'): Block2D FP8 scales need a 2-D "
                                   "tensor and non-zero block sizes",
                                   c.name, index, name);
        scales = ceil_div(static_cast<uint64_t>(tv->sizes[0]), qp->block_rows()) *
                 ceil_div(static_cast<uint64_t>(tv->sizes[1]), qp->block_cols());
        break;
      default:
        TERN_RETURN_ERROR(InvalidProgram,
                          "method '%s': value %u ('%s'): unknown scale granularity %u", c.name,
                          index, name, raw_granularity);
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
        TERN_CHECK_OR_RETURN_ERROR(
            item >= 0 && static_cast<uint32_t>(item) < c.num_values && c.values[item].is_tensor(),
            InvalidProgram,
            "method '%s': value %u: tensor list item %u refers to value "
            "%d, which is not a tensor of this method",
            c.name, i, k, item);
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
    TERN_CHECK_OR_RETURN_ERROR(v < c.num_values, InvalidProgram,
                               "method '%s': %s %u refers to value %u, out of range (%u values)",
                               c.name, what, i, v, c.num_values);
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
    TERN_CHECK_OR_RETURN_ERROR(is_input, InvalidProgram,
                               "method '%s': value %u ('%s') has caller storage but is not a "
                               "method input",
                               c.name, i, or_empty(fb_str(t->name())));
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
    TERN_CHECK_OR_RETURN_ERROR(v < num_values && values[v].is_tensor(), InvalidProgram,
                               "method '%s': state %u refers to value %u, which is not a tensor "
                               "of this method",
                               name, i, v);
    const fb::Tensor* ft = method->values()->Get(v)->value_as_Tensor();
    TensorView& t = *values[v].payload.tensor;
    TERN_CHECK_OR_RETURN_ERROR(ft->storage() == fb::StorageKind::Arena, InvalidProgram,
                               "method '%s': state %u (value %u, '%s') is not planned in an arena",
                               name, i, v, or_empty(t.name));
    const int32_t segment = state->init_segment();
    if (segment < 0) {
      if (t.nbytes > 0) std::memset(t.data, 0, t.nbytes);
      continue;
    }
    TERN_CHECK_OR_RETURN_ERROR(static_cast<size_t>(segment) < program->num_segments(),
                               InvalidProgram,
                               "method '%s': state %u ('%s'): init segment %d out of range (the "
                               "program has %zu segments)",
                               name, i, or_empty(t.name), segment, program->num_segments());
    auto bytes = program->segment_data(static_cast<uint32_t>(segment));
    if (!bytes.ok()) return bytes.error();
    TERN_CHECK_OR_RETURN_ERROR(bytes->size() == t.nbytes, InvalidProgram,
                               "method '%s': state %u ('%s'): init segment %d has %zu bytes, "
                               "expected %llu",
                               name, i, or_empty(t.name), segment, bytes->size(),
                               static_cast<unsigned long long>(t.nbytes));
    if (t.nbytes > 0) std::memcpy(t.data, bytes->data(), t.nbytes);
  }
  return Error::Ok;
}

// ---- instructions -------------------------------------------------------------------------

/// Resolves value indices `args` into a slice of the step-arg pool.
Error resolve_args(LoadContext& c, const flatbuffers::Vector<int32_t>* args, const char* where,
                   uint32_t where_index, internal::MethodStepData& step) {
  const uint32_t n = args ? args->size() : 0;
  EValue** out = c.step_args.take(n);
  if (out == nullptr && n > 0) return pool_exhausted(c, "step arguments");
  for (uint32_t k = 0; k < n; ++k) {
    const int32_t v = args->Get(k);
    TERN_CHECK_OR_RETURN_ERROR(v >= 0 && static_cast<uint32_t>(v) < c.num_values, InvalidProgram,
                               "method '%s': %s %u ('%s'): argument %u refers to value %d, out of "
                               "range (%u values)",
                               c.name, where, where_index, or_empty(step.debug_name), k, v,
                               c.num_values);
    out[k] = &c.values[v];
  }
  step.args = out;
  step.num_args = n;
  return Error::Ok;
}

/// Fills `step` from a kernel call. `fallback` is the index in fallback_instructions or -1.
Error fill_kernel_step(LoadContext& c, const fb::Instruction* instr, uint32_t instruction,
                       int32_t fallback, internal::MethodStepData& step) {
  const char* where = fallback < 0 ? "instruction" : "fallback instruction";
  const uint32_t where_index = fallback < 0 ? instruction : static_cast<uint32_t>(fallback);
  step.instruction = instruction;
  step.fallback = fallback;
  step.debug_name = instr ? fb_str(instr->debug_name()) : nullptr;
  const fb::KernelCall* call = instr ? instr->kind_as_KernelCall() : nullptr;
  TERN_CHECK_OR_RETURN_ERROR(call != nullptr, InvalidProgram,
                             "method '%s': %s %u ('%s') is not a kernel call", c.name, where,
                             where_index, or_empty(step.debug_name));
  const auto* operators = c.method->operators();
  const uint32_t num_ops = operators ? operators->size() : 0;
  TERN_CHECK_OR_RETURN_ERROR(
      call->op() < num_ops && operators->Get(call->op()) != nullptr, InvalidProgram,
      "method '%s': %s %u ('%s'): operator %u out of range (%u operators)", c.name, where,
      where_index, or_empty(step.debug_name), call->op(), num_ops);
  step.op_name = operators->Get(call->op())->c_str();
  step.fn = find_kernel(step.op_name);
  TERN_CHECK_OR_RETURN_ERROR(step.fn != nullptr, NotFound,
                             "method '%s': %s %u ('%s'): operator '%s' is not registered (%zu "
                             "kernels registered; was register_portable_kernels() called?)",
                             c.name, where, where_index, or_empty(step.debug_name), step.op_name,
                             num_registered_kernels());
  return resolve_args(c, call->args(), where, where_index, step);
}

bool is_disabled(const MethodLoadOptions& options, const char* backend) {
  for (const char* disabled : options.disabled_backends) {
    if (disabled != nullptr && std::strcmp(disabled, backend) == 0) return true;
  }
  return false;
}

/// Decides how delegate `index` runs: initializes its backend, or marks it for the fallback
/// (logging one line that says why). `fallback_kernels` is for the log line.
Error resolve_delegate(LoadContext& c, uint32_t index, const MethodLoadOptions& options,
                       uint32_t fallback_kernels, internal::MethodDelegateSlotData& slot) {
  const fb::Delegate* d = c.method->delegates()->Get(index);
  slot.resolved = true;
  slot.backend_name = d ? fb_str(d->backend()) : nullptr;
  TERN_CHECK_OR_RETURN_ERROR(slot.backend_name != nullptr, InvalidProgram,
                             "method '%s': delegate %u has no backend name", c.name, index);
  const char* backend = slot.backend_name;
  const uint32_t segment = d->segment();
  TERN_CHECK_OR_RETURN_ERROR(segment < c.program->num_segments(), InvalidProgram,
                             "method '%s': delegate %u (backend '%s'): blob segment %u out of "
                             "range (the program has %zu segments)",
                             c.name, index, backend, segment, c.program->num_segments());
  const auto* specs = d->compile_specs();
  const uint32_t num_specs = specs ? specs->size() : 0;
  slot.specs = c.specs.take(num_specs);
  if (slot.specs == nullptr && num_specs > 0) return pool_exhausted(c, "compile specs");
  slot.num_specs = num_specs;
  for (uint32_t k = 0; k < num_specs; ++k) {
    const fb::CompileSpec* spec = specs->Get(k);
    const auto* value = spec->value();
    slot.specs[k].key = or_empty(fb_str(spec->key()));
    slot.specs[k].value =
        value ? Span<const uint8_t>(value->data(), value->size()) : Span<const uint8_t>();
  }

  const char* reason = nullptr;
  const Backend* entry = find_backend(backend);
  if (is_disabled(options, backend)) {
    reason = "disabled by the caller";
  } else if (entry == nullptr) {
    reason = "not registered";
  } else if (!entry->backend->is_available()) {
    reason = "not available";
  } else {
    auto blob = c.program->segment_data(segment);
    if (!blob.ok()) return blob.error();
    BackendInitContext init_context;
    init_context.method_allocator = c.memory->method_allocator;
    init_context.method_name = c.name;
    init_context.num_threads = options.num_threads;
    clear_error_message();
    auto handle = entry->backend->init(init_context, blob.get(),
                                       Span<const CompileSpecView>(slot.specs, num_specs));
    if (handle.ok()) {
      slot.backend = entry->backend;
      slot.handle = handle.get();
      slot.initialized = true;
      return Error::Ok;
    }
    char message[kMessageCopy];
    copy_last_message(message, sizeof(message));
    if (handle.error() != Error::DelegateInvalidCompatibility) {
      return set_error_message(handle.error(),
                               "method '%s': delegate %u (backend '%s'): init failed with %s: %s",
                               c.name, index, backend, to_string(handle.error()), message);
    }
    TERN_LOG(Info,
             "method '%s': delegate %u (backend '%s') rejected its blob (%s); running its "
             "portable fallback (%u kernels)",
             c.name, index, backend, message, fallback_kernels);
    slot.use_fallback = true;
    return Error::Ok;
  }
  TERN_LOG(Info,
           "method '%s': delegate %u (backend '%s') %s; running its portable fallback (%u "
           "kernels)",
           c.name, index, backend, reason, fallback_kernels);
  slot.use_fallback = true;
  return Error::Ok;
}

}  // namespace

// ---- Program::load_method -------------------------------------------------------------------

Result<Method> Program::load_method(const char* name, MemoryManager* memory) const {
  return load_method(name, memory, MethodLoadOptions());
}

Result<Method> Program::load_method(const char* name, MemoryManager* memory,
                                    const MethodLoadOptions& options) const {
  TERN_CHECK_OR_RETURN_ERROR(name != nullptr, InvalidArgument, "load_method: method name is null");
  TERN_CHECK_OR_RETURN_ERROR(memory != nullptr && memory->method_allocator != nullptr,
                             InvalidArgument,
                             "load_method('%s'): the MemoryManager has no method_allocator", name);
  TERN_ASSIGN_OR_RETURN(MethodMeta meta, method_meta(name));
  const fb::Method* fm = meta.flatbuffer();
  TERN_CHECK_OR_RETURN_ERROR(fm != nullptr, Internal, "load_method('%s'): null method", name);

  LoadContext c;
  c.program = this;
  c.method = fm;
  c.name = method_name_of(fm);
  c.memory = memory;
  TERN_RETURN_IF_ERROR(check_arenas(c));

  // Every array up front, so a small allocator fails before any backend is initialized.
  const internal::MethodLayout layout = internal::compute_method_layout(fm);
  MemoryAllocator* allocator = memory->method_allocator;
  const size_t free_before = allocator->size() - allocator->used();
  Pool<EValue> values;
  Pool<uint32_t> io_inputs;
  Pool<uint32_t> io_outputs;
  Pool<Method::Step> steps;
  Pool<Method::DelegateSlot> slots;
  Pool<DelegatePath> paths;
  const bool allocated = allocate_pool(allocator, layout.num_values, &values) &&
                         allocate_pool(allocator, layout.num_tensors, &c.tensors) &&
                         allocate_pool(allocator, layout.num_int64, &c.ints) &&
                         allocate_pool(allocator, layout.num_double, &c.doubles) &&
                         allocate_pool(allocator, layout.num_quant, &c.quants) &&
                         allocate_pool(allocator, layout.num_tensor_refs, &c.tensor_refs) &&
                         allocate_pool(allocator, 2 * layout.num_inputs, &io_inputs) &&
                         allocate_pool(allocator, layout.num_outputs, &io_outputs) &&
                         allocate_pool(allocator, layout.num_steps, &steps) &&
                         allocate_pool(allocator, layout.num_step_args, &c.step_args) &&
                         allocate_pool(allocator, layout.num_delegates, &slots) &&
                         allocate_pool(allocator, layout.num_specs, &c.specs) &&
                         allocate_pool(allocator, layout.num_delegate_calls, &paths);
  static_assert(sizeof(Method::Step) == sizeof(internal::MethodStepData), "layout drift");
  static_assert(sizeof(Method::DelegateSlot) == sizeof(internal::MethodDelegateSlotData),
                "layout drift");
  TERN_CHECK_OR_RETURN_ERROR(
      allocated, MemoryAllocationFailed,
      "method '%s': the method allocator is too small: load needs up to %llu bytes "
      "(MethodMeta::method_allocator_bytes()), the allocator had %zu bytes free",
      c.name, static_cast<unsigned long long>(meta.method_allocator_bytes()), free_before);
  TERN_CHECK_OR_RETURN_ERROR(layout.num_values < (1ull << 31), InvalidProgram,
                             "method '%s': %llu values exceed the limit of 2^31", c.name,
                             static_cast<unsigned long long>(layout.num_values));
  c.values = values.data;
  c.num_values = static_cast<uint32_t>(layout.num_values);

  Method m;
  m.program_ = this;
  m.method_ = fm;
  m.memory_ = *memory;
  m.values_ = values.data;
  m.num_values_ = c.num_values;
  // The slots go into the Method first, so its destructor destroys any handle made below.
  for (uint64_t i = 0; i < layout.num_delegates; ++i) new (&slots.data[i]) Method::DelegateSlot();
  m.delegates_ = slots.data;
  m.num_delegates_ = layout.num_delegates;

  TERN_RETURN_IF_ERROR(load_values(c));
  TERN_RETURN_IF_ERROR(link_values(c));

  m.num_inputs_ = layout.num_inputs;
  m.num_outputs_ = layout.num_outputs;
  m.input_indices_ = io_inputs.data;
  m.output_indices_ = io_outputs.data;
  TERN_RETURN_IF_ERROR(load_io(c, fm->inputs(), "input", m.input_indices_));
  TERN_RETURN_IF_ERROR(load_io(c, fm->outputs(), "output", m.output_indices_));
  for (size_t i = 0; i < m.num_inputs_; ++i) {
    // "set" flags: scalars carry a value from the program; tensors must be set by the caller.
    m.input_indices_[m.num_inputs_ + i] = c.values[m.input_indices_[i]].is_tensor() ? 0 : 1;
  }
  TERN_RETURN_IF_ERROR(check_caller_tensors(c));

  // Steps: kernel calls, and delegate calls either as one backend step or their fallback.
  const auto* instructions = fm->instructions();
  const uint32_t num_instructions = instructions ? instructions->size() : 0;
  const auto* fallbacks = fm->fallback_instructions();
  const uint32_t num_fallbacks = fallbacks ? fallbacks->size() : 0;
  const uint32_t num_delegates = fm->delegates() ? fm->delegates()->size() : 0;
  m.steps_ = steps.data;
  m.delegate_paths_ = paths.data;
  size_t call_index = 0;
  for (uint32_t i = 0; i < num_instructions; ++i) {
    const fb::Instruction* instr = instructions->Get(i);
    const char* debug_name = instr ? fb_str(instr->debug_name()) : nullptr;
    const fb::DelegateCall* call = instr ? instr->kind_as_DelegateCall() : nullptr;
    if (call == nullptr) {
      Method::Step* step = steps.take(1);
      if (step == nullptr) return pool_exhausted(c, "steps");
      new (step) Method::Step();
      ++m.num_steps_;
      TERN_RETURN_IF_ERROR(fill_kernel_step(c, instr, i, -1, *step));
      continue;
    }
    const uint32_t d = call->delegate();
    TERN_CHECK_OR_RETURN_ERROR(d < num_delegates, InvalidProgram,
                               "method '%s': instruction %u ('%s'): delegate %u out of range (%u "
                               "delegates)",
                               c.name, i, or_empty(debug_name), d, num_delegates);
    const uint32_t begin = call->fallback_begin();
    const uint32_t end = call->fallback_end();
    TERN_CHECK_OR_RETURN_ERROR(begin <= end && end <= num_fallbacks, InvalidProgram,
                               "method '%s': instruction %u ('%s'): fallback range [%u, %u) is "
                               "not inside the %u fallback instructions",
                               c.name, i, or_empty(debug_name), begin, end, num_fallbacks);
    Method::DelegateSlot& slot = slots.data[d];
    if (!slot.resolved) {
      TERN_RETURN_IF_ERROR(resolve_delegate(c, d, options, end - begin, slot));
    }
    if (!slot.use_fallback) {
      Method::Step* step = steps.take(1);
      if (step == nullptr) return pool_exhausted(c, "steps");
      new (step) Method::Step();
      ++m.num_steps_;
      step->backend = slot.backend;
      step->handle = slot.handle;
      step->op_name = slot.backend_name;
      step->debug_name = debug_name;
      step->instruction = i;
      step->delegate = d;
      TERN_RETURN_IF_ERROR(resolve_args(c, call->args(), "instruction", i, *step));
      paths.data[call_index++] = DelegatePath::Backend;
      continue;
    }
    TERN_CHECK_OR_RETURN_ERROR(begin < end, BackendUnavailable,
                               "method '%s': instruction %u ('%s'): delegate %u (backend '%s') "
                               "cannot run here and has no portable fallback",
                               c.name, i, or_empty(debug_name), d, slot.backend_name);
    for (uint32_t f = begin; f < end; ++f) {
      Method::Step* step = steps.take(1);
      if (step == nullptr) return pool_exhausted(c, "steps");
      new (step) Method::Step();
      ++m.num_steps_;
      step->delegate = d;
      TERN_RETURN_IF_ERROR(
          fill_kernel_step(c, fallbacks->Get(f), i, static_cast<int32_t>(f), *step));
    }
    paths.data[call_index++] = DelegatePath::Fallback;
  }
  m.num_delegate_calls_ = call_index;

  TERN_RETURN_IF_ERROR(init_state(this, fm, c.values, c.num_values));
  // Let each delegate bind to its arguments' final addresses (not during execute()).
  for (size_t s = 0; s < m.num_steps_; ++s) {
    const Method::Step& step = m.steps_[s];
    if (step.backend == nullptr) continue;
    const Error err = step.backend->prepare(step.handle, Span<EValue*>(step.args, step.num_args));
    if (err != Error::Ok) {
      char inner[512];
      copy_last_message(inner, sizeof(inner));
      return set_error_message(err,
                               "method '%s': instruction %u: delegate %u (backend '%s') could "
                               "not prepare its arguments: %s",
                               c.name, step.instruction, step.delegate, or_empty(step.op_name),
                               inner);
    }
  }
  return Result<Method>(std::move(m));
}

// ---- Method ---------------------------------------------------------------------------------

Method::Method(Method&& other) noexcept
    : program_(other.program_),
      method_(other.method_),
      memory_(other.memory_),
      values_(other.values_),
      num_values_(other.num_values_),
      input_indices_(other.input_indices_),
      output_indices_(other.output_indices_),
      num_inputs_(other.num_inputs_),
      num_outputs_(other.num_outputs_),
      steps_(other.steps_),
      num_steps_(other.num_steps_),
      delegates_(other.delegates_),
      num_delegates_(other.num_delegates_),
      delegate_paths_(other.delegate_paths_),
      num_delegate_calls_(other.num_delegate_calls_),
      executed_(other.executed_),
      observer_(other.observer_) {
  // The handles now belong to this Method only; the moved-from one refuses to run.
  other.method_ = nullptr;
  other.values_ = nullptr;
  other.num_values_ = 0;
  other.delegates_ = nullptr;
  other.num_delegates_ = 0;
  other.steps_ = nullptr;
  other.num_steps_ = 0;
  other.num_inputs_ = 0;
  other.num_outputs_ = 0;
  other.num_delegate_calls_ = 0;
  other.executed_ = false;
}

Method::~Method() {
  for (size_t i = 0; i < num_delegates_; ++i) {
    DelegateSlot& slot = delegates_[i];
    if (slot.initialized && slot.backend != nullptr) {
      slot.backend->destroy(slot.handle);
      slot.initialized = false;
    }
  }
}

Error Method::set_input(size_t index, const TensorView& input) {
  const char* mname = method_name_of(method_);
  TERN_CHECK_OR_RETURN_ERROR(index < num_inputs_, InvalidArgument,
                             "method '%s': input %zu out of range: the method has %zu inputs",
                             mname, index, num_inputs_);
  const uint32_t v = input_indices_[index];
  EValue& value = values_[v];
  TERN_CHECK_OR_RETURN_ERROR(value.is_tensor(), InvalidArgument,
                             "method '%s': input %zu is a %s, not a tensor; use "
                             "set_input(index, EValue)",
                             mname, index, to_string(value.tag));
  TensorView& t = *value.payload.tensor;
  const char* name = or_empty(t.name);
  TERN_CHECK_OR_RETURN_ERROR(input.rank <= kMaxRank && (input.sizes != nullptr || input.rank == 0),
                             InvalidArgument,
                             "method '%s': input %zu ('%s'): rank %u with %s sizes is not a valid "
                             "tensor",
                             mname, index, name, input.rank, input.sizes ? "non-null" : "null");
  bool same_shape = input.dtype == t.dtype && input.rank == t.rank;
  for (uint32_t d = 0; same_shape && d < t.rank; ++d) {
    same_shape = input.sizes[d] == t.sizes[d];
  }
  if (!same_shape) {
    char expected[160];
    char got[160];
    format_shape(t.shape(), expected, sizeof(expected));
    format_shape(input.shape(), got, sizeof(got));
    TERN_RETURN_ERROR(InvalidArgument,
                      "method '%s': input %zu ('%s'): expected shape %s (%s), got %s (%s)", mname,
                      index, name, expected, to_string(t.dtype), got, to_string(input.dtype));
  }
  TERN_CHECK_OR_RETURN_ERROR(input.is_contiguous() || !t.is_contiguous(), InvalidArgument,
                             "method '%s': input %zu ('%s'): expected a contiguous tensor, got a "
                             "non-contiguous dim order",
                             mname, index, name);
  TERN_CHECK_OR_RETURN_ERROR(input.nbytes == t.nbytes, InvalidArgument,
                             "method '%s': input %zu ('%s'): expected %llu bytes, got nbytes = "
                             "%llu",
                             mname, index, name, static_cast<unsigned long long>(t.nbytes),
                             static_cast<unsigned long long>(input.nbytes));
  TERN_CHECK_OR_RETURN_ERROR(input.data != nullptr || t.nbytes == 0, InvalidArgument,
                             "method '%s': input %zu ('%s'): data is null", mname, index, name);
  const fb::Tensor* ft = method_->values()->Get(v)->value_as_Tensor();
  if (ft->storage() == fb::StorageKind::Caller) {
    t.data = input.data;
  } else if (t.nbytes > 0 && t.data != input.data) {
    std::memmove(t.data, input.data, t.nbytes);
  }
  input_indices_[num_inputs_ + index] = 1;
  return Error::Ok;
}

Error Method::set_input(size_t index, const EValue& input) {
  const char* mname = method_name_of(method_);
  TERN_CHECK_OR_RETURN_ERROR(index < num_inputs_, InvalidArgument,
                             "method '%s': input %zu out of range: the method has %zu inputs",
                             mname, index, num_inputs_);
  EValue& value = values_[input_indices_[index]];
  if (value.is_tensor()) {
    TERN_CHECK_OR_RETURN_ERROR(input.is_tensor() && input.payload.tensor != nullptr,
                               InvalidArgument,
                               "method '%s': input %zu ('%s') is a tensor, got a %s", mname, index,
                               or_empty(value.payload.tensor->name), to_string(input.tag));
    return set_input(index, *input.payload.tensor);
  }
  TERN_CHECK_OR_RETURN_ERROR(
      (value.is_int() || value.is_double() || value.is_bool()) && input.tag == value.tag,
      InvalidArgument, "method '%s': input %zu: expected a %s, got a %s", mname, index,
      to_string(value.tag), to_string(input.tag));
  value.payload = input.payload;
  input_indices_[num_inputs_ + index] = 1;
  return Error::Ok;
}

Error Method::execute() {
  executed_ = false;
  TERN_CHECK_OR_RETURN_ERROR(method_ != nullptr, InvalidState,
                             "execute: the Method was moved from or never loaded");
  for (size_t i = 0; i < num_inputs_; ++i) {
    if (input_indices_[num_inputs_ + i] == 0) {
      const EValue& v = values_[input_indices_[i]];
      TERN_RETURN_ERROR(InvalidState,
                        "method '%s': input %zu ('%s') has not been set; call set_input() "
                        "before execute()",
                        method_name_of(method_), i,
                        v.is_tensor() ? or_empty(v.payload.tensor->name) : "");
    }
  }
  MemoryAllocator* temp = memory_.temp_allocator;
  for (size_t i = 0; i < num_steps_; ++i) {
    const Step& step = steps_[i];
    clear_error_message();
    if (observer_ != nullptr) observer_->on_step_begin(i, step.op_name, step.debug_name);
    Error err;
    if (step.fn != nullptr) {
      KernelContext context;
      context.temp_allocator = temp;
      context.op_name = step.op_name;
      context.debug_name = step.debug_name;
      err = step.fn(context, Span<EValue*>(step.args, step.num_args));
    } else {
      BackendExecuteContext context;
      context.temp_allocator = temp;
      PartSink sink{observer_, i};
      if (observer_ != nullptr) {
        context.report_part = &forward_delegate_part;
        context.part_sink = &sink;
      }
      err = step.backend->execute(context, step.handle, Span<EValue*>(step.args, step.num_args));
    }
    if (temp != nullptr) temp->reset();
    if (observer_ != nullptr) observer_->on_step_end(i, step.op_name, step.debug_name);
    if (err != Error::Ok) {
      char message[kMessageCopy];
      copy_last_message(message, sizeof(message));
      if (step.fn == nullptr) {
        return set_error_message(err,
                                 "method '%s': step %zu (instruction %u, delegate %u, backend "
                                 "'%s', '%s') failed with %s: %s",
                                 method_name_of(method_), i, step.instruction, step.delegate,
                                 or_empty(step.op_name), or_empty(step.debug_name), to_string(err),
                                 message);
      }
      if (step.fallback >= 0) {
        return set_error_message(err,
                                 "method '%s': step %zu (fallback instruction %d of delegate call "
                                 "at instruction %u, op '%s', '%s') failed with %s: %s",
                                 method_name_of(method_), i, step.fallback, step.instruction,
                                 or_empty(step.op_name), or_empty(step.debug_name), to_string(err),
                                 message);
      }
      return set_error_message(err,
                               "method '%s': step %zu (instruction %u, op '%s', '%s') failed "
                               "with %s: %s",
                               method_name_of(method_), i, step.instruction, or_empty(step.op_name),
                               or_empty(step.debug_name), to_string(err), message);
    }
  }
  executed_ = true;
  return Error::Ok;
}

Result<const EValue*> Method::output_value(size_t index) const {
  const char* mname = method_name_of(method_);
  TERN_CHECK_OR_RETURN_ERROR(executed_, InvalidState,
                             "method '%s': output %zu read before a successful execute()", mname,
                             index);
  TERN_CHECK_OR_RETURN_ERROR(index < num_outputs_, InvalidArgument,
                             "method '%s': output %zu out of range: the method has %zu outputs",
                             mname, index, num_outputs_);
  return static_cast<const EValue*>(&values_[output_indices_[index]]);
}

Result<const TensorView*> Method::output(size_t index) const {
  TERN_ASSIGN_OR_RETURN(const EValue* value, output_value(index));
  TERN_CHECK_OR_RETURN_ERROR(value->is_tensor(), InvalidArgument,
                             "method '%s': output %zu is a %s, not a tensor; use output_value()",
                             method_name_of(method_), index, to_string(value->tag));
  return static_cast<const TensorView*>(value->payload.tensor);
}

Error Method::reset_state() {
  TERN_CHECK_OR_RETURN_ERROR(method_ != nullptr, InvalidState,
                             "reset_state: the Method was moved from");
  return init_state(program_, method_, values_, num_values_);
}

Result<DelegatePath> Method::delegate_path(size_t index) const {
  TERN_CHECK_OR_RETURN_ERROR(index < num_delegate_calls_, InvalidArgument,
                             "method '%s': delegate call %zu out of range: the method has %zu "
                             "delegate calls",
                             method_name_of(method_), index, num_delegate_calls_);
  return delegate_paths_[index];
}

}  // namespace tern
