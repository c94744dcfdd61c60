// The C API's good paths on examples/tiny_model: load from a file and from a buffer (aligned
// and not), list methods and their signatures, run in tern's memory and in the caller's, read
// outputs as copies, views and scalars, choose and disable backends, names of statuses.
#include <cstring>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "tests/c_api/c_api_test_util.h"

namespace tern::c_api_test {
namespace {

std::vector<float> run_forward(tern_method* m) {
  EXPECT_EQ(tern_method_set_input(m, 0, kX, sizeof(kX)), TERN_STATUS_OK)
      << tern_last_error_message();
  EXPECT_EQ(tern_method_set_input(m, 1, kS, sizeof(kS)), TERN_STATUS_OK)
      << tern_last_error_message();
  EXPECT_EQ(tern_method_execute(m), TERN_STATUS_OK) << tern_last_error_message();
  std::vector<float> rz(8);
  EXPECT_EQ(tern_method_copy_output(m, 0, rz.data(), 16), TERN_STATUS_OK)
      << tern_last_error_message();
  EXPECT_EQ(tern_method_copy_output(m, 1, rz.data() + 4, 16), TERN_STATUS_OK);
  return rz;
}

const std::vector<float> kRZ = {8, 0, 8, 3.5f, 9, 2, 9, 5.5f};

TEST(CApi, ListsMethodsAndSignatures) {
  Program p = load_tiny();
  size_t n = 0;
  ASSERT_EQ(tern_program_num_methods(p.get(), &n), TERN_STATUS_OK);
  ASSERT_EQ(n, 2u);
  const char* names[2] = {nullptr, nullptr};
  ASSERT_EQ(tern_program_method_name(p.get(), 0, &names[0]), TERN_STATUS_OK);
  ASSERT_EQ(tern_program_method_name(p.get(), 1, &names[1]), TERN_STATUS_OK);
  EXPECT_STREQ(names[0], "forward");
  EXPECT_STREQ(names[1], "leaky");
  size_t inputs = 0, outputs = 0;
  ASSERT_EQ(tern_program_method_io(p.get(), "forward", &inputs, &outputs), TERN_STATUS_OK);
  EXPECT_EQ(inputs, 2u);
  EXPECT_EQ(outputs, 2u);

  tern_value_info info;
  ASSERT_EQ(tern_program_input_info(p.get(), "forward", 0, &info), TERN_STATUS_OK);
  EXPECT_EQ(info.kind, TERN_VALUE_TENSOR);
  EXPECT_EQ(info.dtype, TERN_DTYPE_F32);
  ASSERT_EQ(info.rank, 2u);
  EXPECT_EQ(info.sizes[0], 2);
  EXPECT_EQ(info.sizes[1], 3);
  EXPECT_EQ(info.nbytes, 24u);
  EXPECT_STREQ(info.name, "x");
  ASSERT_EQ(tern_program_output_info(p.get(), "forward", 1, &info), TERN_STATUS_OK);
  EXPECT_EQ(info.rank, 1u);
  EXPECT_EQ(info.sizes[0], 4);
  EXPECT_EQ(info.nbytes, 16u);
  ASSERT_EQ(tern_program_input_info(p.get(), "leaky", 1, &info), TERN_STATUS_OK);
  EXPECT_EQ(info.kind, TERN_VALUE_DOUBLE);
  EXPECT_EQ(info.rank, 0u);
  EXPECT_EQ(info.nbytes, 0u);
}

TEST(CApi, RunsInTernMemory) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "forward");
  EXPECT_EQ(run_forward(m.get()), kRZ);
  // Again, with different inputs: x = ones gives r = [10, 0, 10, 0] (make_tiny_model.py's W, b).
  const float ones[6] = {1, 1, 1, 1, 1, 1};
  ASSERT_EQ(tern_method_set_input(m.get(), 0, ones, sizeof(ones)), TERN_STATUS_OK);
  ASSERT_EQ(tern_method_set_input(m.get(), 1, kS, sizeof(kS)), TERN_STATUS_OK);
  ASSERT_EQ(tern_method_execute(m.get()), TERN_STATUS_OK);
  tern_tensor_view r;
  ASSERT_EQ(tern_method_output(m.get(), 0, &r), TERN_STATUS_OK);
  EXPECT_EQ(r.dtype, TERN_DTYPE_F32);
  ASSERT_EQ(r.rank, 2u);
  EXPECT_EQ(r.sizes[0], 2);
  EXPECT_EQ(r.sizes[1], 2);
  EXPECT_EQ(r.dim_order, nullptr);
  ASSERT_EQ(r.nbytes, 16u);
  const float* v = static_cast<const float*>(r.data);
  EXPECT_EQ(std::vector<float>(v, v + 4), (std::vector<float>{10, 0, 10, 0}));
}

