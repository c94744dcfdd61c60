// Integrity of a quantized program (docs/hardening.md): every byte of the fuzz seed
// `quantized` (tests/fuzz/sample_programs.cpp: nf4 double-quant, fp8 2-D block and fp8
// per-channel weights) is flipped in turn (xor 0xFF, then xor 0x01). Each flipped file must be
// rejected by Program::load with Full verification, or load, run and give bit-identical
// outputs. The packed codes, absmax/scale tables, double-quant codes and code table are all
// covered by segment checksums, and the quantization parameters by the header checksum.
// Also: executing it allocates nothing (the dequantization panels come from the planned
// temp allocator).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/executor/hardening_util.h"
#include "tests/fuzz/sample_programs.h"
#include "tests/support/allocation_counter.h"

namespace tern {
namespace {

std::string run_all(const Program& program, std::vector<uint8_t>* outputs) {
  for (size_t m = 0; m < program.num_methods(); ++m) {
    const char* name = program.method_name(m).get();
    const MethodMeta meta = program.method_meta(name).get();
    auto memory = hardening::ExactMemory::from_meta(meta);
    auto method = program.load_method(name, memory->manager());
    if (!method.ok()) return std::string("load_method: ") + last_error_message();
    auto inputs = hardening::make_inputs(meta, 7);
    if (hardening::set_inputs(*method, meta, inputs) != Error::Ok ||
        method->execute() != Error::Ok) {
      return std::string("execute: ") + last_error_message();
    }
    const std::vector<uint8_t> out = hardening::output_bytes(*method);
    outputs->insert(outputs->end(), out.begin(), out.end());
  }
  return "";
}

TEST(QuantizedByteFlip, EveryFlipIsRejectedOrHarmless) {
  ASSERT_TRUE(fuzz::register_sample_kernels_and_backend());
  const std::vector<uint8_t> original = fuzz::compile_one(fuzz::quantized_graph(), "quantized");
  hardening::OwnedProgram reference_program(original);
  std::vector<uint8_t> reference;
  ASSERT_EQ(run_all(*reference_program, &reference), "");
  size_t rejected = 0, harmless = 0;
  hardening::Bytes buffer = hardening::exact_bytes(original.size());
  for (size_t offset = 0; offset < original.size(); ++offset) {
    for (const uint8_t mask : {uint8_t{0xFF}, uint8_t{0x01}}) {
      std::memcpy(buffer.get(), original.data(), original.size());
      buffer.get()[offset] ^= mask;
      BufferDataLoader loader(buffer.get(), original.size());
      clear_error_message();
      auto program = Program::load(&loader);  // Verification::Full
      if (!program.ok()) {
        ++rejected;
        EXPECT_STRNE(last_error_message(), "") << "offset " << offset;
        continue;
      }
      std::vector<uint8_t> outputs;
      const std::string error = run_all(*program, &outputs);
      EXPECT_EQ(error, "") << "flip at offset " << offset << " loads but then fails";
      EXPECT_TRUE(outputs == reference) << "flip at offset " << offset << " changes the outputs";
      if (error.empty() && outputs == reference) ++harmless;
    }
  }
  std::printf("[byte flips] quantized: %zu bytes, %zu flips: %zu rejected, %zu harmless\n",
              original.size(), 2 * original.size(), rejected, harmless);
  EXPECT_EQ(rejected + harmless, 2 * original.size());
}

TEST(QuantizedExecute, AllocatesNothing) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "sanitizer build: malloc is not hooked";
  ASSERT_TRUE(fuzz::register_sample_kernels_and_backend());
  const std::vector<uint8_t> bytes = fuzz::compile_one(fuzz::quantized_graph(), "quantized");
  hardening::OwnedProgram program(bytes);
  const MethodMeta meta = program->method_meta("forward").get();
  EXPECT_GT(meta.temp_allocator_bytes(), 0u) << "the planner sizes the dequantization panels";
  auto memory = hardening::ExactMemory::from_meta(meta);
  auto method = program->load_method("forward", memory->manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  auto inputs = hardening::make_inputs(meta, 3);
  ASSERT_EQ(hardening::set_inputs(*method, meta, inputs), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();  // warm
  g_allocations = 0;
  g_armed = true;
  const Error err = method->execute();
  g_armed = false;
  ASSERT_EQ(err, Error::Ok) << last_error_message();
  EXPECT_EQ(g_allocations.load(), 0);
}

}  // namespace
}  // namespace tern
