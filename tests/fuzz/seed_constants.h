// Deterministic constants for the fuzz seed graphs (cpu_blob_seeds, vulkan_blob_seeds,
// cuda_blob_seeds): the same weights on every machine, so the seed blobs are reproducible.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/compiler/graph_builder.h"

namespace tern::fuzz {

/// Deterministic weights in [-0.5, 0.5) (a linear congruential sequence from `seed`).
inline std::vector<float> seed_weights(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t state = seed * 2654435761u + 1;
  for (float& f : v) {
    state = state * 1664525u + 1013904223u;
    f = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return v;
}

/// An f32 constant of `sizes` filled with seed_weights(numel, seed).
inline int seed_constant(compiler::GraphBuilder& b, const std::string& name,
                         std::vector<int64_t> sizes, uint32_t seed) {
  size_t n = 1;
  for (int64_t d : sizes) n *= static_cast<size_t>(d);
  return b.constant_f32(name, std::move(sizes), seed_weights(n, seed));
}

}  // namespace tern::fuzz