TEST(CApi, RunsInCallerMemory) {
  Program p = load_tiny();
  tern_memory_requirements needs;
  ASSERT_EQ(tern_program_memory_requirements(p.get(), "forward", &needs), TERN_STATUS_OK);
  EXPECT_GT(needs.method_bytes, 0u);
  EXPECT_GE(needs.temp_bytes, 4096u);
  ASSERT_EQ(needs.num_arenas, 1u);
  uint64_t arena_size = 0;
  uint32_t arena_alignment = 0;
  ASSERT_EQ(tern_program_arena_requirement(p.get(), "forward", 0, &arena_size, &arena_alignment),
            TERN_STATUS_OK);
  EXPECT_GT(arena_size, 0u);
  EXPECT_GT(arena_alignment, 0u);
  AlignedBlock method_buffer(needs.method_bytes, TERN_BUFFER_ALIGNMENT);
  AlignedBlock temp_buffer(needs.temp_bytes, TERN_BUFFER_ALIGNMENT);
  AlignedBlock arena_buffer(arena_size, arena_alignment < 64 ? 64 : arena_alignment);
  tern_buffer arena = {arena_buffer.data, static_cast<size_t>(arena_size)};
  tern_method_memory memory = {{method_buffer.data, static_cast<size_t>(needs.method_bytes)},
                               &arena,
                               1,
                               {temp_buffer.data, static_cast<size_t>(needs.temp_bytes)}};
  tern_method* raw = nullptr;
  ASSERT_EQ(tern_method_load(p.get(), "forward", &memory, &raw), TERN_STATUS_OK)
      << tern_last_error_message();
  Method m(raw);
  EXPECT_EQ(run_forward(m.get()), kRZ);
  // The output view points into the caller's arena.
  tern_tensor_view r;
  ASSERT_EQ(tern_method_output(m.get(), 0, &r), TERN_STATUS_OK);
  const uint8_t* base = static_cast<const uint8_t*>(arena_buffer.data);
  EXPECT_GE(static_cast<const uint8_t*>(r.data), base);
  EXPECT_LE(static_cast<const uint8_t*>(r.data) + r.nbytes, base + arena_size);
}

TEST(CApi, LoadsFromAlignedAndUnalignedBuffers) {
  const std::vector<uint8_t> bytes = read_file(tiny_model());
  ASSERT_FALSE(bytes.empty());
  for (size_t offset : {0, 1}) {
    AlignedBlock block(bytes.size() + 1, 64);
    uint8_t* data = static_cast<uint8_t*>(block.data) + offset;
    std::memcpy(data, bytes.data(), bytes.size());
    tern_program* raw = nullptr;
    ASSERT_EQ(tern_program_load_buffer(data, bytes.size(), nullptr, &raw), TERN_STATUS_OK)
        << "offset " << offset << ": " << tern_last_error_message();
    Program p(raw);
    Method m = load_method(p.get(), "forward");
    EXPECT_EQ(run_forward(m.get()), kRZ) << "offset " << offset;
  }
}

TEST(CApi, FileReadModeAndStructureVerification) {
  tern_load_options options;
  tern_load_options_init(&options);
  options.mode = TERN_LOAD_FILE;
  options.verification = TERN_VERIFY_STRUCTURE;
  options.num_threads = 2;
  Program p = load_tiny(&options);
  Method m = load_method(p.get(), "forward");
  EXPECT_EQ(run_forward(m.get()), kRZ);
}

TEST(CApi, ScalarInputAndOutput) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "leaky");
  const float x[4] = {-2, -1, 0, 3};
  ASSERT_EQ(tern_method_set_input(m.get(), 0, x, sizeof(x)), TERN_STATUS_OK);
  ASSERT_EQ(tern_method_set_input_double(m.get(), 1, 0.5), TERN_STATUS_OK);
  ASSERT_EQ(tern_method_execute(m.get()), TERN_STATUS_OK) << tern_last_error_message();
  float y[4];
  ASSERT_EQ(tern_method_copy_output(m.get(), 0, y, sizeof(y)), TERN_STATUS_OK);
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{-1, -0.5f, 0, 3}));
  double slope = 0;
  ASSERT_EQ(tern_method_output_double(m.get(), 1, &slope), TERN_STATUS_OK);
  EXPECT_EQ(slope, 0.5);
}

