// Bad calls through the C API: each returns a named status with a message saying what was
// wrong, and nothing crashes. One test per case.
#include <cstring>
#include <string>
#include <vector>

#include "tests/c_api/c_api_test_util.h"

namespace tern::c_api_test {
namespace {

// ---- shared state ----

TEST(CApiBadCall, SharedStateBytesNullProgram) {
  size_t bytes = 0;
  EXPECT_C_FAILURE(tern_program_shared_state_bytes(nullptr, &bytes), TERN_STATUS_NULL_ARGUMENT,
                   "program");
}

TEST(CApiBadCall, SharedStateBytesNullOut) {
  Program p = load_tiny();
  EXPECT_C_FAILURE(tern_program_shared_state_bytes(p.get(), nullptr), TERN_STATUS_NULL_ARGUMENT,
                   "out");
}

TEST(CApiBadCall, ResetSharedStateNullProgram) {
  EXPECT_C_FAILURE(tern_program_reset_shared_state(nullptr), TERN_STATUS_NULL_ARGUMENT,
                   "program");
}

// ---- dynamic dimensions ----

TEST(CApiBadCall, SymbolInfoIndexOutOfRange) {
  Program p = load_tiny();  // a static method: no symbols
  tern_symbol_info sym;
  EXPECT_C_FAILURE(tern_program_symbol_info(p.get(), "forward", 0, &sym),
                   TERN_STATUS_INDEX_OUT_OF_RANGE, "symbol 0 out of range: the method has 0");
}

TEST(CApiBadCall, NumSymbolsNullOutAndUnknownMethod) {
  Program p = load_tiny();
  EXPECT_C_FAILURE(tern_program_num_symbols(p.get(), "forward", nullptr), TERN_STATUS_NULL_ARGUMENT,
                   "out");
  size_t n = 0;
  EXPECT_C_FAILURE(tern_program_num_symbols(p.get(), "nope", &n), TERN_STATUS_NOT_FOUND, "nope");
}

TEST(CApiBadCall, DimSymbolsTooSmallOrNull) {
  Program p = load_tiny();
  int32_t dims[1];
  EXPECT_C_FAILURE(tern_program_dim_symbols(p.get(), "forward", 1, 0, dims, 1),
                   TERN_STATUS_SIZE_MISMATCH, "out holds 1 entries");
  EXPECT_C_FAILURE(tern_program_dim_symbols(p.get(), "forward", 1, 0, nullptr, 8),
                   TERN_STATUS_NULL_ARGUMENT, "out");
  EXPECT_C_FAILURE(tern_program_dim_symbols(p.get(), "forward", 1, 99, dims, 8),
                   TERN_STATUS_INDEX_OUT_OF_RANGE, "input 99 out of range");
  EXPECT_C_FAILURE(tern_program_dim_symbols(p.get(), "leaky", 1, 1, dims, 1),
                   TERN_STATUS_TYPE_MISMATCH, "input 1 is no tensor");
}

// ---- token generation ----

TEST(CApiBadCall, GenerateNullMethod) {
  const int64_t prompt[1] = {1};
  int64_t out[4];
  size_t n = 0;
  EXPECT_C_FAILURE(tern_method_generate(nullptr, prompt, 1, nullptr, out, 4, &n, nullptr),
                   TERN_STATUS_NULL_ARGUMENT, "method is NULL");
}

TEST(CApiBadCall, GenerateOptionsNotInitialised) {
  Program p = load_tiny();
  tern_method* m = nullptr;
  ASSERT_EQ(tern_method_load(p.get(), "forward", nullptr, &m), TERN_STATUS_OK);
  Method method(m);
  tern_generate_options o;
  std::memset(&o, 0, sizeof o);
  const int64_t prompt[1] = {1};
  int64_t out[64];
  size_t n = 0;
  EXPECT_C_FAILURE(tern_method_generate(m, prompt, 1, &o, out, 64, &n, nullptr),
                   TERN_STATUS_INVALID_ARGUMENT, "tern_generate_options_init");
}

TEST(CApiBadCall, GenerateOutTooSmall) {
  Program p = load_tiny();
  tern_method* m = nullptr;
  ASSERT_EQ(tern_method_load(p.get(), "forward", nullptr, &m), TERN_STATUS_OK);
  Method method(m);
  const int64_t prompt[1] = {1};
  int64_t out[4];
  size_t n = 0;
  EXPECT_C_FAILURE(tern_method_generate(m, prompt, 1, nullptr, out, 4, &n, nullptr),
                   TERN_STATUS_INVALID_ARGUMENT, "room for 4 tokens, max_new_tokens is 32");
}

TEST(CApiBadCall, GenerateWithAMethodThatIsNotAStep) {
  Program p = load_tiny();
  tern_method* m = nullptr;
  ASSERT_EQ(tern_method_load(p.get(), "forward", nullptr, &m), TERN_STATUS_OK);
  Method method(m);
  const int64_t prompt[1] = {1};
  int64_t out[32];
  size_t n = 0;
  EXPECT_C_FAILURE(tern_method_generate(m, prompt, 1, nullptr, out, 32, &n, nullptr),
                   TERN_STATUS_INVALID_ARGUMENT, "takes (tokens [1, 1], position [1])");
}

// ---- loading ----

TEST(CApiBadCall, LoadFileNullPath) {
  tern_program* p = nullptr;
  EXPECT_C_FAILURE(tern_program_load_file(nullptr, nullptr, &p), TERN_STATUS_NULL_ARGUMENT, "path");
  EXPECT_EQ(p, nullptr);
}

TEST(CApiBadCall, LoadFileNullOut) {
  EXPECT_C_FAILURE(tern_program_load_file(tiny_model(), nullptr, nullptr),
                   TERN_STATUS_NULL_ARGUMENT, "out");
}

TEST(CApiBadCall, LoadFileMissing) {
  tern_program* p = nullptr;
  EXPECT_C_FAILURE(tern_program_load_file("/nonexistent/model.pte", nullptr, &p),
                   TERN_STATUS_ACCESS_FAILED, "/nonexistent/model.pte");
  EXPECT_EQ(p, nullptr);
}

TEST(CApiBadCall, LoadBufferNullData) {
  tern_program* p = nullptr;
  EXPECT_C_FAILURE(tern_program_load_buffer(nullptr, 10, nullptr, &p), TERN_STATUS_NULL_ARGUMENT,
                   "data");
}

TEST(CApiBadCall, LoadBufferNotATernProgram) {
  std::vector<uint8_t> junk(4096, 0x5a);
  tern_program* p = nullptr;
  const tern_status s = tern_program_load_buffer(junk.data(), junk.size(), nullptr, &p);
  EXPECT_EQ(s, TERN_STATUS_NOT_A_TERN_PROGRAM)
      << tern_status_name(s) << ": " << tern_last_error_message();
  EXPECT_STRNE(tern_last_error_message(), "");
  EXPECT_EQ(p, nullptr);
}

TEST(CApiBadCall, LoadBufferTruncated) {
  std::vector<uint8_t> bytes = read_file(tiny_model());
  bytes.resize(bytes.size() / 2);
  tern_program* p = nullptr;
  const tern_status s = tern_program_load_buffer(bytes.data(), bytes.size(), nullptr, &p);
  EXPECT_NE(s, TERN_STATUS_OK);
  EXPECT_STRNE(tern_status_name(s), "TERN_STATUS_UNKNOWN");
  EXPECT_STRNE(tern_last_error_message(), "");
  EXPECT_EQ(p, nullptr);
}

TEST(CApiBadCall, LoadOptionsNotInitialised) {
  tern_load_options options;
  std::memset(&options, 0, sizeof(options));
  tern_program* p = nullptr;
  EXPECT_C_FAILURE(tern_program_load_file(tiny_model(), &options, &p), TERN_STATUS_INVALID_ARGUMENT,
                   "tern_load_options_init");
}

TEST(CApiBadCall, LoadOptionsBadMode) {
  tern_load_options options;
  tern_load_options_init(&options);
  options.mode = static_cast<tern_load_mode>(7);
  tern_program* p = nullptr;
  EXPECT_C_FAILURE(tern_program_load_file(tiny_model(), &options, &p), TERN_STATUS_INVALID_ARGUMENT,
                   "mode 7");
}

TEST(CApiBadCall, LoadOptionsUnknownBackend) {
  static const char* const kNames[] = {"no_such_backend"};
  tern_load_options options;
  tern_load_options_init(&options);
  options.backends = kNames;
  options.num_backends = 1;
  tern_program* p = nullptr;
  EXPECT_C_FAILURE(tern_program_load_file(tiny_model(), &options, &p), TERN_STATUS_NOT_FOUND,
                   "no_such_backend");
}

TEST(CApiBadCall, LoadOptionsNullBackendArray) {
  tern_load_options options;
  tern_load_options_init(&options);
  options.num_disabled_backends = 2;
  tern_program* p = nullptr;
  EXPECT_C_FAILURE(tern_program_load_file(tiny_model(), &options, &p), TERN_STATUS_NULL_ARGUMENT,
                   "disabled_backends");
}

TEST(CApiBadCall, LoadOptionsNullBackendName) {
  static const char* const kNames[] = {nullptr};
  tern_load_options options;
  tern_load_options_init(&options);
  options.disabled_backends = kNames;
  options.num_disabled_backends = 1;
  tern_program* p = nullptr;
  EXPECT_C_FAILURE(tern_program_load_file(tiny_model(), &options, &p), TERN_STATUS_NULL_ARGUMENT,
                   "disabled_backends[0]");
}

TEST(CApiBadCall, LoadOptionsNullBackendOptions) {
  tern_load_options options;
  tern_load_options_init(&options);
  options.num_backend_options = 1;
  tern_program* p = nullptr;
  EXPECT_C_FAILURE(tern_program_load_file(tiny_model(), &options, &p), TERN_STATUS_NULL_ARGUMENT,
                   "backend_options is NULL");
  static const tern_backend_option kNullKey[] = {{"vulkan", nullptr, "0"}};
  options.backend_options = kNullKey;
  EXPECT_C_FAILURE(tern_program_load_file(tiny_model(), &options, &p), TERN_STATUS_NULL_ARGUMENT,
                   "backend_options[0]");
}

// ---- program queries ----

TEST(CApiBadCall, NumMethodsNullProgram) {
  size_t n = 0;
  EXPECT_C_FAILURE(tern_program_num_methods(nullptr, &n), TERN_STATUS_NULL_ARGUMENT, "program");
}

TEST(CApiBadCall, NumMethodsNullOut) {
  Program p = load_tiny();
  EXPECT_C_FAILURE(tern_program_num_methods(p.get(), nullptr), TERN_STATUS_NULL_ARGUMENT, "out");
}

TEST(CApiBadCall, MethodNameIndexOutOfRange) {
  Program p = load_tiny();
  const char* name = nullptr;
  EXPECT_C_FAILURE(tern_program_method_name(p.get(), 2, &name), TERN_STATUS_INDEX_OUT_OF_RANGE,
                   "2 methods");
  EXPECT_EQ(name, nullptr);
}

TEST(CApiBadCall, UnknownMethodName) {
  Program p = load_tiny();
  size_t inputs = 0;
  EXPECT_C_FAILURE(tern_program_method_io(p.get(), "backward", &inputs, nullptr),
                   TERN_STATUS_NOT_FOUND, "backward");
}

TEST(CApiBadCall, MethodIoBothOutputsNull) {
  Program p = load_tiny();
  EXPECT_C_FAILURE(tern_program_method_io(p.get(), "forward", nullptr, nullptr),
                   TERN_STATUS_NULL_ARGUMENT, "both NULL");
}

TEST(CApiBadCall, InputInfoIndexOutOfRange) {
  Program p = load_tiny();
  tern_value_info info;
  EXPECT_C_FAILURE(tern_program_input_info(p.get(), "forward", 2, &info),
                   TERN_STATUS_INDEX_OUT_OF_RANGE, "input 2 out of range");
}

TEST(CApiBadCall, OutputInfoNullOut) {
  Program p = load_tiny();
  EXPECT_C_FAILURE(tern_program_output_info(p.get(), "forward", 0, nullptr),
                   TERN_STATUS_NULL_ARGUMENT, "out");
}

TEST(CApiBadCall, InfoNullMethodName) {
  Program p = load_tiny();
  tern_value_info info;
  EXPECT_C_FAILURE(tern_program_input_info(p.get(), nullptr, 0, &info), TERN_STATUS_NULL_ARGUMENT,
                   "method name");
}

TEST(CApiBadCall, MemoryRequirementsNullOut) {
  Program p = load_tiny();
  EXPECT_C_FAILURE(tern_program_memory_requirements(p.get(), "forward", nullptr),
                   TERN_STATUS_NULL_ARGUMENT, "out");
}

TEST(CApiBadCall, ArenaRequirementOutOfRange) {
  Program p = load_tiny();
  uint64_t size = 0;
  EXPECT_C_FAILURE(tern_program_arena_requirement(p.get(), "forward", 5, &size, nullptr),
                   TERN_STATUS_INDEX_OUT_OF_RANGE, "arena 5");
}

// ---- method load and caller memory ----

TEST(CApiBadCall, MethodLoadNullProgram) {
  tern_method* m = nullptr;
  EXPECT_C_FAILURE(tern_method_load(nullptr, "forward", nullptr, &m), TERN_STATUS_NULL_ARGUMENT,
                   "program");
}

TEST(CApiBadCall, MethodLoadNullOut) {
  Program p = load_tiny();
  EXPECT_C_FAILURE(tern_method_load(p.get(), "forward", nullptr, nullptr),
                   TERN_STATUS_NULL_ARGUMENT, "out");
}

TEST(CApiBadCall, MethodLoadUnknownMethod) {
  Program p = load_tiny();
  tern_method* m = nullptr;
  EXPECT_C_FAILURE(tern_method_load(p.get(), "backward", nullptr, &m), TERN_STATUS_NOT_FOUND,
                   "backward");
  EXPECT_EQ(m, nullptr);
}

/// Caller memory for `forward` sized from its requirements; tests then spoil one part.
struct CallerMemory {
  explicit CallerMemory(tern_program* p) {
    EXPECT_EQ(tern_program_memory_requirements(p, "forward", &needs), TERN_STATUS_OK);
    uint64_t arena_size = 0;
    EXPECT_EQ(tern_program_arena_requirement(p, "forward", 0, &arena_size, nullptr),
              TERN_STATUS_OK);
    method.reset(new AlignedBlock(needs.method_bytes, 64));
    temp.reset(new AlignedBlock(needs.temp_bytes, 64));
    arena_block.reset(new AlignedBlock(arena_size + 64, 64));
    arena = {arena_block->data, static_cast<size_t>(arena_size)};
    memory = {{method->data, static_cast<size_t>(needs.method_bytes)},
              &arena,
              1,
              {temp->data, static_cast<size_t>(needs.temp_bytes)}};
  }
  tern_memory_requirements needs;
  std::unique_ptr<AlignedBlock> method, temp, arena_block;
  tern_buffer arena;
  tern_method_memory memory;
};

TEST(CApiBadCall, CallerMethodBufferTooSmall) {
  Program p = load_tiny();
  CallerMemory c(p.get());
  c.memory.method.size -= 1;
  tern_method* m = nullptr;
  EXPECT_C_FAILURE(tern_method_load(p.get(), "forward", &c.memory, &m), TERN_STATUS_SIZE_MISMATCH,
                   "method buffer");
  EXPECT_EQ(m, nullptr);
}

TEST(CApiBadCall, CallerArenaTooSmall) {
  Program p = load_tiny();
  CallerMemory c(p.get());
  c.arena.size -= 1;
  tern_method* m = nullptr;
  EXPECT_C_FAILURE(tern_method_load(p.get(), "forward", &c.memory, &m), TERN_STATUS_SIZE_MISMATCH,
                   "arena 0");
}

TEST(CApiBadCall, CallerArenaCountWrong) {
  Program p = load_tiny();
  CallerMemory c(p.get());
  c.memory.num_arenas = 0;
  tern_method* m = nullptr;
  EXPECT_C_FAILURE(tern_method_load(p.get(), "forward", &c.memory, &m), TERN_STATUS_SIZE_MISMATCH,
                   "0 arena buffers");
}

TEST(CApiBadCall, CallerArenaMisaligned) {
  Program p = load_tiny();
  CallerMemory c(p.get());
  c.arena.data = static_cast<uint8_t*>(c.arena.data) + 1;
  tern_method* m = nullptr;
  EXPECT_C_FAILURE(tern_method_load(p.get(), "forward", &c.memory, &m),
                   TERN_STATUS_INVALID_ARGUMENT, "not aligned");
}

TEST(CApiBadCall, CallerTempBufferNull) {
  Program p = load_tiny();
  CallerMemory c(p.get());
  c.memory.temp.data = nullptr;
  tern_method* m = nullptr;
  EXPECT_C_FAILURE(tern_method_load(p.get(), "forward", &c.memory, &m), TERN_STATUS_NULL_ARGUMENT,
                   "temp buffer");
}

// ---- inputs ----

TEST(CApiBadCall, SetInputNullMethod) {
  EXPECT_C_FAILURE(tern_method_set_input(nullptr, 0, kX, sizeof(kX)), TERN_STATUS_NULL_ARGUMENT,
                   "method is NULL");
}

TEST(CApiBadCall, SetInputIndexOutOfRange) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "forward");
  EXPECT_C_FAILURE(tern_method_set_input(m.get(), 2, kX, sizeof(kX)),
                   TERN_STATUS_INDEX_OUT_OF_RANGE, "input 2 out of range");
  EXPECT_NE(std::string(tern_method_last_error(m.get())).find("input 2 out of range"),
            std::string::npos);
}

