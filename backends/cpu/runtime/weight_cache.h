// Packed weights shared between the cpu delegates of a process (internal to
// backends/cpu/runtime). A delegate packs each of its kept Derived values (a packed GEMM panel,
// re-laid quantized codes, ...) from program constants at its first prepare; when another
// delegate — another method of the same program, typically a language model's prefill and
// decode — makes a value by the same recipe from the same constants (the same addresses and
// byte counts, the same parameters), it reads the first one's buffer instead of packing its own
// copy. Each delegate's buffer block is reference-counted: a block lives while its delegate or
// any delegate reading from it does. A key holds the constants' addresses, which stay valid and
// unchanged while the delegate that packed from them lives (a Program outlives its methods;
// constants are read-only); its entries leave the cache when that delegate goes
// (weight_cache_forget), so no key ever names an address that may since hold other bytes.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"

namespace tern::cpu {

/// One delegate's block of packed weights (the memory it frees), reference-counted.
struct WeightBlock;

/// Wraps `mem` (std::aligned_alloc'd, may be null) with one reference. Null when out of memory
/// (the caller then frees `mem` itself).
WeightBlock* weight_block_create(void* mem);
/// Drops one reference (null: nothing); the last frees the block's memory.
void weight_block_release(WeightBlock* block);
/// Removes the cache entries of values made in `block` (its delegate is going: the constants
/// their keys name may go with it). Readers keep their references.
void weight_cache_forget(WeightBlock* block);

/// What makes a packed value: its recipe (with the blob-local source indices cleared), each
/// source slot's constant address and byte count, and the value's element count.
struct WeightKey {
  BlobRecipe recipe;
  const void* source[kRecipeSources];
  uint64_t source_bytes[kRecipeSources];
  uint64_t numel;
};

/// Zeroes `key` (padding included, so keys compare bytewise).
void weight_key_clear(WeightKey* key);

/// The packed value made by `key` and the block holding it (with one more reference, which the
/// caller releases with weight_block_release), or null when no delegate has made it.
const float* weight_cache_find(const WeightKey& key, WeightBlock** block);

/// Records that `data`, inside `block`, holds the value made by `key` (nothing when an equal
/// key is already recorded, or when there is no memory for the entry: the value is then just
/// not shared).
void weight_cache_insert(const WeightKey& key, WeightBlock* block, const float* data);

/// Entries in the cache and hits since the process started (tests).
struct WeightCacheStats {
  uint64_t entries = 0;
  uint64_t hits = 0;
};
WeightCacheStats weight_cache_stats();

}  // namespace tern::cpu
