#include "backends/cpu/runtime/weight_cache.h"

#include <pthread.h>

#include <cstdlib>
#include <cstring>

namespace tern::cpu {

struct WeightBlock {
  void* mem = nullptr;
  uint32_t refs = 0;
};

namespace {

struct Entry {
  WeightKey key;
  WeightBlock* block = nullptr;
  const float* data = nullptr;
  Entry* next = nullptr;
};

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
Entry* g_entries = nullptr;
uint64_t g_count = 0;
uint64_t g_hits = 0;

bool same_key(const WeightKey& a, const WeightKey& b) {
  return std::memcmp(&a, &b, sizeof(WeightKey)) == 0;
}

}  // namespace

WeightBlock* weight_block_create(void* mem) {
  WeightBlock* b = static_cast<WeightBlock*>(std::malloc(sizeof(WeightBlock)));
  if (b == nullptr) return nullptr;
  b->mem = mem;
  b->refs = 1;
  return b;
}

void weight_cache_forget(WeightBlock* block) {
  if (block == nullptr) return;
  pthread_mutex_lock(&g_mutex);
  for (Entry** e = &g_entries; *e != nullptr;) {
    if ((*e)->block != block) {
      e = &(*e)->next;
      continue;
    }
    Entry* gone = *e;
    *e = gone->next;
    std::free(gone);
    --g_count;
  }
  pthread_mutex_unlock(&g_mutex);
}

void weight_block_release(WeightBlock* block) {
  if (block == nullptr) return;
  pthread_mutex_lock(&g_mutex);
  const bool last = --block->refs == 0;
  pthread_mutex_unlock(&g_mutex);
  if (!last) return;
  weight_cache_forget(block);  // none left normally: the owner forgot them when it went
  std::free(block->mem);
  std::free(block);
}

void weight_key_clear(WeightKey* key) { std::memset(key, 0, sizeof(WeightKey)); }

const float* weight_cache_find(const WeightKey& key, WeightBlock** block) {
  const float* data = nullptr;
  pthread_mutex_lock(&g_mutex);
  for (Entry* e = g_entries; e != nullptr; e = e->next) {
    if (!same_key(e->key, key)) continue;
    ++e->block->refs;
    *block = e->block;
    data = e->data;
    ++g_hits;
    break;
  }
  pthread_mutex_unlock(&g_mutex);
  return data;
}

void weight_cache_insert(const WeightKey& key, WeightBlock* block, const float* data) {
  Entry* fresh = static_cast<Entry*>(std::malloc(sizeof(Entry)));
  if (fresh == nullptr) return;
  std::memcpy(&fresh->key, &key, sizeof(WeightKey));
  fresh->block = block;
  fresh->data = data;
  pthread_mutex_lock(&g_mutex);
  bool known = false;
  for (Entry* e = g_entries; e != nullptr && !known; e = e->next) known = same_key(e->key, key);
  if (!known) {
    fresh->next = g_entries;
    g_entries = fresh;
    ++g_count;
    fresh = nullptr;
  }
  pthread_mutex_unlock(&g_mutex);
  std::free(fresh);
}

WeightCacheStats weight_cache_stats() {
  pthread_mutex_lock(&g_mutex);
  WeightCacheStats s;
  s.entries = g_count;
  s.hits = g_hits;
  pthread_mutex_unlock(&g_mutex);
  return s;
}

}  // namespace tern::cpu
