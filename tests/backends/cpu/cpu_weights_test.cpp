// The cpu backend takes its weights from the program's constants (blob version 8): a program
// compiled for "cpu" holds each weight once (the blob carries recipes, not packed copies), the
// runtime half checks the constant arguments at prepare and packs them there, a second prepare
// neither packs nor allocates, and constants only the delegate read go back to the loader.
// Expected values come from the portable kernels.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/compile/register_cpu_backend_compiler.h"
#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/weight_cache.h"
#include "runtime/core/data_loader.h"
#include "runtime/executor/program.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/partitioner.h"
#include "tools/compiler/quantize.h"

namespace tern::cpu_test {
namespace {

/// A small ResNet-like conv net: 3x3 stem, a 3x3 conv on Winograd's side of the threshold, a
/// 1x1 conv, a depthwise conv, a grouped conv (XNNPACK's), a global pool and a linear head.
compiler::Graph conv_net() {
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 3, 32, 32};
  const int x = b.input("x", DType::F32, xs);
  const int c1 = conv(b, x, xs, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 1);
  const int r1 = b.op("tern::relu", {c1}, DType::F32, {1, 32, 32, 32});
  const int c2 = conv(b, r1, {1, 32, 32, 32}, 64, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 3);
  const int r2 = b.op("tern::relu", {c2}, DType::F32, {1, 64, 32, 32});
  const int c3 = conv(b, r2, {1, 64, 32, 32}, 64, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 5);
  const int c4 = conv(b, c3, {1, 64, 32, 32}, 64, 3, 3, {2, 2}, {1, 1}, {1, 1}, 64, true, 7);
  const int c5 = conv(b, c4, {1, 64, 16, 16}, 64, 3, 3, {1, 1}, {1, 1}, {1, 1}, 4, true, 9);
  const int g = b.op("tern::adaptive_avg_pool2d", {c5, b.int_list({1, 1})}, DType::F32,
                     {1, 64, 1, 1});
  const int f = b.op("tern::flatten", {g, b.int_value(1), b.int_value(-1)}, DType::F32, {1, 64});
  const int w = constant(b, "head.weight", {100, 64}, 11);
  const int bias = constant(b, "head.bias", {100}, 12);
  b.output(b.op("tern::linear", {f, w, bias}, DType::F32, {1, 100}));
  return b.build();
}

/// x [rows, 256] -> linear 512 -> relu -> linear 256 -> gelu -> linear 10.
compiler::Graph mlp_rows(int64_t rows) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {rows, 256});
  const int w1 = constant(b, "fc1.weight", {512, 256}, 21, 0.1f);
  const int b1 = constant(b, "fc1.bias", {512}, 22);
  const int h1 = b.op("tern::linear", {x, w1, b1}, DType::F32, {rows, 512});
  const int r1 = b.op("tern::relu", {h1}, DType::F32, {rows, 512});
  const int w2 = constant(b, "fc2.weight", {256, 512}, 23, 0.1f);
  const int h2 = b.op("tern::linear", {r1, w2, b.none()}, DType::F32, {rows, 256});
  const int g2 = b.op("tern::gelu", {h2, b.string_value("none")}, DType::F32, {rows, 256});
  const int w3 = constant(b, "fc3.weight", {10, 256}, 24, 0.1f);
  const int b3 = constant(b, "fc3.bias", {10}, 25);
  b.output(b.op("tern::linear", {g2, w3, b3}, DType::F32, {rows, 10}));
  return b.build();
}

compiler::Graph mlp() { return mlp_rows(64); }

struct Compiled {
  std::vector<uint8_t> bytes;
  size_t delegates = 0;
};

Compiled compile(const compiler::Graph& graph, bool cpu, const char* quantize = nullptr) {
  compiler::ProgramGraph program;
  program.methods.push_back(graph);
  compiler::CompileOptions options;
  if (quantize != nullptr) options.quantize.scheme = compiler::parse_quant_scheme(quantize);
  if (cpu) options.backends = {"cpu"};
  const compiler::CompileResult r = compiler::compile_program(program, options);
  return {r.bytes, r.methods.at(0).num_delegates};
}

class CpuWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    register_all();
    compiler::register_cpu_backend_compiler();
  }
};

