// Sample programs and the strict sample backend (see sample_programs.h).
#include "tests/fuzz/sample_programs.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_builder.h"

namespace tern::fuzz {

const char kSampleBackendName[] = "sample";

namespace {

enum class SampleOp : uint8_t { Add, Mul, Relu, AddRelu };

// Handles are small integers cast to pointers: no heap state, nothing to leak.
DelegateHandle* handle_of(SampleOp op) {
  return reinterpret_cast<DelegateHandle*>(static_cast<uintptr_t>(op) + 1);
}
SampleOp op_of(DelegateHandle* handle) {
  return static_cast<SampleOp>(reinterpret_cast<uintptr_t>(handle) - 1);
}

bool blob_is(Span<const uint8_t> blob, const char* text) {
  const size_t n = std::strlen(text);
  return blob.size() == n && (n == 0 || std::memcmp(blob.data(), text, n) == 0);
}

/// make_mlp.py's generator: floats in [-scale, scale), rounded to f32.
std::vector<float> lcg_values(uint64_t seed, size_t count, double scale) {
  uint64_t state = seed;
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    state = (state * 1103515245ull + 12345ull) % (1ull << 31);
    out[i] = static_cast<float>(
        (static_cast<double>(state) / static_cast<double>(1ull << 31) * 2 - 1) * scale);
  }
  return out;
}

std::vector<float> ramp(size_t n, float start, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

compiler::ProgramGraph one_method(const std::string& name, compiler::Graph graph) {
  compiler::ProgramGraph p;
  p.producer = "tests/fuzz/sample_programs";
  p.source_model = name;
  p.methods.push_back(std::move(graph));
  return p;
}

}  // namespace

Result<DelegateHandle*> SampleBackend::init(BackendInitContext& /*context*/,
                                            FreeableBuffer blob_buffer,
                                            Span<const CompileSpecView> /*specs*/) const {
  const Span<const uint8_t> blob = blob_buffer.bytes();
  if (blob_is(blob, "add")) return handle_of(SampleOp::Add);
  if (blob_is(blob, "mul")) return handle_of(SampleOp::Mul);
  if (blob_is(blob, "relu")) return handle_of(SampleOp::Relu);
  if (blob_is(blob, "add_relu")) return handle_of(SampleOp::AddRelu);
  return set_error_message(Error::DelegateInvalidCompatibility,
                           "sample backend: unknown blob of %zu bytes", blob.size());
}

Error SampleBackend::execute(BackendExecuteContext& /*context*/, DelegateHandle* handle,
                             Span<EValue*> args) const {
  const SampleOp op = op_of(handle);
  const size_t num_in = op == SampleOp::Relu ? 1 : 2;
  TERN_CHECK_OR_RETURN_ERROR(args.size() == num_in + 1, DelegateExecutionFailed,
                             "sample backend: expected %zu args, found %zu", num_in + 1,
                             args.size());
  uint64_t numel = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    TERN_CHECK_OR_RETURN_ERROR(
        args[i] != nullptr && args[i]->is_tensor() && args[i]->payload.tensor != nullptr,
        DelegateExecutionFailed, "sample backend: arg %zu is not a tensor", i);
    const TensorView& t = *args[i]->payload.tensor;
    TERN_CHECK_OR_RETURN_ERROR(t.dtype == DType::F32 && t.is_contiguous(), DelegateExecutionFailed,
                               "sample backend: arg %zu: expected contiguous f32, found %s", i,
                               to_string(t.dtype));
    if (i == 0) numel = t.numel();
    TERN_CHECK_OR_RETURN_ERROR(
        t.numel() == numel && t.nbytes == numel * sizeof(float) &&
            (t.data != nullptr || numel == 0),
        DelegateExecutionFailed, "sample backend: arg %zu: %llu elements, expected %llu", i,
        static_cast<unsigned long long>(t.numel()), static_cast<unsigned long long>(numel));
  }
  const float* a = static_cast<const float*>(args[0]->payload.tensor->data);
  const float* b = num_in > 1 ? static_cast<const float*>(args[1]->payload.tensor->data) : nullptr;
  float* out = static_cast<float*>(args[num_in]->payload.tensor->data);
  for (uint64_t i = 0; i < numel; ++i) {
    float r = 0;
    switch (op) {
      case SampleOp::Add:
        r = a[i] + b[i];
        break;
      case SampleOp::Mul:
        r = a[i] * b[i];
        break;
      case SampleOp::Relu:
        r = a[i] < 0.0f ? 0.0f : a[i];
        break;  // NaN and -0 kept
      case SampleOp::AddRelu:
        r = a[i] + b[i];
        r = r < 0.0f ? 0.0f : r;
        break;
    }
    out[i] = r;
  }
  return Error::Ok;
}

