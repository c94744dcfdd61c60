// Conformance of the cpu backend's GroupSum (tern's own node, op 48, since blob version 26: a
// sum over R groups of C channels of NHWC tensors, each group optionally scaled per sample and
// channel) against the portable kernels (harness: cpu_conformance_util.h): ResNeSt's split
// attention (a conv output viewed as [N, R, C, H, W], radix 2 and 4, the weight on either side
// of the product, batch 2), SKNet's selective kernel (a stack of 2 or 3 branches: views and a
// cat along dim 1, which then never runs), and the sums the compile half leaves as they were (a
// product of two full five-dim values, a sum whose reader wants it row-major, a product that
// also leaves the region). Then the kernel against its formula, and the blob reader's checks of
// the node.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/kernels/group_sum.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"
#include "tests/backends/cpu/kernel_test_util.h"

namespace tern::cpu_test {
namespace {

int relu(GraphBuilder& b, int x, const std::vector<int64_t>& s) {
  return b.op("tern::relu", {x}, DType::F32, s);
}

int view(GraphBuilder& b, int x, std::vector<int64_t> s) {
  return b.op("tern::view", {x, b.int_list(s)}, DType::F32, s);
}

int sum_dim1(GraphBuilder& b, int x, std::vector<int64_t> s) {
  return b.op("tern::sum", {x, b.int_list({1}), b.bool_value(false)}, DType::F32, std::move(s));
}

/// The split attention's weights from the group sum g [N, C, H, W]: global mean, two 1x1
/// convs, the radix softmax; returned as [N, R, C, 1, 1]. `radix_first`: ResNeSt's
/// view [N, 1, R, C] + transpose + softmax over dim 1; else SKNet's view [N, R, C, 1, 1] and a
/// softmax over dim 1.
int radix_weights(GraphBuilder& b, int g, int64_t n, int64_t r, int64_t c, uint32_t seed,
                  bool radix_first) {
  const int m = b.op("tern::mean", {g, b.int_list({2, 3}), b.bool_value(true)}, DType::F32,
                     {n, c, 1, 1});
  const int h = relu(b, conv(b, m, {n, c, 1, 1}, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, seed),
                     {n, 4, 1, 1});
  const int a = conv(b, h, {n, 4, 1, 1}, r * c, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, seed + 2);
  if (radix_first) {
    const int v = view(b, a, {n, 1, r, c});
    const int t = b.op("tern::transpose", {v, b.int_value(1), b.int_value(2)}, DType::F32,
                       {n, r, 1, c});
    const int s = b.op("tern::softmax", {t, b.int_value(1)}, DType::F32, {n, r, 1, c});
    const int flat = view(b, view(b, s, {n, r * c}), {n, r * c, 1, 1});
    return view(b, flat, {n, r, c, 1, 1});
  }
  const int v = view(b, a, {n, r, c, 1, 1});
  return b.op("tern::softmax", {v, b.int_value(1)}, DType::F32, {n, r, c, 1, 1});
}

/// Every GroupSum reads its parts where a conv wrote them (no copy of x in between).
void expect_sums_read_the_conv(const std::vector<uint8_t>& blob) {
  const std::vector<uint32_t> ops = blob_ops(blob);
  for (uint32_t k = 0; k < ops.size(); ++k) {
    if (ops[k] != static_cast<uint32_t>(cpu::NodeOp::GroupSum)) continue;
    const cpu::BlobNode sum = blob_node(blob, k);
    const uint32_t parts = sum.num_inputs - sum.params[0];
    for (uint32_t i = 0; i < parts; ++i) {
      uint32_t maker = static_cast<uint32_t>(ops.size());
      for (uint32_t j = 0; j < k; ++j) {
        if (blob_node(blob, j).output == sum.inputs[i]) maker = j;
      }
      ASSERT_LT(maker, ops.size()) << "group sum " << k << " part " << i;
      const uint32_t op = ops[maker];
      EXPECT_TRUE(op == static_cast<uint32_t>(cpu::NodeOp::PackedConv2d) ||
                  op == static_cast<uint32_t>(cpu::NodeOp::Conv2d) ||
                  op == static_cast<uint32_t>(cpu::NodeOp::PackedWinogradConv2d))
          << "group sum " << k << " part " << i << " is made by op " << op;
    }
  }
}

OpCase split_attention(const std::string& name, int64_t n, int64_t r, int64_t c, bool weight_first) {
  OpCase k = {name, [=](GraphBuilder& b) {
                const int64_t h = 6, w = 7;
                const int x = b.input("x", DType::F32, {n, 8, h, w});
                const int y = relu(b, conv(b, x, {n, 8, h, w}, r * c, 3, 3, {1, 1}, {1, 1},
                                           {1, 1}, 2, true, 11),
                                   {n, r * c, h, w});
                const int x5 = view(b, y, {n, r, c, h, w});
                const int gap = sum_dim1(b, x5, {n, c, h, w});
                const int a5 = radix_weights(b, gap, n, r, c, 21, true);
                const int p = weight_first
                                  ? b.op("tern::mul", {a5, x5}, DType::F32, {n, r, c, h, w})
                                  : b.op("tern::mul", {x5, a5}, DType::F32, {n, r, c, h, w});
                const int out = sum_dim1(b, p, {n, c, h, w});
                b.output(conv(b, out, {n, c, h, w}, 8, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 31));
              }, 1e-10};
  k.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GroupSum), 2u);
    expect_sums_read_the_conv(blob);
  };
  return k;
}

