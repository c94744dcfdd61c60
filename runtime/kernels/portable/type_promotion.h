// ATen's type promotion (torch.result_type) for the elementwise kernels: tensors with dims
// take priority over 0-dim tensors, which take priority over scalar arguments, unless a
// lower-priority operand is of a higher category (bool < int < float).
#pragma once

#include "runtime/core/dtype.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor_view.h"

namespace tern {
namespace portable {

/// torch.promote_types for the plain dtypes (not nf4/fp8): bool < ints < floats; u8 with i8
/// gives i16; f16 with bf16 gives f32.
DType promote_types(DType a, DType b);

/// Accumulates operands and yields their result dtype, as torch.result_type does.
class ResultType {
 public:
  /// A tensor operand (rank 0 counts as a 0-dim tensor).
  void add_tensor(const TensorView& t);
  /// A scalar operand: Int counts as i64, Double as f32 (the default dtype), Bool as bool.
  /// Other tags are ignored (None bounds of clamp).
  void add_scalar(const EValue& v);
  /// The result dtype; F32 when nothing was added.
  DType result() const;

 private:
  bool has_dim_ = false, has_zero_ = false, has_scalar_ = false;
  DType dim_ = DType::F32, zero_ = DType::F32, scalar_ = DType::F32;
};

}  // namespace portable
}  // namespace tern