void SampleBackend::destroy(DelegateHandle* /*handle*/) const {}

bool register_sample_kernels_and_backend() {
  static SampleBackend backend;
  static bool ok = [] {
    if (register_portable_kernels() != Error::Ok) return false;
    if (find_backend(kSampleBackendName) != nullptr) return true;
    Backend entry;
    entry.name = kSampleBackendName;
    entry.backend = &backend;
    return register_backend(entry) == Error::Ok;
  }();
  return ok;
}

compiler::Graph demo_mlp_graph() {
  compiler::GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 16});
  const int w1 = b.constant_f32("w1", {32, 16}, lcg_values(1, 32 * 16, 0.25));
  const int b1 = b.constant_f32("b1", {32}, lcg_values(2, 32, 0.1));
  const int w2 = b.constant_f32("w2", {16, 32}, lcg_values(3, 16 * 32, 0.18));
  const int b2 = b.constant_f32("b2", {16}, lcg_values(4, 16, 0.1));
  const int gate = b.constant_f32("gate", {16}, lcg_values(5, 16, 1.0));
  const int w3 = b.constant_f32("w3", {4, 16}, lcg_values(6, 4 * 16, 0.25));
  const int b3 = b.constant_f32("b3", {4}, lcg_values(7, 4, 0.1));
  const int h_pre = b.op("tern::linear", {x, w1, b1}, DType::F32, {1, 32}, "fc1");
  const int h = b.op("tern::relu", {h_pre}, DType::F32, {1, 32}, "act");
  const int r_pre = b.op("tern::linear", {h, w2, b2}, DType::F32, {1, 16}, "fc2");
  const int r = b.op("tern::add", {r_pre, x}, DType::F32, {1, 16}, "residual");
  const int s = b.op("tern::mul", {r, gate}, DType::F32, {1, 16}, "gate");
  const int y = b.op("tern::linear", {s, w3, b3}, DType::F32, {1, 4}, "head");
  const int out = b.op("tern::reshape", {y, b.int_list({2, 2})}, DType::F32, {2, 2}, "view");
  b.output(out);
  return b.build();
}

compiler::Graph elementwise_graph() {
  compiler::GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {2, 3});
  const int c = b.constant_f32("c", {3}, {0.5f, -1.0f, 2.0f});
  const int s = b.op("tern::add", {x, c}, DType::F32, {2, 3}, "shift");
  const int m = b.op("tern::mul", {s, x}, DType::F32, {2, 3}, "square");
  const int y = b.op("tern::relu", {m}, DType::F32, {2, 3}, "act");
  b.output(y);
  return b.build();
}

compiler::Graph reshape_graph() {
  compiler::GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {2, 6});
  const int c = b.constant_f32("c", {3, 4}, ramp(12, -1.5f, 0.25f));
  const int r = b.op("tern::reshape", {x, b.int_list({3, 4})}, DType::F32, {3, 4}, "fold");
  const int s = b.op("tern::add", {r, c}, DType::F32, {3, 4}, "bias");
  const int f = b.op("tern::reshape", {s, b.int_list({-1})}, DType::F32, {12}, "flatten");
  const int y = b.op("tern::mul", {f, f}, DType::F32, {12}, "square");
  b.output(y);
  return b.build();
}