OpCase selective_kernel(const std::string& name, int64_t n, int64_t branches) {
  OpCase k = {name, [=](GraphBuilder& b) {
                const int64_t c = 8, h = 5, w = 6;
                const int x = b.input("x", DType::F32, {n, c, h, w});
                std::vector<int> paths;
                for (int64_t i = 0; i < branches; ++i) {
                  const int64_t d = i + 1;  // dilations 1, 2, 3 with their padding
                  const int y = relu(b, conv(b, x, {n, c, h, w}, c, 3, 3, {1, 1}, {d, d}, {d, d},
                                             1, true, static_cast<uint32_t>(40 + 3 * i)),
                                     {n, c, h, w});
                  paths.push_back(view(b, y, {n, 1, c, h, w}));
                }
                const int x5 = b.op("tern::cat", {tensor_list(b, paths), b.int_value(1)},
                                    DType::F32, {n, branches, c, h, w});
                const int s = sum_dim1(b, x5, {n, c, h, w});
                const int a5 = radix_weights(b, s, n, branches, c, 61, false);
                const int p = b.op("tern::mul", {x5, a5}, DType::F32, {n, branches, c, h, w});
                b.output(sum_dim1(b, p, {n, c, h, w}));
              }, 1e-10};
  k.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GroupSum), 2u);
    expect_sums_read_the_conv(blob);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Concat), 0u);  // the stack is never made
    EXPECT_EQ(count_op(blob, cpu::NodeOp::RowConcat), 0u);
  };
  return k;
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  c.push_back(split_attention("resnest_radix2", 1, 2, 8, false));
  c.push_back(split_attention("resnest_radix4_weight_first_batch2", 2, 4, 4, true));
  c.push_back(selective_kernel("sknet_two_branches", 1, 2));
  c.push_back(selective_kernel("sknet_three_branches_batch2", 2, 3));
  // A product of two full five-dim values is no weighting: that sum stays a sum of a product.
  OpCase full = {"product_of_full_values_stays", [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {1, 16, 4, 5});
                   const int y = relu(b, conv(b, x, {1, 16, 4, 5}, 16, 1, 1, {1, 1}, {0, 0},
                                              {1, 1}, 1, true, 71),
                                      {1, 16, 4, 5});
                   const int x5 = view(b, y, {1, 2, 8, 4, 5});
                   const int sq = b.op("tern::mul", {x5, x5}, DType::F32, {1, 2, 8, 4, 5});
                   b.output(sum_dim1(b, sq, {1, 8, 4, 5}));
                   b.output(sum_dim1(b, x5, {1, 8, 4, 5}));
                 }, 1e-10};
  full.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GroupSum), 1u);  // the plain sum only
  };
  c.push_back(full);
  // A linear reading the sum wants it row-major: the sum stays as it was.
  OpCase rows = {"sum_read_row_major_stays", [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {1, 12, 3, 4});
                   const int y = relu(b, conv(b, x, {1, 12, 3, 4}, 12, 1, 1, {1, 1}, {0, 0},
                                              {1, 1}, 1, true, 81),
                                      {1, 12, 3, 4});
                   const int s = sum_dim1(b, view(b, y, {1, 3, 4, 3, 4}), {1, 4, 3, 4});
                   const int w = constant(b, "lw", {5, 4}, 83);
                   b.output(b.op("tern::linear", {s, w, b.none()}, DType::F32, {1, 4, 3, 5}));
                 }, 1e-10};
  rows.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GroupSum), 0u);
  };
  c.push_back(rows);
  // The product also leaves the region: no GroupSum, the sum stays a five-dim sum whose
  // output the layout plan still keeps NHWC (computed row-major, then copied).
  OpCase shared = {"product_also_read_stays", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 16, 4, 5});
                 const int y = relu(b, conv(b, x, {1, 16, 4, 5}, 16, 1, 1, {1, 1}, {0, 0},
                                            {1, 1}, 1, true, 71),
                                    {1, 16, 4, 5});
                 const int x5 = view(b, y, {1, 2, 8, 4, 5});
                 const int a = b.input("a", DType::F32, {1, 2, 8, 1, 1});
                 const int p = b.op("tern::mul", {x5, a}, DType::F32, {1, 2, 8, 4, 5});
                 const int s = sum_dim1(b, p, {1, 8, 4, 5});
                 b.output(conv(b, s, {1, 8, 4, 5}, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false, 91));
                 b.output(p);
               }, 1e-10};
  shared.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GroupSum), 0u);
  };
  c.push_back(shared);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceGroupSum, cases());

