#include "runtime/core/tensor_view.h"

#include <cstdio>

namespace tern {

const char* format_shape(Span<const int64_t> sizes, char* buf, size_t buf_size) {
  if (buf_size == 0) return buf;
  size_t pos = 0;
  auto put = [&](const char* text) {
    int n = snprintf(buf + pos, buf_size - pos, "%s", text);
    if (n > 0) pos = (pos + static_cast<size_t>(n) < buf_size) ? pos + n : buf_size - 1;
  };
  put("[");
  char num[24];
  for (size_t i = 0; i < sizes.size(); ++i) {
    snprintf(num, sizeof(num), i ? ", %lld" : "%lld", static_cast<long long>(sizes[i]));
    put(num);
  }
  put("]");
  return buf;
}

}  // namespace tern