/// The cpu program is the portable one plus its blobs' tables: each weight once. (Blob version
/// 7 carried every weight packed a second time: about twice the portable size.)
TEST_F(CpuWeights, CpuProgramHoldsEachWeightOnce) {
  struct Case {
    const char* name;
    compiler::Graph graph;
    const char* quantize;
  };
  const Case cases[] = {{"conv net", conv_net(), nullptr},
                        {"mlp", mlp(), nullptr},
                        {"nf4 mlp", mlp(), "nf4"},
                        {"fp8 mlp", mlp(), "fp8_e4m3"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Compiled portable = compile(c.graph, false, c.quantize);
    const Compiled cpu = compile(c.graph, true, c.quantize);
    EXPECT_EQ(portable.delegates, 0u);
    ASSERT_EQ(cpu.delegates, 1u);
    const double limit = static_cast<double>(portable.bytes.size()) * 1.05 + 64 * 1024;
    EXPECT_LE(static_cast<double>(cpu.bytes.size()), limit)
        << "portable " << portable.bytes.size() << " bytes, cpu " << cpu.bytes.size();
    std::printf("%s: portable %zu bytes, cpu %zu bytes (+%zu)\n", c.name, portable.bytes.size(),
                cpu.bytes.size(), cpu.bytes.size() - portable.bytes.size());
    // And the delegate still computes what the portable kernels do.
    const auto& in = c.graph.values[static_cast<size_t>(c.graph.inputs[0])];
    const std::vector<std::vector<float>> inputs = {random_floats(numel(in.sizes), 5)};
    const RunResult a = run_program(cpu.bytes, c.graph, inputs, /*disable_cpu=*/false);
    const RunResult b = run_program(portable.bytes, c.graph, inputs, /*disable_cpu=*/false);
    ASSERT_EQ(a.paths, std::vector<DelegatePath>{DelegatePath::Backend});
    ASSERT_EQ(a.outputs.size(), 1u);
    ASSERT_EQ(b.outputs.size(), 1u);
    EXPECT_LE(nmse(a.outputs[0], b.outputs[0]), 1e-10);
  }
}

/// The graph of `make` with all its nodes delegated to "cpu".
compiler::Graph delegated(compiler::Graph (*make)()) {
  compiler::Graph g = make();
  compiler::partition(g, {"cpu"});
  return g;
}

/// Argument index of the region input named `name`.
size_t arg_named(const compiler::Graph& g, const std::string& name) {
  const compiler::DelegateRegion& r = g.delegates.at(0);
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    if (g.values[static_cast<size_t>(r.inputs[i])].name == name) return i;
  }
  ADD_FAILURE() << "no region input " << name;
  return 0;
}

