// Reader of the graph.json + weights.safetensors interchange (docs/graph-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler {

/// Reads `graph_json_path` and the safetensors file it names (relative to the JSON file's
/// folder). Throws std::runtime_error with a message naming the file, the JSON path of the bad
/// field (e.g. "methods[0].nodes[3].args[1]") or the missing weight.
ProgramGraph read_graph_json(const std::string& graph_json_path);

/// Parses graph JSON text; `weights` supplies constant tensors by name (from safetensors).
ProgramGraph parse_graph_json(const std::string& json_text, const std::string& base_dir);

}  // namespace tern::compiler
