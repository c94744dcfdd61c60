// The cpu backend's bounded-dynamic rows (backends/cpu/README.md "Bounded-dynamic rows", blob
// versions 12 and 25): linears whose x varies in one leading dim, and since version 25 the rows
// maps between them (elementwise ops with operands the same for every row, RMS norm's pieces,
// a softmax over the last dim, views), are partitioned to the delegate; the GEMMs (op 17, the
// quantized op 23) run the actual rows, the rest the bound's. Each matches a double-precision
// reference worked from the same weights at every size within the bound — including sizes
// where the static lowering would have picked XNNPACK's fully-connected node. Nodes that mix
// rows stay portable; parse_blob refuses dynamic masks that break the rows structure. Execute
// never allocates at any size.
#include <gtest/gtest.h>

#include <algorithm>
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

constexpr int64_t kH = 40, kF = 72;

struct LayerWeights {
  std::vector<float> norm = random_floats(kH, 20, 0.5f, 1.5f);
  std::vector<float> gate = random_floats(kF * kH, 21, -0.2f, 0.2f);
  std::vector<float> up = random_floats(kF * kH, 22, -0.2f, 0.2f);
  std::vector<float> down = random_floats(kH * kF, 23, -0.2f, 0.2f);
  std::vector<float> shift = random_floats(kH, 24, -0.5f, 0.5f);
};

/// A Llama layer's second half on x [1, seq<=12, 40]: n = x · rsqrt(mean(x², -1) + 1e-6) · g
/// (RMS norm written out, as transformers' LlamaRMSNorm exports), h = x + down(silu(gate(n)) ·
/// up(n)), then y = softmax(sigmoid(view(h, [seq, 40]) + shift), -1) [seq, 40] (a view that
/// moves the dynamic dim, a static [40] operand).
compiler::Graph dynamic_layer(const LayerWeights& w) {
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, kMaxSeq);
  auto dyn = [&](int v) {  // [1, seq, ..]
    b.dynamic_dims(v, {-1, seq, -1});
    return v;
  };
  auto dyn2 = [&](int v) {  // [seq, ..]
    b.dynamic_dims(v, {seq, -1});
    return v;
  };
  const std::vector<int64_t> xs = {1, kMaxSeq, kH}, fs = {1, kMaxSeq, kF};
  const int x = dyn(b.input("x", DType::F32, xs));
  const int sq = dyn(b.op("tern::pow", {x, b.double_value(2.0)}, DType::F32, xs, "square"));
  const int ms = dyn(b.op("tern::mean", {sq, b.int_list({-1}), b.bool_value(true)}, DType::F32,
                          {1, kMaxSeq, 1}, "mean"));
  const int eps = dyn(b.op("tern::add", {ms, b.double_value(1e-6)}, DType::F32, {1, kMaxSeq, 1}));
  const int r = dyn(b.op("tern::rsqrt", {eps}, DType::F32, {1, kMaxSeq, 1}, "rsqrt"));
  const int xr = dyn(b.op("tern::mul", {x, r}, DType::F32, xs, "scaled"));
  const int g = b.constant_f32("norm", {kH}, w.norm);
  const int n = dyn(b.op("tern::mul", {g, xr}, DType::F32, xs, "normed"));
  const int gate = dyn(b.op("tern::linear", {n, b.constant_f32("wg", {kF, kH}, w.gate), b.none()},
                            DType::F32, fs, "gate"));
  const int up = dyn(b.op("tern::linear", {n, b.constant_f32("wu", {kF, kH}, w.up), b.none()},
                          DType::F32, fs, "up"));
  const int act = dyn(b.op("tern::silu", {gate}, DType::F32, fs, "act"));
  const int prod = dyn(b.op("tern::mul", {act, up}, DType::F32, fs, "gated"));
  const int down = dyn(b.op("tern::linear",
                            {prod, b.constant_f32("wd", {kH, kF}, w.down), b.none()}, DType::F32,
                            xs, "down"));
  const int h = dyn(b.op("tern::add", {x, down}, DType::F32, xs, "residual"));
  const int shape = b.int_list({kMaxSeq, kH});
  b.int_symbols(shape, {seq, -1});
  const int flat = dyn2(b.op("tern::view", {h, shape}, DType::F32, {kMaxSeq, kH}, "flat"));
  const int shifted = dyn2(b.op("tern::add", {flat, b.constant_f32("shift", {kH}, w.shift)},
                                DType::F32, {kMaxSeq, kH}, "shifted"));
  const int sig = dyn2(b.op("tern::sigmoid", {shifted}, DType::F32, {kMaxSeq, kH}, "sig"));
  b.output(dyn2(b.op("tern::softmax", {sig, b.int_value(-1)}, DType::F32, {kMaxSeq, kH}, "y")));
  b.output(h);
  return b.build();
}

