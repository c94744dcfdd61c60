// The cpu backend's bounded-dynamic rows (backends/cpu/README.md "Bounded-dynamic rows", blob
// version 12): linears whose x varies in one leading dim are partitioned to the delegate (the
// other nodes on dynamic values stay portable), run tern's GEMM (op 17) or the quantized GEMM
// (op 23) on the actual row count, and match a double-precision reference worked from the same
// weights at every size within the bound — including sizes where the static lowering would
// have picked XNNPACK's fully-connected node. parse_blob refuses dynamic masks anywhere else.
// Execute never allocates at any size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "backends/cpu/compile/register_cpu_backend_compiler.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "tests/backends/cpu/cpu_test_util.h"
#include "tests/support/allocation_counter.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/partitioner.h"

namespace tern::cpu_test {
namespace {

constexpr int64_t kMaxSeq = 12, kIn = 64, kHidden = 56, kOut = 24, kSmall = 8, kZ = 16;

struct Weights {
  std::vector<float> w1 = random_floats(kHidden * kIn, 1, -0.2f, 0.2f);
  std::vector<float> b1 = random_floats(kHidden, 2);
  std::vector<float> w2 = random_floats(kOut * kHidden, 3, -0.2f, 0.2f);
  std::vector<float> w3 = random_floats(kSmall * kIn, 4, -0.3f, 0.3f);
  std::vector<float> b3 = random_floats(kSmall, 5);
  std::vector<float> w4 = random_floats(kZ * kSmall, 6, -0.5f, 0.5f);
};

/// x [1, seq<=12, 64] -> y = linear(silu(linear(x, w1, b1)), w2) [1, seq, 24],
/// q = linear(x, w3, b3) [1, seq, 8] (8 x 64 per row: a product the static lowering gives to
/// XNNPACK's fully-connected node) and z = linear(q, w4) [1, seq, 16] (q both an output and
/// read inside the delegate).
compiler::Graph dynamic_mlp(const Weights& w) {
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, kMaxSeq);
  const int x = b.input("x", DType::F32, {1, kMaxSeq, kIn});
  b.dynamic_dims(x, {-1, seq, -1});
  const int w1 = b.constant_f32("w1", {kHidden, kIn}, w.w1);
  const int b1 = b.constant_f32("b1", {kHidden}, w.b1);
  const int w2 = b.constant_f32("w2", {kOut, kHidden}, w.w2);
  const int w3 = b.constant_f32("w3", {kSmall, kIn}, w.w3);
  const int w4 = b.constant_f32("w4", {kZ, kSmall}, w.w4);
  const int b3 = b.constant_f32("b3", {kSmall}, w.b3);
  const int h = b.op("tern::linear", {x, w1, b1}, DType::F32, {1, kMaxSeq, kHidden}, "fc1");
  b.dynamic_dims(h, {-1, seq, -1});
  const int q = b.op("tern::linear", {x, w3, b3}, DType::F32, {1, kMaxSeq, kSmall}, "small");
  b.dynamic_dims(q, {-1, seq, -1});
  const int z = b.op("tern::linear", {q, w4, b.none()}, DType::F32, {1, kMaxSeq, kZ}, "z");
  b.dynamic_dims(z, {-1, seq, -1});
  const int a = b.op("tern::silu", {h}, DType::F32, {1, kMaxSeq, kHidden}, "act");
  b.dynamic_dims(a, {-1, seq, -1});
  const int y = b.op("tern::linear", {a, w2, b.none()}, DType::F32, {1, kMaxSeq, kOut}, "fc2");
  b.dynamic_dims(y, {-1, seq, -1});
  b.output(y);
  b.output(q);
  b.output(z);
  return b.build();
}

/// y, q and z of dynamic_mlp for `seq` rows of x, in double.
std::vector<std::vector<double>> reference(const Weights& w, const std::vector<float>& x,
                                           int64_t seq) {
  std::vector<double> y, q, z;
  for (int64_t s = 0; s < seq; ++s) {
    const float* xr = x.data() + s * kIn;
    std::vector<double> a(kHidden);
    for (int64_t o = 0; o < kHidden; ++o) {
      double acc = w.b1[o];
      for (int64_t i = 0; i < kIn; ++i) acc += double(xr[i]) * w.w1[o * kIn + i];
      a[o] = acc / (1.0 + std::exp(-acc));
    }
    for (int64_t o = 0; o < kOut; ++o) {
      double acc = 0.0;
      for (int64_t i = 0; i < kHidden; ++i) acc += a[i] * w.w2[o * kHidden + i];
      y.push_back(acc);
    }
    std::vector<double> qr;
    for (int64_t o = 0; o < kSmall; ++o) {
      double acc = w.b3[o];
      for (int64_t i = 0; i < kIn; ++i) acc += double(xr[i]) * w.w3[o * kIn + i];
      qr.push_back(acc);
      q.push_back(acc);
    }
    for (int64_t o = 0; o < kZ; ++o) {
      double acc = 0.0;
      for (int64_t i = 0; i < kSmall; ++i) acc += qr[i] * w.w4[o * kSmall + i];
      z.push_back(acc);
    }
  }
  return {y, q, z};
}

double rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - want[i]));
    ref = std::max(ref, std::fabs(want[i]));
  }
  return err / std::max(ref, 1e-30);
}

