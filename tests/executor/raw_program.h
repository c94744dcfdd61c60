// Test-only: writes .pte files field by field with the generated FlatBuffers builder, so a test
// can set any field to any (also invalid) value. Independent of tools/compiler/serializer.cpp.
#pragma once

#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "runtime/executor/file_header.h"
#include "schema/program_generated.h"

namespace tern::testing {

struct RawQuant {
  uint8_t scheme = 0;
  uint32_t block_size = 64;
  int32_t absmax = -1;
  int32_t dq_codes = -1;
  int32_t dq_absmax2 = -1;
  int32_t dq_table = -1;
  uint32_t dq_block_size = 256;
  int32_t scale = -1;
  uint8_t granularity = 1;
  uint32_t block_rows = 128;
  uint32_t block_cols = 128;
};

struct RawTensor {
  uint8_t dtype = 0;  // f32
  std::vector<int64_t> sizes;
  std::optional<std::vector<uint8_t>> dim_order;
  uint8_t storage = 2;  // arena
  uint32_t location = 0;
  uint64_t offset = 0;
  std::optional<RawQuant> quant;
  uint8_t dynamism = 0;
  std::string name;
};

struct RawValue {
  fb::Value type = fb::Value::Tensor;
  bool omit_payload = false;
  RawTensor tensor;
  int64_t int_value = 0;
  std::vector<int32_t> items;  // tensor list
};

struct RawInstruction {
  fb::InstructionKind kind = fb::InstructionKind::KernelCall;
  uint32_t index = 0;  // op or delegate
  std::vector<int32_t> args;
  uint32_t fallback_begin = 0;
  uint32_t fallback_end = 0;
};

struct RawArena {
  uint64_t size = 0;
  uint32_t alignment = 64;
  uint64_t lower_bound = 0;
};

struct RawDelegate {
  std::string backend = "cpu";
  uint32_t segment = 0;
};

struct RawState {
  uint32_t value = 0;
  int32_t init_segment = -1;
};

struct RawMethod {
  std::optional<std::string> name = std::string("forward");
  std::vector<RawValue> values;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<std::string> operators;
  std::vector<RawInstruction> instructions;
  std::vector<RawInstruction> fallback;
  std::vector<RawDelegate> delegates;
  std::vector<RawArena> arenas;
  std::vector<RawState> state;
};

struct RawSegment {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t alignment = 64;
  std::optional<uint64_t> checksum;  // default: the XXH3 of the bytes in `area`
};

struct RawProgram {
  uint16_t major = kFormatVersionMajor;
  uint16_t minor = kFormatVersionMinor;
  std::optional<uint32_t> version;  // default major * 1000 + minor
  std::vector<RawMethod> methods;
  std::vector<RawSegment> segments;
  std::vector<uint8_t> area;
  uint64_t area_alignment = 64;  // the segment area's file offset is a multiple of this
};

inline flatbuffers::Offset<fb::Tensor> build_raw_tensor(flatbuffers::FlatBufferBuilder& b,
                                                        const RawTensor& t) {
  auto sizes = b.CreateVector(t.sizes);
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> dim_order;
  if (t.dim_order) dim_order = b.CreateVector(*t.dim_order);
  flatbuffers::Offset<fb::QuantParams> quant;
  if (t.quant) {
    const RawQuant& q = *t.quant;
    fb::QuantParamsBuilder qb(b);
    qb.add_scheme(static_cast<fb::QuantScheme>(q.scheme));
    qb.add_block_size(q.block_size);
    qb.add_absmax(q.absmax);
    qb.add_dq_codes(q.dq_codes);
    qb.add_dq_absmax2(q.dq_absmax2);
    qb.add_dq_table(q.dq_table);
    qb.add_dq_block_size(q.dq_block_size);
    qb.add_scale(q.scale);
    qb.add_granularity(static_cast<fb::ScaleGranularity>(q.granularity));
    qb.add_block_rows(q.block_rows);
    qb.add_block_cols(q.block_cols);
    quant = qb.Finish();
  }
  auto name = t.name.empty() ? flatbuffers::Offset<flatbuffers::String>() : b.CreateString(t.name);
  fb::TensorBuilder tb(b);
  tb.add_dtype(static_cast<fb::DType>(t.dtype));
  tb.add_sizes(sizes);
  if (t.dim_order) tb.add_dim_order(dim_order);
  tb.add_storage(static_cast<fb::StorageKind>(t.storage));
  tb.add_location(t.location);
  tb.add_offset(t.offset);
  if (t.quant) tb.add_quant(quant);
  tb.add_dynamism(static_cast<fb::ShapeDynamism>(t.dynamism));
  if (!t.name.empty()) tb.add_name(name);
  return tb.Finish();
}

inline flatbuffers::Offset<fb::Instruction> build_raw_instruction(flatbuffers::FlatBufferBuilder& b,
                                                                  const RawInstruction& i) {
  flatbuffers::Offset<void> payload;
  if (i.kind == fb::InstructionKind::KernelCall) {
    payload = fb::CreateKernelCall(b, i.index, b.CreateVector(i.args)).Union();
  } else if (i.kind == fb::InstructionKind::DelegateCall) {
    payload =
        fb::CreateDelegateCall(b, i.index, b.CreateVector(i.args), i.fallback_begin, i.fallback_end)
            .Union();
  }
  return fb::CreateInstruction(b, i.kind, payload);
}

/// Assembles a whole file: header, FlatBuffer at 64, then the segment area; checksums right.
inline std::vector<uint8_t> assemble(const RawProgram& p) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Method>> methods;
  for (const RawMethod& m : p.methods) {
    std::vector<flatbuffers::Offset<fb::EValue>> values;
    for (const RawValue& v : m.values) {
      flatbuffers::Offset<void> payload;
      if (!v.omit_payload) {
        switch (v.type) {
          case fb::Value::Tensor:
            payload = build_raw_tensor(b, v.tensor).Union();
            break;
          case fb::Value::Int:
            payload = fb::CreateInt(b, v.int_value).Union();
            break;
          case fb::Value::TensorList:
            payload = fb::CreateTensorList(b, b.CreateVector(v.items)).Union();
            break;
          case fb::Value::None:
            payload = fb::CreateNone(b).Union();
            break;
          default:
            payload = fb::CreateNone(b).Union();
            break;  // raw type, wrong payload
        }
      }
      values.push_back(fb::CreateEValue(b, v.type, payload));
    }
    std::vector<flatbuffers::Offset<flatbuffers::String>> ops;
    for (const auto& op : m.operators) ops.push_back(b.CreateString(op));
    std::vector<flatbuffers::Offset<fb::Instruction>> instructions, fallback;
    for (const auto& i : m.instructions) instructions.push_back(build_raw_instruction(b, i));
    for (const auto& i : m.fallback) fallback.push_back(build_raw_instruction(b, i));
    std::vector<flatbuffers::Offset<fb::Delegate>> delegates;
    for (const auto& d : m.delegates) {
      delegates.push_back(fb::CreateDelegate(b, b.CreateString(d.backend), d.segment));
    }
    std::vector<flatbuffers::Offset<fb::Arena>> arenas;
    for (const auto& a : m.arenas) {
      arenas.push_back(fb::CreateArena(b, a.size, a.alignment, a.lower_bound));
    }
    std::vector<flatbuffers::Offset<fb::StateTensor>> state;
    for (const auto& s : m.state)
      state.push_back(fb::CreateStateTensor(b, s.value, s.init_segment));
    auto name = m.name ? b.CreateString(*m.name) : flatbuffers::Offset<flatbuffers::String>();
    methods.push_back(fb::CreateMethod(
        b, name, b.CreateVector(values), b.CreateVector(m.inputs), b.CreateVector(m.outputs),
        b.CreateVector(ops), b.CreateVector(instructions), b.CreateVector(fallback),
        b.CreateVector(delegates), b.CreateVector(arenas), b.CreateVector(state)));
  }
  std::vector<flatbuffers::Offset<fb::Segment>> segments;
  for (const RawSegment& s : p.segments) {
    uint64_t checksum = 0;
    if (s.checksum) {
      checksum = *s.checksum;
    } else if (s.offset + s.size <= p.area.size()) {
      checksum = XXH3_64bits(p.area.data() + s.offset, s.size);
    }
    segments.push_back(fb::CreateSegment(b, s.offset, s.size, s.alignment, checksum));
  }
  const uint32_t version = p.version ? *p.version : p.major * 1000u + p.minor;
  auto root = fb::CreateProgram(b, version, b.CreateString("raw_program.h"), 0, 0,
                                b.CreateVector(methods), b.CreateVector(segments));
  fb::FinishProgramBuffer(b, root);

