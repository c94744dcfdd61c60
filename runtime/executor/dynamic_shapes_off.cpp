// Bounded dynamic shapes left out of the runtime (TERN_DYNAMIC_SHAPES=OFF, docs/size.md): the
// verifier refuses any method that declares them — naming the method, the value and the build
// option — so that no other code of method_dynamic.h is ever reached with a dynamic method;
// load records none, and the per-execute steps are never called (Method calls them only when
// load recorded some). Replaces method_dynamic.cpp and program_verifier_dynamic.cpp.
#include "runtime/executor/method_dynamic.h"
#include "runtime/executor/program_verifier.h"

namespace tern {
namespace internal {

Error verify_dynamic_shapes(const fb::Method* method, const char* name, const uint8_t*) {
  const bool symbols = method->symbols() != nullptr && method->symbols()->size() > 0;
  const bool ints = method->symbolic_ints() != nullptr && method->symbolic_ints()->size() > 0;
  TERN_CHECK_OR_RETURN_ERROR(!symbols && !ints, NotSupported,
                             "method '%s' has bounded dynamic dims (%s); this runtime was built "
                             "with TERN_DYNAMIC_SHAPES=OFF",
                             name, symbols ? "dimension symbols" : "symbolic ints");
  const auto* values = method->values();
  for (uint32_t v = 0; values != nullptr && v < values->size(); ++v) {
    const fb::Tensor* t = values->Get(v)->value_as_Tensor();
    if (t == nullptr) continue;
    bool tagged = t->dynamism() != fb::ShapeDynamism::Static;
    for (uint32_t d = 0; !tagged && t->dim_symbols() != nullptr && d < t->dim_symbols()->size();
         ++d) {
      tagged = t->dim_symbols()->Get(d) != -1;
    }
    TERN_CHECK_OR_RETURN_ERROR(!tagged, NotSupported,
                               "method '%s' value %u has dynamic dims; this runtime was built "
                               "with TERN_DYNAMIC_SHAPES=OFF",
                               name, v);
  }
  return Error::Ok;
}

const DynamicTensorSlot* DynamicShapes::input_slot(size_t) const { return nullptr; }
bool DynamicShapes::is_dynamic(const TensorView*) const { return false; }
const char* DynamicShapes::symbol_name(uint32_t) const { return ""; }
int64_t DynamicShapes::symbol_min(uint32_t) const { return 0; }
int64_t DynamicShapes::symbol_max(uint32_t) const { return 0; }

DynamicLayout compute_dynamic_layout(const fb::Method*) { return DynamicLayout(); }
uint64_t dynamic_layout_bytes(const DynamicLayout&) { return 0; }

Error load_dynamic_shapes(LoadContext&, const uint32_t*, size_t, DynamicShapes** out) {
  *out = nullptr;
  return Error::Ok;
}

Error check_dynamic_step(const DynamicShapes&, const char*, const MethodStep&) {
  return Error::Ok;  // unreachable: no method with dynamic dims passes verification
}

Error set_dynamic_input(const DynamicShapes&, const char* method_name, size_t, const DynamicTensorSlot&,
                        const TensorView&) {
  TERN_CHECK_OR_RETURN_ERROR(false, NotSupported,
                             "method '%s': dynamic inputs need TERN_DYNAMIC_SHAPES=ON",
                             method_name);
  return Error::NotSupported;
}

Error resolve_dynamic_shapes(DynamicShapes&, const char* method_name) {
  TERN_CHECK_OR_RETURN_ERROR(false, NotSupported,
                             "method '%s': dynamic shapes need TERN_DYNAMIC_SHAPES=ON",
                             method_name);
  return Error::NotSupported;
}

}  // namespace internal
}  // namespace tern