class CpuDynamicRows : public ::testing::Test {
 protected:
  void SetUp() override {
    register_all();
    compiler::register_cpu_backend_compiler();
  }
};

/// Runs `pte` at each size (cpu backend on, or disabled: the portable fallback) and checks
/// y, q and z against the reference; returns how the delegate calls ran.
std::vector<DelegatePath> run_sizes(const std::vector<uint8_t>& pte, const Weights& w,
                                    bool disable_cpu, double tolerance) {
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  const char* disabled[] = {"cpu"};
  MethodLoadOptions options;
  if (disable_cpu) options.disabled_backends = Span<const char* const>(disabled, 1);
  auto method = lp.program().load_method("forward", memory.manager(), options);
  EXPECT_TRUE(method.ok()) << last_error_message();
  if (!method.ok()) return {};
  for (int64_t seq : {int64_t{5}, int64_t{1}, kMaxSeq, int64_t{7}, int64_t{2}}) {
    std::vector<int64_t> sizes = {1, seq, kIn};
    std::vector<float> x = random_floats(static_cast<size_t>(seq * kIn), 100u + uint32_t(seq));
    EXPECT_EQ(method->set_input(0, testing::f32_view(sizes, x)), Error::Ok) << last_error_message();
    EXPECT_EQ(method->execute(), Error::Ok) << last_error_message();
    const std::vector<std::vector<double>> want = reference(w, x, seq);
    for (size_t o = 0; o < 3; ++o) {
      const TensorView* t = method->output(o).get();
      EXPECT_EQ(t->rank, 3u);
      if (t->rank != 3u) continue;
      EXPECT_EQ(t->sizes[1], seq);
      EXPECT_LE(rel_error(testing::to_vector(*t), want[o]), tolerance)
          << "output " << o << " seq " << seq << (disable_cpu ? " (portable)" : " (cpu)");
    }
  }
  std::vector<DelegatePath> paths;
  for (size_t i = 0; i < method->num_delegate_calls(); ++i) {
    paths.push_back(method->delegate_path(i).get());
  }
  return paths;
}