/// y and h of dynamic_layer for `seq` rows of x, in double.
std::vector<std::vector<double>> layer_reference(const LayerWeights& w,
                                                 const std::vector<float>& x, int64_t seq) {
  std::vector<double> y, hs;
  for (int64_t s = 0; s < seq; ++s) {
    const float* xr = x.data() + s * kH;
    double ss = 0.0;
    for (int64_t i = 0; i < kH; ++i) ss += double(xr[i]) * xr[i];
    const double rs = 1.0 / std::sqrt(ss / kH + 1e-6);
    std::vector<double> n(kH), a(kF), h(kH);
    for (int64_t i = 0; i < kH; ++i) n[i] = xr[i] * rs * w.norm[i];
    for (int64_t o = 0; o < kF; ++o) {
      double gv = 0.0, uv = 0.0;
      for (int64_t i = 0; i < kH; ++i) {
        gv += n[i] * w.gate[o * kH + i];
        uv += n[i] * w.up[o * kH + i];
      }
      a[o] = gv / (1.0 + std::exp(-gv)) * uv;
    }
    double mx = -1e300, sum = 0.0;
    std::vector<double> e(kH);
    for (int64_t o = 0; o < kH; ++o) {
      double acc = 0.0;
      for (int64_t i = 0; i < kF; ++i) acc += a[i] * w.down[o * kF + i];
      h[o] = xr[o] + acc;
      hs.push_back(h[o]);
      e[o] = 1.0 / (1.0 + std::exp(-(h[o] + w.shift[o])));
      mx = std::max(mx, e[o]);
    }
    for (double& v : e) sum += (v = std::exp(v - mx));
    for (double v : e) y.push_back(v / sum);
  }
  return {y, hs};
}

