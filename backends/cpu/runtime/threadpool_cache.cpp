#include "backends/cpu/runtime/threadpool_cache.h"

#include <pthread.h>

namespace tern::cpu {
namespace {

struct PoolEntry {
  uint32_t num_threads = 0;
  pthreadpool_t pool = nullptr;
  uint32_t refs = 0;
};

constexpr int kMaxPools = 8;
pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
PoolEntry g_pools[kMaxPools];

}  // namespace

pthreadpool_t acquire_threadpool(uint32_t num_threads) {
  if (num_threads == 1) return nullptr;
  pthread_mutex_lock(&g_mutex);
  pthreadpool_t result = nullptr;
  PoolEntry* free_slot = nullptr;
  for (PoolEntry& e : g_pools) {
    if (e.pool != nullptr && e.num_threads == num_threads) {
      ++e.refs;
      result = e.pool;
      break;
    }
    if (e.pool == nullptr && free_slot == nullptr) free_slot = &e;
  }
  if (result == nullptr) {
    result = pthreadpool_create(num_threads);
    if (result != nullptr) {
      if (free_slot != nullptr) {
        free_slot->num_threads = num_threads;
        free_slot->pool = result;
        free_slot->refs = 1;
      } else {
        // Table full: an unshared pool, destroyed by release_threadpool when not found.
      }
    }
  }
  pthread_mutex_unlock(&g_mutex);
  return result;
}

void release_threadpool(pthreadpool_t pool) {
  if (pool == nullptr) return;
  pthread_mutex_lock(&g_mutex);
  bool found = false;
  for (PoolEntry& e : g_pools) {
    if (e.pool == pool) {
      found = true;
      if (--e.refs == 0) {
        pthreadpool_destroy(e.pool);
        e = PoolEntry();
      }
      break;
    }
  }
  if (!found) pthreadpool_destroy(pool);
  pthread_mutex_unlock(&g_mutex);
}

}  // namespace tern::cpu
