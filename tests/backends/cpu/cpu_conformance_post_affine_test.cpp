// Conformance of the cpu backend's post-activation affine (blob version 28: a batch norm after
// an activation folded into the epilogue of tern's GEMM, op 17's kFcPostAffine, or of a fused
// bottleneck without a project, op 21's kBottleneckHasPostAffine, the residual added after it)
// against the portable kernels (harness: cpu_conformance_util.h): ConvMixer's blocks (depthwise
// conv → ReLU → batch norm → + x, then 1x1 conv → ReLU → batch norm), a linear → ReLU → 1-D
// batch norm and a linear → GELU → batch norm on 2-D rows, and the norms the compile half
// leaves as they were (the activation also read elsewhere; a residual added before the norm).
// Then the blob reader's checks of the two flags.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

/// batch_norm over dim 1 of x (shape xs) with constant statistics (a positive variance), weight
/// and bias.
int batch_norm(GraphBuilder& b, int x, const std::vector<int64_t>& xs, uint32_t seed) {
  const int64_t c = xs[1];
  const std::string s = std::to_string(seed);
  const int w = constant(b, "bn_w" + s, {c}, seed, 1.5f);
  const int bias = constant(b, "bn_b" + s, {c}, seed + 1, 1.0f);
  const int mean = constant(b, "bn_m" + s, {c}, seed + 2, 1.0f);
  const int v = b.constant_f32("bn_v" + s, {c},
                               random_floats(static_cast<size_t>(c), seed + 3, 0.05f, 3.0f));
  return b.op("tern::batch_norm", {x, w, bias, mean, v, b.double_value(1e-5)}, DType::F32, xs);
}

int relu(GraphBuilder& b, int x, const std::vector<int64_t>& s) {
  return b.op("tern::relu", {x}, DType::F32, s);
}

/// Nodes of op `op` whose flags parameter `param` holds `flag`.
size_t count_flagged(const std::vector<uint8_t>& blob, cpu::NodeOp op, uint32_t param,
                     uint32_t flag) {
  size_t n = 0;
  const std::vector<uint32_t> ops = blob_ops(blob);
  for (uint32_t i = 0; i < ops.size(); ++i) {
    if (ops[i] == static_cast<uint32_t>(op) && (blob_node(blob, i).params[param] & flag) == flag) {
      ++n;
    }
  }
  return n;
}

size_t affine_fcs(const std::vector<uint8_t>& blob) {
  return count_flagged(blob, cpu::NodeOp::PackedFullyConnected, cpu::kFcEpilogueFlags,
                       cpu::kFcPostAffine);
}

size_t affine_bottlenecks(const std::vector<uint8_t>& blob) {
  return count_flagged(blob, cpu::NodeOp::PackedBottleneck, cpu::kBottleneckFlags,
                       cpu::kBottleneckHasPostAffine);
}

/// ConvMixer: a 4x4 / 4 patch stem (conv → ReLU → batch norm, op 18: not fused), then `blocks`
/// blocks of C = 32 channels on 14x14: x + bn(relu(dw 7x7(x))), then bn(relu(1x1(·))) (sizes
/// that run on tern's kernels: a depthwise window over 25 taps, a GEMM over 2^17 FMAs).
OpCase convmixer(const std::string& name, int64_t n, int blocks) {
  OpCase k = {name, [=](GraphBuilder& b) {
                const int64_t c = 32;
                const std::vector<int64_t> s{n, c, 14, 14};
                const int x = b.input("x", DType::F32, {n, 3, 56, 56});
                int h = batch_norm(b, relu(b, conv(b, x, {n, 3, 56, 56}, c, 4, 4, {4, 4}, {0, 0},
                                                   {1, 1}, 1, true, 11),
                                           s),
                                   s, 13);
                for (int i = 0; i < blocks; ++i) {
                  const uint32_t seed = 100 + 20 * static_cast<uint32_t>(i);
                  const int dw = relu(b, conv(b, h, s, c, 7, 7, {1, 1}, {3, 3}, {1, 1}, c, true,
                                              seed),
                                      s);
                  const int r = b.op("tern::add", {batch_norm(b, dw, s, seed + 2), h}, DType::F32,
                                     s);
                  h = batch_norm(b, relu(b, conv(b, r, s, c, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1,
                                                 true, seed + 6),
                                         s),
                                 s, seed + 8);
                }
                b.output(h);
              }, 1e-10};
  k.check_blob = [blocks](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(affine_bottlenecks(blob), static_cast<size_t>(blocks));
    EXPECT_EQ(affine_fcs(blob), static_cast<size_t>(blocks));
    EXPECT_EQ(count_op(blob, cpu::NodeOp::DepthwiseConv2d), 1u);  // the stem's norm only
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Add), 0u);              // the residuals in op 21
    for (uint32_t i = 0; i < blob_ops(blob).size(); ++i) {
      const cpu::BlobNode node = blob_node(blob, i);
      if (node.op == static_cast<uint32_t>(cpu::NodeOp::PackedBottleneck)) {
        EXPECT_EQ(node.num_inputs, 4u) << "x, weights, residual, affine";
      }
    }
  };
  return k;
}