TEST(CApiBadCall, SetInputWrongSize) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "forward");
  EXPECT_C_FAILURE(tern_method_set_input(m.get(), 0, kX, sizeof(kX) - 4), TERN_STATUS_SIZE_MISMATCH,
                   "expected 24 bytes");
}

TEST(CApiBadCall, SetInputNullData) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "forward");
  EXPECT_C_FAILURE(tern_method_set_input(m.get(), 0, nullptr, sizeof(kX)),
                   TERN_STATUS_NULL_ARGUMENT, "data is NULL");
}

TEST(CApiBadCall, SetTensorInputOnScalar) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "leaky");
  const double slope = 0.5;
  EXPECT_C_FAILURE(tern_method_set_input(m.get(), 1, &slope, sizeof(slope)),
                   TERN_STATUS_TYPE_MISMATCH, "is a double, not a tensor");
}

TEST(CApiBadCall, SetScalarInputOnTensor) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "leaky");
  EXPECT_C_FAILURE(tern_method_set_input_double(m.get(), 0, 0.5), TERN_STATUS_TYPE_MISMATCH,
                   "is a tensor, not a double");
}

TEST(CApiBadCall, SetScalarInputOfWrongKind) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "leaky");
  EXPECT_C_FAILURE(tern_method_set_input_int(m.get(), 1, 3), TERN_STATUS_TYPE_MISMATCH,
                   "is a double, not a int");
  EXPECT_C_FAILURE(tern_method_set_input_bool(m.get(), 1, 1), TERN_STATUS_TYPE_MISMATCH,
                   "is a double, not a bool");
}

