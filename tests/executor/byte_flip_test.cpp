// Integrity: every byte of a program file is flipped in turn (xor 0xFF, then xor 0x01). Each
// flipped file must be rejected by Program::load with Full verification (what `tern verify`
// does), or be provably harmless: it loads, its methods load, and running them gives outputs
// bit-identical to the original file's. A flip that loads but changes anything is a bug (a
// byte no checksum covers that matters).
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "schema/program_generated.h"
#include "tests/executor/hardening_util.h"
#include "tests/fuzz/sample_programs.h"

namespace tern {
namespace {

struct Counts {
  size_t rejected = 0;  // Program::load (Full) refused the file
  size_t harmless = 0;  // loaded and ran with bit-identical outputs
  std::map<Error, size_t> by_error;
  std::map<std::string, size_t> harmless_regions;
};

/// Outputs of every method of the program in `bytes`, on fixed inputs; an error string when
/// a method fails to load or run. `bytes` must already have passed Program::load.
std::string run_all(const Program& program, std::vector<uint8_t>* outputs) {
  // Shared state (format 1.2): one buffer for the program, as the methods run in order.
  hardening::Bytes shared = hardening::exact_bytes(program.shared_state_bytes());
  const Span<uint8_t> shared_span(shared.get(), program.shared_state_bytes());
  if (program.init_shared_state(shared_span) != Error::Ok) {
    return std::string("init_shared_state: ") + last_error_message();
  }
  for (size_t m = 0; m < program.num_methods(); ++m) {
    const char* name = program.method_name(m).get();
    const MethodMeta meta = program.method_meta(name).get();
    auto memory = hardening::ExactMemory::from_meta(meta);
    memory->manager()->shared_state = shared_span;
    auto method = program.load_method(name, memory->manager());
    if (!method.ok()) return std::string("load_method: ") + last_error_message();
    auto inputs = hardening::make_inputs(meta, 7);
    for (int run = 0; run < 2; ++run) {
      if (hardening::set_inputs(*method, meta, inputs) != Error::Ok ||
          method->execute() != Error::Ok) {
        return std::string("execute: ") + last_error_message();
      }
      const std::vector<uint8_t> out = hardening::output_bytes(*method);
      outputs->insert(outputs->end(), out.begin(), out.end());
    }
  }
  return "";
}

/// Which part of the file `offset` is in, from the header and segment table (docs/format.md).
std::string region_of(const Program& program, size_t offset) {
  const FileHeader& h = program.header();
  if (offset < kFileHeaderSize) return "header";
  if (offset >= h.flatbuffer_offset && offset < h.flatbuffer_offset + h.flatbuffer_size)
    return "flatbuffer";
  if (offset >= h.segment_area_offset && offset < h.segment_area_offset + h.segment_area_size) {
    const uint64_t in_area = offset - h.segment_area_offset;
    const auto* segments = program.flatbuffer()->segments();
    for (uint32_t i = 0; segments != nullptr && i < segments->size(); ++i) {
      const fb::Segment* s = segments->Get(i);
      if (in_area >= s->offset() && in_area < s->offset() + s->size()) {
        return "segment " + std::to_string(i);
      }
    }
    return "alignment padding between segments";
  }
  return "padding between the FlatBuffer and the segment area";
}

Counts flip_every_byte(const std::vector<uint8_t>& original) {
  Counts counts;
  hardening::OwnedProgram reference_program(original);
  std::vector<uint8_t> reference;
  const std::string ref_error = run_all(*reference_program, &reference);
  EXPECT_EQ(ref_error, "");

  hardening::Bytes buffer = hardening::exact_bytes(original.size());
  for (size_t offset = 0; offset < original.size(); ++offset) {
    for (const uint8_t mask : {uint8_t{0xFF}, uint8_t{0x01}}) {
      std::memcpy(buffer.get(), original.data(), original.size());
      buffer.get()[offset] ^= mask;
      BufferDataLoader loader(buffer.get(), original.size());
      clear_error_message();
      auto program = Program::load(&loader);  // Verification::Full
      if (!program.ok()) {
        ++counts.rejected;
        ++counts.by_error[program.error()];
        EXPECT_STRNE(last_error_message(), "") << "offset " << offset << ": no message";
        continue;
      }
      std::vector<uint8_t> outputs;
      const std::string error = run_all(*program, &outputs);
      EXPECT_EQ(error, "") << "flip at offset " << offset << " (xor 0x" << std::hex << int{mask}
                           << std::dec << ", " << region_of(*reference_program, offset)
                           << ") loads but then fails";
      EXPECT_TRUE(outputs == reference)
          << "flip at offset " << offset << " (xor 0x" << std::hex << int{mask} << std::dec << ", "
          << region_of(*reference_program, offset) << ") loads and changes the outputs";
      if (error.empty() && outputs == reference) {
        ++counts.harmless;
        ++counts.harmless_regions[region_of(*reference_program, offset)];
      }
    }
  }
  return counts;
}

void report(const std::string& name, size_t file_size, const Counts& c) {
  std::cout << "[byte flips] " << name << ": " << file_size << " bytes, " << 2 * file_size
            << " flips: " << c.rejected << " rejected by Program::load (Full), " << c.harmless
            << " harmless (load and identical outputs)\n";
  for (const auto& [error, n] : c.by_error) {
    std::cout << "[byte flips]   rejected with " << to_string(error) << ": " << n << "\n";
  }
  for (const auto& [region, n] : c.harmless_regions) {
    std::cout << "[byte flips]   harmless in " << region << ": " << n << "\n";
  }
  ::testing::Test::RecordProperty(name + "_rejected", static_cast<int>(c.rejected));
  ::testing::Test::RecordProperty(name + "_harmless", static_cast<int>(c.harmless));
}

class ByteFlip : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fuzz::register_sample_kernels_and_backend()); }
};

