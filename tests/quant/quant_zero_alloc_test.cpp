// A quantized program executes without allocating: the dequantization panels of the
// quantized linear/matmul/embedding kernels come from the planned temp allocator (its byte
// flips run with the other programs in tests/executor/byte_flip_test.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/executor/hardening_util.h"
#include "tests/fuzz/sample_programs.h"
#include "tests/support/allocation_counter.h"

namespace tern {
namespace {

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