// ---- execute and outputs ----

TEST(CApiBadCall, ExecuteNullMethod) {
  EXPECT_C_FAILURE(tern_method_execute(nullptr), TERN_STATUS_NULL_ARGUMENT, "method is NULL");
}

TEST(CApiBadCall, ExecuteBeforeSetInput) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "forward");
  EXPECT_C_FAILURE(tern_method_execute(m.get()), TERN_STATUS_INVALID_STATE, "has not been set");
  EXPECT_NE(std::string(tern_method_last_error(m.get())).find("has not been set"),
            std::string::npos);
}

TEST(CApiBadCall, ExecuteWithOneInputMissing) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "forward");
  ASSERT_EQ(tern_method_set_input(m.get(), 0, kX, sizeof(kX)), TERN_STATUS_OK);
  EXPECT_C_FAILURE(tern_method_execute(m.get()), TERN_STATUS_INVALID_STATE, "input 1");
}

TEST(CApiBadCall, OutputBeforeExecute) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "forward");
  tern_tensor_view view;
  EXPECT_C_FAILURE(tern_method_output(m.get(), 0, &view), TERN_STATUS_INVALID_STATE,
                   "before a successful execute");
  float r[4];
  EXPECT_C_FAILURE(tern_method_copy_output(m.get(), 0, r, sizeof(r)), TERN_STATUS_INVALID_STATE,
                   "before a successful execute");
}

