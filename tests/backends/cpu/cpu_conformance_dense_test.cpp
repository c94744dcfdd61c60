// Conformance of what lets DenseNet and Inception v3 run as one cpu delegate, against the portable
// kernels (harness: cpu_conformance_util.h): a standalone batch_norm (DenseNet's pre-activation BN
// -> ReLU -> conv, lowered to a per-channel multiply-add with folded constants, on an NHWC 4-D x
// one 1x1 depthwise conv; 2-D, 3-D and 4-D, weight/bias None), average pooling with
// count_include_pad=True and padding (a zero pad then a pool without padding: Inception's 3x3/1/1
// branch pool, stride 2, ceil_mode, rectangular windows), a cat of one tensor; then graphs
// partitioned by the partitioner where a node the backend does not take makes part of a cat's
// tensor list outside the region (its elements are passed one by one), DenseNet's dense block and
// Inception's block among them. A deeper dense block checks that each cat extends the one before it
// (one Concat node a cat).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/compile/register_cpu_backend_compiler.h"
#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/partitioner.h"

namespace tern::cpu_test {
namespace {

/// batch_norm of x (shape xs) with constant statistics (a positive variance) and, when asked,
/// weight and bias.
int batch_norm(GraphBuilder& b, int x, const std::vector<int64_t>& xs, uint32_t seed,
               bool affine = true) {
  const int64_t c = xs[1];
  const int w = affine ? constant(b, "bn_w" + std::to_string(seed), {c}, seed, 1.5f) : b.none();
  const int bias =
      affine ? constant(b, "bn_b" + std::to_string(seed), {c}, seed + 1, 1.0f) : b.none();
  const int mean = constant(b, "bn_m" + std::to_string(seed), {c}, seed + 2, 1.0f);
  std::vector<float> var = random_floats(static_cast<size_t>(c), seed + 3, 0.05f, 3.0f);
  const int v = b.constant_f32("bn_v" + std::to_string(seed), {c}, var);
  return b.op("tern::batch_norm", {x, w, bias, mean, v, b.double_value(1e-5)}, DType::F32, xs);
}

int relu(GraphBuilder& b, int x, const std::vector<int64_t>& xs) {
  return b.op("tern::relu", {x}, DType::F32, xs);
}

int cat(GraphBuilder& b, std::vector<int> parts, std::vector<int64_t> out) {
  return b.op("tern::cat", {tensor_list(b, std::move(parts)), b.int_value(1)}, DType::F32, out);
}

/// PyTorch's output size of one pooled dim.
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  int64_t o = (in + 2 * p - k + (ceil_mode ? s - 1 : 0)) / s + 1;
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

/// avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad=True).
int avg_pool_incl(GraphBuilder& b, int x, const std::vector<int64_t>& xs,
                  std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p,
                  bool ceil_mode) {
  const int64_t oh = pool_out(xs[2], k[0], s[0], p[0], ceil_mode);
  const int64_t ow = pool_out(xs[3], k[1], s[1], p[1], ceil_mode);
  return b.op("tern::avg_pool2d",
              {x, b.int_list(k), b.int_list(s), b.int_list(p), b.bool_value(ceil_mode),
               b.bool_value(true), b.none()},
              DType::F32, {xs[0], xs[1], oh, ow});
}

OpCase avg_incl(const std::string& name, std::vector<int64_t> xs, std::vector<int64_t> k,
                std::vector<int64_t> s, std::vector<int64_t> p, bool ceil_mode) {
  OpCase c{name,
           [=](GraphBuilder& b) {
             const int x = b.input("x", DType::F32, xs);
             b.output(avg_pool_incl(b, x, xs, k, s, p, ceil_mode));
           },
           1e-12};
  c.check_blob = [](const std::vector<uint8_t>& blob) {
    // A zero pad (value 0) then a pool whose only padding is ceil_mode's.
    const std::vector<uint32_t> ops = blob_ops(blob);
    ASSERT_EQ(ops, (std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::ConstantPad),
                                          static_cast<uint32_t>(cpu::NodeOp::AvgPool2d)}));
    EXPECT_EQ(blob_node(blob, 0).fparams[0], 0.0f);
    EXPECT_EQ(blob_node(blob, 1).params[cpu::kPadTop], 0u);
    EXPECT_EQ(blob_node(blob, 1).params[cpu::kPadLeft], 0u);
  };
  return c;
}