TEST(CApi, MethodKeepsItsProgramAlive) {
  Program p = load_tiny();
  Method m = load_method(p.get(), "forward");
  p.reset();  // the caller's reference goes; the method still holds one
  EXPECT_EQ(run_forward(m.get()), kRZ);
}

TEST(CApi, ChoosesAndDisablesBackends) {
  if (tiny_model_cpu().empty()) GTEST_SKIP() << "no cpu backend in this build";
  struct Case {
    const char* what;
    void (*configure)(tern_load_options*);
    int uses_backend;
  };
  static const char* const kCpu[] = {"cpu"};
  const Case cases[] = {
      {"defaults", [](tern_load_options*) {}, 1},
      {"backends = {cpu}",
       [](tern_load_options* o) {
         o->backends = kCpu;
         o->num_backends = 1;
       },
       1},
      {"disabled = {cpu}",
       [](tern_load_options* o) {
         o->disabled_backends = kCpu;
         o->num_disabled_backends = 1;
       },
       0},
      {"portable_only", [](tern_load_options* o) { o->portable_only = 1; }, 0},
  };
  for (const Case& c : cases) {
    tern_load_options options;
    tern_load_options_init(&options);
    c.configure(&options);
    tern_program* raw = nullptr;
    ASSERT_EQ(tern_program_load_file(tiny_model_cpu().c_str(), &options, &raw), TERN_STATUS_OK)
        << c.what << ": " << tern_last_error_message();
    Program p(raw);
    Method m = load_method(p.get(), "forward");
    size_t calls = 0;
    ASSERT_EQ(tern_method_num_delegate_calls(m.get(), &calls), TERN_STATUS_OK);
    ASSERT_EQ(calls, 1u) << c.what;
    int uses_backend = -1;
    ASSERT_EQ(tern_method_delegate_uses_backend(m.get(), 0, &uses_backend), TERN_STATUS_OK);
    EXPECT_EQ(uses_backend, c.uses_backend) << c.what;
    EXPECT_EQ(run_forward(m.get()), kRZ) << c.what;
  }
}

