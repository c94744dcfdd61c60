// tern::add(a, b, out) and tern::add(a, b, alpha, out): out = a + alpha * b, broadcasting.
#include "runtime/kernels/portable/elementwise_binary.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

struct AddOp {
  template <typename T>
  static T apply(T a, T b, T alpha) {
    if constexpr (std::is_integral<T>::value) {
      return wrap_add(a, wrap_mul(alpha, b));
    } else {
      return a + alpha * b;
    }
  }
};

}  // namespace

Error add(KernelContext& /*context*/, Span<EValue*> args) {
  return run_binary<AddOp>("tern::add", args, /*accepts_alpha=*/true);
}

}  // namespace portable
}  // namespace tern
