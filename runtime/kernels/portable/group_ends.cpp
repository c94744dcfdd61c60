#include "runtime/kernels/portable/group_ends.h"

#include "runtime/kernels/portable/data_movement_args.h"

namespace tern {
namespace portable {

Error check_group_ends(const char* op, const char* name, const TensorView& ends, int64_t rows) {
  int64_t start = 0;
  for (int64_t g = 0; g < ends.sizes[0]; ++g) {
    const int64_t end = dm::index_at(ends, static_cast<uint64_t>(g));
    TERN_CHECK_OR_RETURN_ERROR(end >= start && end <= rows, InvalidArgument,
                               "%s: %s[%lld] is %lld, expected %lld..%lld (the ends must not go "
                               "backwards nor past the %lld rows)",
                               op, name, static_cast<long long>(g), static_cast<long long>(end),
                               static_cast<long long>(start), static_cast<long long>(rows),
                               static_cast<long long>(rows));
    start = end;
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