TEST_F(CpuDynamicRows, RowsMapsBetweenTheLinearsJoinTheirRegion) {
  const LayerWeights w;
  compiler::Graph g = dynamic_layer(w);
  compiler::partition(g, {"cpu"});
  ASSERT_EQ(g.delegates.size(), 1u);
  EXPECT_EQ(g.delegates[0].nodes.size(), g.nodes.size()) << "every node in the delegate";
  const std::vector<uint32_t> ops =
      blob_ops(compiler::CpuBackendCompiler().lower(g, g.delegates[0]).blob);
  int gemms = 0;
  for (uint32_t op : ops) gemms += op == static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected);
  // gate (the silu in its epilogue), up (times the silu's output), down (plus x): the MLP's
  // elementwise ops all fold into the GEMMs.
  EXPECT_EQ(gemms, 3);
  // The RMS norm's six pieces: one layer norm node (op 25, RMS mode), on the actual rows; the
  // view, shift, sigmoid and softmax: XNNPACK's nodes on the bound's rows.
  EXPECT_EQ(std::count(ops.begin(), ops.end(), static_cast<uint32_t>(cpu::NodeOp::LayerNorm)), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), static_cast<uint32_t>(cpu::NodeOp::Softmax)), 1);

  compiler::ProgramGraph program;
  program.methods.push_back(dynamic_layer(w));
  compiler::CompileOptions options;
  options.backends = {"cpu"};
  const compiler::CompileResult compiled = compiler::compile_program(program, options);
  ASSERT_EQ(compiled.methods[0].num_delegates, 1u);
  for (bool disable_cpu : {false, true}) {
    testing::LoadedProgram lp(compiled.bytes);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    const char* disabled[] = {"cpu"};
    MethodLoadOptions load;
    if (disable_cpu) load.disabled_backends = Span<const char* const>(disabled, 1);
    auto method = lp.program().load_method("forward", memory.manager(), load);
    ASSERT_TRUE(method.ok()) << last_error_message();
    for (int64_t seq : {int64_t{5}, int64_t{1}, kMaxSeq, int64_t{7}, int64_t{2}}) {
      std::vector<float> x = random_floats(static_cast<size_t>(seq * kH), 300u + uint32_t(seq));
      ASSERT_EQ(method->set_input(0, testing::f32_view({1, seq, kH}, x)), Error::Ok)
          << last_error_message();
      ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
      const std::vector<std::vector<double>> want = layer_reference(w, x, seq);
      const TensorView* y = method->output(0).get();
      ASSERT_EQ(y->rank, 2u);
      EXPECT_EQ(y->sizes[0], seq);
      EXPECT_LE(rel_error(testing::to_vector(*y), want[0]), 1e-5)
          << "y, seq " << seq << (disable_cpu ? " (portable)" : " (cpu)");
      const TensorView* h = method->output(1).get();
      ASSERT_EQ(h->rank, 3u);
      EXPECT_EQ(h->sizes[1], seq);
      EXPECT_LE(rel_error(testing::to_vector(*h), want[1]), 1e-5)
          << "h, seq " << seq << (disable_cpu ? " (portable)" : " (cpu)");
    }
    EXPECT_EQ(method->delegate_path(0).get(),
              disable_cpu ? DelegatePath::Fallback : DelegatePath::Backend);
  }
}

TEST_F(CpuDynamicRows, NodesThatMixRowsStayPortable) {
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, kMaxSeq);
  const std::vector<int64_t> xs = {2, kMaxSeq, 8};
  const int x = b.input("x", DType::F32, xs);
  b.dynamic_dims(x, {-1, seq, -1});
  auto dyn = [&](int v, std::vector<int> s) {
    b.dynamic_dims(v, s);
    return v;
  };
  // A static operand that differs between the rows' leading dims ([2, 1, 8] against
  // [2, seq, 8]), one the same for every row ([1, 1, 8]), a mean and a softmax over the
  // dynamic dim, a transpose that moves it, a 4-D view.
  const int per_batch = dyn(b.op("tern::add", {x, b.constant_f32("c2", {2, 1, 8}, random_floats(16, 1))},
                                 DType::F32, xs, "per_batch"), {-1, seq, -1});
  const int same = dyn(b.op("tern::add", {x, b.constant_f32("c1", {1, 1, 8}, random_floats(8, 2))},
                            DType::F32, xs, "same"), {-1, seq, -1});
  const int over_rows = b.op("tern::mean", {x, b.int_list({1}), b.bool_value(true)}, DType::F32,
                             {2, 1, 8}, "over_rows");
  const int soft = dyn(b.op("tern::softmax", {x, b.int_value(1)}, DType::F32, xs, "soft_rows"),
                       {-1, seq, -1});
  const int moved = dyn(b.op("tern::transpose", {x, b.int_value(0), b.int_value(1)}, DType::F32,
                             {kMaxSeq, 2, 8}, "moved"), {seq, -1, -1});
  const int four = dyn(b.op("tern::view", {x, b.int_list({2, kMaxSeq, 2, 4})}, DType::F32,
                            {2, kMaxSeq, 2, 4}, "four_d"), {-1, seq, -1, -1});
  for (int v : {per_batch, same, over_rows, soft, moved, four}) b.output(v);
  const compiler::Graph g = b.build();
  const compiler::CpuBackendCompiler cpu;
  std::vector<std::string> taken;
  for (const compiler::Node& node : g.nodes) {
    if (cpu.supports_dynamic_shapes(g, node)) taken.push_back(node.debug_name);
  }
  EXPECT_EQ(taken, std::vector<std::string>{"same"});
}

