// docs/architecture.md's promise with the cpu backend: Method::execute() (set_input, the XNNPACK
// delegate with its edge transposes, output) never allocates on the heap. This binary
// replaces malloc & co. and operator new/delete with counting versions that forward to
// glibc's __libc_* allocator (as tests/executor/zero_alloc_test.cpp does).
#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_test_util.h"
#include "tests/support/allocation_counter.h"


namespace tern::cpu_test {
namespace {

using testing_support::ArmedCounter;

/// conv (XNNPACK) -> relu -> conv (tern's Winograd) -> relu -> max_pool -> conv (tern's, +
/// residual) -> relu -> global pool -> flatten -> linear, delegated to "cpu", with a portable
/// sigmoid after it.
std::vector<uint8_t> model(compiler::Graph* graph) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 3, 32, 32});
  auto conv = [&](int in, int64_t c_in, int64_t c_out, int64_t hw, int64_t stride, uint32_t seed) {
    const int w =
        b.constant_f32("w" + std::to_string(seed), {c_out, c_in, 3, 3},
                       random_floats(static_cast<size_t>(c_out * c_in * 9), seed, -0.2f, 0.2f));
    const int64_t o = (hw + 2 - 3) / stride + 1;
    return b.op(
        "tern::conv2d",
        {in, w, b.none(), b.int_list({stride}), b.int_list({1}), b.int_list({1}), b.int_value(1)},
        DType::F32, {1, c_out, o, o});
  };
  const int c1 = conv(x, 3, 16, 32, 2, 1);
  const int r1 = b.op("tern::relu", {c1}, DType::F32, {1, 16, 16, 16});
  const int c1w = conv(r1, 16, 16, 16, 1, 4);  // 64 tiles of 2x2: the Winograd kernel (scratch)
  const int r1w = b.op("tern::relu", {c1w}, DType::F32, {1, 16, 16, 16});
  const int p = b.op(
      "tern::max_pool2d",
      {r1w, b.int_list({3}), b.int_list({2}), b.int_list({1}), b.int_list({1}), b.bool_value(false)},
      DType::F32, {1, 16, 8, 8});
  const int c2 = conv(p, 16, 16, 8, 1, 2);
  const int s = b.op("tern::add", {c2, p}, DType::F32, {1, 16, 8, 8});
  const int r2 = b.op("tern::relu", {s}, DType::F32, {1, 16, 8, 8});
  const int g =
      b.op("tern::adaptive_avg_pool2d", {r2, b.int_list({1, 1})}, DType::F32, {1, 16, 1, 1});
  const int f = b.op("tern::flatten", {g, b.int_value(1), b.int_value(-1)}, DType::F32, {1, 16});
  const int w = b.constant_f32("fc", {10, 16}, random_floats(160, 3, -0.3f, 0.3f));
  const int l = b.op("tern::linear", {f, w, b.none()}, DType::F32, {1, 10});
  const int last_delegated = static_cast<int>(b.num_nodes()) - 1;
  b.output(b.op("tern::sigmoid", {l}, DType::F32, {1, 10}));
  b.output(r1);  // a 4-D delegate output (transposed back at the edge)
  delegate_cpu(b, 0, last_delegated);
  *graph = b.build();
  return testing::compile_graph(*graph);
}

TEST(CpuZeroAlloc, CounterSeesTheBackendsInitAllocations) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  register_all();
  compiler::Graph graph;
  const std::vector<uint8_t> pte = model(&graph);
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  long allocations;
  {
    ArmedCounter counter;
    auto method = lp.program().load_method("forward", memory.manager());
    ASSERT_TRUE(method.ok()) << last_error_message();
    allocations = counter.count();
  }
  // XNNPACK's runtime, packed weights and the edge buffers are made at load: the hooks see
  // allocations made inside libXNNPACK, so a zero during execute means something.
  EXPECT_GT(allocations, 3);
}

