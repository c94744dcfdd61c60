// tern::mul(a, b, out): out = a * b, broadcasting.
#include "runtime/kernels/portable/elementwise_binary.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

struct MulOp {
  template <typename T>
  static T apply(T a, T b, T /*alpha*/) {
    return wrap_mul(a, b);
  }
};

}  // namespace

Error mul(KernelContext& /*context*/, Span<EValue*> args) {
  return run_binary<MulOp>("tern::mul", args, /*accepts_alpha=*/false);
}

}  // namespace portable
}  // namespace tern