TEST_F(CpuWeights, PrepareChecksEveryWeightSource) {
  const compiler::Graph g = delegated(mlp);
  ASSERT_EQ(g.delegates.size(), 1u);
  const BackendInterface& be = cpu_backend_interface();
  const size_t w1 = arg_named(g, "fc1.weight"), b1 = arg_named(g, "fc1.bias");
  struct Case {
    const char* what;
    std::function<void(RegionArgs&)> mutate;
    std::string expect;
  };
  const std::string head = "(weight source, argument " + std::to_string(w1) + " 'fc1.weight'): "
                           "expected a contiguous f32 tensor [512, 256] of 524288 bytes, found ";
  const std::vector<int64_t> wrong_sizes{512, 255}, transposed{256, 512};
  const uint8_t dim_order[2] = {1, 0};
  const Case cases[] = {
      {"wrong sizes", [&](RegionArgs& a) { a.views[w1].sizes = wrong_sizes.data(); },
       head + "f32 [512, 255] of 524288 bytes"},
      {"wrong dtype", [&](RegionArgs& a) { a.views[w1].dtype = DType::I32; },
       head + "i32 [512, 256] of 524288 bytes"},
      {"too few bytes", [&](RegionArgs& a) { a.views[w1].nbytes = 1000; },
       head + "f32 [512, 256] of 1000 bytes"},
      {"no data", [&](RegionArgs& a) { a.views[w1].data = nullptr; },
       head + "f32 [512, 256] of 524288 bytes (no data)"},
      {"not contiguous",
       [&](RegionArgs& a) {
         a.views[w1].sizes = transposed.data();
         a.views[w1].dim_order = dim_order;
       },
       head + "non-contiguous f32 [256, 512]"},
      {"not a tensor", [&](RegionArgs& a) { a.values[b1] = EValue(); },
       "(weight source, argument " + std::to_string(b1) + "): expected a tensor"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    BackendInitContext ictx;
    ictx.num_threads = 1;
    AlignedBlob blob(g.delegates[0].blob);
    auto h = be.init(ictx, blob.buffer(), {});
    ASSERT_TRUE(h.ok()) << last_error_message();
    RegionArgs args(g);
    c.mutate(args);
    EXPECT_EQ(be.prepare(h.get(), args.span()), Error::InvalidArgument);
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find("cpu backend: value "), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    BackendExecuteContext ectx;
    EXPECT_EQ(be.execute(ectx, h.get(), args.span()), Error::InvalidState);
    be.destroy(h.get());
  }
}

/// A quantized weight whose scheme is not the one the blob was compiled for is refused at
/// prepare, naming it; a NaN FP8 code that appears in the program's bytes too.
TEST_F(CpuWeights, PrepareChecksQuantizedSources) {
  compiler::ProgramGraph program;
  program.methods.push_back(mlp());
  compiler::QuantizeOptions q;
  q.scheme = compiler::parse_quant_scheme("fp8_e4m3");
  compiler::quantize_program(program, q);
  compiler::Graph& g = program.methods[0];
  compiler::partition(g, {"cpu"});
  ASSERT_EQ(g.delegates.size(), 1u);
  const BackendInterface& be = cpu_backend_interface();
  const size_t w1 = arg_named(g, "fc1.weight");
  const compiler::Value& wv = g.values[static_cast<size_t>(g.delegates[0].inputs[w1])];
  ASSERT_EQ(wv.dtype, DType::FP8E4M3);
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    BackendInitContext ictx;
    ictx.num_threads = 1;
    AlignedBlob blob(g.delegates[0].blob);
    auto h = be.init(ictx, blob.buffer(), {});
    ASSERT_TRUE(h.ok()) << last_error_message();
    RegionArgs args(g);
    // The quant view the program would resolve: per-channel scales.
    std::vector<float> scales(512, 0.01f);
    QuantView view;
    view.scheme = QuantView::Scheme::FP8;
    view.granularity = QuantView::Granularity::PerChannel;
    view.scale = scales.data();
    args.views[w1].quant = &view;
    // Every other quantized source gets the same kind of view.
    std::vector<QuantView> others(args.views.size(), view);
    std::vector<std::vector<float>> other_scales(args.views.size());
    for (size_t i = 0; i < args.views.size(); ++i) {
      if (i == w1 || args.views[i].dtype != DType::FP8E4M3) continue;
      other_scales[i].assign(static_cast<size_t>(args.sizes[i][0]), 0.01f);
      others[i].scale = other_scales[i].data();
      args.views[i].quant = &others[i];
    }
    if (variant == 0) {
      ASSERT_EQ(be.prepare(h.get(), args.span()), Error::Ok) << last_error_message();
    } else if (variant == 1) {
      view.granularity = QuantView::Granularity::PerTensor;
      EXPECT_EQ(be.prepare(h.get(), args.span()), Error::InvalidArgument);
      EXPECT_NE(std::string(last_error_message())
                    .find("(quantized weight source 'fc1.weight'): its quantization parameters "
                          "are not those the blob was compiled for"),
                std::string::npos)
          << last_error_message();
    } else {
      args.bytes[w1][3] = 0x7F;  // an e4m3 NaN code
      EXPECT_EQ(be.prepare(h.get(), args.span()), Error::InvalidArgument);
      EXPECT_NE(std::string(last_error_message()).find("holds a NaN or infinity FP8 code"),
                std::string::npos)
          << last_error_message();
    }
    be.destroy(h.get());
  }
}

/// prepare runs once per delegate call at method load; a second call (the same constants)
/// changes nothing, and one whose constant moved is refused rather than silently ignored.
TEST_F(CpuWeights, PrepareTwiceKeepsTheWeights) {
  const compiler::Graph g = delegated(conv_net);
  ASSERT_EQ(g.delegates.size(), 1u);
  const BackendInterface& be = cpu_backend_interface();
  BackendInitContext ictx;
  ictx.num_threads = 2;
  AlignedBlob blob(g.delegates[0].blob);
  auto h = be.init(ictx, blob.buffer(), {});
  ASSERT_TRUE(h.ok()) << last_error_message();
  RegionArgs args(g);
  BackendExecuteContext ectx;
  ASSERT_EQ(be.prepare(h.get(), args.span()), Error::Ok) << last_error_message();
  ASSERT_EQ(be.execute(ectx, h.get(), args.span()), Error::Ok) << last_error_message();
  const size_t out = args.values.size() - 1;
  const std::vector<uint8_t> first = args.bytes[out];
  ASSERT_EQ(be.prepare(h.get(), args.span()), Error::Ok) << last_error_message();
  std::fill(args.bytes[out].begin(), args.bytes[out].end(), 0);
  ASSERT_EQ(be.execute(ectx, h.get(), args.span()), Error::Ok) << last_error_message();
  EXPECT_EQ(args.bytes[out], first);
  // The head's weight at another address: refused, naming it.
  const size_t w = arg_named(g, "head.weight");
  std::vector<uint8_t> moved = args.bytes[w];
  args.views[w].data = moved.data();
  EXPECT_EQ(be.prepare(h.get(), args.span()), Error::InvalidState);
  EXPECT_NE(std::string(last_error_message()).find("the constant moved since the first prepare"),
            std::string::npos)
      << last_error_message();
  be.destroy(h.get());
}