/// Bounded-dynamic shapes (format 1.1, docs/dynamic-shapes.md): x [seq<=4, 3] -> relu ->
/// view [1, seq, 3] through a symbolic int list -> softmax; the fuzzers run it at the bound.
compiler::Graph dynamic_graph() {
  compiler::GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, 4);
  const int x = b.input("x", DType::F32, {4, 3});
  b.dynamic_dims(x, {seq, -1});
  const int r = b.op("tern::relu", {x}, DType::F32, {4, 3}, "act");
  b.dynamic_dims(r, {seq, -1});
  const int shape = b.int_list({1, 4, 3});
  b.int_symbols(shape, {-1, seq, -1});
  const int v = b.op("tern::view", {r, shape}, DType::F32, {1, 4, 3}, "lift");
  b.dynamic_dims(v, {-1, seq, -1});
  const int y = b.op("tern::softmax", {v, b.int_value(-1)}, DType::F32, {1, 4, 3}, "norm");
  b.dynamic_dims(y, {-1, seq, -1});
  b.output(y);
  return b.build();
}

compiler::Graph state_graph() {
  compiler::GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 8});
  const int acc = b.state("acc", DType::F32, {1, 8});
  b.op_into("tern::add", {acc, x}, {acc}, "accumulate");
  const int y = b.op("tern::mul", {acc, x}, DType::F32, {1, 8}, "scale");
  b.output(y);
  b.output(acc);
  return b.build();
}

compiler::ProgramGraph shared_state_program() {
  compiler::ProgramGraph program;
  program.source_model = "shared_state";
  std::vector<float> init(8);
  for (size_t i = 0; i < init.size(); ++i) init[i] = 0.25f * static_cast<float>(i);
  std::vector<uint8_t> init_bytes(init.size() * sizeof(float));
  std::memcpy(init_bytes.data(), init.data(), init_bytes.size());
  {
    compiler::GraphBuilder b("forward");
    const int x = b.input("x", DType::F32, {1, 8});
    const int acc = b.shared_state("acc", DType::F32, {1, 8}, init_bytes);
    b.op_into("tern::add", {acc, x}, {acc}, "accumulate");
    b.output(b.op("tern::mul", {acc, x}, DType::F32, {1, 8}, "scale"));
    program.methods.push_back(b.build());
  }
  {
    compiler::GraphBuilder b("peek");
    const int acc = b.shared_state("acc", DType::F32, {1, 8}, init_bytes);
    b.output(b.op("tern::relu", {acc}, DType::F32, {1, 8}, "relu"));
    program.methods.push_back(b.build());
  }
  return program;
}

compiler::Graph delegate_graph() {
  compiler::GraphBuilder b("forward");
  const std::vector<int64_t> shape = {2, 3};
  const int x = b.input("x", DType::F32, shape);
  const int y = b.input("y", DType::F32, shape);
  const int c = b.constant_f32("c", shape, {1, 2, 3, 4, 5, 6});
  const int s = b.op("tern::add", {x, y}, DType::F32, shape, "add0");
  const int r = b.op("tern::relu", {s}, DType::F32, shape, "relu0");
  b.delegate(kSampleBackendName, 0, 1,
             std::vector<uint8_t>{'a', 'd', 'd', '_', 'r', 'e', 'l', 'u'});
  const int out = b.op("tern::mul", {r, c}, DType::F32, shape, "scale");
  b.output(out);
  return b.build();
}

compiler::Graph int32_graph() {
  compiler::GraphBuilder b("forward");
  const int a = b.input("a", DType::I32, {4});
  const int c = b.input("b", DType::I32, {4});
  const int s = b.op("tern::add", {a, c}, DType::I32, {4}, "sum");
  const int m = b.op("tern::mul", {s, a}, DType::I32, {4}, "product");
  b.output(m);
  return b.build();
}

