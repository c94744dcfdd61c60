// Conformance of the cpu backend's ceil_mode pooling and channel concatenation against the
// portable kernels (harness: cpu_conformance_util.h): max and average pooling with
// ceil_mode=True where it grows the output, which the compile half lowers to XNNPACK's pooling
// with extra bottom/right padding (odd sizes, stride 2 and 3, padding 0 and 1, a last window
// dropped as PyTorch does, dilated max pooling, GoogLeNet's 3x3 stride-2 pools, average pooling
// with count_include_pad False, and True without padding); tern::cat as tern's Concat node
// (op 22: 2 to 5 parts, chained by 3, a region input among them, the cat a graph output or read
// by a conv, GoogLeNet's Inception block, a 2-D cat along the last dim); then the blob fields of
// the pools' padding and of the Concat node, what the reader refuses, and that a cat is taken
// in a partly taken graph; values a cat reads that a fusion (a bottleneck chain, a relu
// folded into its conv) would otherwise swallow; nearest upsampling by integer factors (YOLO's neck), bilinear
// upsampling (XNNPACK's resize, op 31) and what the compile half refuses of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

/// PyTorch's ceil-mode output size of one spatial dim.
int64_t ceil_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  const int64_t span = d * (k - 1) + 1;
  int64_t o = (in + 2 * p - span + s - 1) / s + 1;
  if ((o - 1) * s >= in + p) --o;
  return o;
}

OpCase max_pool_ceil(const std::string& name, std::vector<int64_t> xs, int64_t k, int64_t s,
                     int64_t p, int64_t d = 1) {
  return {name,
          [=](GraphBuilder& b) {
            const int x = b.input("x", DType::F32, xs);
            const int64_t oh = ceil_out(xs[2], k, s, p, d), ow = ceil_out(xs[3], k, s, p, d);
            b.output(b.op("tern::max_pool2d",
                          {x, b.int_list({k, k}), b.int_list({s, s}), b.int_list({p, p}),
                           b.int_list({d, d}), b.bool_value(true)},
                          DType::F32, {xs[0], xs[1], oh, ow}));
          },
          0.0};
}

OpCase avg_pool_ceil(const std::string& name, std::vector<int64_t> xs, int64_t k, int64_t s,
                     int64_t p, bool count_include_pad) {
  return {name,
          [=](GraphBuilder& b) {
            const int x = b.input("x", DType::F32, xs);
            const int64_t oh = ceil_out(xs[2], k, s, p, 1), ow = ceil_out(xs[3], k, s, p, 1);
            b.output(b.op("tern::avg_pool2d",
                          {x, b.int_list({k, k}), b.int_list({s, s}), b.int_list({p, p}),
                           b.bool_value(true), b.bool_value(count_include_pad), b.none()},
                          DType::F32, {xs[0], xs[1], oh, ow}));
          },
          1e-12};
}

/// 1x1 conv of x [n, c, h, w] to o channels with a relu (a branch of an Inception block).
int branch(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t o, uint32_t seed) {
  const int y = conv(b, x, xs, o, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, seed);
  return b.op("tern::relu", {y}, DType::F32, {xs[0], o, xs[2], xs[3]});
}