/// DenseNet's dense layer on the concatenation of `features` (each [1, ci, h, w]): BN -> ReLU
/// -> 1x1 conv (4 * growth) -> BN -> ReLU -> 3x3 conv (growth); returns the new feature.
int dense_layer(GraphBuilder& b, const std::vector<int>& features,
                const std::vector<int64_t>& channels, int64_t h, int64_t growth, uint32_t seed) {
  int64_t c = 0;
  for (int64_t ci : channels) c += ci;
  const std::vector<int64_t> xs{1, c, h, h};
  const int x = cat(b, features, xs);
  const int a = relu(b, batch_norm(b, x, xs, seed), xs);
  const int y = conv(b, a, xs, 4 * growth, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, seed + 10);
  const std::vector<int64_t> ys{1, 4 * growth, h, h};
  const int z = relu(b, batch_norm(b, y, ys, seed + 20), ys);
  return conv(b, z, ys, growth, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false, seed + 30);
}

/// DenseNet's first dense block, shrunk: `layers` layers of growth 4 on 6 channels of 9x9, then
/// the transition (BN -> ReLU -> 1x1 conv -> 2x2 average pool).
void dense_block(GraphBuilder& b, uint32_t layers = 3) {
  const int64_t h = 9, growth = 4;
  const int x = b.input("x", DType::F32, {1, 6, h, h});
  std::vector<int> features{x};
  std::vector<int64_t> channels{6};
  for (uint32_t l = 0; l < layers; ++l) {
    features.push_back(dense_layer(b, features, channels, h, growth, 100 + 40 * l));
    channels.push_back(growth);
  }
  const std::vector<int64_t> cs{1, 6 + growth * static_cast<int64_t>(layers), h, h};
  const int all = cat(b, features, cs);
  const int t = relu(b, batch_norm(b, all, cs, 300), cs);
  const int y = conv(b, t, cs, 9, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 310);
  b.output(b.op("tern::avg_pool2d",
                {y, b.int_list({2, 2}), b.int_list({2, 2}), b.int_list({0, 0}),
                 b.bool_value(false), b.bool_value(true), b.none()},
                DType::F32, {1, 9, 4, 4}));
}