compiler::Graph quantized_graph() {
  compiler::GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {2, 40});
  const int w1 = b.constant_f32("fc1.weight", {24, 40}, lcg_values(21, 24 * 40, 0.2));
  const int b1 = b.constant_f32("fc1.bias", {24}, lcg_values(22, 24, 0.1));
  const int w2 = b.constant_f32("fc2.weight", {8, 24}, lcg_values(23, 8 * 24, 0.3));
  const int table = b.constant_f32("emb.weight", {5, 8}, lcg_values(24, 5 * 8, 1.0));
  std::vector<uint8_t> index_bytes(2 * sizeof(int64_t));
  const int64_t indices[2] = {4, 1};
  std::memcpy(index_bytes.data(), indices, sizeof indices);
  const int idx = b.constant("idx", DType::I64, {2}, index_bytes);
  const int h = b.op("tern::linear", {x, w1, b1}, DType::F32, {2, 24}, "fc1");
  const int r = b.op("tern::relu", {h}, DType::F32, {2, 24}, "act");
  const int y = b.op("tern::linear", {r, w2, b.none()}, DType::F32, {2, 8}, "fc2");
  const int e = b.op("tern::embedding", {table, idx}, DType::F32, {2, 8}, "emb");
  const int out = b.op("tern::add", {y, e}, DType::F32, {2, 8}, "sum");
  b.output(out);
  compiler::ProgramGraph program = one_method("quantized", b.build());
  compiler::QuantizeOptions options;
  options.rules.push_back(compiler::parse_quant_rule("fc1.weight=nf4:block=32:double"));
  options.rules.push_back(compiler::parse_quant_rule("fc2.weight=fp8_e5m2:block=4x16"));
  options.rules.push_back(compiler::parse_quant_rule("emb.weight=fp8_e4m3:per_channel"));
  compiler::quantize_program(program, options);
  return program.methods[0];
}

std::vector<uint8_t> compile_one(const compiler::Graph& graph, const std::string& source_model) {
  return compiler::compile_program(one_method(source_model, graph)).bytes;
}

const std::vector<SampleProgram>& sample_programs() {
  static const std::vector<SampleProgram> programs = [] {
    std::vector<SampleProgram> p;
    p.push_back({"demo_mlp", one_method("demo_mlp", demo_mlp_graph())});
    p.push_back({"elementwise", one_method("elementwise", elementwise_graph())});
    p.push_back({"reshape", one_method("reshape", reshape_graph())});
    p.push_back({"state", one_method("state", state_graph())});
    p.push_back({"delegate", one_method("delegate", delegate_graph())});
    p.push_back({"int32", one_method("int32", int32_graph())});
    p.push_back({"quantized", one_method("quantized", quantized_graph())});
    p.push_back({"dynamic", one_method("dynamic", dynamic_graph())});
    p.push_back({"shared_state", shared_state_program()});
    compiler::ProgramGraph two = one_method("two_methods", demo_mlp_graph());
    compiler::Graph second = elementwise_graph();
    second.name = "second";
    two.methods.push_back(std::move(second));
    two.metadata["purpose"] = "fuzz seed";
    p.push_back({"two_methods", std::move(two)});
    return p;
  }();
  return programs;
}

const std::vector<uint8_t>& sample_program_bytes(size_t index) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<std::vector<uint8_t>>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  const auto& programs = sample_programs();
  if (cache.empty()) cache.resize(programs.size());
  std::unique_ptr<std::vector<uint8_t>>& slot = cache.at(index);
  if (!slot) {
    slot = std::make_unique<std::vector<uint8_t>>(
        compiler::compile_program(programs[index].graph).bytes);
  }
  return *slot;
}

}  // namespace tern::fuzz
