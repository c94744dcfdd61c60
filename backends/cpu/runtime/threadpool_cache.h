// The process-wide pthreadpools the cpu delegates share, one per thread count (internal).
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

/// A pool of `num_threads` workers (0: one per core), shared and reference-counted; null for
/// one thread (XNNPACK then runs on the caller's thread) or when no pool could be made.
/// Thread-safe. Each non-null result is given back with release_threadpool().
pthreadpool_t acquire_threadpool(uint32_t num_threads);

/// Drops one reference taken by acquire_threadpool(); the last one destroys the pool.
/// Null is ignored. Thread-safe.
void release_threadpool(pthreadpool_t pool);

}  // namespace tern::cpu