/// Channel concatenation of 4-D x (shape xs) through `channels.size()` 1x1 branches, optionally
/// with x itself (a region input) as the first part; the cat is the graph output, or goes on
/// through a 1x1 conv.
OpCase inception_cat(const std::string& name, std::vector<int64_t> xs,
                     std::vector<int64_t> channels, bool x_first, bool cat_is_output) {
  return {name,
          [=](GraphBuilder& b) {
            const int x = b.input("x", DType::F32, xs);
            std::vector<int> parts;
            int64_t total = 0;
            if (x_first) {
              parts.push_back(x);
              total += xs[1];
            }
            uint32_t seed = 11;
            for (const int64_t c : channels) {
              parts.push_back(branch(b, x, xs, c, seed));
              seed += 2;
              total += c;
            }
            const std::vector<int64_t> cs{xs[0], total, xs[2], xs[3]};
            const int cat = b.op("tern::cat", {tensor_list(b, parts), b.int_value(1)},
                                 DType::F32, cs);
            if (cat_is_output) {
              b.output(cat);
            } else {
              b.output(branch(b, cat, cs, 8, 91));
            }
          },
          1e-10};
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  // GoogLeNet: 3x3 stride 2 on 112, 56, 28 and 14 (all grow by one); 2x2 stride 2 on 7.
  // 112: floor 55, ceil 56, so one extra row/column of padding at the bottom/right only.
  OpCase g112 = max_pool_ceil("max3x3_s2_p0_112", {1, 8, 112, 112}, 3, 2, 0);
  g112.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob),
              std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::MaxPool2d)});
    const cpu::BlobNode n = blob_node(blob, 0);
    EXPECT_EQ(n.params[cpu::kPadTop], 0u);
    EXPECT_EQ(n.params[cpu::kPadLeft], 0u);
    EXPECT_EQ(n.params[cpu::kPadBottom], 1u);
    EXPECT_EQ(n.params[cpu::kPadRight], 1u);
  };
  c.push_back(g112);
  // 10 with padding 1, 3x3 stride 2: floor 5, ceil 6 (the last window starts at row 9, inside).
  OpCase p1 = max_pool_ceil("max3x3_s2_p1_even", {1, 3, 10, 10}, 3, 2, 1);
  p1.check_blob = [](const std::vector<uint8_t>& blob) {
    const cpu::BlobNode n = blob_node(blob, 0);
    EXPECT_EQ(n.params[cpu::kPadTop], 1u);
    EXPECT_EQ(n.params[cpu::kPadBottom], 2u);
  };
  c.push_back(p1);
  c.push_back(max_pool_ceil("max3x3_s2_p0_14", {2, 16, 14, 14}, 3, 2, 0));
  c.push_back(max_pool_ceil("max2x2_s2_p0_7", {1, 5, 7, 7}, 2, 2, 0));
  c.push_back(max_pool_ceil("max3x3_s2_p1_odd_width", {1, 3, 10, 9}, 3, 2, 1));
  c.push_back(max_pool_ceil("max3x3_s3_p1", {1, 4, 12, 12}, 3, 3, 1));
  // 11, 3x3 stride 3 padding 1: ceil gives 5, but the 5th window would start at 12 - 1 = 11,
  // in the padding, so PyTorch drops it: the floor size 4.
  c.push_back(max_pool_ceil("max3x3_s3_p1_last_window_dropped", {1, 4, 11, 11}, 3, 3, 1));
  c.push_back(max_pool_ceil("max2x2_s2_dil2", {1, 3, 10, 10}, 2, 2, 0, 2));
  c.push_back(max_pool_ceil("max3x3_s1_p1_same", {1, 4, 9, 9}, 3, 1, 1));
  c.push_back({"max_ceil_rect",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 6, 9, 12});
                 b.output(b.op("tern::max_pool2d",
                               {x, b.int_list({3, 2}), b.int_list({2, 2}), b.int_list({1, 0}),
                                b.int_list({1, 1}), b.bool_value(true)},
                               DType::F32, {1, 6, 5, 6}));
               },
               0.0});
  c.push_back(avg_pool_ceil("avg2x2_s2_p0_7", {1, 5, 7, 7}, 2, 2, 0, true));
  c.push_back(avg_pool_ceil("avg3x3_s2_p0_9_include_pad", {2, 3, 10, 10}, 3, 2, 0, true));
  c.push_back(avg_pool_ceil("avg3x3_s2_p1_exclude_pad", {1, 4, 10, 10}, 3, 2, 1, false));
  c.push_back(avg_pool_ceil("avg3x3_s3_p1_exclude_pad", {1, 3, 12, 11}, 3, 3, 1, false));
  c.push_back(avg_pool_ceil("avg2x2_s2_p1_exclude_pad_odd", {1, 2, 9, 9}, 2, 2, 1, false));
  // A 1x1 window picks every stride-th pixel (EfficientFormer V2 downsamples its attention
  // queries so): a StridedCopy, no pool node (XNNPACK's pools need 2+ pixels).
  OpCase sub = avg_pool_ceil("avg1x1_s2_subsample_odd", {1, 6, 9, 7}, 1, 2, 0, true);
  sub.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(blob_ops(blob),
              std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::StridedCopy)});
  };
  c.push_back(sub);
  c.push_back(max_pool_ceil("max1x1_s3_subsample", {2, 5, 10, 11}, 1, 3, 0));
  // Pools of a plain 4-D tensor (a matmul's output: ResNeSt pools the sum of its split
  // attention, made plain) read an NHWC copy of it.
  for (const char* pool : {"tern::avg_pool2d", "tern::max_pool2d", "tern::adaptive_avg_pool2d"}) {
    c.push_back({std::string("plain_input_") + (pool + 6),
                 [pool](GraphBuilder& b) {
                   const int a = b.input("a", DType::F32, {1, 4, 6, 5});
                   const int v = b.input("v", DType::F32, {1, 4, 5, 8});
                   const int m = b.op("tern::matmul", {a, v}, DType::F32, {1, 4, 6, 8});
                   const std::string op = pool;
                   int p = -1;
                   if (op == "tern::adaptive_avg_pool2d") {
                     p = b.op(op, {m, b.int_list({1, 1})}, DType::F32, {1, 4, 1, 1});
                   } else if (op == "tern::max_pool2d") {
                     p = b.op(op, {m, b.int_list({2, 2}), b.int_list({2, 2}), b.int_list({0, 0}),
                                   b.int_list({1, 1}), b.bool_value(false)},
                              DType::F32, {1, 4, 3, 4});
                   } else {
                     p = b.op(op, {m, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({1, 1}),
                                   b.bool_value(false), b.bool_value(false), b.none()},
                              DType::F32, {1, 4, 3, 4});
                   }
                   b.output(p);
                 },
                 1e-10});
  }
  c.push_back({"avg1x1_s2_between_convs",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 4, 14, 14};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 95);
                 const int p = b.op("tern::avg_pool2d",
                                    {y, b.int_list({1, 1}), b.int_list({2, 2}),
                                     b.int_list({0, 0}), b.bool_value(false),
                                     b.bool_value(true), b.none()},
                                    DType::F32, {1, 8, 7, 7});
                 b.output(conv(b, p, {1, 8, 7, 7}, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true,
                               97));
               },
               1e-10});
  // Channel concatenation (op 22; 4 or more parts are a tree of nodes of up to 3).
  OpCase cat2 = inception_cat("cat2_output", {1, 8, 7, 7}, {5, 3}, false, true);
  cat2.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    ASSERT_FALSE(ops.empty());
    EXPECT_EQ(ops.back(), static_cast<uint32_t>(cpu::NodeOp::Concat));
  };
  c.push_back(cat2);
  c.push_back(inception_cat("cat3_then_conv", {2, 6, 5, 9}, {4, 7, 16}, false, false));
  OpCase cat4 = inception_cat("cat4_region_input_first", {1, 16, 6, 6}, {24, 8, 3}, true, true);
  cat4.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), static_cast<uint32_t>(cpu::NodeOp::Concat)), 2);
  };
  c.push_back(cat4);
  c.push_back(inception_cat("cat5_then_conv", {1, 4, 9, 9}, {3, 5, 7, 2, 1}, false, false));
  // An FPN detection head's cat of its levels, largest first ([1, rows_i, 7] along dim 1, as
  // SSD's and RetinaNet's per-anchor outputs): nested so that every part is copied as few
  // times as it can be — [40, 20, cat(10, 5, cat(3, 1))] copies 79 + 19 + 4 = 102 rows of 7
  // (the chain [[[40, 20, 10], 5, 3], 1] copied 70 + 78 + 79 = 227).
  OpCase fpn = {"fpn_head_cat_of_six_levels", [](GraphBuilder& b) {
                  std::vector<int> parts;
                  const int64_t widths[] = {40, 20, 10, 5, 3, 1};
                  for (int64_t w : widths) {
                    const int x = b.input("l" + std::to_string(w), DType::F32, {1, w * 7});
                    parts.push_back(b.op("tern::view", {b.op("tern::relu", {x}, DType::F32, {1, w * 7}),
                                                        b.int_list({1, w, 7})},
                                         DType::F32, {1, w, 7}));
                  }
                  b.output(b.op("tern::cat", {tensor_list(b, parts), b.int_value(1)}, DType::F32,
                                {1, 79, 7}));
                }, 1e-10};
  fpn.check_blob = [](const std::vector<uint8_t>& blob) {
    cpu::BlobHeader h;
    std::memcpy(&h, blob.data(), sizeof(h));
    uint64_t copied = 0, nodes = 0;
    for (uint32_t i = 0; i < h.num_nodes; ++i) {
      const cpu::BlobNode n = blob_node(blob, i);
      if (n.op != static_cast<uint32_t>(cpu::NodeOp::Concat)) continue;
      cpu::BlobValue v;
      std::memcpy(&v, blob.data() + sizeof(h) + n.output * sizeof(cpu::BlobValue), sizeof(v));
      uint64_t numel = 1;
      for (uint32_t d = 0; d < v.rank; ++d) numel *= v.dims[d];
      copied += numel;
      ++nodes;
    }
    EXPECT_EQ(nodes, 3u);
    EXPECT_EQ(copied, 102u * 7u);
  };
  c.push_back(fpn);
  // More parts than the tree search takes (48): a left-to-right chain, as before.
  c.push_back({"cat_of_fifty_parts_chained", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 100, 3});
                 const int r = b.op("tern::relu", {x}, DType::F32, {1, 100, 3});
                 std::vector<int> parts;
                 for (int64_t i = 0; i < 50; ++i) {
                   parts.push_back(b.op("tern::slice",
                                        {r, b.int_value(1), b.int_value(2 * i),
                                         b.int_value(2 * i + (i % 2 == 0 ? 2 : 1)), b.int_value(1)},
                                        DType::F32, {1, i % 2 == 0 ? 2 : 1, 3}));
                 }
                 b.output(b.op("tern::cat", {tensor_list(b, parts), b.int_value(1)}, DType::F32,
                               {1, 75, 3}));
               }, 1e-10});
  // GoogLeNet's block: 1x1, 1x1 -> 3x3, 1x1 -> 3x3, ceil max pool 3x3/1/1 -> 1x1, concatenated.
  c.push_back({"googlenet_inception_block",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 12, 8, 8};
                 const int x = b.input("x", DType::F32, xs);
                 const int b1 = branch(b, x, xs, 8, 21);
                 const int r2 = branch(b, x, xs, 6, 23);
                 const int b2 = conv(b, r2, {1, 6, 8, 8}, 10, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1,
                                     true, 25);
                 const int r3 = branch(b, x, xs, 4, 27);
                 const int b3 = conv(b, r3, {1, 4, 8, 8}, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1,
                                     true, 29);
                 const int p = b.op("tern::max_pool2d",
                                    {x, b.int_list({3, 3}), b.int_list({1, 1}),
                                     b.int_list({1, 1}), b.int_list({1, 1}), b.bool_value(true)},
                                    DType::F32, xs);
                 const int b4 = branch(b, p, xs, 7, 31);
                 const int cat = b.op("tern::cat",
                                      {tensor_list(b, {b1, b2, b3, b4}), b.int_value(1)},
                                      DType::F32, {1, 30, 8, 8});
                 b.output(b.op("tern::max_pool2d",
                               {cat, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({0, 0}),
                                b.int_list({1, 1}), b.bool_value(true)},
                               DType::F32, {1, 30, 4, 4}));
               },
               1e-10});
  // Values a cat reads through its tensor list that a fusion would otherwise swallow
  // (HGNet-V2's aggregation, found by the coverage probe): a depthwise conv's output read by a
  // 1x1 project conv and by the cat (the bottleneck chain must stop before the project), and a
  // 1x1 conv's output read by a relu and by the cat (the relu must not fold into the conv).
  c.push_back({"cat_reads_depthwise_output_of_a_chain",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 8, 16, 16};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 71);
                 const int r = b.op("tern::relu", {e}, DType::F32, {1, 16, 16, 16});
                 const int d = conv(b, r, {1, 16, 16, 16}, 16, 3, 3, {2, 2}, {1, 1}, {1, 1}, 16,
                                    true, 73);
                 const int p = conv(b, d, {1, 16, 8, 8}, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1,
                                    true, 75);
                 const int q = conv(b, p, {1, 16, 8, 8}, 16, 5, 5, {1, 1}, {2, 2}, {1, 1}, 16,
                                    true, 77);
                 const int qr = b.op("tern::relu", {q}, DType::F32, {1, 16, 8, 8});
                 const int cat = b.op("tern::cat", {tensor_list(b, {d, qr}), b.int_value(1)},
                                      DType::F32, {1, 32, 8, 8});
                 b.output(conv(b, cat, {1, 32, 8, 8}, 8, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true,
                               79));
               },
               1e-10});
  c.push_back({"cat_reads_a_conv_output_that_a_relu_reads",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 6, 7, 7};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 10, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 81);
                 const int r = b.op("tern::relu", {y}, DType::F32, {1, 10, 7, 7});
                 b.output(b.op("tern::cat", {tensor_list(b, {y, r}), b.int_value(1)},
                               DType::F32, {1, 20, 7, 7}));
               },
               1e-10});
  c.push_back({"cat_reads_a_linear_output_that_a_relu_reads",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 10});
                 const int w = constant(b, "w", {6, 10}, 83);
                 const int y = b.op("tern::linear", {x, w, b.none()}, DType::F32, {3, 6});
                 const int r = b.op("tern::relu", {y}, DType::F32, {3, 6});
                 const int w2 = constant(b, "w2", {4, 6}, 85);
                 const int z = b.op("tern::linear", {r, w2, b.none()}, DType::F32, {3, 4});
                 b.output(b.op("tern::cat", {tensor_list(b, {y, z}), b.int_value(-1)},
                               DType::F32, {3, 10}));
               },
               1e-10});
  // A cat of 2-D tensors along the last dim after linears.
  c.push_back({"cat_last_dim_2d",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 10});
                 const int w1 = constant(b, "w1", {6, 10}, 61), w2 = constant(b, "w2", {4, 10}, 63);
                 const int y1 = b.op("tern::linear", {x, w1, b.none()}, DType::F32, {3, 6});
                 const int y2 = b.op("tern::linear", {x, w2, b.none()}, DType::F32, {3, 4});
                 b.output(b.op("tern::cat", {tensor_list(b, {y1, x, y2}), b.int_value(-1)},
                               DType::F32, {3, 20}));
               },
               1e-10});
  // upsample_nearest2d by integer factors: a broadcast StridedCopy in NHWC order. YOLO's neck
  // (conv -> upsample x2 -> cat with an earlier feature map -> conv), a factor of 3 from the
  // output size alone, and different factors for H and W.
  c.push_back({"yolo_upsample_cat", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 12, 10};
                 const int x = b.input("x", DType::F32, xs);
                 const int f = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 91);
                 const int d = conv(b, f, {1, 8, 12, 10}, 16, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1,
                                    true, 93);
                 const int u = b.op("tern::upsample_nearest2d",
                                    {d, b.double_value(2.0), b.double_value(2.0)}, DType::F32,
                                    {1, 16, 12, 10});
                 const int z = b.op("tern::cat", {tensor_list(b, {u, f}), b.int_value(1)},
                                    DType::F32, {1, 24, 12, 10});
                 b.output(conv(b, z, {1, 24, 12, 10}, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true,
                               95));
               }, 1e-10});
  // upsample_bilinear2d as XNNPACK's resize (op 31): LR-ASPP's and DeepLabV3's x2 / to-size
  // upsampling with align_corners False (the first output row's source index is negative,
  // clamped as PyTorch does), a shrink, and align_corners True.
  c.push_back({"bilinear_half_pixel_up_and_down", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 6, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 99);
                 const int up = b.op("tern::upsample_bilinear2d",
                                     {y, b.bool_value(false), b.double_value(2.0),
                                      b.double_value(2.0)},
                                     DType::F32, {1, 8, 12, 10});
                 b.output(conv(b, up, {1, 8, 12, 10}, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true,
                               101));
                 b.output(b.op("tern::upsample_bilinear2d",
                               {y, b.bool_value(false), b.none(), b.none()}, DType::F32,
                               {1, 8, 17, 3}));
               }, 1e-10});
  OpCase aligned = {"bilinear_align_corners", [](GraphBuilder& b) {
                      const std::vector<int64_t> xs{2, 3, 4, 7};
                      const int x = b.input("x", DType::F32, xs);
                      const int y = conv(b, x, xs, 5, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 103);
                      b.output(b.op("tern::upsample_bilinear2d",
                                    {y, b.bool_value(true), b.none(), b.none()}, DType::F32,
                                    {2, 5, 9, 13}));
                    }, 1e-10};
  aligned.check_blob = [](const std::vector<uint8_t>& blob) {
    // A method output read by nothing: written as NCHW planes (op 34), no NHWC resize.
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ResizeBilinearToPlanes), 1u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ResizeBilinear), 0u);
  };
  c.push_back(aligned);
  OpCase seg = {"segmentation_logits_to_input_size", [](GraphBuilder& b) {
                  // LR-ASPP's end: 21 classes at 1/8 upsampled to the input (with rows and
                  // columns of every tap pattern), and an auxiliary upsample read by a conv.
                  const std::vector<int64_t> xs{1, 8, 9, 11};
                  const int x = b.input("x", DType::F32, xs);
                  const int y = conv(b, x, xs, 21, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 107);
                  b.output(b.op("tern::upsample_bilinear2d",
                                {y, b.bool_value(false), b.none(), b.none()}, DType::F32,
                                {1, 21, 72, 600}));
                  const int aux = b.op("tern::upsample_bilinear2d",
                                       {x, b.bool_value(false), b.none(), b.none()}, DType::F32,
                                       {1, 8, 18, 22});
                  b.output(conv(b, aux, {1, 8, 18, 22}, 3, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true,
                                109));
                }, 1e-10};
  seg.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ResizeBilinearToPlanes), 1u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ResizeBilinear), 1u);
  };
  c.push_back(seg);
  c.push_back({"nearest_factors_3_and_2_by_size", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 4, 5, 7};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 97);
                 b.output(b.op("tern::upsample_nearest2d", {y, b.none(), b.none()}, DType::F32,
                               {2, 6, 15, 14}));
               }, 1e-10});
  // No integer factor: a GatherMap over the NHWC bytes. GhostNetV2's gate (7x7 pooled to 3x3,
  // back to 7x7: rows 0 0 0 1 1 2 2), a shrink (6 to 4) and a scale-given size, batch 2.
  OpCase ghost = {"nearest_by_no_integer_factor", [](GraphBuilder& b) {
                    const std::vector<int64_t> xs{2, 5, 3, 3};
                    const int x = b.input("x", DType::F32, xs);
                    const int y = conv(b, x, xs, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 111);
                    b.output(b.op("tern::upsample_nearest2d", {y, b.none(), b.none()},
                                  DType::F32, {2, 6, 7, 7}));
                    const std::vector<int64_t> zs{1, 3, 6, 5};
                    const int z = b.input("z", DType::F32, zs);
                    const int r = b.op("tern::relu", {z}, DType::F32, zs);
                    b.output(b.op("tern::upsample_nearest2d", {r, b.none(), b.none()},
                                  DType::F32, {1, 3, 4, 8}));
                    b.output(b.op("tern::upsample_nearest2d",
                                  {r, b.double_value(1.5), b.double_value(1.7)}, DType::F32,
                                  {1, 3, 9, 8}));
                  }, 1e-12};
  ghost.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GatherMap), 3u);
  };
  c.push_back(ghost);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceCatPool, cases());

