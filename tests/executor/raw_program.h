// Test-only: .pte files with any field set to any (also invalid) value. A RawProgram is the
// serializer's explicit file description (compiler::pte::File, tools/compiler/serializer.h)
// plus the bytes of its segment area; assemble() writes it with compiler::write_pte, the layer
// under serialize_program, which checks nothing.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/span.h"
#include "runtime/executor/file_header.h"
#include "tools/compiler/serializer.h"

namespace tern::testing {

using RawQuant = compiler::pte::Quant;
using RawTensor = compiler::pte::Tensor;
using RawValue = compiler::pte::Value;
using RawInstruction = compiler::pte::Instruction;
using RawArena = compiler::pte::Arena;
using RawDelegate = compiler::pte::Delegate;
using RawState = compiler::pte::StateTensor;
using RawMethod = compiler::pte::Method;
using RawSegment = compiler::pte::Segment;  // checksum absent: the XXH3 of its bytes in `area`

/// A whole file: the description plus the segment area's bytes (assemble() sets area_size and
/// area_contents from `area`).
struct RawProgram : compiler::pte::File {
  std::vector<uint8_t> area;
};

/// Writes the file: header, FlatBuffer at 64, then the segment area; checksums right.
inline std::vector<uint8_t> assemble(const RawProgram& p) {
  compiler::pte::File file = p;
  file.area_size = p.area.size();
  file.area_contents = {
      compiler::pte::AreaBytes{0, Span<const uint8_t>(p.area.data(), p.area.size())}};
  return compiler::write_pte(file);
}

/// Recomputes the header checksum of a file after a test edited its header or FlatBuffer.
inline void refresh_header_checksum(std::vector<uint8_t>& file) {
  uint64_t fb_size = 0;
  std::memcpy(&fb_size, file.data() + 24, 8);  // little-endian host
  std::memset(file.data() + kChecksumFieldOffset, 0, 8);
  const uint64_t checksum =
      compute_header_checksum(file.data(), Span<const uint8_t>(file.data() + 64, fb_size));
  std::memcpy(file.data() + kChecksumFieldOffset, &checksum, 8);
}

inline RawValue raw_f32_tensor(std::vector<int64_t> sizes, uint8_t storage, uint32_t location,
                               uint64_t offset) {
  RawValue v;
  v.tensor.sizes = std::move(sizes);
  v.tensor.storage = storage;
  v.tensor.location = location;
  v.tensor.offset = offset;
  return v;
}

/// A valid program: forward(x f32[2,3]) = matmul(x, w f32[3,4] constant) -> y f32[2,4].
/// Values: 0 x (arena 0 @0, 24 B), 1 w (segment 0, 48 B), 2 y (arena 0 @64, 32 B), 3 int 7.
inline RawProgram valid_raw_program() {
  RawProgram p;
  p.producer = "raw_program.h";
  RawMethod m;
  m.name = "forward";
  m.values.push_back(raw_f32_tensor({2, 3}, 2, 0, 0));
  m.values.push_back(raw_f32_tensor({3, 4}, 1, 0, 0));
  m.values.push_back(raw_f32_tensor({2, 4}, 2, 0, 64));
  RawValue i;
  i.type = fb::Value::Int;
  i.int_value = 7;
  m.values.push_back(i);
  m.inputs = {0};
  m.outputs = {2};
  m.operators = {"tern::matmul"};
  RawInstruction call;
  call.index = 0;
  call.args = {0, 1, 2};
  m.instructions = {call};
  m.arenas = {RawArena{128, 64, 96}};
  p.methods.push_back(m);
  p.area.resize(48);
  for (size_t k = 0; k < p.area.size(); ++k) p.area[k] = static_cast<uint8_t>(k * 7 + 1);
  p.segments = {RawSegment{0, 48, 64, std::nullopt}};
  return p;
}

}  // namespace tern::testing
