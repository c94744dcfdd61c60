// Helpers for the cuda backend tests: lower node ranges to "cuda" blobs, compile whole graphs
// with the partitioner, run programs with the backend or its portable fallback, and skip GPU
// cases (GTEST_SKIP with the reason) on machines without a CUDA device.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/compile/cuda_backend_compiler.h"
#include "backends/cuda/compile/register_cuda_backend_compiler.h"
#include "backends/cuda/cuda_blob_format.h"
#include "backends/cuda/runtime/register_cuda_backend.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"
#include "tests/support/backend_test_values.h"
#include "tools/compiler/backend_compiler.h"
#include "tools/compiler/compile.h"

namespace tern::cuda_test {

using test_support::AlignedBlob;
using test_support::all_finite;
using test_support::max_rel;
using test_support::nmse;
using test_support::numel;
using test_support::random_floats;

using compiler::GraphBuilder;

/// Registers the portable kernels, the cuda backend and its compile half (idempotent).
inline void register_all() {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_EQ(register_cuda_backend(), Error::Ok) << last_error_message();
  compiler::register_cuda_backend_compiler();
}

/// Whether a CUDA device can run the backend here.
inline bool have_device() { return cuda_backend_interface().is_available(); }

/// Skips the current test, with the reason, when there is no CUDA device.
#define TERN_SKIP_WITHOUT_CUDA_DEVICE()                                         \
  do {                                                                          \
    if (!::tern::cuda_test::have_device()) {                                    \
      GTEST_SKIP() << "no CUDA device: " << ::tern::cuda_unavailable_reason();  \
    }                                                                           \
  } while (0)

/// Hands nodes [first, last] of `b` to "cuda" with the blob lowered by CudaBackendCompiler
/// (bypassing accepts_region, so single cheap ops can be tested), computing in `compute`.
/// Returns the region index.
inline int delegate_cuda(GraphBuilder& b, int first, int last,
                         cuda::ComputeDType compute = cuda::ComputeDType::F32) {
  const int index = b.delegate("cuda", first, last);
  compiler::DelegateRegion& region = b.graph().delegates[static_cast<size_t>(index)];
  region.blob = compiler::CudaBackendCompiler(compute).lower(b.graph(), region).blob;
  return index;
}

/// Compiles `graph` for `backends` (empty: portable only) through the partitioner.
inline std::vector<uint8_t> compile_for(const compiler::Graph& graph,
                                        const std::vector<std::string>& backends) {
  compiler::ProgramGraph program;
  program.source_model = "cuda_test";
  program.methods.push_back(graph);
  compiler::CompileOptions options;
  options.backends = backends;
  return compiler::compile_program(program, options).bytes;
}

/// The outputs of one run of "forward" and the path each delegate call took.
struct RunResult {
  std::vector<std::vector<float>> outputs;
  std::vector<DelegatePath> paths;
};

/// Loads `pte` (every registered backend; "cuda" disabled for this load when `disable_cuda`),
/// sets the f32 inputs of `graph` from `inputs`, executes `runs` times, returns the outputs.
inline RunResult run_program(const std::vector<uint8_t>& pte, const compiler::Graph& graph,
                             const std::vector<std::vector<float>>& inputs, bool disable_cuda,
                             int runs = 1) {
  RunResult result;
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 8 * 1024 * 1024);
  const char* disabled[] = {"cuda"};
  MethodLoadOptions options;
  if (disable_cuda) options.disabled_backends = Span<const char* const>(disabled, 1);
  auto method = lp.program().load_method("forward", memory.manager(), options);
  EXPECT_TRUE(method.ok()) << last_error_message();
  if (!method.ok()) return result;
  std::vector<std::vector<int64_t>> sizes;
  std::vector<std::vector<float>> data = inputs;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    sizes.push_back(graph.values[static_cast<size_t>(graph.inputs[i])].sizes);
  }
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const TensorView view = testing::f32_view(sizes[i], data[i]);
    EXPECT_EQ(method->set_input(i, view), Error::Ok) << last_error_message();
  }
  for (int r = 0; r < runs; ++r) EXPECT_EQ(method->execute(), Error::Ok) << last_error_message();
  for (size_t i = 0; i < method->num_outputs(); ++i) {
    auto out = method->output(i);
    EXPECT_TRUE(out.ok()) << last_error_message();
    if (out.ok()) result.outputs.push_back(testing::to_vector(*out.get()));
  }
  for (size_t i = 0; i < method->num_delegate_calls(); ++i) {
    result.paths.push_back(method->delegate_path(i).get());
  }
  return result;
}