/// A loader over an aligned copy of a program that records release_resident calls.
class RecordingLoader final : public DataLoader {
 public:
  explicit RecordingLoader(const std::vector<uint8_t>& bytes) : bytes_(bytes.size() + 64) {
    base_ = bytes_.data();
    while (reinterpret_cast<uintptr_t>(base_) % 64 != 0) ++base_;
    std::memcpy(base_, bytes.data(), bytes.size());
    size_ = bytes.size();
  }
  Result<size_t> size() const override { return size_; }
  Result<FreeableBuffer> load(size_t offset, size_t size) override {
    return FreeableBuffer(base_ + offset, size, nullptr);
  }
  void release_resident(const void* data, size_t size) override {
    released.emplace_back(static_cast<const uint8_t*>(data) - base_, size);
  }
  std::vector<std::pair<ptrdiff_t, size_t>> released;

 private:
  std::vector<uint8_t> bytes_;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

/// Once a delegate has packed a constant that no portable node reads, its bytes go back to the
/// loader (an mmapped program drops the pages): the program's copy and the packed one are not
/// both resident. A constant a portable node also reads, or that the delegate reads in place,
/// stays.
TEST_F(CpuWeights, PackedConstantsGoBackToTheLoader) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {64, 128});
  const int w = constant(b, "w", {128, 128}, 1, 0.1f);  // packed, read by the delegate only
  const int shared = constant(b, "shared", {128}, 2);   // packed too, and read by a portable mul
  const int y = b.op("tern::linear", {x, w, shared}, DType::F32, {64, 128});
  b.output(b.op("tern::mul", {y, shared}, DType::F32, {64, 128}));  // not delegated
  delegate_cpu(b, 0, 0);
  const compiler::Graph graph = b.build();
  // The blob says which sources are the delegate's alone.
  const std::vector<uint8_t>& blob = graph.delegates[0].blob;
  cpu::BlobHeader hdr;
  std::memcpy(&hdr, blob.data(), sizeof(hdr));
  int exclusive = 0, kept = 0;
  for (uint32_t i = 0; i < hdr.num_values; ++i) {
    cpu::BlobValue v;
    std::memcpy(&v, blob.data() + sizeof(hdr) + i * sizeof(v), sizeof(v));
    if (v.kind != static_cast<uint32_t>(cpu::ValueKind::Source)) continue;
    ((v.source & cpu::kSourceExclusive) ? exclusive : kept)++;
  }
  EXPECT_EQ(exclusive, 1);
  EXPECT_EQ(kept, 1);

  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  for (bool disable : {false, true}) {
    SCOPED_TRACE(disable ? "portable fallback" : "cpu");
    RecordingLoader loader(pte);
    Program::LoadOptions lo;
    lo.verification = Program::Verification::Structure;  // no checksum releases
    auto program = Program::load(&loader, lo);
    ASSERT_TRUE(program.ok()) << last_error_message();
    testing::MethodMemory memory(program->method_meta("forward").get(), -1, 0, 1 << 20);
    const char* disabled[] = {"cpu"};
    MethodLoadOptions options;
    if (disable) options.disabled_backends = Span<const char* const>(disabled, 1);
    {
      auto method = program->load_method("forward", memory.manager(), options);
      ASSERT_TRUE(method.ok()) << last_error_message();
    }
    if (disable) {
      EXPECT_TRUE(loader.released.empty());
      continue;
    }
    // w's 64 KiB, right after its packing; then, as the method goes, the blob's segment (freed
    // by destroy). Never `shared`.
    const compiler::ConstantBytes& wb = graph.values[static_cast<size_t>(w)].data;
    const compiler::ConstantBytes& sb = graph.values[static_cast<size_t>(shared)].data;
    ASSERT_EQ(loader.released.size(), 2u);
    EXPECT_EQ(loader.released[0].second, wb.size());
    EXPECT_EQ(std::memcmp(pte.data() + loader.released[0].first, wb.data(), wb.size()), 0);
    for (const auto& r : loader.released) {
      EXPECT_FALSE(r.second == sb.size() &&
                   std::memcmp(pte.data() + r.first, sb.data(), sb.size()) == 0);
    }
  }
  // The method still runs and matches the portable one (the pages are readable after a release).
  const std::vector<std::vector<float>> in = {random_floats(64 * 128, 3)};
  const RunResult a = run_program(pte, graph, in, false), p = run_program(pte, graph, in, true);
  ASSERT_EQ(a.outputs.size(), 1u);
  EXPECT_LE(nmse(a.outputs[0], p.outputs[0]), 1e-10);
}

}  // namespace
}  // namespace tern::cpu_test