/// The blob of two 1x1 branches of x [1, 8, 7, 7] (5 and 3 channels) concatenated; the
/// Concat node is the last.
std::vector<uint8_t> cat_blob() {
  GraphBuilder b;
  inception_cat("cat", {1, 8, 7, 7}, {5, 3}, false, true).build(b);
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.graph().delegates[0].blob;
}

TEST(CpuConcatBlob, OneOwnKernelNodeAfterTheBranches) {
  register_all();
  const std::vector<uint8_t> blob = cat_blob();
  const std::vector<uint32_t> ops = blob_ops(blob);
  ASSERT_GE(ops.size(), 3u);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), static_cast<uint32_t>(cpu::NodeOp::Concat)), 1);
  EXPECT_EQ(ops.back(), static_cast<uint32_t>(cpu::NodeOp::Concat));
  EXPECT_TRUE(cpu::is_own_kernel_op(ops.back()));
  const cpu::BlobNode n = blob_node(blob, static_cast<uint32_t>(ops.size() - 1));
  EXPECT_EQ(n.num_inputs, 2u);
  EXPECT_EQ(n.inputs[2], cpu::kNoValue);
  for (const uint32_t p : n.params) EXPECT_EQ(p, 0u);
  std::string message;
  EXPECT_EQ(parse(blob, &message), Error::Ok) << message;
}