/// Random inputs for every (f32) input of `graph`.
inline std::vector<std::vector<float>> random_inputs(const compiler::Graph& graph, uint32_t seed) {
  std::vector<std::vector<float>> inputs;
  for (int id : graph.inputs) {
    inputs.push_back(random_floats(numel(graph.values[static_cast<size_t>(id)].sizes), seed++));
  }
  return inputs;
}

// ---- small models (the shapes of docs/models.md's MLP, GPT block and a ResNet block) ----

/// x [4, 64] -> linear 256 -> relu -> linear 256 -> relu -> linear 10.
inline GraphBuilder mlp_model() {
  GraphBuilder b;
  int x = b.input("x", DType::F32, {4, 64});
  const int64_t dims[4] = {64, 256, 256, 10};
  for (int i = 0; i < 3; ++i) {
    const int w = b.constant_f32("w" + std::to_string(i), {dims[i + 1], dims[i]},
                                 random_floats(static_cast<size_t>(dims[i + 1] * dims[i]), 10 + i,
                                               -0.15f, 0.15f));
    const int bias = b.constant_f32("b" + std::to_string(i), {dims[i + 1]},
                                    random_floats(static_cast<size_t>(dims[i + 1]), 20 + i, -0.1f, 0.1f));
    x = b.op("tern::linear", {x, w, bias}, DType::F32, {4, dims[i + 1]}, "fc" + std::to_string(i));
    if (i < 2) x = b.op("tern::relu", {x}, DType::F32, {4, dims[i + 1]}, "relu");
  }
  b.output(x);
  return b;
}

/// A pre-norm GPT block (d 64, 4 heads, sequence 16): layer norm, fused qkv linear, split,
/// head reshapes and transposes, causal attention, projection, residual; layer norm, GELU MLP,
/// residual.
inline GraphBuilder gpt_block_model() {
  GraphBuilder b;
  const int64_t t = 16, d = 64, h = 4, hd = 16;
  auto w = [&](const std::string& name, std::vector<int64_t> sizes, uint32_t seed, float s) {
    return b.constant_f32(name, sizes, random_floats(numel(sizes), seed, -s, s));
  };
  const int x = b.input("x", DType::F32, {1, t, d});
  auto ln = [&](int in, uint32_t seed) {
    return b.op("tern::layer_norm",
                {in, b.int_list({d}), w("ln_w", {d}, seed, 1.0f), w("ln_b", {d}, seed + 1, 0.1f),
                 b.double_value(1e-5)},
                DType::F32, {1, t, d}, "ln");
  };
  const int n1 = ln(x, 1);
  const int flat = b.op("tern::view", {n1, b.int_list({t, d})}, DType::F32, {t, d});
  const int qkv = b.op("tern::linear", {flat, w("qkv_w", {3 * d, d}, 3, 0.2f), w("qkv_b", {3 * d}, 4, 0.1f)},
                       DType::F32, {t, 3 * d}, "qkv");
  const int qkv3 = b.op("tern::view", {qkv, b.int_list({1, t, 3 * d})}, DType::F32, {1, t, 3 * d});
  const int q = b.tensor("q", DType::F32, {1, t, d});
  const int k = b.tensor("k", DType::F32, {1, t, d});
  const int v = b.tensor("v", DType::F32, {1, t, d});
  b.op_into("tern::split", {qkv3, b.int_list({d, d, d}), b.int_value(2)}, {q, k, v}, "split");
  auto heads = [&](int in) {
    const int r = b.op("tern::view", {in, b.int_list({1, t, h, hd})}, DType::F32, {1, t, h, hd});
    return b.op("tern::transpose", {r, b.int_value(1), b.int_value(2)}, DType::F32, {1, h, t, hd});
  };
  const int att = b.op("tern::scaled_dot_product_attention",
                       {heads(q), heads(k), heads(v), b.none(), b.bool_value(true), b.none()},
                       DType::F32, {1, h, t, hd}, "attn");
  const int back = b.op("tern::transpose", {att, b.int_value(1), b.int_value(2)}, DType::F32, {1, t, h, hd});
  const int merged = b.op("tern::view", {back, b.int_list({t, d})}, DType::F32, {t, d});
  const int proj = b.op("tern::linear", {merged, w("proj_w", {d, d}, 5, 0.2f), w("proj_b", {d}, 6, 0.1f)},
                        DType::F32, {t, d}, "proj");
  const int proj3 = b.op("tern::view", {proj, b.int_list({1, t, d})}, DType::F32, {1, t, d});
  const int r1 = b.op("tern::add", {x, proj3}, DType::F32, {1, t, d}, "residual1");
  const int n2 = ln(r1, 7);
  const int f2 = b.op("tern::view", {n2, b.int_list({t, d})}, DType::F32, {t, d});
  const int up = b.op("tern::linear", {f2, w("up_w", {4 * d, d}, 9, 0.2f), w("up_b", {4 * d}, 10, 0.1f)},
                      DType::F32, {t, 4 * d}, "up");
  const int g = b.op("tern::gelu", {up, b.string_value("none")}, DType::F32, {t, 4 * d}, "gelu");
  const int down = b.op("tern::linear", {g, w("down_w", {d, 4 * d}, 11, 0.1f), w("down_b", {d}, 12, 0.1f)},
                        DType::F32, {t, d}, "down");
  const int down3 = b.op("tern::view", {down, b.int_list({1, t, d})}, DType::F32, {1, t, d});
  b.output(b.op("tern::add", {r1, down3}, DType::F32, {1, t, d}, "residual2"));
  return b;
}

