// Seeds of fuzz_vulkan_blob: the delegate blobs the vulkan backend's compile half writes for a
// few graphs that together use every node op of the blob (built only with the vulkan
// backend: TERN_FUZZ_VULKAN_BLOB).
#pragma once

#include <vector>

#include "tests/fuzz/fuzz_corpus.h"

namespace tern::fuzz {

/// One seed per graph, "<graph>.blob": the vulkan blob of the graph's one delegate region.
std::vector<Seed> vulkan_blob_seeds();

}  // namespace tern::fuzz