/// Inception v3's block A, shrunk: 1x1; 1x1 -> 5x5; 1x1 -> 3x3 -> 3x3; 3x3/1/1 average pool
/// (count_include_pad) -> 1x1; concatenated. `untaken` puts a tern::erf (not taken by the cpu
/// backend) on the first branch, so that part of the cat's list is made outside the region.
void inception_a(GraphBuilder& b, bool untaken) {
  const std::vector<int64_t> xs{1, 8, 7, 7};
  const int x = b.input("x", DType::F32, xs);
  auto conv_relu = [&](int in, int64_t c, int64_t o, int64_t k, uint32_t seed) {
    const int y =
        conv(b, in, {1, c, 7, 7}, o, k, k, {1, 1}, {k / 2, k / 2}, {1, 1}, 1, true, seed);
    return relu(b, y, {1, o, 7, 7});
  };
  int b1 = conv_relu(x, 8, 6, 1, 401);
  if (untaken) b1 = b.op("tern::erf", {b1}, DType::F32, {1, 6, 7, 7});
  const int b2 = conv_relu(conv_relu(x, 8, 4, 1, 403), 4, 6, 5, 405);
  const int b3 = conv_relu(conv_relu(conv_relu(x, 8, 6, 1, 407), 6, 8, 3, 409), 8, 8, 3, 411);
  const int p = avg_pool_incl(b, x, xs, {3, 3}, {1, 1}, {1, 1}, false);
  const int b4 = conv_relu(p, 8, 3, 1, 413);
  const std::vector<int64_t> cs{1, 23, 7, 7};
  b.output(conv_relu(cat(b, {b1, b2, b3, b4}, cs), 23, 5, 1, 415));
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase bn = {"batch_norm_4d", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 12, 5, 7};
                 const int x = b.input("x", DType::F32, xs);
                 b.output(batch_norm(b, x, xs, 11));
               },
               1e-12};
  bn.check_blob = [](const std::vector<uint8_t>& blob) {
    // One pass: a 1x1 depthwise conv (filter = the folded scale, bias = the folded shift).
    ASSERT_EQ(blob_ops(blob),
              (std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::DepthwiseConv2d)}));
    const cpu::BlobNode n = blob_node(blob, 0);
    EXPECT_EQ(n.num_inputs, 3u);
    EXPECT_EQ(n.params[cpu::kKernelH], 1u);
    EXPECT_EQ(n.params[cpu::kKernelW], 1u);
    EXPECT_EQ(n.params[cpu::kGroups], 1u);
    EXPECT_EQ(n.params[cpu::kGroupInChannels], 12u);
  };
  c.push_back(bn);
  c.push_back({"batch_norm_4d_no_affine", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 5, 6, 6};
                 const int x = b.input("x", DType::F32, xs);
                 b.output(batch_norm(b, x, xs, 13, /*affine=*/false));
               },
               1e-12});
  c.push_back({"batch_norm_2d", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{3, 10};
                 const int x = b.input("x", DType::F32, xs);
                 b.output(batch_norm(b, x, xs, 15));
               },
               1e-12});
  c.push_back({"batch_norm_3d", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 6, 9};
                 const int x = b.input("x", DType::F32, xs);
                 b.output(batch_norm(b, x, xs, 17));
               },
               1e-12});
  // Pre-activation: BN -> ReLU -> conv (the BN does not follow a conv, so it cannot fold).
  c.push_back({"bn_relu_conv", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 8, 8};
                 const int x = b.input("x", DType::F32, xs);
                 const int a = relu(b, batch_norm(b, x, xs, 19), xs);
                 b.output(conv(b, a, xs, 24, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false, 21));
               },
               1e-10});
  // Inception v3's branch pool, then stride 2, ceil mode, odd sizes, a rectangular window.
  c.push_back(avg_incl("avg3x3_s1_p1_include_pad", {1, 8, 7, 7}, {3, 3}, {1, 1}, {1, 1}, false));
  c.push_back(avg_incl("avg3x3_s2_p1_include_pad", {2, 3, 10, 9}, {3, 3}, {2, 2}, {1, 1}, false));
  c.push_back(avg_incl("avg3x3_s2_p1_include_pad_ceil", {1, 4, 10, 10}, {3, 3}, {2, 2}, {1, 1},
                       true));
  c.push_back(avg_incl("avg5x5_s3_p2_include_pad_ceil", {1, 3, 12, 11}, {5, 5}, {3, 3}, {2, 2},
                       true));
  c.push_back(avg_incl("avg3x2_s1_p1_include_pad_rect", {1, 5, 6, 8}, {3, 2}, {1, 1}, {1, 1},
                       false));
  c.push_back({"cat_of_one", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 6, 5, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 23);
                 b.output(cat(b, {y}, xs));
               },
               1e-10});
  c.push_back({"densenet_block", [](GraphBuilder& b) { dense_block(b); }, 1e-10});
  // Six layers: the cats of 3 to 7 tensors each start from the cat before them (its inputs are
  // theirs but the last), so every cat is one 2-input Concat node rather than a chain over all
  // its inputs again (12 nodes).
  OpCase six{"densenet_block_6_layers", [](GraphBuilder& b) { dense_block(b, 6); }, 1e-10};
  six.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    int concats = 0;
    for (uint32_t i = 0; i < ops.size(); ++i) {
      if (ops[i] != static_cast<uint32_t>(cpu::NodeOp::Concat)) continue;
      ++concats;
      EXPECT_EQ(blob_node(blob, i).num_inputs, 2u) << "node " << i;
    }
    EXPECT_EQ(concats, 6);
  };
  c.push_back(six);
  c.push_back({"inception_a", [](GraphBuilder& b) { inception_a(b, false); }, 1e-10});
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceDense, cases());

/// Partitions `graph` for the cpu backend (the partitioner, as `tern compile --backend cpu`),
/// runs it with the delegates and with their fallbacks on the same random inputs, and checks
/// the outputs match. Returns the partitioned graph's regions.
std::vector<compiler::DelegateRegion> check_partitioned(const compiler::Graph& graph) {
  compiler::register_cpu_backend_compiler();
  compiler::ProgramGraph program;
  program.methods.push_back(graph);
  compiler::Graph partitioned = graph;
  compiler::partition(partitioned, {"cpu"});
  compiler::CompileOptions options;
  options.backends = {"cpu"};
  const std::vector<uint8_t> pte = compiler::compile_program(program, options).bytes;
  std::vector<std::vector<float>> inputs;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const auto& v = graph.values[static_cast<size_t>(graph.inputs[i])];
    inputs.push_back(random_floats(numel(v.sizes), 2000 + static_cast<uint32_t>(i)));
  }
  const RunResult delegated = run_program(pte, graph, inputs, /*disable_cpu=*/false);
  const RunResult portable = run_program(pte, graph, inputs, /*disable_cpu=*/true);
  EXPECT_EQ(delegated.paths.size(), partitioned.delegates.size());
  for (DelegatePath p : delegated.paths) EXPECT_EQ(p, DelegatePath::Backend);
  for (DelegatePath p : portable.paths) EXPECT_EQ(p, DelegatePath::Fallback);
  EXPECT_EQ(delegated.outputs.size(), graph.outputs.size());
  for (size_t i = 0; i < delegated.outputs.size() && i < portable.outputs.size(); ++i) {
    EXPECT_TRUE(all_finite(delegated.outputs[i]));
    const double e = nmse(delegated.outputs[i], portable.outputs[i]);
    EXPECT_LE(e, 1e-10) << "output " << i << " NMSE " << e;
  }
  return partitioned.delegates;
}