/// A ResNet-style stem and basic block with a classifier: conv 7x7/2 + relu, max pool 3x3/2,
/// conv 3x3 + relu, conv 3x3, residual add, relu, mean over (2, 3), linear 10.
inline GraphBuilder resnet_block_model() {
  GraphBuilder b;
  auto w = [&](const std::string& name, std::vector<int64_t> sizes, uint32_t seed, float s) {
    return b.constant_f32(name, sizes, random_floats(numel(sizes), seed, -s, s));
  };
  auto conv = [&](int x, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t pad,
                  int64_t out_hw, uint32_t seed) {
    return b.op("tern::conv2d",
                {x, w("conv_w", {cout, cin, k, k}, seed, 0.2f), w("conv_b", {cout}, seed + 1, 0.1f),
                 b.int_list({stride, stride}), b.int_list({pad, pad}), b.int_list({1, 1}),
                 b.int_value(1)},
                DType::F32, {1, cout, out_hw, out_hw}, "conv");
  };
  const int x = b.input("x", DType::F32, {1, 3, 32, 32});
  const int c1 = b.op("tern::relu", {conv(x, 3, 16, 7, 2, 3, 16, 1)}, DType::F32, {1, 16, 16, 16});
  const int p = b.op("tern::max_pool2d",
                     {c1, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({1, 1}),
                      b.int_list({1, 1}), b.bool_value(false)},
                     DType::F32, {1, 16, 8, 8}, "pool");
  const int c2 = b.op("tern::relu", {conv(p, 16, 16, 3, 1, 1, 8, 3)}, DType::F32, {1, 16, 8, 8});
  const int c3 = conv(c2, 16, 16, 3, 1, 1, 8, 5);
  const int r = b.op("tern::relu", {b.op("tern::add", {c3, p}, DType::F32, {1, 16, 8, 8})},
                     DType::F32, {1, 16, 8, 8});
  const int m = b.op("tern::mean", {r, b.int_list({2, 3}), b.bool_value(false)}, DType::F32, {1, 16});
  b.output(b.op("tern::linear", {m, w("fc_w", {10, 16}, 7, 0.3f), w("fc_b", {10}, 8, 0.1f)},
                DType::F32, {1, 10}, "fc"));
  return b;
}

}  // namespace tern::cuda_test