/// The weights are packed and the XNNPACK runtimes made by the first prepare; a second one
/// (the same constants) neither packs nor allocates, and execute after it still does not.
TEST(CpuZeroAlloc, SecondPrepareNeitherPacksNorAllocates) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  register_all();
  compiler::Graph graph;
  (void)model(&graph);
  const BackendInterface& be = cpu_backend_interface();
  BackendInitContext ictx;
  ictx.num_threads = 1;
  AlignedBlob blob(graph.delegates.at(0).blob);
  auto h = be.init(ictx, blob.buffer(), {});
  ASSERT_TRUE(h.ok()) << last_error_message();
  RegionArgs args(graph);
  long first, second;
  {
    ArmedCounter counter;
    ASSERT_EQ(be.prepare(h.get(), args.span()), Error::Ok) << last_error_message();
    first = counter.count();
  }
  {
    ArmedCounter counter;
    ASSERT_EQ(be.prepare(h.get(), args.span()), Error::Ok) << last_error_message();
    BackendExecuteContext ectx;
    ASSERT_EQ(be.execute(ectx, h.get(), args.span()), Error::Ok) << last_error_message();
    second = counter.count();
  }
  EXPECT_GT(first, 3);  // the XNNPACK runtime and its packed weights
  EXPECT_EQ(second, 0);
  be.destroy(h.get());
}

/// One warm-up execution outside the counter (a failure is easier to read when isolated), then
/// 100 rounds of set_input (alternating `views`) + execute + reading both outputs: all succeed and
/// none allocates.
void expect_no_allocations(Method& method, const TensorView (&views)[2], uint32_t threads) {
  ASSERT_EQ(method.set_input(0, views[0]), Error::Ok);
  ASSERT_EQ(method.execute(), Error::Ok) << last_error_message();
  long allocations;
  int ok_runs = 0;
  {
    ArmedCounter counter;
    for (int i = 0; i < 100; ++i) {
      if (method.set_input(0, views[i % 2]) != Error::Ok) break;
      if (method.execute() != Error::Ok) break;
      if (!method.output(0).ok() || !method.output(1).ok()) break;
      ++ok_runs;
    }
    allocations = counter.count();
  }
  EXPECT_EQ(ok_runs, 100) << last_error_message();
  EXPECT_EQ(allocations, 0) << "heap allocations in 100 executions, " << threads << " threads";
}

TEST(CpuZeroAlloc, ExecuteNeverAllocates) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  register_all();
  compiler::Graph graph;
  const std::vector<uint8_t> pte = model(&graph);
  for (uint32_t threads : {1u, 0u}) {
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    MethodLoadOptions options;
    options.num_threads = threads;
    auto method = lp.program().load_method("forward", memory.manager(), options);
    ASSERT_TRUE(method.ok()) << last_error_message();
    ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
    std::vector<int64_t> sizes{1, 3, 32, 32};
    std::vector<float> inputs[2] = {random_floats(3072, 1), random_floats(3072, 2)};
    const TensorView views[2] = {testing::f32_view(sizes, inputs[0]),
                                 testing::f32_view(sizes, inputs[1])};
    expect_no_allocations(*method, views, threads);
  }
}

TEST(CpuZeroAlloc, ProfiledExecuteReportsEveryStageAndStillNeverAllocates) {
  register_all();
  compiler::Graph graph;
  const std::vector<uint8_t> pte = model(&graph);
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
  std::vector<int64_t> sizes{1, 3, 32, 32};
  std::vector<float> input = random_floats(3072, 1);
  ASSERT_EQ(method->set_input(0, testing::f32_view(sizes, input)), Error::Ok);
  StepEvent steps[16];
  PartEvent parts[64];
  StepRecorder recorder(Span<StepEvent>(steps, 16), Span<PartEvent>(parts, 64));
  method->set_observer(&recorder);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  long allocations = 0;
  if (TERN_ZERO_ALLOC_HOOKS) {
    recorder.clear();
    ArmedCounter counter;
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0);
  // The delegate is step 0; its parts: the input copy, every stage in order, the output copy,
  // all inside the step's time and one after another.
  ASSERT_GE(recorder.parts_size(), 4u);
  std::vector<std::string> labels;
  uint64_t previous_end = recorder.event(0).begin_ns;
  for (size_t i = 0; i < recorder.parts_size(); ++i) {
    const PartEvent& p = recorder.part(i);
    EXPECT_EQ(p.step, 0u);
    EXPECT_LE(previous_end, p.begin_ns) << p.label;
    EXPECT_LE(p.begin_ns, p.end_ns) << p.label;
    previous_end = p.end_ns;
    labels.emplace_back(p.label);
  }
  EXPECT_LE(previous_end, recorder.event(0).end_ns);
  EXPECT_EQ(labels.front(), "inputs in (copies, NCHW -> NHWC)");
  EXPECT_EQ(labels.back(), "outputs out (copies, NHWC -> NCHW)");
  // The RGB stem: tern's direct (shallow) conv.
  EXPECT_EQ(labels[1].rfind("stage 0: packed_conv2d [1, 16, 16, 16]", 0), 0u) << labels[1];
  bool winograd = false, gemm = false, xnnpack = false;
  for (const std::string& l : labels) {
    winograd = winograd ||
               l.find("packed_winograd_conv2d F(2x2,3x3) [1, 16, 16, 16]") != std::string::npos;
    gemm = gemm || l.find("packed_conv2d [1, 8, 8, 16]") != std::string::npos;
    xnnpack = xnnpack || l.find(": xnnpack ") != std::string::npos;
  }
  EXPECT_TRUE(winograd && gemm && xnnpack) << "stages: " << labels.size();
  method->set_observer(nullptr);
}

