// A reader and writer of the safetensors format (8-byte little-endian header length, JSON
// header, raw little-endian tensor bytes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "tools/compiler/constant_bytes.h"

namespace tern::compiler {

struct SafeTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// The tensor's bytes: owned, or (read_safetensors) borrowed from the mapped file.
  ConstantBytes data;
};

/// Parses safetensors bytes; throws std::runtime_error naming the problem (truncated header,
/// bad JSON, offsets out of range or overlapping, byte size not matching dtype x shape,
/// unsupported dtype string).
/// parse_safetensors copies every tensor's bytes. read_safetensors maps the file and borrows
/// each tensor whose bytes lie at a multiple of its element size (every tensor of a file whose
/// tensors are ordered by decreasing element size, as tern_export writes them) from the
/// mapping, which stays mapped while any of them is held; the others are copied.
std::map<std::string, SafeTensor> parse_safetensors(const std::vector<uint8_t>& bytes);
std::map<std::string, SafeTensor> read_safetensors(const std::string& path);

/// Serializes tensors (dtype strings "F32", "I64", "U8", ... as safetensors names them).
std::vector<uint8_t> write_safetensors(const std::map<std::string, SafeTensor>& tensors);

}  // namespace tern::compiler