TEST_F(CpuDynamicRows, LinearsRunOnTheDelegateAtEverySizeWithinTheBound) {
  const Weights w;
  compiler::Graph g = dynamic_mlp(w);
  compiler::partition(g, {"cpu"});
  // One region: the silu (a rows map) joins and folds into fc1's epilogue.
  ASSERT_EQ(g.delegates.size(), 1u);
  EXPECT_EQ(g.delegates[0].nodes.size(), 5u);
  for (const compiler::DelegateRegion& r : g.delegates) {
    const std::vector<uint32_t> ops = blob_ops(compiler::CpuBackendCompiler().lower(g, r).blob);
    EXPECT_EQ(ops.size(), 4u);
    for (uint32_t op : ops) {
      EXPECT_EQ(op, static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected))
          << "a dynamic linear runs tern's GEMM, never XNNPACK's fully-connected node";
    }
  }
  compiler::ProgramGraph program;
  program.methods.push_back(dynamic_mlp(w));
  compiler::CompileOptions options;
  options.backends = {"cpu"};
  const compiler::CompileResult compiled = compiler::compile_program(program, options);
  EXPECT_EQ(compiled.methods[0].num_delegates, 1u);
  const std::vector<DelegatePath> paths = run_sizes(compiled.bytes, w, false, 1e-5);
  ASSERT_EQ(paths.size(), 1u);
  for (DelegatePath p : paths) EXPECT_EQ(p, DelegatePath::Backend);
  const std::vector<DelegatePath> fallback = run_sizes(compiled.bytes, w, true, 1e-5);
  for (DelegatePath p : fallback) EXPECT_EQ(p, DelegatePath::Fallback);
}

TEST_F(CpuDynamicRows, QuantizedLinearsTakeDynamicRowsToo) {
  const Weights w;
  compiler::ProgramGraph program;
  program.methods.push_back(dynamic_mlp(w));
  compiler::CompileOptions options;
  options.backends = {"cpu"};
  options.quantize.scheme = compiler::parse_quant_scheme("fp8_e4m3");
  const compiler::CompileResult cpu = compiler::compile_program(program, options);
  EXPECT_EQ(cpu.methods[0].num_delegates, 1u);
  // The reference is the f32 weights': FP8's rounding (e4m3, 3 mantissa bits) bounds the
  // difference; the cpu run against the portable one is checked tightly below.
  const std::vector<DelegatePath> paths = run_sizes(cpu.bytes, w, false, 0.1);
  for (DelegatePath p : paths) EXPECT_EQ(p, DelegatePath::Backend);

  testing::LoadedProgram lp(cpu.bytes);
  const MethodMeta meta = lp.program().method_meta("forward").get();
  testing::MethodMemory m1(meta, -1, 0, 1 << 20), m2(meta, -1, 0, 1 << 20);
  const char* disabled[] = {"cpu"};
  MethodLoadOptions off;
  off.disabled_backends = Span<const char* const>(disabled, 1);
  auto a = lp.program().load_method("forward", m1.manager());
  auto b = lp.program().load_method("forward", m2.manager(), off);
  ASSERT_TRUE(a.ok() && b.ok()) << last_error_message();
  for (int64_t seq : {int64_t{3}, kMaxSeq, int64_t{1}}) {
    std::vector<int64_t> sizes = {1, seq, kIn};
    std::vector<float> x = random_floats(static_cast<size_t>(seq * kIn), 7u);
    for (auto* m : {&a.get(), &b.get()}) {
      ASSERT_EQ(m->set_input(0, testing::f32_view(sizes, x)), Error::Ok) << last_error_message();
      ASSERT_EQ(m->execute(), Error::Ok) << last_error_message();
    }
    for (size_t o = 0; o < 3; ++o) {
      const std::vector<float> got = testing::to_vector(*a->output(o).get());
      const std::vector<float> port = testing::to_vector(*b->output(o).get());
      std::vector<double> want(port.begin(), port.end());
      EXPECT_LE(rel_error(got, want), 1e-5) << "output " << o << " seq " << seq;
    }
  }
}