TEST(CpuConcatBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = cat_blob();
  const uint32_t last = static_cast<uint32_t>(blob_ops(blob).size() - 1);
  const cpu::BlobNode good = blob_node(blob, last);
  // Value indices: the first branch's output (5 channels) and a constant (the conv weight).
  const uint32_t first = good.inputs[0];
  const uint32_t weight = blob_node(blob, 0).inputs[1];
  struct Case {
    const char* what;
    std::function<void(cpu::BlobNode&)> mutate;
    const char* expect;
  };
  const Case cases[] = {
      {"one input",
       [](cpu::BlobNode& n) {
         n.num_inputs = 1;
         n.inputs[1] = cpu::kNoValue;
       },
       "(concat): 1 inputs, expected 2..3"},
      {"a third input the output has no room for",
       [&](cpu::BlobNode& n) {
         n.num_inputs = 3;
         n.inputs[2] = first;
       },
       "(concat): output value"},
      // Since version 14 a constant part is taken when another input is data.
      {"constants only",
       [&](cpu::BlobNode& n) {
         n.inputs[0] = weight;
         n.inputs[1] = weight;
       },
       "must not be a constant"},
      {"a parameter", [](cpu::BlobNode& n) { n.params[1] = 1; }, "unused parameter 1 is 1"},
      // (params[0] is the rows form's R since version 9: cpu_conformance_attention_test)
      {"the inputs swapped to other widths", [&](cpu::BlobNode& n) { n.inputs[1] = first; },
       "has dims [1, 7, 7, 8], the inputs and parameters give [1, 7, 7, 10]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<uint8_t> bad = blob;
    cpu::BlobNode n = good;
    c.mutate(n);
    std::memcpy(bad.data() + node_offset(bad, last), &n, sizeof(n));
    std::string message;
    EXPECT_EQ(parse(bad, &message), Error::InvalidProgram) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
}

// A cat is taken whatever else the graph holds and however its parts reach the region: the
// partitioner passes a tensor list's elements one by one (cpu_conformance_dense_test runs such
// graphs partitioned).
TEST(CpuConcatBlob, CatOfAPartlyTakenGraphOrAListOnlyInputIsTaken) {
  {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 4, 5, 5});
    const int y = branch(b, x, {1, 4, 5, 5}, 3, 71);
    // A linear of an NHWC 4-D tensor is not taken, so the graph cannot be one region.
    const int w = constant(b, "w", {5, 5}, 73);
    const int s = b.op("tern::linear", {x, w, b.none()}, DType::F32, {1, 4, 5, 5});
    b.output(b.op("tern::cat", {tensor_list(b, {y, s}), b.int_value(1)}, DType::F32,
                  {1, 7, 5, 5}));
    EXPECT_EQ(
        compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back()), "");
  }
  {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 4, 5, 5});
    const int z = b.input("z", DType::F32, {1, 2, 5, 5});  // read only through the list
    const int y = branch(b, x, {1, 4, 5, 5}, 3, 73);
    b.output(b.op("tern::cat", {tensor_list(b, {y, z}), b.int_value(1)}, DType::F32,
                  {1, 5, 5, 5}));
    EXPECT_EQ(
        compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back()), "");
  }
}