/// `forward` loaded and executed on the hand-worked inputs.
Method executed_forward(tern_program* p) {
  Method m = load_method(p, "forward");
  EXPECT_EQ(tern_method_set_input(m.get(), 0, kX, sizeof(kX)), TERN_STATUS_OK);
  EXPECT_EQ(tern_method_set_input(m.get(), 1, kS, sizeof(kS)), TERN_STATUS_OK);
  EXPECT_EQ(tern_method_execute(m.get()), TERN_STATUS_OK);
  return m;
}

TEST(CApiBadCall, OutputIndexOutOfRange) {
  Program p = load_tiny();
  Method m = executed_forward(p.get());
  tern_tensor_view view;
  EXPECT_C_FAILURE(tern_method_output(m.get(), 2, &view), TERN_STATUS_INDEX_OUT_OF_RANGE,
                   "output 2 out of range");
}

TEST(CApiBadCall, OutputNullView) {
  Program p = load_tiny();
  Method m = executed_forward(p.get());
  EXPECT_C_FAILURE(tern_method_output(m.get(), 0, nullptr), TERN_STATUS_NULL_ARGUMENT, "out");
}

TEST(CApiBadCall, CopyOutputBufferTooSmall) {
  Program p = load_tiny();
  Method m = executed_forward(p.get());
  float r[3];
  EXPECT_C_FAILURE(tern_method_copy_output(m.get(), 0, r, sizeof(r)), TERN_STATUS_SIZE_MISMATCH,
                   "expected at least 16");
}