TEST_F(CpuDynamicRows, ExecuteNeverAllocatesAtAnySize) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  const Weights w;
  compiler::ProgramGraph program;
  program.methods.push_back(dynamic_mlp(w));
  compiler::CompileOptions options;
  options.backends = {"cpu"};
  const compiler::CompileResult compiled = compiler::compile_program(program, options);
  testing::LoadedProgram lp(compiled.bytes);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  const std::vector<int64_t> seqs = {3, kMaxSeq, 1, 8};
  std::vector<std::vector<float>> xs;
  std::vector<std::vector<int64_t>> sizes;
  for (int64_t seq : seqs) {
    xs.push_back(random_floats(static_cast<size_t>(seq * kIn), 9u));
    sizes.push_back({1, seq, kIn});
  }
  ASSERT_EQ(method->set_input(0, testing::f32_view(sizes[0], xs[0])), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();  // warm: pool threads
  testing_support::ArmedCounter counter;
  for (size_t i = 0; i < seqs.size(); ++i) {
    ASSERT_EQ(method->set_input(0, testing::f32_view(sizes[i], xs[i])), Error::Ok)
        << last_error_message();
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  }
  EXPECT_EQ(counter.count(), 0);
}

/// parse_blob's verdict on `blob` with value `value`'s dynamic_mask set to `mask`.
std::string with_mask(std::vector<uint8_t> blob, uint32_t value, uint32_t mask) {
  const size_t at = sizeof(cpu::BlobHeader) + value * sizeof(cpu::BlobValue) +
                    offsetof(cpu::BlobValue, dynamic_mask);
  std::memcpy(blob.data() + at, &mask, 4);
  AlignedBlob aligned(blob);
  cpu::BlobPlan plan;
  const Error e = cpu::parse_blob(aligned.buffer().bytes(), &plan);
  const std::string message = e == Error::Ok ? "ok" : last_error_message();
  cpu::free_blob_plan(&plan);
  return message;
}

TEST_F(CpuDynamicRows, ParseBlobRefusesDynamicMasksElsewhere) {
  const Weights w;
  compiler::Graph g = dynamic_mlp(w);
  compiler::partition(g, {"cpu"});
  const std::vector<uint8_t> blob = compiler::CpuBackendCompiler().lower(g, g.delegates[0]).blob;
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  std::vector<cpu::BlobValue> values(h.num_values);
  std::memcpy(values.data(), blob.data() + sizeof(h), h.num_values * sizeof(cpu::BlobValue));
  int x = -1, weight = -1, out = -1;
  for (uint32_t i = 0; i < h.num_values; ++i) {
    const cpu::ValueKind k = static_cast<cpu::ValueKind>(values[i].kind);
    if (k == cpu::ValueKind::ExternalInput) x = static_cast<int>(i);
    if (k == cpu::ValueKind::Derived && weight < 0) weight = static_cast<int>(i);
    if (k == cpu::ValueKind::ExternalOutput && out < 0) out = static_cast<int>(i);
  }
  ASSERT_TRUE(x >= 0 && weight >= 0 && out >= 0);
  EXPECT_EQ(values[static_cast<size_t>(x)].dynamic_mask, 2u) << "x [1, seq, 64]: dim 1";
  EXPECT_EQ(with_mask(blob, static_cast<uint32_t>(x), 2u), "ok");
  EXPECT_NE(with_mask(blob, static_cast<uint32_t>(weight), 1u).find("expected a plain (layout "
                                                                    "0) internal or external"),
            std::string::npos);
  EXPECT_NE(with_mask(blob, static_cast<uint32_t>(x), 4u).find("expected one bit for a dim "
                                                               "before the last"),
            std::string::npos);
  EXPECT_NE(with_mask(blob, static_cast<uint32_t>(x), 3u).find("expected one bit"),
            std::string::npos);
  EXPECT_NE(with_mask(blob, static_cast<uint32_t>(out), 0u).find("has dynamic mask 0x2, its "
                                                                 "output"),
            std::string::npos);
}

}  // namespace
}  // namespace tern::cpu_test
