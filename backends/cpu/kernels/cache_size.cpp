#include "backends/cpu/kernels/cache_size.h"

#include <unistd.h>

#include <cstdio>

namespace tern::cpu {
namespace {

/// Linux's sysfs entry for cpu0's unified level-2 cache ("2048K"), or 0.
int64_t l2_from_sysfs() {
  for (int index = 0; index < 8; ++index) {
    char path[96];
    std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
    std::FILE* f = std::fopen(path, "r");
    if (f == nullptr) return 0;
    int level = 0;
    const bool read_level = std::fscanf(f, "%d", &level) == 1;
    std::fclose(f);
    if (!read_level || level != 2) continue;
    std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    f = std::fopen(path, "r");
    if (f == nullptr) return 0;
    long long size = 0;
    char unit = 0;
    const int got = std::fscanf(f, "%lld%c", &size, &unit);
    std::fclose(f);
    if (got < 1 || size <= 0) return 0;
    if (got == 2 && (unit == 'K' || unit == 'k')) size <<= 10;
    if (got == 2 && (unit == 'M' || unit == 'm')) size <<= 20;
    return static_cast<int64_t>(size);
  }
  return 0;
}

int64_t detect() {
#if defined(_SC_LEVEL2_CACHE_SIZE)
  const long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (bytes > 0) return static_cast<int64_t>(bytes);
#endif
  return l2_from_sysfs();
}

}  // namespace

int64_t l2_cache_bytes() {
  static const int64_t bytes = detect();
  return bytes;
}

}  // namespace tern::cpu