TEST(CApiBadCall, CopyOutputNullDestination) {
  Program p = load_tiny();
  Method m = executed_forward(p.get());
  EXPECT_C_FAILURE(tern_method_copy_output(m.get(), 0, nullptr, 16), TERN_STATUS_NULL_ARGUMENT,
                   "dst is NULL");
}

TEST(CApiBadCall, ScalarOutputOnTensor) {
  Program p = load_tiny();
  Method m = executed_forward(p.get());
  double d = 0;
  EXPECT_C_FAILURE(tern_method_output_double(m.get(), 0, &d), TERN_STATUS_TYPE_MISMATCH,
                   "is a tensor, not a double");
}

TEST(CApiBadCall, TensorOutputOnScalar) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "leaky");
  const float x[4] = {0, 0, 0, 0};
  ASSERT_EQ(tern_method_set_input(m.get(), 0, x, sizeof(x)), TERN_STATUS_OK);
  ASSERT_EQ(tern_method_set_input_double(m.get(), 1, 0.1), TERN_STATUS_OK);
  ASSERT_EQ(tern_method_execute(m.get()), TERN_STATUS_OK);
  tern_tensor_view view;
  EXPECT_C_FAILURE(tern_method_output(m.get(), 1, &view), TERN_STATUS_TYPE_MISMATCH,
                   "is a double, not a tensor");
  int64_t i = 0;
  EXPECT_C_FAILURE(tern_method_output_int(m.get(), 1, &i), TERN_STATUS_TYPE_MISMATCH,
                   "is a double, not a int");
  int b = 0;
  EXPECT_C_FAILURE(tern_method_output_bool(m.get(), 1, &b), TERN_STATUS_TYPE_MISMATCH,
                   "is a double, not a bool");
}