/// Two PackedBottleneck nodes: x [1, 16, 12, 12] -> 1x1 16->64 + relu6 -> dw 3x3 + relu6 ->
/// 1x1 64->16 -> + x (MobileNetV2's block), then 1x1 16->48 + hardswish -> dw 5x5/2 +
/// hardswish (no project: a global pool reads it) -> global pool -> flatten -> linear.
std::vector<uint8_t> bottleneck_model(compiler::Graph* graph) {
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 16, 12, 12}, hs{1, 64, 12, 12};
  const int x = b.input("x", DType::F32, xs);
  auto conv = [&](int in, int64_t c_in, int64_t c_out, int64_t k, int64_t stride, int64_t groups,
                  int64_t hw, uint32_t seed) {
    const int64_t per_group = c_in / groups;
    const int w = b.constant_f32(
        "w" + std::to_string(seed), {c_out, per_group, k, k},
        random_floats(static_cast<size_t>(c_out * per_group * k * k), seed, -0.3f, 0.3f));
    const int bias = b.constant_f32("b" + std::to_string(seed), {c_out},
                                    random_floats(static_cast<size_t>(c_out), seed + 1));
    const int64_t o = (hw + 2 * (k / 2) - k) / stride + 1;
    return b.op("tern::conv2d",
                {in, w, bias, b.int_list({stride}), b.int_list({k / 2}), b.int_list({1}),
                 b.int_value(groups)},
                DType::F32, {1, c_out, o, o});
  };
  auto relu6 = [&](int in, const std::vector<int64_t>& s) {
    return b.op("tern::hardtanh", {in, b.double_value(0.0), b.double_value(6.0)}, DType::F32, s);
  };
  const int e = relu6(conv(x, 16, 64, 1, 1, 1, 12, 11), hs);
  const int d = relu6(conv(e, 64, 64, 3, 1, 64, 12, 13), hs);
  const int y = b.op("tern::add", {conv(d, 64, 16, 1, 1, 1, 12, 15), x}, DType::F32, xs);
  const int e2 = b.op("tern::hardswish", {conv(y, 16, 48, 1, 1, 1, 12, 17)}, DType::F32,
                      {1, 48, 12, 12});
  const int d2 =
      b.op("tern::hardswish", {conv(e2, 48, 48, 5, 2, 48, 12, 19)}, DType::F32, {1, 48, 6, 6});
  const int g =
      b.op("tern::adaptive_avg_pool2d", {d2, b.int_list({1, 1})}, DType::F32, {1, 48, 1, 1});
  const int f = b.op("tern::flatten", {g, b.int_value(1), b.int_value(-1)}, DType::F32, {1, 48});
  const int w = b.constant_f32("fc", {10, 48}, random_floats(480, 3, -0.3f, 0.3f));
  b.output(b.op("tern::linear", {f, w, b.none()}, DType::F32, {1, 10}));
  b.output(y);  // the first block's output leaves too
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  *graph = b.build();
  return testing::compile_graph(*graph);
}

TEST(CpuZeroAlloc, ExecuteWithBottlenecksNeverAllocates) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  register_all();
  compiler::Graph graph;
  const std::vector<uint8_t> pte = bottleneck_model(&graph);
  {  // Both chains lowered to op 21.
    const std::vector<uint32_t> ops = cpu_test::blob_ops(graph.delegates.at(0).blob);
    ASSERT_EQ(std::count(ops.begin(), ops.end(),
                         static_cast<uint32_t>(cpu::NodeOp::PackedBottleneck)),
              2);
  }
  for (uint32_t threads : {1u, 0u}) {
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    MethodLoadOptions options;
    options.num_threads = threads;
    auto method = lp.program().load_method("forward", memory.manager(), options);
    ASSERT_TRUE(method.ok()) << last_error_message();
    ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
    std::vector<int64_t> sizes{1, 16, 12, 12};
    std::vector<float> inputs[2] = {random_floats(2304, 1), random_floats(2304, 2)};
    const TensorView views[2] = {testing::f32_view(sizes, inputs[0]),
                                 testing::f32_view(sizes, inputs[1])};
    expect_no_allocations(*method, views, threads);
    // And the outputs are the portable kernels'.
    const RunResult portable = run_program(pte, graph, {inputs[1]}, true);
    ASSERT_EQ(portable.outputs.size(), 2u);
    for (size_t o = 0; o < 2; ++o) {
      const std::vector<float> got = testing::to_vector(*method->output(o).get());
      EXPECT_LE(nmse(got, portable.outputs[o]), 1e-9) << "output " << o;
    }
  }
}

}  // namespace
}  // namespace tern::cpu_test

