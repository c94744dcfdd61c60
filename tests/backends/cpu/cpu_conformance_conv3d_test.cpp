// Conformance of the cpu backend's conv3d (tern's 3-D convolution, op 33, on NDHWC bytes)
// against the portable kernels (harness: cpu_conformance_util.h): R3D's stem and basic blocks
// (relu and the identity folded into the convs), a stage entry with a strided 3x3x3 conv and a
// 1x1x1 downsample (the residual folded into the downsample), R(2+1)D's factored 1x3x3 then
// 3x1x1 convs, a video clip permuted from [N, T, C, H, W], grouped and dilated convs on a batch
// of two, a conv3d result leaving the region and a region input as the residual (not foldable:
// an add node), SiLU folded in; then what the compile half refuses and every field of op 33 the
// reader checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/kernels/gemm_activation.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

constexpr uint32_t kConv3dOp = static_cast<uint32_t>(cpu::NodeOp::PackedConv3d);

struct Window {
  std::vector<int64_t> k, stride, pad, dil{1, 1, 1};
};

/// conv3d of x [N, C, D, H, W] to o channels; returns the node's output and sets *out to its
/// sizes.
int conv3d(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t o, const Window& w,
           int64_t groups, bool bias, uint32_t seed, std::vector<int64_t>* out) {
  const int wv =
      constant(b, "w" + std::to_string(seed), {o, xs[1] / groups, w.k[0], w.k[1], w.k[2]}, seed);
  const int bv = bias ? constant(b, "b" + std::to_string(seed), {o}, seed + 1) : b.none();
  *out = {xs[0], o};
  for (size_t d = 0; d < 3; ++d) {
    out->push_back((xs[2 + d] + 2 * w.pad[d] - w.dil[d] * (w.k[d] - 1) - 1) / w.stride[d] + 1);
  }
  return b.op("tern::conv3d",
              {x, wv, bv, b.int_list(w.stride), b.int_list(w.pad), b.int_list(w.dil),
               b.int_value(groups)},
              DType::F32, *out, "conv3d_" + std::to_string(seed));
}

int relu(GraphBuilder& b, int x, const std::vector<int64_t>& s) {
  return b.op("tern::relu", {x}, DType::F32, s);
}

int add(GraphBuilder& b, int x, int y, const std::vector<int64_t>& s) {
  return b.op("tern::add", {x, y}, DType::F32, s);
}

const Window k333{{3, 3, 3}, {1, 1, 1}, {1, 1, 1}};

