// The size of one core's L2 cache, as the OS reports it, for the kernels' cache blocking.
#pragma once

#include <cstdint>

namespace tern::cpu {

/// Bytes of the L2 cache one core uses (glibc's sysconf, else Linux's sysfs for cpu0), read
/// once; 0 when neither says (other systems, or a VM that hides its caches).
int64_t l2_cache_bytes();

}  // namespace tern::cpu