TEST(CpuUpsample, WhatTheCompileHalfRefuses) {
  register_all();
  GraphBuilder b;
  // nearest by no integer factor to more than 2^24 pixels (a GatherMap's limit: its map has
  // one entry per output pixel)
  const int x = b.input("x", DType::F32, {1, 1, 3000, 3000});
  b.op("tern::upsample_nearest2d", {x, b.none(), b.none()}, DType::F32, {1, 1, 7000, 3000});
  const std::string why =
      compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
  EXPECT_NE(why.find("by no integer factor: a map of more than 2^24 pixels"),
            std::string::npos)
      << why;
  // bilinear with a scale factor the sizes do not give (recompute_scale_factor=False)
  GraphBuilder c;
  const int y = c.input("y", DType::F32, {1, 2, 4, 4});
  c.op("tern::upsample_bilinear2d", {y, c.bool_value(false), c.double_value(2.6),
                                     c.double_value(2.6)},
       DType::F32, {1, 2, 10, 10});
  const std::string bil =
      compiler::CpuBackendCompiler::unsupported_reason(c.graph(), c.graph().nodes.back());
  EXPECT_NE(bil.find("a scale factor other than out / in"), std::string::npos) << bil;
}

// Ops 31 and 34's fields: the reader refuses an align_corners flag other than 0 / 1, a zero
// output size and parameters that disagree with the output value's dims. The resize is op 31
// (NHWC out) when a node reads its output, op 34 (the channels' planes) when it is a method
// output read by nothing.
void check_resize_fields(bool planes) {
  register_all();
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 2, 5, 5};
  const int x = b.input("x", DType::F32, xs);
  const int y = conv(b, x, xs, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 105);
  const int up = b.op("tern::upsample_bilinear2d", {y, b.bool_value(false), b.none(), b.none()},
                      DType::F32, {1, 4, 10, 10});
  b.output(planes ? up : b.op("tern::relu", {up}, DType::F32, {1, 4, 10, 10}));
  delegate_cpu(b, 0, planes ? 1 : 2);
  const std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  const std::vector<uint32_t> ops = blob_ops(blob);
  const cpu::NodeOp op = planes ? cpu::NodeOp::ResizeBilinearToPlanes : cpu::NodeOp::ResizeBilinear;
  EXPECT_EQ(count_op(blob, planes ? cpu::NodeOp::ResizeBilinear
                                  : cpu::NodeOp::ResizeBilinearToPlanes),
            0u);
  const auto at = std::find(ops.begin(), ops.end(), static_cast<uint32_t>(op));
  ASSERT_NE(at, ops.end());
  const uint32_t index = static_cast<uint32_t>(at - ops.begin());
  const cpu::BlobNode good = blob_node(blob, index);
  EXPECT_EQ(good.params[0], 10u);
  EXPECT_EQ(good.params[1], 10u);
  EXPECT_EQ(good.params[2], 0u);
  const char* name = planes ? "resize_bilinear_to_planes" : "resize_bilinear";
  expect_refused(
      blob, index,
      {{"align_corners 2", [](cpu::BlobNode& n) { n.params[2] = 2; },
        "align_corners 2, expected 0 or 1"},
       {"a zero height", [](cpu::BlobNode& n) { n.params[0] = 0; }, "parameter 0 is 0"},
       {"another width", [](cpu::BlobNode& n) { n.params[1] = 9; }, name}});
}

TEST(CpuResizeBlob, FieldsAreChecked) { check_resize_fields(false); }

TEST(CpuResizeBlob, PlanesFieldsAreChecked) { check_resize_fields(true); }

}  // namespace
}  // namespace tern::cpu_test