/// An R3D basic block on h: relu(conv(relu(conv(h))) + identity), identity = h or, with
/// `downsample`, a strided 1x1x1 conv of h (the first conv then strided too).
int basic_block(GraphBuilder& b, int h, std::vector<int64_t>* s, int64_t o, bool downsample,
                uint32_t seed) {
  std::vector<int64_t> s1, s2, sd;
  const Window first{{3, 3, 3}, downsample ? std::vector<int64_t>{2, 2, 2}
                                           : std::vector<int64_t>{1, 1, 1}, {1, 1, 1}};
  const int c1 = relu(b, conv3d(b, h, *s, o, first, 1, true, seed, &s1), s1);
  const int c2 = conv3d(b, c1, s1, o, k333, 1, true, seed + 2, &s2);
  int identity = h;
  if (downsample) {
    identity = conv3d(b, h, *s, o, {{1, 1, 1}, {2, 2, 2}, {0, 0, 0}}, 1, true, seed + 4, &sd);
  }
  *s = s2;
  return relu(b, add(b, c2, identity, s2), s2);
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase r3d = {"r3d_stem_and_basic_block", [](GraphBuilder& b) {
                  const std::vector<int64_t> xs{1, 3, 4, 12, 12};
                  const int x = b.input("x", DType::F32, xs);
                  std::vector<int64_t> s;
                  const int stem =
                      relu(b, conv3d(b, x, xs, 8, {{3, 7, 7}, {1, 2, 2}, {1, 3, 3}}, 1, true, 3, &s),
                           s);
                  b.output(basic_block(b, stem, &s, 8, false, 5));
                }, 1e-10};
  r3d.check_blob = [](const std::vector<uint8_t>& blob) {
    // Three convs; every relu and the residual add folded into them.
    EXPECT_EQ(count_op(blob, cpu::NodeOp::PackedConv3d), 3u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Clamp), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Add), 0u);
    size_t with_residual = 0;
    for (uint32_t i = 0; i < blob_ops(blob).size(); ++i) {
      const cpu::BlobNode n = blob_node(blob, i);
      if (n.op == kConv3dOp && n.num_inputs == 3) ++with_residual;
    }
    EXPECT_EQ(with_residual, 1u);
  };
  c.push_back(r3d);
  OpCase entry = {"stage_entry_downsample_then_pool_and_linear", [](GraphBuilder& b) {
                    const std::vector<int64_t> xs{1, 4, 4, 6, 6};
                    const int x = b.input("x", DType::F32, xs);
                    std::vector<int64_t> s;
                    const int h = relu(b, conv3d(b, x, xs, 6, k333, 1, true, 7, &s), s);
                    const int out = basic_block(b, h, &s, 12, true, 9);
                    const int m = b.op("tern::mean",
                                       {out, b.int_list({2, 3, 4}), b.bool_value(true)},
                                       DType::F32, {1, 12, 1, 1, 1});
                    const int flat = b.op("tern::view", {m, b.int_list({1, 12})}, DType::F32,
                                          {1, 12});
                    const int fw = constant(b, "fc_w", {5, 12}, 13);
                    b.output(b.op("tern::linear", {flat, fw, constant(b, "fc_b", {5}, 14)},
                                  DType::F32, {1, 5}));
                  }, 1e-10};
  entry.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::PackedConv3d), 4u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Add), 0u);  // the residual into the downsample
  };
  c.push_back(entry);
  c.push_back({"r2plus1d_factored_convs", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 6, 9, 9};
                 const int x = b.input("x", DType::F32, xs);
                 std::vector<int64_t> s1, s2, s3;
                 const int sp = relu(
                     b, conv3d(b, x, xs, 10, {{1, 3, 3}, {1, 2, 2}, {0, 1, 1}}, 1, false, 15, &s1),
                     s1);
                 const int tm = relu(
                     b, conv3d(b, sp, s1, 12, {{3, 1, 1}, {2, 1, 1}, {1, 0, 0}}, 1, false, 17, &s2),
                     s2);
                 b.output(conv3d(b, tm, s2, 7, {{1, 3, 3}, {1, 1, 1}, {0, 1, 1}}, 1, true, 19,
                                 &s3));
               }, 1e-10});
  c.push_back({"clip_permuted_from_frames_first", [](GraphBuilder& b) {
                 // A video model's input [N, T, C, H, W] permuted to [N, C, T, H, W].
                 const int x = b.input("x", DType::F32, {1, 5, 3, 7, 8});
                 const int p = b.op("tern::permute", {x, b.int_list({0, 2, 1, 3, 4})},
                                    DType::F32, {1, 3, 5, 7, 8});
                 std::vector<int64_t> s;
                 const int cv = conv3d(b, p, {1, 3, 5, 7, 8}, 9, k333, 1, true, 21, &s);
                 b.output(b.op("tern::silu", {cv}, DType::F32, s));
               }, 1e-10});
  c.push_back({"grouped_dilated_batch_two_as_output", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 8, 5, 6, 7};
                 const int x = b.input("x", DType::F32, xs);
                 std::vector<int64_t> s;
                 b.output(conv3d(b, x, xs, 12, {{3, 3, 3}, {1, 2, 1}, {2, 1, 1}, {2, 1, 1}}, 4,
                                 true, 23, &s));
               }, 1e-10});
  // A video VAE / UNet resnet block (CogVideoX's, SVD's temporal blocks, UNet3D's temp convs):
  // group norm over [N, C, D, H, W], silu, conv3d, twice, plus the input; the group norms
  // run on the conv3d's NDHWC bytes in place (op 30 over every dim between N and C), the
  // first reads the region input (a copy into NDHWC), a group norm's result leaves the region.
  OpCase vae = {"video_resnet_group_norms", [](GraphBuilder& b) {
                  const std::vector<int64_t> xs{1, 8, 3, 5, 6};
                  const int x = b.input("x", DType::F32, xs);
                  auto gn = [&](int v, uint32_t seed) {
                    const int w = constant(b, "gn_w" + std::to_string(seed), {8}, seed, 1.5f);
                    const int bias = constant(b, "gn_b" + std::to_string(seed), {8}, seed + 1);
                    return b.op("tern::group_norm",
                                {v, b.int_value(4), w, bias, b.double_value(1e-6)}, DType::F32,
                                xs);
                  };
                  auto silu = [&](int v) { return b.op("tern::silu", {v}, DType::F32, xs); };
                  std::vector<int64_t> s;
                  const int h1 = conv3d(b, silu(gn(x, 41)), xs, 8, k333, 1, true, 43, &s);
                  const int n2 = gn(h1, 45);
                  const int h2 = conv3d(b, silu(n2), xs, 8, k333, 1, true, 47, &s);
                  b.output(add(b, h2, x, xs));
                  b.output(n2);
                }, 1e-10};
  vae.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GroupNorm), 2u);
  };
  c.push_back(vae);
  c.push_back({"region_input_as_residual", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 6, 3, 5, 5};
                 const int x = b.input("x", DType::F32, xs);
                 std::vector<int64_t> s;
                 const int cv = conv3d(b, x, xs, 6, k333, 1, true, 25, &s);
                 b.output(relu(b, add(b, cv, x, s), s));
               }, 1e-10});
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceConv3d, cases());