TEST(CApiBadCall, DelegateIndexOutOfRange) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "forward");
  int on_backend = 0;
  EXPECT_C_FAILURE(tern_method_delegate_uses_backend(m.get(), 0, &on_backend),
                   TERN_STATUS_INDEX_OUT_OF_RANGE, "delegate call 0 out of range");
}

TEST(CApiBadCall, NullMethodEverywhere) {
  size_t n = 0;
  int flag = 0;
  double d = 0;
  int64_t i = 0;
  tern_tensor_view view;
  EXPECT_C_FAILURE(tern_method_set_input_int(nullptr, 0, 1), TERN_STATUS_NULL_ARGUMENT, "NULL");
  EXPECT_C_FAILURE(tern_method_set_input_double(nullptr, 0, 1), TERN_STATUS_NULL_ARGUMENT, "NULL");
  EXPECT_C_FAILURE(tern_method_set_input_bool(nullptr, 0, 1), TERN_STATUS_NULL_ARGUMENT, "NULL");
  EXPECT_C_FAILURE(tern_method_output(nullptr, 0, &view), TERN_STATUS_NULL_ARGUMENT, "NULL");
  EXPECT_C_FAILURE(tern_method_copy_output(nullptr, 0, &d, 8), TERN_STATUS_NULL_ARGUMENT, "NULL");
  EXPECT_C_FAILURE(tern_method_output_int(nullptr, 0, &i), TERN_STATUS_NULL_ARGUMENT, "NULL");
  EXPECT_C_FAILURE(tern_method_output_double(nullptr, 0, &d), TERN_STATUS_NULL_ARGUMENT, "NULL");
  EXPECT_C_FAILURE(tern_method_output_bool(nullptr, 0, &flag), TERN_STATUS_NULL_ARGUMENT, "NULL");
  EXPECT_C_FAILURE(tern_method_reset_state(nullptr), TERN_STATUS_NULL_ARGUMENT, "NULL");
  EXPECT_C_FAILURE(tern_method_num_delegate_calls(nullptr, &n), TERN_STATUS_NULL_ARGUMENT, "NULL");
  EXPECT_C_FAILURE(tern_method_delegate_uses_backend(nullptr, 0, &flag), TERN_STATUS_NULL_ARGUMENT,
                   "NULL");
  EXPECT_STRNE(tern_method_last_error(nullptr), "");
}

TEST(CApiBadCall, FreeNullIsHarmless) {
  tern_program_free(nullptr);
  tern_method_free(nullptr);
  tern_load_options_init(nullptr);
}

TEST(CApiBadCall, MethodLastErrorSurvivesLaterSuccess) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "forward");
  EXPECT_EQ(tern_method_set_input(m.get(), 0, kX, 1), TERN_STATUS_SIZE_MISMATCH);
  const std::string first = tern_method_last_error(m.get());
  EXPECT_NE(first.find("expected 24 bytes"), std::string::npos) << first;
  ASSERT_EQ(tern_method_set_input(m.get(), 0, kX, sizeof(kX)), TERN_STATUS_OK);
  EXPECT_EQ(tern_method_last_error(m.get()), first);
}

}  // namespace
}  // namespace tern::c_api_test