TEST_F(CpuDynamicRows, ParseBlobKeepsTheRowsStructure) {
  // x [1, seq<=8, 8] + c [8], viewed as y [seq, 8], and z = linear(y) [seq, 24]: an Add and a
  // Reshape on dynamic values (y read twice: the view is not folded into the linear).
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, 8);
  const int x = b.input("x", DType::F32, {1, 8, 8});
  b.dynamic_dims(x, {-1, seq, -1});
  const int t = b.op("tern::add", {x, b.constant_f32("c", {8}, random_floats(8, 3))}, DType::F32,
                     {1, 8, 8}, "t");
  b.dynamic_dims(t, {-1, seq, -1});
  const int shape = b.int_list({8, 8});
  b.int_symbols(shape, {seq, -1});
  const int y = b.op("tern::view", {t, shape}, DType::F32, {8, 8}, "y");
  b.dynamic_dims(y, {seq, -1});
  const int z = b.op("tern::linear",
                     {y, b.constant_f32("w", {24, 8}, random_floats(24 * 8, 4)), b.none()},
                     DType::F32, {8, 24}, "z");
  b.dynamic_dims(z, {seq, -1});
  b.output(y);
  b.output(z);
  compiler::Graph g = b.build();
  compiler::partition(g, {"cpu"});
  ASSERT_EQ(g.delegates.size(), 1u);
  const std::vector<uint8_t> blob = compiler::CpuBackendCompiler().lower(g, g.delegates[0]).blob;
  EXPECT_EQ(blob_ops(blob),
            (std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::Add),
                                   static_cast<uint32_t>(cpu::NodeOp::Reshape),
                                   static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected)}));
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  std::vector<cpu::BlobValue> values(h.num_values);
  std::memcpy(values.data(), blob.data() + sizeof(h), h.num_values * sizeof(cpu::BlobValue));
  int c = -1, out = -1;
  for (uint32_t i = 0; i < h.num_values; ++i) {
    const cpu::ValueKind k = static_cast<cpu::ValueKind>(values[i].kind);
    if (k == cpu::ValueKind::Constant) c = static_cast<int>(i);
    if (k == cpu::ValueKind::ExternalOutput && out < 0) out = static_cast<int>(i);  // y
  }
  ASSERT_TRUE(c >= 0 && out >= 0);
  EXPECT_EQ(values[static_cast<size_t>(out)].dynamic_mask, 1u) << "y [seq, 8]: dim 0";
  EXPECT_EQ(with_mask(blob, static_cast<uint32_t>(out), 1u), "ok");
  // The reshape's output static: it must vary with its input.
  EXPECT_NE(with_mask(blob, static_cast<uint32_t>(out), 0u).find("must vary too, by the same "
                                                                 "bound"),
            std::string::npos);
  // c as [1, 8, 1]: XNNPACK would broadcast it against the bound's [1, 8, 8], but it would
  // differ from row to row.
  std::vector<uint8_t> bad = blob;
  cpu::BlobValue cv = values[static_cast<size_t>(c)];
  cv.rank = 3;
  cv.dims[0] = 1;
  cv.dims[1] = 8;
  cv.dims[2] = 1;
  std::memcpy(bad.data() + sizeof(h) + static_cast<size_t>(c) * sizeof(cpu::BlobValue), &cv,
              sizeof(cv));
  AlignedBlob aligned(bad);
  cpu::BlobPlan plan;
  EXPECT_NE(cpu::parse_blob(aligned.buffer().bytes(), &plan), Error::Ok);
  EXPECT_NE(std::string(last_error_message()).find("must be 1 in every dim up to the output's "
                                                   "dynamic dim"),
            std::string::npos)
      << last_error_message();
  cpu::free_blob_plan(&plan);
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