  const uint64_t fb_end = kFileHeaderSize + b.GetSize();
  const uint64_t area_offset =
      (fb_end + p.area_alignment - 1) / p.area_alignment * p.area_alignment;
  std::vector<uint8_t> file(area_offset + p.area.size(), 0);
  std::memcpy(file.data() + kFileHeaderSize, b.GetBufferPointer(), b.GetSize());
  if (!p.area.empty()) std::memcpy(file.data() + area_offset, p.area.data(), p.area.size());
  FileHeader h;
  h.version_major = p.major;
  h.version_minor = p.minor;
  h.flatbuffer_offset = kFileHeaderSize;
  h.flatbuffer_size = b.GetSize();
  h.segment_area_offset = area_offset;
  h.segment_area_size = p.area.size();
  encode_file_header(h, file.data());
  // Independent of compute_header_checksum: XXH3 of header (checksum zero) ++ FlatBuffer.
  std::vector<uint8_t> hashed(file.begin(), file.begin() + static_cast<long>(fb_end));
  h.checksum = XXH3_64bits(hashed.data(), hashed.size());
  encode_file_header(h, file.data());
  return file;
}

/// Recomputes the header checksum of a file after a test edited its header or FlatBuffer.
inline void refresh_header_checksum(std::vector<uint8_t>& file) {
  uint64_t fb_size = 0;
  std::memcpy(&fb_size, file.data() + 24, 8);  // little-endian host
  std::vector<uint8_t> hashed(file.begin(), file.begin() + static_cast<long>(64 + fb_size));
  std::memset(hashed.data() + kChecksumFieldOffset, 0, 8);
  const uint64_t checksum = XXH3_64bits(hashed.data(), hashed.size());
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
  RawMethod m;
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