// Backend options reach the backends at each method's load: one for a backend the program does
// not use changes nothing; a key the cpu backend does not know fails the method's load naming
// it (a misspelt option is never ignored silently).
TEST(CApi, BackendOptionsReachTheBackends) {
  if (tiny_model_cpu().empty()) GTEST_SKIP() << "no cpu backend in this build";
  for (int unknown_key = 0; unknown_key < 2; ++unknown_key) {
    std::string key = "device", backend = "vulkan";
    if (unknown_key) key = "treads", backend = "cpu";
    const tern_backend_option option = {backend.c_str(), key.c_str(), "1"};
    tern_load_options options;
    tern_load_options_init(&options);
    options.backend_options = &option;
    options.num_backend_options = 1;
    tern_program* raw = nullptr;
    ASSERT_EQ(tern_program_load_file(tiny_model_cpu().c_str(), &options, &raw), TERN_STATUS_OK)
        << tern_last_error_message();
    Program p(raw);
    key = backend = "overwritten";  // the program copied the strings at load
    tern_method* m = nullptr;
    const tern_status status = tern_method_load(p.get(), "forward", nullptr, &m);
    if (!unknown_key) {
      ASSERT_EQ(status, TERN_STATUS_OK) << tern_last_error_message();
      Method method(m);
      EXPECT_EQ(run_forward(method.get()), kRZ);
    } else {
      EXPECT_EQ(status, TERN_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(std::string(tern_last_error_message()).find("unknown load option 'treads'"),
                std::string::npos) << tern_last_error_message();
    }
  }
}

TEST(CApi, StatusNamesCoverEveryRuntimeError) {
  for (uint32_t raw = 0; raw < 0x100; ++raw) {
    const Error e = static_cast<Error>(raw);
    const bool known = std::strcmp(to_string(e), "UnknownError") != 0;
    const std::string name = tern_status_name(static_cast<tern_status>(raw));
    if (known) {
      EXPECT_NE(name, "TERN_STATUS_UNKNOWN") << "tern::Error " << to_string(e);
    }
  }
  EXPECT_STREQ(tern_status_name(TERN_STATUS_SIZE_MISMATCH), "TERN_STATUS_SIZE_MISMATCH");
  EXPECT_STREQ(tern_status_name(static_cast<tern_status>(0x7f)), "TERN_STATUS_UNKNOWN");
}

TEST(CApi, DtypeNamesAndVersion) {
  EXPECT_STREQ(tern_dtype_name(TERN_DTYPE_F32), "f32");
  EXPECT_STREQ(tern_dtype_name(TERN_DTYPE_FP8_E4M3), "fp8_e4m3");
  EXPECT_STREQ(tern_dtype_name(static_cast<tern_dtype>(256)), "invalid");
  EXPECT_STREQ(tern_dtype_name(static_cast<tern_dtype>(-1)), "invalid");
  EXPECT_STRNE(tern_version(), "");
}

// ---- shared state (format 1.2) ----

/// acc += x on method `m`; returns acc.
std::vector<float> accumulate(tern_method* m, std::vector<float> x) {
  EXPECT_EQ(tern_method_set_input(m, 0, x.data(), 16), TERN_STATUS_OK) << tern_last_error_message();
  EXPECT_EQ(tern_method_execute(m), TERN_STATUS_OK) << tern_last_error_message();
  std::vector<float> acc(4);
  EXPECT_EQ(tern_method_copy_output(m, 0, acc.data(), 16), TERN_STATUS_OK);
  return acc;
}

TEST(CApi, MethodsOfAProgramShareItsSharedState) {
  // examples/minimal/make_add_model.py --shared: forward(x f32[4]) -> acc += x, acc shared.
  tern_program* raw = nullptr;
  ASSERT_EQ(tern_program_load_file(TERN_SHARED_MODEL, nullptr, &raw), TERN_STATUS_OK)
      << tern_last_error_message();
  Program p(raw);
  size_t bytes = 0;
  ASSERT_EQ(tern_program_shared_state_bytes(p.get(), &bytes), TERN_STATUS_OK);
  EXPECT_EQ(bytes, 64u);  // f32[4] rounded up to 64
  // Two loads of the method: two sets of arenas, one shared accumulator.
  tern_method* a = nullptr;
  tern_method* b = nullptr;
  ASSERT_EQ(tern_method_load(p.get(), "forward", nullptr, &a), TERN_STATUS_OK)
      << tern_last_error_message();
  Method ma(a);
  ASSERT_EQ(tern_method_load(p.get(), "forward", nullptr, &b), TERN_STATUS_OK);
  Method mb(b);
  EXPECT_EQ(accumulate(a, {1, 2, 3, 4}), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(accumulate(b, {1, 1, 1, 1}), (std::vector<float>{2, 3, 4, 5}));
  // A method's reset_state leaves the program's shared state alone.
  ASSERT_EQ(tern_method_reset_state(a), TERN_STATUS_OK);
  EXPECT_EQ(accumulate(a, {0, 0, 0, 1}), (std::vector<float>{2, 3, 4, 6}));
  ASSERT_EQ(tern_program_reset_shared_state(p.get()), TERN_STATUS_OK);
  EXPECT_EQ(accumulate(b, {1, 1, 1, 1}), (std::vector<float>{1, 1, 1, 1}));
}

TEST(CApi, ProgramWithoutSharedStateHasNone) {
  Program p = load_tiny();
  size_t bytes = 99;
  ASSERT_EQ(tern_program_shared_state_bytes(p.get(), &bytes), TERN_STATUS_OK);
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(tern_program_reset_shared_state(p.get()), TERN_STATUS_OK);
}

// ---- token generation ----

/// tests/c_api/make_step_model.py's counting step program, and its method "decode".
struct StepModel {
  Program program;
  Method method;
};
StepModel load_step() {
  tern_program* p = nullptr;
  EXPECT_EQ(tern_program_load_file(TERN_STEP_MODEL, nullptr, &p), TERN_STATUS_OK)
      << tern_last_error_message();
  tern_method* m = nullptr;
  EXPECT_EQ(tern_method_load(p, "decode", nullptr, &m), TERN_STATUS_OK) << tern_last_error_message();
  return StepModel{Program(p), Method(m)};
}

TEST(CApi, GenerateCountsUpGreedilyAndStops) {
  StepModel s = load_step();
  const int64_t prompt[2] = {2, 5};
  int64_t out[8] = {0};
  size_t n = 0;
  tern_generate_options o;
  tern_generate_options_init(&o);
  o.max_new_tokens = 5;
  tern_generate_stats stats;
  ASSERT_EQ(tern_method_generate(s.method.get(), prompt, 2, &o, out, 8, &n, &stats), TERN_STATUS_OK)
      << tern_last_error_message();
  ASSERT_EQ(n, 5u);
  EXPECT_EQ(std::vector<int64_t>(out, out + 5), (std::vector<int64_t>{6, 7, 0, 1, 2}));
  EXPECT_EQ(stats.prompt_tokens, 2u);
  EXPECT_EQ(stats.generated_tokens, 5u);
  o.stop_token = 7;
  ASSERT_EQ(tern_method_generate(s.method.get(), prompt, 2, &o, out, 8, &n, nullptr), TERN_STATUS_OK);
  EXPECT_EQ(std::vector<int64_t>(out, out + n), (std::vector<int64_t>{6, 7}));
  // Defaults (NULL options): 32 new tokens, greedy.
  int64_t many[32];
  ASSERT_EQ(tern_method_generate(s.method.get(), prompt, 2, nullptr, many, 32, &n, nullptr),
            TERN_STATUS_OK);
  EXPECT_EQ(n, 32u);
  EXPECT_EQ(many[31], (5 + 32) % 8);
}

TEST(CApi, ListsTheDynamicDimensionsOfAMethod) {
  // make_step_model.py: prefill(tokens i64 [1, seq], positions i64 [seq]) -> logits
  // f32 [1, seq, 8], seq in 1..3; decode is static.
  StepModel s = load_step();
  size_t n = 7;
  ASSERT_EQ(tern_program_num_symbols(s.program.get(), "prefill", &n), TERN_STATUS_OK);
  EXPECT_EQ(n, 1u);
  ASSERT_EQ(tern_program_num_symbols(s.program.get(), "decode", &n), TERN_STATUS_OK);
  EXPECT_EQ(n, 0u);
  tern_symbol_info sym;
  ASSERT_EQ(tern_program_symbol_info(s.program.get(), "prefill", 0, &sym), TERN_STATUS_OK);
  EXPECT_STREQ(sym.name, "seq");
  EXPECT_EQ(sym.min, 1);
  EXPECT_EQ(sym.max, 3);
  int32_t dims[4] = {9, 9, 9, 9};
  ASSERT_EQ(tern_program_dim_symbols(s.program.get(), "prefill", 1, 0, dims, 4), TERN_STATUS_OK);
  EXPECT_EQ(dims[0], -1);
  EXPECT_EQ(dims[1], 0);
  ASSERT_EQ(tern_program_dim_symbols(s.program.get(), "prefill", 1, 1, dims, 1), TERN_STATUS_OK);
  EXPECT_EQ(dims[0], 0);
  ASSERT_EQ(tern_program_dim_symbols(s.program.get(), "prefill", 0, 0, dims, 3), TERN_STATUS_OK);
  EXPECT_EQ(std::vector<int32_t>(dims, dims + 3), (std::vector<int32_t>{-1, 0, -1}));
  tern_value_info info;
  ASSERT_EQ(tern_program_output_info(s.program.get(), "prefill", 0, &info), TERN_STATUS_OK);
  EXPECT_EQ(info.sizes[1], 3) << "a dynamic dim's size is its bound";
  ASSERT_EQ(tern_program_dim_symbols(s.program.get(), "decode", 1, 0, dims, 2), TERN_STATUS_OK);
  EXPECT_EQ(dims[0], -1);
  EXPECT_EQ(dims[1], -1);
}

TEST(CApi, GenerateTakesThePromptThroughAPrefillMethod) {
  StepModel s = load_step();
  tern_method* prefill = nullptr;
  ASSERT_EQ(tern_method_load(s.program.get(), "prefill", nullptr, &prefill), TERN_STATUS_OK)
      << tern_last_error_message();
  Method owned(prefill);
  const int64_t prompt[5] = {1, 2, 3, 4, 2};  // chunks of 3 and 2
  int64_t out[4] = {0};
  size_t n = 0;
  tern_generate_options o;
  tern_generate_options_init(&o);
  EXPECT_EQ(o.prefill, nullptr);
  o.max_new_tokens = 4;
  o.prefill = prefill;
  ASSERT_EQ(tern_method_generate(s.method.get(), prompt, 5, &o, out, 4, &n, nullptr),
            TERN_STATUS_OK)
      << tern_method_last_error(s.method.get());
  // The first token is prefill's (2 + 2), then decode counts up by one.
  EXPECT_EQ(std::vector<int64_t>(out, out + n), (std::vector<int64_t>{4, 5, 6, 7}));
  // A prefill method of another load of the program is refused.
  StepModel other = load_step();
  tern_method* foreign = nullptr;
  ASSERT_EQ(tern_method_load(other.program.get(), "prefill", nullptr, &foreign), TERN_STATUS_OK);
  Method foreign_owned(foreign);
  o.prefill = foreign;
  EXPECT_EQ(tern_method_generate(s.method.get(), prompt, 5, &o, out, 4, &n, nullptr),
            TERN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tern_method_last_error(s.method.get())).find("another program load"),
            std::string::npos);
}

}  // namespace
}  // namespace tern::c_api_test
