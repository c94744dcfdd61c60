// The table-driven FlatBuffer verifier (runtime/executor/flatbuffer_verifier.h) against the
// verifier flatc generates: on valid programs, on every single-byte change of their FlatBuffer,
// on truncations and on random multi-byte corruptions, both must accept or reject alike, and
// the corrupted programs must include many each rejects.
#include "runtime/executor/flatbuffer_verifier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/executor/file_header.h"
#include "schema/program_generated.h"
#include "tests/fuzz/sample_programs.h"

namespace tern {
namespace {

/// An 8-byte aligned copy of a FlatBuffer (the verifiers check alignment relative to it).
class AlignedFlatbuffer {
 public:
  explicit AlignedFlatbuffer(const std::vector<uint8_t>& bytes)
      : storage_((bytes.size() + 7) / 8 + 1), size_(bytes.size()) {
    if (!bytes.empty()) std::memcpy(data(), bytes.data(), bytes.size());  // data() may be null
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(storage_.data()); }
  size_t size() const { return size_; }

 private:
  std::vector<uint64_t> storage_;
  size_t size_;
};

bool generated_verifier(const uint8_t* data, size_t size) {
  flatbuffers::Verifier::Options options;
  options.max_depth = internal::kFlatbufferMaxDepth;
  options.max_tables = internal::kFlatbufferMaxTables;
  options.check_alignment = true;
  flatbuffers::Verifier verifier(data, size, options);
  return fb::VerifyProgramBuffer(verifier);
}

/// The FlatBuffer of a compiled program file.
std::vector<uint8_t> flatbuffer_of(const std::vector<uint8_t>& file) {
  auto header = decode_file_header(Span<const uint8_t>(file.data(), kFileHeaderSize), file.size());
  EXPECT_TRUE(header.ok()) << last_error_message();
  if (!header.ok()) return {};
  return std::vector<uint8_t>(file.begin() + header->flatbuffer_offset,
                              file.begin() + header->flatbuffer_offset + header->flatbuffer_size);
}

std::vector<std::pair<std::string, std::vector<uint8_t>>> sample_flatbuffers() {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  const std::pair<const char*, compiler::Graph> graphs[] = {
      {"elementwise", fuzz::elementwise_graph()},
      {"reshape", fuzz::reshape_graph()},
      {"state", fuzz::state_graph()},
      {"delegate", fuzz::delegate_graph()},
      {"int32", fuzz::int32_graph()},
      {"quantized", fuzz::quantized_graph()},
      {"demo_mlp", fuzz::demo_mlp_graph()},
      {"dynamic", fuzz::dynamic_graph()}};
  for (const auto& [name, graph] : graphs) {
    out.emplace_back(name, flatbuffer_of(fuzz::compile_one(graph, name)));
  }
  return out;
}

struct Tally {
  size_t accepted = 0;
  size_t rejected = 0;
};

/// Both verifiers on `bytes`; a failure names what differs.
void expect_same(AlignedFlatbuffer& buffer, const std::string& what, Tally* tally) {
  const bool generated = generated_verifier(buffer.data(), buffer.size());
  const bool compact = internal::verify_program_flatbuffer(buffer.data(), buffer.size());
  EXPECT_EQ(compact, generated) << what << ": the generated verifier "
                                << (generated ? "accepts" : "rejects");
  ++(generated ? tally->accepted : tally->rejected);
}

TEST(FlatbufferVerifier, AcceptsEveryValidSampleProgram) {
  for (const auto& [name, bytes] : sample_flatbuffers()) {
    ASSERT_FALSE(bytes.empty()) << name;
    AlignedFlatbuffer buffer(bytes);
    EXPECT_TRUE(generated_verifier(buffer.data(), buffer.size())) << name;
    EXPECT_TRUE(internal::verify_program_flatbuffer(buffer.data(), buffer.size())) << name;
  }
}

TEST(FlatbufferVerifier, AgreesOnEverySingleByteChange) {
  for (const auto& [name, bytes] : sample_flatbuffers()) {
    AlignedFlatbuffer buffer(bytes);
    Tally tally;
    for (size_t offset = 0; offset < bytes.size(); ++offset) {
      for (const uint8_t change : {0xFF, 0x01, 0x80, 0x10}) {
        std::memcpy(buffer.data(), bytes.data(), bytes.size());
        buffer.data()[offset] ^= change;
        expect_same(buffer,
                    name + " offset " + std::to_string(offset) + " xor " + std::to_string(change),
                    &tally);
        std::memcpy(buffer.data(), bytes.data(), bytes.size());
        buffer.data()[offset] = change == 0xFF ? 0 : change;  // also zeroes and small values
        expect_same(buffer,
                    name + " offset " + std::to_string(offset) + " set " +
                        std::to_string(change == 0xFF ? 0 : change),
                    &tally);
      }
      if (HasFailure()) return;
    }
    // Both kinds of outcome occur, so the comparison covers rejections, not only acceptance.
    EXPECT_GT(tally.rejected, bytes.size()) << name;
    EXPECT_GT(tally.accepted, 0u) << name;
  }
}

TEST(FlatbufferVerifier, AgreesOnTruncations) {
  for (const auto& [name, bytes] : sample_flatbuffers()) {
    Tally tally;
    for (size_t size = 0; size < bytes.size(); ++size) {
      AlignedFlatbuffer buffer(std::vector<uint8_t>(bytes.begin(), bytes.begin() + size));
      expect_same(buffer, name + " truncated to " + std::to_string(size), &tally);
      if (HasFailure()) return;
    }
    EXPECT_GT(tally.rejected, 0u) << name;
  }
}

TEST(FlatbufferVerifier, AgreesOnRandomCorruptions) {
  std::mt19937 rng(20261127);
  for (const auto& [name, bytes] : sample_flatbuffers()) {
    AlignedFlatbuffer buffer(bytes);
    Tally tally;
    for (int round = 0; round < 4000; ++round) {
      std::memcpy(buffer.data(), bytes.data(), bytes.size());
      const int changes = 1 + static_cast<int>(rng() % 8);
      for (int c = 0; c < changes; ++c) {
        const size_t at = rng() % bytes.size();
        switch (rng() % 4) {
          case 0:  // a random byte
            buffer.data()[at] = static_cast<uint8_t>(rng());
            break;
          case 1:  // a small little-endian 32-bit value (offsets, lengths, vtable sizes)
            if (at + 4 <= bytes.size()) {
              const uint32_t v = rng() % 256;
              std::memcpy(buffer.data() + at, &v, 4);
            }
            break;
          case 2:  // a 16-bit vtable entry
            if (at + 2 <= bytes.size()) {
              const uint16_t v = static_cast<uint16_t>(rng() % 64);
              std::memcpy(buffer.data() + at, &v, 2);
            }
            break;
          default:  // a large or negative 32-bit value
            if (at + 4 <= bytes.size()) {
              const uint32_t v = static_cast<uint32_t>(rng()) | 0x80000000u;
              std::memcpy(buffer.data() + at, &v, 4);
            }
            break;
        }
      }
      expect_same(buffer, name + " random round " + std::to_string(round), &tally);
      if (HasFailure()) return;
    }
    EXPECT_GT(tally.rejected, 100u) << name;
  }
}

// Union members the schema does not know and absent union values verify as in FlatBuffers.
TEST(FlatbufferVerifier, AgreesOnUnionEdgeCases) {
  flatbuffers::FlatBufferBuilder builder;
  std::vector<flatbuffers::Offset<fb::EValue>> values;
  values.push_back(fb::CreateEValue(builder, fb::Value::Int, fb::CreateInt(builder, 3).Union()));
  values.push_back(
      fb::CreateEValue(builder, static_cast<fb::Value>(200), fb::CreateInt(builder, 4).Union()));
  values.push_back(fb::CreateEValue(builder, fb::Value::Tensor, 0));  // type without value
  values.push_back(fb::CreateEValue(builder, fb::Value::NONE, fb::CreateNone(builder).Union()));
  const auto method =
      fb::CreateMethod(builder, builder.CreateString("forward"), builder.CreateVector(values));
  std::vector<flatbuffers::Offset<fb::Method>> methods = {method};
  const auto program = fb::CreateProgram(builder, 1000, 0, 0, 0, builder.CreateVector(methods));
  fb::FinishProgramBuffer(builder, program);
  const std::vector<uint8_t> bytes(builder.GetBufferPointer(),
                                   builder.GetBufferPointer() + builder.GetSize());
  AlignedFlatbuffer buffer(bytes);
  EXPECT_TRUE(generated_verifier(buffer.data(), buffer.size()));
  EXPECT_TRUE(internal::verify_program_flatbuffer(buffer.data(), buffer.size()));
  Tally tally;
  for (size_t offset = 0; offset < bytes.size(); ++offset) {
    for (const uint8_t change : {0xFF, 0x01, 0x04, 0x40}) {
      std::memcpy(buffer.data(), bytes.data(), bytes.size());
      buffer.data()[offset] ^= change;
      expect_same(buffer, "unions offset " + std::to_string(offset), &tally);
    }
  }
  EXPECT_GT(tally.rejected, 0u);
}

}  // namespace
}  // namespace tern