namespace tern::cpu_test {
namespace {

/// Attention (blob version 9): x [1, 16, 32] -> linear to q, k, v -> slices -> heads (view,
/// transpose: StridedCopy) -> causal scaled_dot_product_attention (BatchMatMul, with its
/// packed-B scratch) -> heads back -> linear; delegated whole.
std::vector<uint8_t> attention_model(compiler::Graph* graph) {
  GraphBuilder b;
  const int64_t t = 16, d = 32, h = 4;
  const int x = b.input("x", DType::F32, {1, t, d});
  auto linear = [&](int in, int64_t out, uint32_t seed) {
    const int w = b.constant_f32("w" + std::to_string(seed), {out, d},
                                 random_floats(static_cast<size_t>(out * d), seed, -0.3f, 0.3f));
    return b.op("tern::linear", {in, w, b.none()}, DType::F32, {1, t, out});
  };
  const int qkv = linear(x, 3 * d, 31);
  std::vector<int> heads;
  for (int64_t i = 0; i < 3; ++i) {
    const int part =
        b.op("tern::slice",
             {qkv, b.int_value(2), b.int_value(i * d), b.int_value(i * d + d), b.int_value(1)},
             DType::F32, {1, t, d});
    const int v =
        b.op("tern::view", {part, b.int_list({1, t, h, d / h})}, DType::F32, {1, t, h, d / h});
    heads.push_back(
        b.op("tern::transpose", {v, b.int_value(1), b.int_value(2)}, DType::F32, {1, h, t, d / h}));
  }
  const int a = b.op("tern::scaled_dot_product_attention",
                     {heads[0], heads[1], heads[2], b.none(), b.bool_value(true), b.none()},
                     DType::F32, {1, h, t, d / h});
  const int back =
      b.op("tern::transpose", {a, b.int_value(1), b.int_value(2)}, DType::F32, {1, t, h, d / h});
  b.output(linear(b.op("tern::view", {back, b.int_list({1, t, d})}, DType::F32, {1, t, d}), d, 33));
  b.output(qkv);  // expect_no_allocations reads two outputs
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  *graph = b.build();
  return testing::compile_graph(*graph);
}

TEST(CpuZeroAlloc, ExecuteWithAttentionNeverAllocates) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  register_all();
  compiler::Graph graph;
  const std::vector<uint8_t> pte = attention_model(&graph);
  {
    const std::vector<uint32_t> ops = cpu_test::blob_ops(graph.delegates.at(0).blob);
    ASSERT_EQ(std::count(ops.begin(), ops.end(), static_cast<uint32_t>(cpu::NodeOp::Attention)),
              1);
    ASSERT_GE(std::count(ops.begin(), ops.end(), static_cast<uint32_t>(cpu::NodeOp::StridedCopy)),
              4);
  }
  for (uint32_t threads : {1u, 0u}) {
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    MethodLoadOptions options;
    options.num_threads = threads;
    auto method = lp.program().load_method("forward", memory.manager(), options);
    ASSERT_TRUE(method.ok()) << last_error_message();
    ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
    std::vector<int64_t> sizes{1, 16, 32};
    std::vector<float> inputs[2] = {random_floats(512, 1), random_floats(512, 2)};
    const TensorView views[2] = {testing::f32_view(sizes, inputs[0]),
                                 testing::f32_view(sizes, inputs[1])};
    expect_no_allocations(*method, views, threads);
    const RunResult portable = run_program(pte, graph, {inputs[1]}, true);
    ASSERT_EQ(portable.outputs.size(), 2u);
    for (size_t o = 0; o < 2; ++o) {
      const std::vector<float> got = testing::to_vector(*method->output(o).get());
      EXPECT_LE(nmse(got, portable.outputs[o]), 1e-9) << "output " << o;
    }
  }
}

}  // namespace
}  // namespace tern::cpu_test
