// Seeds of fuzz_cuda_blob: the delegate blobs the cuda backend's compile half writes for a few
// graphs that together use every node op of the blob (host code: built with or without nvcc,
// TERN_FUZZ_CUDA_BLOB).
#pragma once

#include <vector>

#include "tests/fuzz/fuzz_corpus.h"

namespace tern::fuzz {

/// One seed per graph, "<graph>.blob": the cuda blob of one region over all the graph's nodes.
std::vector<Seed> cuda_blob_seeds();

}  // namespace tern::fuzz