/// x [80, 48] → linear 48 → 40 → `act` → batch norm over the 40 columns.
OpCase linear_norm(const std::string& name, const char* act) {
  OpCase k = {name, [=](GraphBuilder& b) {
                const int x = b.input("x", DType::F32, {80, 48});
                const int w = constant(b, "w", {40, 48}, 21);
                const int bias = constant(b, "b", {40}, 22);
                const int y = b.op("tern::linear", {x, w, bias}, DType::F32, {80, 40});
                const int a = std::string(act) == "gelu"
                                  ? b.op("tern::gelu", {y, b.string_value("none")}, DType::F32,
                                         {80, 40})
                                  : relu(b, y, {80, 40});
                b.output(batch_norm(b, a, {80, 40}, 23));
              }, 1e-10};
  k.check_blob = [](const std::vector<uint8_t>& blob) { EXPECT_EQ(affine_fcs(blob), 1u); };
  return k;
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  c.push_back(convmixer("convmixer_one_block", 1, 1));
  c.push_back(convmixer("convmixer_three_blocks_batch2", 2, 3));
  c.push_back(linear_norm("linear_relu_batch_norm_1d", "relu"));
  c.push_back(linear_norm("linear_gelu_batch_norm_1d", "gelu"));
  // The activation also leaves the region: the norm cannot fold into the GEMM.
  OpCase shared = {"activation_also_read_stays", [](GraphBuilder& b) {
                     const int x = b.input("x", DType::F32, {80, 48});
                     const int y = b.op("tern::linear",
                                        {x, constant(b, "w", {40, 48}, 31), b.none()},
                                        DType::F32, {80, 40});
                     const int a = relu(b, y, {80, 40});
                     b.output(batch_norm(b, a, {80, 40}, 33));
                     b.output(a);
                   }, 1e-10};
  shared.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(affine_fcs(blob), 0u);
  };
  c.push_back(shared);
  // x + relu(dw(x)) before the norm: the bottleneck takes the residual, the norm stays.
  OpCase before = {"residual_before_the_norm_stays", [](GraphBuilder& b) {
                     const std::vector<int64_t> s{1, 32, 14, 14};
                     const int x = b.input("x", DType::F32, s);
                     const int h = relu(b, x, s);
                     const int dw = relu(b, conv(b, h, s, 32, 7, 7, {1, 1}, {3, 3}, {1, 1}, 32,
                                                 true, 41),
                                         s);
                     const int r = b.op("tern::add", {dw, h}, DType::F32, s);
                     b.output(batch_norm(b, r, s, 43));
                   }, 1e-10};
  before.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(affine_bottlenecks(blob), 0u);
  };
  c.push_back(before);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformancePostAffine, cases());

/// The one-block ConvMixer's blob.
std::vector<uint8_t> convmixer_blob() {
  GraphBuilder b;
  convmixer("blob", 1, 1).build(b);
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.build().delegates.at(0).blob;
}

TEST(CpuPostAffineBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = convmixer_blob();
  std::string message;
  ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
  const uint32_t fc = last_node_of(blob, cpu::NodeOp::PackedFullyConnected);
  ASSERT_LT(fc, blob_ops(blob).size());
  const cpu::BlobNode f = blob_node(blob, fc);
  ASSERT_EQ(f.num_inputs, 3u);
  ASSERT_EQ(f.params[cpu::kFcEpilogueFlags], cpu::kFcPostAffine);
  expect_refused(
      blob, fc,
      {{"both flags (the affine then read as a data value)",
        [](cpu::BlobNode& n) { n.params[cpu::kFcEpilogueFlags] = 3; },
        "input 2 (value"},
       {"the multiplier flag", [](cpu::BlobNode& n) { n.params[cpu::kFcEpilogueFlags] = 1; },
        "must not be a constant"},
       {"no affine input", [](cpu::BlobNode& n) {
          n.num_inputs = 2;
          n.inputs[2] = cpu::kNoValue;
        }, "epilogue flags 2 with 2 inputs"},
       {"a data value as the affine", [f](cpu::BlobNode& n) { n.inputs[2] = f.inputs[0]; },
        "input 2 (value"},
       {"the weight as the affine", [f](cpu::BlobNode& n) { n.inputs[2] = f.inputs[1]; },
        "the affine (value"}});
  const uint32_t bn = last_node_of(blob, cpu::NodeOp::PackedBottleneck);
  ASSERT_LT(bn, blob_ops(blob).size());
  const cpu::BlobNode d = blob_node(blob, bn);
  ASSERT_EQ(d.num_inputs, 4u);
  expect_refused(
      blob, bn,
      {{"the affine with a project",
        [](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] |= cpu::kBottleneckHasProject; },
        "the affine 8 only without a project"},
       {"no affine flag (the affine then read as a data value)", [](cpu::BlobNode& n) {
          n.params[cpu::kBottleneckFlags] &= ~cpu::kBottleneckHasPostAffine;
        }, "input 3 (value"},
       {"flag 16", [](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] |= 16; },
        "expected flags <= 15"},
       {"the residual as the affine", [d](cpu::BlobNode& n) { n.inputs[3] = d.inputs[2]; },
        "input 3 (value"},
       {"the weights as the affine", [d](cpu::BlobNode& n) { n.inputs[3] = d.inputs[1]; },
        "the affine (value"}});
}

}  // namespace
}  // namespace tern::cpu_test
