// Internal to the executor: a loaded method's bounded-dynamic shapes (docs/dynamic-shapes.md).
// Load finds every tensor with dynamic dims and every int that follows a dimension symbol and
// keeps pointers to their (method-allocator) storage; set_input checks an input's sizes
// against its bounds and records them; execute derives each symbol's size from the inputs and
// rewrites the sizes, byte counts and symbolic ints before the first step. Nothing here
// allocates after load.
#pragma once

#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor_view.h"
#include "runtime/executor/method_step.h"
#include "schema/program_generated.h"

namespace tern {
namespace internal {

struct LoadContext;

/// One tensor with dynamic dims: its view and the writable sizes array behind view->sizes.
struct DynamicTensorSlot {
  TensorView* view = nullptr;
  int64_t* sizes = nullptr;       ///< rank entries in the method allocator
  int8_t symbols[kMaxRank] = {};  ///< per dim: -1 static, else the symbol index
  uint32_t value = 0;             ///< value index
  int32_t input = -1;             ///< method input index, or -1
};

/// An int (or int-list item) that holds a symbol's current size.
struct SymbolicIntSlot {
  int64_t* target = nullptr;
  uint32_t symbol = 0;
};

/// The dynamic-shape state of a loaded method; every array lives in the method allocator.
struct DynamicShapes {
  const fb::Method* method = nullptr;
  uint32_t num_symbols = 0;
  int64_t* symbol_values = nullptr;  ///< current size of each symbol (valid after resolve)
  int32_t* symbol_input = nullptr;   ///< scratch: the input that bound each symbol
  DynamicTensorSlot* tensors = nullptr;
  uint32_t num_tensors = 0;
  SymbolicIntSlot* ints = nullptr;
  uint32_t num_ints = 0;

  /// The slot of method input `input`, or null when that input has no dynamic dim.
  const DynamicTensorSlot* input_slot(size_t input) const;
  /// Whether `view` is one of the dynamic tensors.
  bool is_dynamic(const TensorView* view) const;
  const char* symbol_name(uint32_t s) const;
  int64_t symbol_min(uint32_t s) const;
  int64_t symbol_max(uint32_t s) const;
};

/// Element counts of a method's dynamic-shape arrays (for MethodLayout).
struct DynamicLayout {
  uint64_t num_symbols = 0;
  uint64_t num_tensors = 0;
  uint64_t num_ints = 0;
};
DynamicLayout compute_dynamic_layout(const fb::Method* method);
/// Bytes of method allocator those arrays need with worst-case padding (saturating).
uint64_t dynamic_layout_bytes(const DynamicLayout& layout);

/// Allocates and fills `*out` (null when the method has no symbols) from the method allocator
/// of `c`, after the values are loaded. `inputs` are the method's input value indices.
Error load_dynamic_shapes(LoadContext& c, const uint32_t* inputs, size_t num_inputs,
                          DynamicShapes** out);

/// Refuses a step that gives a dynamic tensor to a kernel not marked with
/// mark_kernel_dynamic_shapes, or to a delegate: NotSupported naming the step, op and tensor.
Error check_dynamic_step(const DynamicShapes& dynamic, const char* method_name,
                         const MethodStep& step);

/// Checks `input` against dynamic input `slot` (dtype and rank equal, static dims exact,
/// dynamic dims within [min, max], nbytes equal to the actual byte size) and on success
/// writes its sizes and byte count into the input's view. InvalidArgument naming the method,
/// input, dim, symbol, bound and size.
Error set_dynamic_input(const DynamicShapes& dynamic, const char* method_name, size_t index,
                        const DynamicTensorSlot& slot, const TensorView& input);

/// Derives each symbol's size from the inputs set so far (InvalidArgument when two inputs
/// disagree on a symbol), then rewrites every dynamic tensor's sizes and byte count and every
/// symbolic int. Never allocates.
Error resolve_dynamic_shapes(DynamicShapes& dynamic, const char* method_name);

}  // namespace internal
}  // namespace tern