TEST(CpuConv3d, SiluFoldsIntoTheConv) {
  register_all();
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 4, 3, 5, 5};
  const int x = b.input("x", DType::F32, xs);
  std::vector<int64_t> s;
  const int cv = conv3d(b, x, xs, 8, k333, 1, true, 31, &s);
  b.output(b.op("tern::silu", {cv}, DType::F32, s));
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t>& blob = graph.delegates.at(0).blob;
  const std::vector<uint32_t> ops = blob_ops(blob);
  const auto at = std::find(ops.begin(), ops.end(), kConv3dOp);
  ASSERT_NE(at, ops.end());
  EXPECT_EQ(blob_node(blob, static_cast<uint32_t>(at - ops.begin())).params[cpu::kConv3dActivation],
            static_cast<uint32_t>(cpu::GemmActivation::Silu));
}

TEST(CpuConv3d, WhatTheCompileHalfRefuses) {
  register_all();
  auto reason = [](GraphBuilder& b) {
    return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
  };
  {  // a weight that is an input
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 2, 3, 4, 4});
    const int w = b.input("w", DType::F32, {2, 2, 1, 1, 1});
    b.op("tern::conv3d",
         {x, w, b.none(), b.int_list({1, 1, 1}), b.int_list({0, 0, 0}), b.int_list({1, 1, 1}),
          b.int_value(1)},
         DType::F32, {1, 2, 3, 4, 4});
    EXPECT_NE(reason(b).find("weight: not a constant"), std::string::npos) << reason(b);
  }
  {  // an output shape the attributes do not give
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 2, 3, 4, 4});
    const int w = constant(b, "w", {2, 2, 1, 1, 1}, 33);
    b.op("tern::conv3d",
         {x, w, b.none(), b.int_list({1, 2, 2}), b.int_list({0, 0, 0}), b.int_list({1, 1, 1}),
          b.int_value(1)},
         DType::F32, {1, 2, 3, 4, 4});
    EXPECT_NE(reason(b).find("conv3d: out [1, 2, 3, 4, 4] is not [1, 2, 3, 2, 2]"),
              std::string::npos)
        << reason(b);
  }
  {  // two strides
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 2, 3, 4, 4});
    const int w = constant(b, "w", {2, 2, 1, 1, 1}, 35);
    b.op("tern::conv3d",
         {x, w, b.none(), b.int_list({1, 1}), b.int_list({0, 0, 0}), b.int_list({1, 1, 1}),
          b.int_value(1)},
         DType::F32, {1, 2, 3, 4, 4});
    EXPECT_NE(reason(b).find("stride: expected an Int or 1 or 3 values"), std::string::npos)
        << reason(b);
  }
}

TEST(CpuConv3d, FieldsAreChecked) {
  register_all();
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 4, 4, 6, 6};
  const int x = b.input("x", DType::F32, xs);
  std::vector<int64_t> s;
  const int h = conv3d(b, x, xs, 4, k333, 1, true, 41, &s);
  std::vector<int64_t> s1, s2;
  const int c1 = conv3d(b, h, s, 4, k333, 1, true, 43, &s1);
  const int c2 = conv3d(b, c1, s1, 4, k333, 1, true, 45, &s2);
  b.output(add(b, c2, h, s2));  // h, the input of the conv before: the residual of the last
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t>& blob = graph.delegates.at(0).blob;
  const std::vector<uint32_t> ops = blob_ops(blob);
  const auto last = std::find(ops.rbegin(), ops.rend(), kConv3dOp);
  ASSERT_NE(last, ops.rend());
  const uint32_t at = static_cast<uint32_t>(ops.rend() - last - 1);
  ASSERT_EQ(blob_node(blob, at).num_inputs, 3u);  // the residual
  expect_refused(
      blob, at,
      {{"a kernel of 0", [](cpu::BlobNode& m) { m.params[cpu::kConv3dKernel] = 0; },
        "parameter 3 is 0, expected 1..2^30"},
       {"a stride above 2^30",
        [](cpu::BlobNode& m) { m.params[cpu::kConv3dStride + 1] = (1u << 30) + 1; },
        "parameter 7 is"},
       {"an unknown activation",
        [](cpu::BlobNode& m) { m.params[cpu::kConv3dActivation] = 9; }, "activation 9"},
       {"groups that do not divide the channels",
        [](cpu::BlobNode& m) { m.params[cpu::kConv3dGroups] = 3; }, "3 groups do not divide"},
       {"input channels that are not x's",
        [](cpu::BlobNode& m) { m.params[cpu::kConv3dInChannels] = 5; },
        "expected 5 dims [N, D, H, W, C] with 5 channels"},
       {"a window the packed weight does not hold",
        [](cpu::BlobNode& m) { m.params[cpu::kConv3dKernel + 2] = 1; }, "packed weight value"},
       {"a padding that changes the output",
        [](cpu::BlobNode& m) { m.params[cpu::kConv3dPad + 1] = 2; }, "is not the output's [1, 4, 8, 6, 4]"},
       {"a window larger than the padded input",
        [](cpu::BlobNode& m) {
          m.params[cpu::kConv3dPad] = 0;
          m.params[cpu::kConv3dDilation] = 3;
        },
        "the depth window (7) does not fit the padded input (4)"},
       {"a residual of other dims", [](cpu::BlobNode& m) { m.inputs[2] = m.inputs[1]; },
        "input 2"}});
}

}  // namespace
}  // namespace tern::cpu_test
