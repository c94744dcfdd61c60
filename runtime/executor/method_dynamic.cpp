// A loaded method's bounded-dynamic shapes: load, set_input checks, per-execution resolution.
#include "runtime/executor/method_dynamic.h"

#include <new>

#include "runtime/core/checked_math.h"
#include "runtime/executor/method_layout.h"
#include "runtime/executor/method_load_context.h"
#include "runtime/kernel/kernel_registry.h"

namespace tern {
namespace internal {
namespace {

template <typename V>
uint32_t count_of(const V* vector) {
  return vector == nullptr ? 0 : vector->size();
}

bool is_dynamic_tensor(const fb::Tensor* t) {
  return t != nullptr && t->dynamism() == fb::ShapeDynamism::DynamicBound;
}

/// Byte size of `view` at `sizes` (bounded by the planned size, so it cannot overflow).
uint64_t nbytes_at(const TensorView& view, const int64_t* sizes) {
  uint64_t numel = 1;
  for (uint32_t d = 0; d < view.rank; ++d) numel *= static_cast<uint64_t>(sizes[d]);
  uint64_t nbytes = 0;
  (void)dtype_nbytes(view.dtype, numel, &nbytes);
  return nbytes;
}

}  // namespace

const DynamicTensorSlot* DynamicShapes::input_slot(size_t input) const {
  for (uint32_t i = 0; i < num_tensors; ++i) {
    if (tensors[i].input == static_cast<int32_t>(input)) return &tensors[i];
  }
  return nullptr;
}

bool DynamicShapes::is_dynamic(const TensorView* view) const {
  for (uint32_t i = 0; i < num_tensors; ++i) {
    if (tensors[i].view == view) return true;
  }
  return false;
}

const char* DynamicShapes::symbol_name(uint32_t s) const {
  return method->symbols()->Get(s)->name()->c_str();
}
int64_t DynamicShapes::symbol_min(uint32_t s) const { return method->symbols()->Get(s)->min(); }
int64_t DynamicShapes::symbol_max(uint32_t s) const { return method->symbols()->Get(s)->max(); }

DynamicLayout compute_dynamic_layout(const fb::Method* method) {
  DynamicLayout layout;
  if (method == nullptr) return layout;
  layout.num_symbols = count_of(method->symbols());
  if (layout.num_symbols == 0) return layout;
  if (const auto* values = method->values()) {
    for (uint32_t i = 0; i < values->size(); ++i) {
      const fb::EValue* v = values->Get(i);
      if (v != nullptr && is_dynamic_tensor(v->value_as_Tensor())) ++layout.num_tensors;
    }
  }
  layout.num_ints = count_of(method->symbolic_ints());
  return layout;
}

uint64_t dynamic_layout_bytes(const DynamicLayout& l) {
  if (l.num_symbols == 0) return 0;
  uint64_t total = 0;
  layout_add_array(&total, 1, sizeof(DynamicShapes), alignof(DynamicShapes));
  layout_add_array(&total, l.num_symbols, sizeof(int64_t), alignof(int64_t));
  layout_add_array(&total, l.num_symbols, sizeof(int32_t), alignof(int32_t));
  layout_add_array(&total, l.num_tensors, sizeof(DynamicTensorSlot), alignof(DynamicTensorSlot));
  layout_add_array(&total, l.num_ints, sizeof(SymbolicIntSlot), alignof(SymbolicIntSlot));
  return total;
}

Error load_dynamic_shapes(LoadContext& c, const uint32_t* inputs, size_t num_inputs,
                          DynamicShapes** out) {
  *out = nullptr;
  const DynamicLayout layout = compute_dynamic_layout(c.method);
  if (layout.num_symbols == 0) return Error::Ok;
  MemoryAllocator* allocator = c.memory->method_allocator;
  Pool<DynamicShapes> shapes;
  Pool<int64_t> symbol_values;
  Pool<int32_t> symbol_input;
  Pool<DynamicTensorSlot> tensors;
  Pool<SymbolicIntSlot> ints;
  const bool allocated = allocate_pool(allocator, 1, &shapes) &&
                         allocate_pool(allocator, layout.num_symbols, &symbol_values) &&
                         allocate_pool(allocator, layout.num_symbols, &symbol_input) &&
                         allocate_pool(allocator, layout.num_tensors, &tensors) &&
                         allocate_pool(allocator, layout.num_ints, &ints);
  TERN_CHECK_OR_RETURN_ERROR(allocated, MemoryAllocationFailed,
                             "method '%s': the method allocator is too small for the dynamic "
                             "shapes (%u symbols, %llu dynamic tensors)",
                             c.name, static_cast<uint32_t>(layout.num_symbols),
                             static_cast<unsigned long long>(layout.num_tensors));
  DynamicShapes* d = new (shapes.data) DynamicShapes();
  d->method = c.method;
  d->num_symbols = static_cast<uint32_t>(layout.num_symbols);
  d->symbol_values = symbol_values.data;
  d->symbol_input = symbol_input.data;
  for (uint32_t s = 0; s < d->num_symbols; ++s) {
    // Until the first execute, every dynamic dim is at its bound (as load left the sizes).
    d->symbol_values[s] = d->symbol_max(s);
    d->symbol_input[s] = -1;
  }
  d->tensors = tensors.data;
  const auto* values = c.method->values();
  for (uint32_t v = 0; v < c.num_values; ++v) {
    const fb::Tensor* ft = values->Get(v)->value_as_Tensor();
    if (!is_dynamic_tensor(ft)) continue;
    DynamicTensorSlot* slot = new (&tensors.data[d->num_tensors++]) DynamicTensorSlot();
    slot->view = c.values[v].payload.tensor;
    // The sizes array came from the method's int64 pool (load_tensor); the view only exposes
    // it as const to kernels.
    slot->sizes = const_cast<int64_t*>(slot->view->sizes);
    slot->value = v;
    for (uint32_t k = 0; k < slot->view->rank; ++k) {
      slot->symbols[k] = static_cast<int8_t>(ft->dim_symbols()->Get(k));
    }
    for (size_t i = 0; i < num_inputs; ++i) {
      if (inputs[i] == v) slot->input = static_cast<int32_t>(i);
    }
  }
  d->ints = ints.data;
  const auto* symbolic = c.method->symbolic_ints();
  for (uint32_t i = 0; i < count_of(symbolic); ++i) {
    const fb::SymbolicInt* si = symbolic->Get(i);
    EValue& value = c.values[si->value()];
    SymbolicIntSlot* slot = new (&ints.data[d->num_ints++]) SymbolicIntSlot();
    slot->symbol = si->symbol();
    // Int payloads live in the EValue; int-list items in the method's int64 pool.
    slot->target = si->item() < 0 ? &value.payload.i
                                  : const_cast<int64_t*>(value.payload.int_list.data) + si->item();
  }
  *out = d;
  return Error::Ok;
}

Error check_dynamic_step(const DynamicShapes& dynamic, const char* method_name,
                         const MethodStep& step) {
  for (uint32_t a = 0; a < step.num_args; ++a) {
    const EValue* arg = step.args[a];
    const TensorView* found = nullptr;
    if (arg->is_tensor() && dynamic.is_dynamic(arg->payload.tensor)) {
      found = arg->payload.tensor;
    } else if (arg->tag == EValue::Tag::TensorList) {
      for (size_t k = 0; k < arg->payload.tensor_list.size && found == nullptr; ++k) {
        const TensorView* t = arg->payload.tensor_list.data[k];
        if (dynamic.is_dynamic(t)) found = t;
      }
    }
    if (found == nullptr) continue;
    if (step.fn == nullptr && step.backend != nullptr &&
        step.backend->takes_dynamic_shapes(step.handle)) {
      continue;
    }
    if (step.fn == nullptr) {
      TERN_RETURN_ERROR(NotSupported,
                        "method '%s': instruction %u (delegate %u, backend '%s', '%s') takes the "
                        "dynamic-shaped tensor '%s', but its backend does not take dynamic shapes "
                        "(re-compile: the partitioner keeps such nodes on the portable kernels)",
                        method_name, step.instruction, step.delegate,
                        step.op_name ? step.op_name : "", step.debug_name ? step.debug_name : "",
                        found->name ? found->name : "");
    }
    TERN_CHECK_OR_RETURN_ERROR(kernel_supports_dynamic_shapes(step.op_name), NotSupported,
                               "method '%s': instruction %u (op '%s', '%s') takes the "
                               "dynamic-shaped tensor '%s', but the '%s' kernel does not support "
                               "dynamic shapes (docs/dynamic-shapes.md lists those that do)",
                               method_name, step.instruction, step.op_name ? step.op_name : "",
                               step.debug_name ? step.debug_name : "",
                               found->name ? found->name : "", step.op_name ? step.op_name : "");
  }
  return Error::Ok;
}

Error set_dynamic_input(const DynamicShapes& dynamic, const char* method_name, size_t index,
                        const DynamicTensorSlot& slot, const TensorView& input) {
  const TensorView& t = *slot.view;
  const char* name = t.name ? t.name : "";
  TERN_CHECK_OR_RETURN_ERROR(input.dtype == t.dtype && input.rank == t.rank, InvalidArgument,
                             "method '%s': input %zu ('%s'): expected a rank-%u %s tensor, got "
                             "rank %u %s",
                             method_name, index, name, t.rank, to_string(t.dtype), input.rank,
                             to_string(input.dtype));
  int64_t sizes[kMaxRank] = {};
  for (uint32_t d = 0; d < t.rank; ++d) {
    const int64_t size = input.sizes[d];
    const int s = slot.symbols[d];
    if (s < 0) {
      // A static dim's planned size is in the FlatBuffer (the view's sizes may be resized).
      const int64_t expected =
          dynamic.method->values()->Get(slot.value)->value_as_Tensor()->sizes()->Get(d);
      TERN_CHECK_OR_RETURN_ERROR(size == expected, InvalidArgument,
                                 "method '%s': input %zu ('%s'): dim %u is static and must be "
                                 "%lld, got %lld",
                                 method_name, index, name, d, static_cast<long long>(expected),
                                 static_cast<long long>(size));
    } else {
      const uint32_t sym = static_cast<uint32_t>(s);
      const int64_t lo = dynamic.symbol_min(sym);
      const int64_t hi = dynamic.symbol_max(sym);
      TERN_CHECK_OR_RETURN_ERROR(size <= hi, InvalidArgument,
                                 "method '%s': input %zu ('%s'): dim %u ('%s') is %lld, beyond "
                                 "its bound %lld (the program was exported with %s <= %lld)",
                                 method_name, index, name, d, dynamic.symbol_name(sym),
                                 static_cast<long long>(size), static_cast<long long>(hi),
                                 dynamic.symbol_name(sym), static_cast<long long>(hi));
      TERN_CHECK_OR_RETURN_ERROR(size >= lo, InvalidArgument,
                                 "method '%s': input %zu ('%s'): dim %u ('%s') is %lld, below its "
                                 "minimum %lld",
                                 method_name, index, name, d, dynamic.symbol_name(sym),
                                 static_cast<long long>(size), static_cast<long long>(lo));
    }
    sizes[d] = size;
  }
  const uint64_t nbytes = nbytes_at(t, sizes);
  TERN_CHECK_OR_RETURN_ERROR(input.nbytes == nbytes, InvalidArgument,
                             "method '%s': input %zu ('%s'): expected %llu bytes for its sizes, "
                             "got nbytes = %llu",
                             method_name, index, name, static_cast<unsigned long long>(nbytes),
                             static_cast<unsigned long long>(input.nbytes));
  for (uint32_t d = 0; d < t.rank; ++d) slot.sizes[d] = sizes[d];
  slot.view->nbytes = nbytes;
  return Error::Ok;
}

Error resolve_dynamic_shapes(DynamicShapes& dynamic, const char* method_name) {
  for (uint32_t s = 0; s < dynamic.num_symbols; ++s) dynamic.symbol_input[s] = -1;
  for (uint32_t i = 0; i < dynamic.num_tensors; ++i) {
    const DynamicTensorSlot& slot = dynamic.tensors[i];
    if (slot.input < 0) continue;
    for (uint32_t d = 0; d < slot.view->rank; ++d) {
      const int s = slot.symbols[d];
      if (s < 0) continue;
      if (dynamic.symbol_input[s] < 0) {
        dynamic.symbol_input[s] = slot.input;
        dynamic.symbol_values[s] = slot.sizes[d];
        continue;
      }
      if (dynamic.symbol_values[s] == slot.sizes[d]) continue;
      const DynamicTensorSlot* first =
          dynamic.input_slot(static_cast<size_t>(dynamic.symbol_input[s]));
      TERN_RETURN_ERROR(
          InvalidArgument,
          "method '%s': inputs %d ('%s') and %d ('%s') disagree on dynamic dim "
          "'%s': %lld and %lld",
          method_name, dynamic.symbol_input[s], first && first->view->name ? first->view->name : "",
          slot.input, slot.view->name ? slot.view->name : "", dynamic.symbol_name(s),
          static_cast<long long>(dynamic.symbol_values[s]), static_cast<long long>(slot.sizes[d]));
    }
  }
  for (uint32_t i = 0; i < dynamic.num_tensors; ++i) {
    DynamicTensorSlot& slot = dynamic.tensors[i];
    if (slot.input >= 0) continue;
    for (uint32_t d = 0; d < slot.view->rank; ++d) {
      if (slot.symbols[d] >= 0) slot.sizes[d] = dynamic.symbol_values[slot.symbols[d]];
    }
    slot.view->nbytes = nbytes_at(*slot.view, slot.sizes);
  }
  for (uint32_t i = 0; i < dynamic.num_ints; ++i) {
    *dynamic.ints[i].target = dynamic.symbol_values[dynamic.ints[i].symbol];
  }
  return Error::Ok;
}

}  // namespace internal
}  // namespace tern
