// Seed inputs for every fuzz target, made from the sample programs (sample_programs.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/fuzz/fuzz_entries.h"
#include "tools/compiler/graph.h"

namespace tern::fuzz {

/// One seed: a file name (no directory) and its bytes.
using Seed = std::pair<std::string, std::vector<uint8_t>>;

/// The seeds of `target`: compiled sample programs (.pte), fuzz_execute inputs, graph.json +
/// separator + safetensors documents, .npy files of every supported dtype, and cpu delegate
/// blobs (cpu_blob_seeds.h).
std::vector<Seed> seed_inputs(Target target);

/// `program` as graph.json text (docs/graph-format.md) whose weights file is
/// "weights.safetensors", and the bytes of that safetensors file.
std::pair<std::string, std::vector<uint8_t>> graph_json_document(
    const compiler::ProgramGraph& program);

/// Writes seed_inputs(t) into `dir`/<target_name(t)>/ for every target; throws
/// std::runtime_error naming a file it cannot write.
void write_seed_corpus(const std::string& dir);

}  // namespace tern::fuzz
