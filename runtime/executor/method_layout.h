// MethodLayout: how many elements of each array Method load takes from the method allocator.
// Internal to the executor: method.cpp allocates exactly these arrays, and
// MethodMeta::method_allocator_bytes() sums them, so the two cannot drift apart.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/backend/backend.h"
#include "runtime/core/checked_math.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor_view.h"
#include "runtime/executor/method_dynamic.h"
#include "runtime/executor/method_load_options.h"
#include "runtime/executor/method_step.h"
#include "schema/program_generated.h"

namespace tern {
namespace internal {

/// Element counts of every array a loaded Method keeps in its method allocator. Counts are
/// upper bounds computed from the (structurally verified) FlatBuffer before any semantic
/// check, so a malformed method gives sane numbers and then fails in load.
struct MethodLayout {
  uint64_t num_values = 0;          ///< EValue
  uint64_t num_tensors = 0;         ///< TensorView
  uint64_t num_int64 = 0;           ///< int64_t: tensor sizes + int list items
  uint64_t num_double = 0;          ///< double: double list items
  uint64_t num_quant = 0;           ///< QuantView
  uint64_t num_tensor_refs = 0;     ///< TensorView*: tensor list items
  uint64_t num_inputs = 0;          ///< 2 x uint32_t each: the value index, then a "set" flag
  uint64_t num_outputs = 0;         ///< uint32_t
  uint64_t num_steps = 0;           ///< MethodStep (delegate calls count their fallback size)
  uint64_t num_step_args = 0;       ///< EValue*
  uint64_t num_delegates = 0;       ///< MethodDelegateSlot
  uint64_t num_specs = 0;           ///< CompileSpecView
  uint64_t num_delegate_calls = 0;  ///< DelegatePath
  DynamicLayout dynamic;            ///< bounded-dynamic shapes (method_dynamic.h)
};

/// Adds `count` elements of `size` bytes with worst-case padding for `alignment` to `total`
/// (saturating at UINT64_MAX).
inline void layout_add_array(uint64_t* total, uint64_t count, size_t size, size_t alignment) {
  if (count == 0) return;  // empty arrays are not allocated
  uint64_t bytes;
  if (!checked_mul(count, size, &bytes) || !checked_add(bytes, alignment - 1, &bytes) ||
      !checked_add(*total, bytes, total)) {
    *total = UINT64_MAX;
  }
}

inline uint64_t layout_saturating_add(uint64_t a, uint64_t b) {
  uint64_t out;
  return checked_add(a, b, &out) ? out : UINT64_MAX;
}

/// Number of args of the kernel calls in fallback range [begin, end) (0 when the range is
/// invalid: load rejects it anyway).
inline uint64_t layout_fallback_args(const fb::Method* method, uint32_t begin, uint32_t end) {
  const auto* fallback = method->fallback_instructions();
  const uint64_t size = fallback ? fallback->size() : 0;
  if (begin > end || end > size) return 0;
  uint64_t total = 0;
  for (uint32_t i = begin; i < end; ++i) {
    const fb::Instruction* instr = fallback->Get(i);
    const fb::KernelCall* call = instr ? instr->kind_as_KernelCall() : nullptr;
    if (call != nullptr && call->args() != nullptr) {
      total = layout_saturating_add(total, call->args()->size());
    }
  }
  return total;
}

/// Computes the layout of `method` (null gives all zeros).
inline MethodLayout compute_method_layout(const fb::Method* method) {
  MethodLayout layout;
  if (method == nullptr) return layout;
  if (const auto* values = method->values()) {
    layout.num_values = values->size();
    for (uint32_t i = 0; i < values->size(); ++i) {
      const fb::EValue* value = values->Get(i);
      if (value == nullptr) continue;
      switch (value->value_type()) {
        case fb::Value::Tensor: {
          const fb::Tensor* t = value->value_as_Tensor();
          ++layout.num_tensors;
          if (t->sizes() != nullptr) {
            layout.num_int64 = layout_saturating_add(layout.num_int64, t->sizes()->size());
          }
          if (t->quant() != nullptr && t->quant()->scheme() != fb::QuantScheme::None) {
            ++layout.num_quant;
          }
          break;
        }
        case fb::Value::IntList: {
          const auto* items = value->value_as_IntList()->items();
          if (items) layout.num_int64 = layout_saturating_add(layout.num_int64, items->size());
          break;
        }
        case fb::Value::DoubleList: {
          const auto* items = value->value_as_DoubleList()->items();
          if (items) layout.num_double = layout_saturating_add(layout.num_double, items->size());
          break;
        }
        case fb::Value::TensorList: {
          const auto* items = value->value_as_TensorList()->items();
          if (items) {
            layout.num_tensor_refs = layout_saturating_add(layout.num_tensor_refs, items->size());
          }
          break;
        }
        default:
          break;
      }
    }
  }
  layout.num_inputs = method->inputs() ? method->inputs()->size() : 0;
  layout.num_outputs = method->outputs() ? method->outputs()->size() : 0;
  if (const auto* instructions = method->instructions()) {
    for (uint32_t i = 0; i < instructions->size(); ++i) {
      const fb::Instruction* instr = instructions->Get(i);
      if (instr == nullptr) continue;
      if (const fb::KernelCall* call = instr->kind_as_KernelCall()) {
        layout.num_steps = layout_saturating_add(layout.num_steps, 1);
        if (call->args()) {
          layout.num_step_args = layout_saturating_add(layout.num_step_args, call->args()->size());
        }
      } else if (const fb::DelegateCall* call = instr->kind_as_DelegateCall()) {
        ++layout.num_delegate_calls;
        const uint32_t begin = call->fallback_begin();
        const uint32_t end = call->fallback_end();
        const uint64_t fallback_steps = (begin < end) ? end - begin : 0;
        layout.num_steps =
            layout_saturating_add(layout.num_steps, fallback_steps > 1 ? fallback_steps : 1);
        const uint64_t own_args = call->args() ? call->args()->size() : 0;
        const uint64_t fallback_args = layout_fallback_args(method, begin, end);
        layout.num_step_args = layout_saturating_add(
            layout.num_step_args, own_args > fallback_args ? own_args : fallback_args);
      }
    }
  }
  if (const auto* delegates = method->delegates()) {
    layout.num_delegates = delegates->size();
    for (uint32_t i = 0; i < delegates->size(); ++i) {
      const fb::Delegate* d = delegates->Get(i);
      if (d != nullptr && d->compile_specs() != nullptr) {
        layout.num_specs = layout_saturating_add(layout.num_specs, d->compile_specs()->size());
      }
    }
  }
  layout.dynamic = compute_dynamic_layout(method);
  return layout;
}

/// Bytes of method allocator that the arrays of `layout` need, with worst-case alignment
/// padding for each array (saturating at UINT64_MAX).
inline uint64_t method_layout_bytes(const MethodLayout& l) {
  uint64_t total = 0;
  layout_add_array(&total, l.num_values, sizeof(EValue), alignof(EValue));
  layout_add_array(&total, l.num_tensors, sizeof(TensorView), alignof(TensorView));
  layout_add_array(&total, l.num_int64, sizeof(int64_t), alignof(int64_t));
  layout_add_array(&total, l.num_double, sizeof(double), alignof(double));
  layout_add_array(&total, l.num_quant, sizeof(QuantView), alignof(QuantView));
  layout_add_array(&total, l.num_tensor_refs, sizeof(TensorView*), alignof(TensorView*));
  layout_add_array(&total, layout_saturating_add(l.num_inputs, l.num_inputs), sizeof(uint32_t),
                   alignof(uint32_t));
  layout_add_array(&total, l.num_outputs, sizeof(uint32_t), alignof(uint32_t));
  layout_add_array(&total, l.num_steps, sizeof(MethodStep), alignof(MethodStep));
  layout_add_array(&total, l.num_step_args, sizeof(EValue*), alignof(EValue*));
  layout_add_array(&total, l.num_delegates, sizeof(MethodDelegateSlot),
                   alignof(MethodDelegateSlot));
  layout_add_array(&total, l.num_specs, sizeof(CompileSpecView), alignof(CompileSpecView));
  layout_add_array(&total, l.num_delegate_calls, sizeof(DelegatePath), alignof(DelegatePath));
  return layout_saturating_add(total, dynamic_layout_bytes(l.dynamic));
}

}  // namespace internal
}  // namespace tern
