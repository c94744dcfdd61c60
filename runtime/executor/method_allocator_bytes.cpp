// MethodMeta::method_allocator_bytes(): the method allocator budget of Method load.
#include "runtime/executor/method_layout.h"
#include "runtime/executor/method_meta.h"

namespace tern {

uint64_t MethodMeta::method_allocator_bytes() const {
  return internal::method_layout_bytes(internal::compute_method_layout(method_));
}

}  // namespace tern
