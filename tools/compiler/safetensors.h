// A reader and writer of the safetensors format (8-byte little-endian header length, JSON
// header, raw little-endian tensor bytes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace tern::compiler {

struct SafeTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/// Parses safetensors bytes; throws std::runtime_error naming the problem (truncated header,
/// bad JSON, offsets out of range or overlapping, byte size not matching dtype x shape,
/// unsupported dtype string).
std::map<std::string, SafeTensor> parse_safetensors(const std::vector<uint8_t>& bytes);
std::map<std::string, SafeTensor> read_safetensors(const std::string& path);

/// Serializes tensors (dtype strings "F32", "I64", "U8", ... as safetensors names them).
std::vector<uint8_t> write_safetensors(const std::map<std::string, SafeTensor>& tensors);

}  // namespace tern::compiler