namespace tern::cpu_test {
namespace {

/// Loads method `name` of `lp` and runs it on x; its output 0.
struct Loaded {
  std::unique_ptr<testing::MethodMemory> memory;
  std::unique_ptr<Method> method;
};
Loaded load(testing::LoadedProgram& lp, const char* name) {
  Loaded l;
  l.memory = std::make_unique<testing::MethodMemory>(lp.program().method_meta(name).get(), -1,
                                                      0, 1 << 20);
  auto m = lp.program().load_method(name, l.memory->manager());
  EXPECT_TRUE(m.ok()) << last_error_message();
  if (m.ok()) l.method = std::make_unique<Method>(std::move(m.get()));
  return l;
}
std::vector<float> run_rows(Method& m, int64_t rows) {
  std::vector<int64_t> sizes = {rows, 256};
  std::vector<float> x = random_floats(static_cast<size_t>(rows * 256), 77u);
  EXPECT_EQ(m.set_input(0, testing::f32_view(sizes, x)), Error::Ok) << last_error_message();
  EXPECT_EQ(m.execute(), Error::Ok) << last_error_message();
  return testing::to_vector(*m.output(0).get());
}

/// Two methods of one program over the same weights (a prefill over 64 rows and a decode over
/// 8): the second method's delegate reads the first one's packed panels (cpu/runtime/
/// weight_cache.h) instead of packing a copy, gives the same outputs as the portable program,
/// and keeps them readable after the first method is gone.
TEST_F(CpuWeights, MethodsOfOneProgramShareThePackedWeights) {
  compiler::ProgramGraph program;
  program.methods.push_back(mlp_rows(64));
  program.methods.push_back(mlp_rows(8));
  program.methods[1].name = "decode";
  compiler::CompileOptions options;
  options.backends = {"cpu"};
  const std::vector<uint8_t> cpu = compiler::compile_program(program, options).bytes;
  options.backends.clear();
  const std::vector<uint8_t> portable = compiler::compile_program(program, options).bytes;

  testing::LoadedProgram ref(portable);
  Loaded ref_decode = load(ref, "decode");
  ASSERT_NE(ref_decode.method, nullptr);
  const std::vector<float> want = run_rows(*ref_decode.method, 8);

  testing::LoadedProgram lp(cpu);
  const cpu::WeightCacheStats before = cpu::weight_cache_stats();
  Loaded forward = load(lp, "forward");
  const cpu::WeightCacheStats after_forward = cpu::weight_cache_stats();
  Loaded decode = load(lp, "decode");
  const cpu::WeightCacheStats after_decode = cpu::weight_cache_stats();
  ASSERT_TRUE(forward.method != nullptr && decode.method != nullptr);
  // forward packs fc1, fc2 and fc3 (64 rows: each on tern's GEMM); decode's fc1 and fc2 (8
  // rows: tern's GEMM) are the same panels, its fc3 (8 x 10 x 256: XNNPACK's node) is not.
  EXPECT_EQ(after_forward.entries - before.entries, 3u);
  EXPECT_EQ(after_forward.hits, before.hits);
  EXPECT_EQ(after_decode.hits - after_forward.hits, 2u);
  EXPECT_EQ(after_decode.entries, after_forward.entries);
  const std::vector<float> got = run_rows(*decode.method, 8);
  EXPECT_LE(max_rel(got, want), 1e-5);
  (void)run_rows(*forward.method, 64);
  forward.method.reset();  // its delegates go: their entries too; the panels decode reads stay
  forward.memory.reset();
  EXPECT_EQ(cpu::weight_cache_stats().entries, before.entries)
      << "forward's entries leave with it (decode made none of its own)";
  EXPECT_EQ(run_rows(*decode.method, 8), got);
  decode.method.reset();
  EXPECT_EQ(cpu::weight_cache_stats().entries, before.entries);
}

}  // namespace
}  // namespace tern::cpu_test