/// The radix-2 split attention's blob (its last GroupSum is the weighted one).
std::vector<uint8_t> split_attention_blob() {
  GraphBuilder b;
  split_attention("blob", 1, 2, 8, false).build(b);
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.build().delegates.at(0).blob;
}

TEST(CpuGroupSumBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = split_attention_blob();
  std::string message;
  ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
  const uint32_t at = last_node_of(blob, cpu::NodeOp::GroupSum);
  ASSERT_LT(at, blob_ops(blob).size());
  const cpu::BlobNode node = blob_node(blob, at);
  ASSERT_EQ(node.num_inputs, 2u);
  ASSERT_EQ(node.params[0], 1u);
  expect_refused(
      blob, at,
      {{"weight flag 2", [](cpu::BlobNode& n) { n.params[0] = 2; }, "expected 0 (no weight) or 1"},
       {"a parameter", [](cpu::BlobNode& n) { n.params[3] = 1; }, "unused parameter 3 is 1"},
       {"bounds", [](cpu::BlobNode& n) { n.fparams[1] = 2.0f; }, "expected (-inf, +inf)"},
       {"the weight read as a part", [](cpu::BlobNode& n) { n.params[0] = 0; },
        "(group_sum): part 1"},
       {"no part", [](cpu::BlobNode& n) {
          n.num_inputs = 1;
          n.inputs[1] = cpu::kNoValue;
        }, "expected 1 to 3 parts"},
       {"the part as the weight", [node](cpu::BlobNode& n) { n.inputs[1] = node.inputs[0]; },
        "the weight (value"},
       {"the weight as the part", [node](cpu::BlobNode& n) { n.inputs[0] = node.inputs[1]; },
        "(group_sum): part 0"}});
}

/// group_sum against its formula in double: parts of 1, 2 and 3 groups, with and without a
/// weight, one thread and a pool; y ends at a guard page, the inputs are read-only.
TEST(CpuGroupSumKernel, MatchesTheFormula) {
  cpu::kernel_test::Pool two(2);
  const int64_t samples = 2, pixels = 700, c = 24;  // 33600 output floats: pooled bands
  const int64_t groups[3] = {1, 2, 3};
  for (int parts = 1; parts <= 3; ++parts) {
    for (int weighted = 0; weighted < 2; ++weighted) {
      for (int pooled = 0; pooled < 2; ++pooled) {
        int64_t total = 0;
        std::vector<std::vector<float>> xs;
        for (int i = 0; i < parts; ++i) {
          xs.push_back(random_floats(static_cast<size_t>(samples * pixels * groups[i] * c),
                                     static_cast<uint32_t>(5 + i)));
          total += groups[i];
        }
        const std::vector<float> wt = random_floats(static_cast<size_t>(samples * total * c), 9);
        cpu::kernel_test::GuardedBuffer y(static_cast<size_t>(samples * pixels * c) * 4);
        ASSERT_NE(y.data(), nullptr);
        cpu::GroupSumProblem p;
        p.parts = parts;
        for (int i = 0; i < parts; ++i) {
          p.x[i] = xs[static_cast<size_t>(i)].data();
          p.groups[i] = groups[i];
        }
        p.samples = samples;
        p.pixels = pixels;
        p.channels = c;
        p.weight = weighted ? wt.data() : nullptr;
        p.y = y.data();
        cpu::group_sum(p, pooled ? two.pool : nullptr);
        int bad = 0;
        for (int64_t n = 0; n < samples; ++n) {
          for (int64_t q = 0; q < pixels; ++q) {
            for (int64_t ch = 0; ch < c; ++ch) {
              double want = 0.0;
              int64_t g = 0;
              for (int i = 0; i < parts; ++i) {
                for (int64_t r = 0; r < groups[i]; ++r, ++g) {
                  const double xv =
                      xs[static_cast<size_t>(i)][static_cast<size_t>(
                          ((n * pixels + q) * groups[i] + r) * c + ch)];
                  want += weighted ? xv * wt[static_cast<size_t>((n * total + g) * c + ch)] : xv;
                }
              }
              const float got = y.data()[(n * pixels + q) * c + ch];
              if (!(std::fabs(got - want) <= 1e-6 * (1.0 + std::fabs(want))) && bad++ < 5) {
                ADD_FAILURE() << "parts " << parts << " weighted " << weighted << " y[" << n
                              << ", " << q << ", " << ch << "] = " << got << ", want " << want;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tern::cpu_test