TEST_F(ByteFlip, DemoProgramEveryFlipIsRejectedOrHarmless) {
  const std::string dir = tern::testing_support::unique_temp_path("byte_flip_demo");
  const std::vector<uint8_t> bytes = hardening::demo_program_bytes(dir);
  std::filesystem::remove_all(dir);
  const Counts c = flip_every_byte(bytes);
  report("demo_mlp", bytes.size(), c);
  EXPECT_EQ(c.rejected + c.harmless, 2 * bytes.size());
}

TEST_F(ByteFlip, DelegateProgramEveryFlipIsRejectedOrHarmless) {
  const std::vector<uint8_t> bytes = fuzz::compile_one(fuzz::delegate_graph(), "delegate");
  const Counts c = flip_every_byte(bytes);
  report("delegate", bytes.size(), c);
  EXPECT_EQ(c.rejected + c.harmless, 2 * bytes.size());
}

// Quantized weights (nf4 double-quant, fp8 2-D block and per-channel): the packed codes and
// their tables are segments, their parameters are in the FlatBuffer (docs/hardening.md).
TEST_F(ByteFlip, QuantizedProgramEveryFlipIsRejectedOrHarmless) {
  const std::vector<uint8_t> bytes = fuzz::compile_one(fuzz::quantized_graph(), "quantized");
  const Counts c = flip_every_byte(bytes);
  report("quantized", bytes.size(), c);
  EXPECT_EQ(c.rejected + c.harmless, 2 * bytes.size());
}

// Bounded-dynamic shapes (format 1.1): symbols, dim_symbols and symbolic ints are in the
// FlatBuffer (docs/dynamic-shapes.md).
TEST_F(ByteFlip, DynamicProgramEveryFlipIsRejectedOrHarmless) {
  const std::vector<uint8_t> bytes = fuzz::compile_one(fuzz::dynamic_graph(), "dynamic");
  const Counts c = flip_every_byte(bytes);
  report("dynamic", bytes.size(), c);
  EXPECT_EQ(c.rejected + c.harmless, 2 * bytes.size());
}

// Shared state (format 1.2): its declaration is in the FlatBuffer, its initial value a segment;
// two methods share it (docs/format.md "Shared state").
TEST_F(ByteFlip, SharedStateProgramEveryFlipIsRejectedOrHarmless) {
  const std::vector<uint8_t> bytes =
      compiler::compile_program(fuzz::shared_state_program()).bytes;
  const Counts c = flip_every_byte(bytes);
  report("shared_state", bytes.size(), c);
  EXPECT_EQ(c.rejected + c.harmless, 2 * bytes.size());
}

}  // namespace
}  // namespace tern