bool is_list(const compiler::Graph& g, int id) {
  return g.values[static_cast<size_t>(id)].kind == compiler::Value::Kind::TensorList;
}

// Inception's block with an untaken op on one branch: the cat's list holds a tensor made
// outside the region (by the erf), which becomes a delegate input of its own.
TEST(CpuPartitionedCat, ListElementMadeOutsideTheRegion) {
  register_all();
  GraphBuilder b;
  inception_a(b, /*untaken=*/true);
  const compiler::Graph g = b.build();
  int neg_out = -1;
  for (const compiler::Node& n : g.nodes) {
    if (n.op == "tern::erf") neg_out = n.outputs[0];
  }
  const std::vector<compiler::DelegateRegion> regions = check_partitioned(g);
  ASSERT_FALSE(regions.empty());
  const compiler::DelegateRegion& last = regions.back();  // holds the cat
  EXPECT_NE(std::find(last.inputs.begin(), last.inputs.end(), neg_out), last.inputs.end());
  for (const compiler::DelegateRegion& r : regions) {
    for (int id : r.inputs) EXPECT_FALSE(is_list(g, id)) << "a list crossed as one argument";
  }
}

// A dense block whose second layer's output goes through an untaken op before the later
// layers concatenate it: each later cat mixes the method input, tensors of the first region
// and the untaken op's output.
TEST(CpuPartitionedCat, DenseBlockAroundAnUntakenOp) {
  register_all();
  GraphBuilder b;
  const int64_t h = 6;
  const int x = b.input("x", DType::F32, {1, 5, h, h});
  const int f1 = dense_layer(b, {x}, {5}, h, 3, 500);
  const int f2 = b.op("tern::erf", {dense_layer(b, {x, f1}, {5, 3}, h, 3, 540)}, DType::F32,
                      {1, 3, h, h});
  const int f3 = dense_layer(b, {x, f1, f2}, {5, 3, 3}, h, 3, 580);
  const std::vector<int64_t> cs{1, 14, h, h};
  const int all = cat(b, {x, f1, f2, f3}, cs);
  b.output(conv(b, relu(b, batch_norm(b, all, cs, 620), cs), cs, 4, 1, 1, {1, 1}, {0, 0},
                {1, 1}, 1, true, 630));
  const compiler::Graph g = b.build();
  const std::vector<compiler::DelegateRegion> regions = check_partitioned(g);
  // Before the erf, and after it (f3's layer and the rest): two regions, every list element
  // bound one by one.
  ASSERT_EQ(regions.size(), 2u);
  for (const compiler::DelegateRegion& r : regions) {
    for (int id : r.inputs) EXPECT_FALSE(is_list(g, id));
  }
  EXPECT_NE(std::find(regions[1].inputs.begin(), regions[1].inputs.end(), f2),
            regions[1].inputs.end());
  EXPECT_NE(std::find(regions[1].inputs.begin(), regions[1].inputs.end(), f1),
            regions[1].inputs.end());
}

// A cat whose parts are both only region inputs through the list (no other node reads them).
TEST(CpuPartitionedCat, PartsOnlyInTheList) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 4, 5, 5});
  const int z = b.input("z", DType::F32, {1, 2, 5, 5});
  const int y = b.op("tern::erf", {x}, DType::F32, {1, 4, 5, 5});
  const int c = cat(b, {y, z}, {1, 6, 5, 5});
  b.output(conv(b, c, {1, 6, 5, 5}, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 71));
  EXPECT_EQ(compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[1]), "");
  const compiler::Graph g = b.build();
  const std::vector<compiler::DelegateRegion> regions = check_partitioned(g);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].inputs.front(), y);
  EXPECT_EQ(regions[0].inputs[1], z);
}

}  // namespace
}  // namespace tern::cpu_test
