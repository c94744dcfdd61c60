// Conformance of what splits transformer-style models, against the portable kernels (harness:
// cpu_conformance_util.h): index maps composed into strided views and copied once by tern's
// StridedCopy node (op 27: transposes and permutes of plain and NHWC tensors, slices with a
// step, select, expand, split, views that reorder NHWC bytes: ShuffleNet's channel shuffle,
// Swin's window partition and its roll as slices and a cat along another dim), batched
// products of two activations (op 26, plain and transposed), softmax over a 4-D tensor, and
// scaled_dot_product_attention (causal, with a bool or float mask, an activation mask, a given
// scale); then what
// the compile half refuses and what the reader checks in ops 26, 27 and the rows form of 22.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

constexpr uint32_t kCopyOp = static_cast<uint32_t>(cpu::NodeOp::StridedCopy);
constexpr uint32_t kMatMulOp = static_cast<uint32_t>(cpu::NodeOp::BatchMatMul);
constexpr uint32_t kAttentionOp = static_cast<uint32_t>(cpu::NodeOp::Attention);
constexpr uint32_t kConcatOp = static_cast<uint32_t>(cpu::NodeOp::Concat);
constexpr uint32_t kRowConcatOp = static_cast<uint32_t>(cpu::NodeOp::RowConcat);

std::vector<int64_t> permuted(const std::vector<int64_t>& xs, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(xs[static_cast<size_t>(d)]);
  return out;
}

int permute(GraphBuilder& b, int x, const std::vector<int64_t>& xs, std::vector<int64_t> dims) {
  return b.op("tern::permute", {x, b.int_list(dims)}, DType::F32, permuted(xs, dims));
}

int transpose(GraphBuilder& b, int x, std::vector<int64_t> xs, int64_t d0, int64_t d1) {
  std::swap(xs[static_cast<size_t>(d0)], xs[static_cast<size_t>(d1)]);
  return b.op("tern::transpose", {x, b.int_value(d0), b.int_value(d1)}, DType::F32, xs);
}

int view(GraphBuilder& b, int x, std::vector<int64_t> to) {
  return b.op("tern::view", {x, b.int_list(to)}, DType::F32, to);
}

int slice(GraphBuilder& b, int x, std::vector<int64_t> xs, int64_t dim, int64_t start, int64_t end,
          int64_t step) {
  xs[static_cast<size_t>(dim)] = (end - start + step - 1) / step;
  return b.op("tern::slice",
              {x, b.int_value(dim), b.int_value(start), b.int_value(end), b.int_value(step)},
              DType::F32, xs);
}

int cat(GraphBuilder& b, std::vector<int> parts, int64_t dim, std::vector<int64_t> out) {
  return b.op("tern::cat", {tensor_list(b, std::move(parts)), b.int_value(dim)}, DType::F32, out);
}

int linear(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t out, uint32_t seed) {
  const int w = constant(b, "fc_w" + std::to_string(seed), {out, xs.back()}, seed, 0.3f);
  const int bias = constant(b, "fc_b" + std::to_string(seed), {out}, seed + 1, 0.3f);
  std::vector<int64_t> ys = xs;
  ys.back() = out;
  return b.op("tern::linear", {x, w, bias}, DType::F32, ys);
}

int matmul(GraphBuilder& b, const std::string& op, int a, int c, std::vector<int64_t> as,
           int64_t n) {
  as.back() = n;
  return b.op(op, {a, c}, DType::F32, as);
}

int softmax(GraphBuilder& b, int x, const std::vector<int64_t>& xs) {
  return b.op("tern::softmax", {x, b.int_value(-1)}, DType::F32, xs);
}

/// scaled_dot_product_attention(q, k, v, mask, causal, scale) over [.., L, E] operands.
int sdpa(GraphBuilder& b, int q, int k, int v, std::vector<int64_t> qs, int mask, bool causal,
         int scale) {
  return b.op("tern::scaled_dot_product_attention", {q, k, v, mask, b.bool_value(causal), scale},
              DType::F32, qs);
}

/// A bool constant (GraphBuilder has no helper for one).
int bool_constant(GraphBuilder& b, std::vector<int64_t> sizes, const std::vector<uint8_t>& bits) {
  compiler::Value v;
  v.kind = compiler::Value::Kind::Tensor;
  v.dtype = DType::Bool;
  v.sizes = std::move(sizes);
  v.is_constant = true;
  v.data = bits;
  b.graph().values.push_back(v);
  return static_cast<int>(b.graph().values.size()) - 1;
}

int index_select(GraphBuilder& b, int x, std::vector<int64_t> xs, int64_t dim,
                 const std::vector<int64_t>& index) {
  xs[static_cast<size_t>(dim < 0 ? dim + static_cast<int64_t>(xs.size()) : dim)] =
      static_cast<int64_t>(index.size());
  return b.op("tern::index_select", {x, b.int_value(dim), int64_constant(b, {static_cast<int64_t>(index.size())}, index)}, DType::F32,
              xs);
}

size_t count(const std::vector<uint32_t>& ops, uint32_t op) {
  return static_cast<size_t>(std::count(ops.begin(), ops.end(), op));
}

/// A blob with `copies` StridedCopy nodes, `row_concats` RowConcat nodes and no Concat node.
void expect_data_movement(const std::vector<uint8_t>& blob, size_t copies, size_t row_concats) {
  const std::vector<uint32_t> ops = blob_ops(blob);
  EXPECT_EQ(count(ops, kCopyOp), copies);
  EXPECT_EQ(count(ops, kRowConcatOp), row_concats);
  EXPECT_EQ(count(ops, kConcatOp), 0u);
}

/// tern::split of `v` along `dim` into `parts` equal pieces, each of `piece` sizes: the node's
/// outputs (GraphBuilder::op makes one; the others are added here).
std::vector<int> split_equal(GraphBuilder& b, int v, int64_t parts, int64_t dim,
                             const std::vector<int64_t>& piece) {
  const std::vector<int64_t> sizes(static_cast<size_t>(parts), piece[static_cast<size_t>(dim)]);
  const int first = b.op("tern::split", {v, b.int_list(sizes), b.int_value(dim)}, DType::F32, piece);
  compiler::Node& node = b.graph().nodes.back();
  for (int64_t i = 1; i < parts; ++i) {
    b.graph().values.push_back(b.graph().values[static_cast<size_t>(first)]);
    node.outputs.push_back(static_cast<int>(b.graph().values.size()) - 1);
  }
  return node.outputs;
}

/// ShuffleNet's channel shuffle of x [n, c, h, w] (NHWC) in `groups` groups.
int channel_shuffle(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t groups = 2) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  const int v = view(b, x, {n, groups, c / groups, h, w});
  const int t = transpose(b, v, {n, groups, c / groups, h, w}, 1, 2);
  const int cl = b.op("tern::clone", {t}, DType::F32, {n, c / groups, groups, h, w});
  return view(b, cl, xs);
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase t3 = {"transpose_3d",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {6, 8, 10});
                 b.output(transpose(b, x, {6, 8, 10}, 0, 2));
               },
               0.0};
  t3.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{kCopyOp});
  };
  c.push_back(t3);
  // flip (blob version 17: a StridedCopy with negative strides). A bidirectional LSTM's reverse
  // direction: the sequence of [1, 20, 40] flipped along time, then a linear of each step.
  OpCase flip_seq = {"flip_sequence_then_linear",
                     [](GraphBuilder& b) {
                       const int x = b.input("x", DType::F32, {1, 20, 40});
                       const int f = b.op("tern::flip", {x, b.int_list({1})}, DType::F32,
                                          {1, 20, 40});
                       b.output(linear(b, f, {1, 20, 40}, 12, 5));
                     },
                     1e-10};
  flip_seq.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    ASSERT_EQ(count(ops, kCopyOp), 1u);
    const size_t i = static_cast<size_t>(std::find(ops.begin(), ops.end(), kCopyOp) - ops.begin());
    const cpu::BlobNode n = blob_node(blob, static_cast<uint32_t>(i));
    // [20, 40] rows read from the last one backwards: stride -40 from element 19 * 40.
    EXPECT_EQ(static_cast<int32_t>(n.params[cpu::kCopyStride]), -40);
    EXPECT_EQ(n.params[cpu::kCopyOffset], 760u);
  };
  c.push_back(flip_seq);
  // Every dim of a 3-D tensor flipped, a transpose composed after one flip, a flip of an NHWC
  // conv's output (the channels' stride is 1 there) and a flipped slice with a step.
  c.push_back({"flip_all_dims_and_transposed",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 5, 7});
                 b.output(b.op("tern::flip", {x, b.int_list({0, -1, 1})}, DType::F32, {3, 5, 7}));
                 const int f = b.op("tern::flip", {x, b.int_list({2})}, DType::F32, {3, 5, 7});
                 b.output(transpose(b, f, {3, 5, 7}, 0, 2));
               },
               0.0});
  c.push_back({"flip_of_nhwc_conv_and_slice",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 4, 6, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 17);
                 const int f = b.op("tern::flip", {y, b.int_list({1, 3})}, DType::F32,
                                    {1, 8, 6, 5});
                 b.output(slice(b, f, {1, 8, 6, 5}, 2, 1, 6, 2));
               },
               1e-10});
  // where with a constant condition (blob version 17: a minimum and a maximum by constant
  // bounds). MPT's causal mask: where(mask, lowest, scores + alibi) then softmax; the
  // constant taken where the condition is false (1.13's masked softmax: where(keep, s, fill;
  // the harness wants finite outputs, so -10000 as BERT's masks));
  // an NHWC conv output with a per-channel condition and a constant tensor (laid out NHWC).
  OpCase where_mpt = {"where_causal_lowest_then_softmax",
                      [](GraphBuilder& b) {
                        const int s = b.input("s", DType::F32, {1, 4, 6, 6});
                        std::vector<uint8_t> upper(36);
                        for (int i = 0; i < 6; ++i)
                          for (int j = 0; j < 6; ++j) upper[static_cast<size_t>(i * 6 + j)] = j > i;
                        const int m = bool_constant(b, {1, 1, 6, 6}, upper);
                        const int low = b.constant_f32("low", {},
                                                       {std::numeric_limits<float>::lowest()});
                        const int w = b.op("tern::where", {m, low, s}, DType::F32, {1, 4, 6, 6});
                        b.output(w);
                        b.output(softmax(b, w, {1, 4, 6, 6}));
                      },
                      1e-10};
  where_mpt.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(count(ops, static_cast<uint32_t>(cpu::NodeOp::Minimum)), 1u);
    EXPECT_EQ(count(ops, static_cast<uint32_t>(cpu::NodeOp::Maximum)), 1u);
  };
  c.push_back(where_mpt);
  c.push_back({"where_keep_else_minus_inf",
               [](GraphBuilder& b) {
                 const int s = b.input("s", DType::F32, {2, 5, 5});
                 std::vector<uint8_t> keep(25);
                 for (size_t i = 0; i < keep.size(); ++i) keep[i] = (i * 7) % 3 != 0;
                 const int m = bool_constant(b, {5, 5}, keep);
                 b.output(b.op("tern::where",
                               {m, s, b.double_value(-10000.0)},
                               DType::F32, {2, 5, 5}));
               },
               0.0});
  c.push_back({"where_nhwc_per_channel",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 4, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 71);
                 const int m = bool_constant(b, {1, 3, 1, 1}, {1, 0, 1});
                 const int k = b.constant_f32("k", {1, 1, 4, 5}, std::vector<float>(20, 0.75f));
                 const int w = b.op("tern::where", {m, k, y}, DType::F32, xs);
                 b.output(conv(b, w, xs, 2, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 73));
               },
               1e-10});
  // index_select by a constant affine walk (one StridedCopy): ConvBERT's unfold, the padded
  // [32, 24] rows flattened and their 9-wide windows gathered (index 24 c + k + l over
  // [32, 9, 16]); a run with a step, a reversed run and one index along dim 1 of a 3-D tensor.
  OpCase unfold = {"index_select_unfold_windows",
                   [](GraphBuilder& b) {
                     const int x = b.input("x", DType::F32, {4, 24});
                     const int s = b.op("tern::sigmoid", {x}, DType::F32, {4, 24});
                     const int flat = view(b, s, {96});
                     std::vector<int64_t> index;
                     for (int64_t c = 0; c < 4; ++c)
                       for (int64_t k = 0; k < 9; ++k)
                         for (int64_t l = 0; l < 16; ++l) index.push_back(24 * c + k + l);
                     b.output(index_select(b, flat, {96}, 0, index));
                   },
                   1e-10};
  unfold.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    ASSERT_EQ(count(ops, kCopyOp), 1u);
    const size_t i = static_cast<size_t>(std::find(ops.begin(), ops.end(), kCopyOp) - ops.begin());
    const cpu::BlobNode n = blob_node(blob, static_cast<uint32_t>(i));
    EXPECT_EQ(n.params[cpu::kCopyRank], 3u);
    EXPECT_EQ(n.params[cpu::kCopyStride], 24u);
    EXPECT_EQ(n.params[cpu::kCopyStride + 1], 1u);
    EXPECT_EQ(n.params[cpu::kCopyStride + 2], 1u);
  };
  c.push_back(unfold);
  c.push_back({"index_select_runs_along_dim_1",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 10, 3});
                 const int s = b.op("tern::sigmoid", {x}, DType::F32, {2, 10, 3});
                 b.output(index_select(b, s, {2, 10, 3}, 1, {1, 4, 7}));
                 b.output(index_select(b, s, {2, 10, 3}, -2, {9, 8, 7, 6, 5}));
                 b.output(index_select(b, s, {2, 10, 3}, 1, {6}));
               },
               1e-10});
  // softmax over a dim followed by dims of 1 (ConvBERT's dynamic conv kernel: [N, K, 1] over
  // dim 1), after a linear so that the input is made in the region.
  OpCase inner = {"softmax_over_dim_followed_by_ones",
                  [](GraphBuilder& b) {
                    const int x = b.input("x", DType::F32, {12, 8});
                    const int k = view(b, linear(b, x, {12, 8}, 9, 81), {12, 9, 1});
                    b.output(b.op("tern::softmax", {k, b.int_value(1)}, DType::F32, {12, 9, 1}));
                    const int e = view(b, linear(b, x, {12, 8}, 6, 83), {4, 3, 6, 1, 1});
                    b.output(b.op("tern::softmax", {e, b.int_value(-3)}, DType::F32,
                                  {4, 3, 6, 1, 1}));
                  },
                  1e-10};
  inner.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), static_cast<uint32_t>(cpu::NodeOp::Softmax)), 2u);
  };
  c.push_back(inner);
  // where of two activations with a constant condition (a minimum of each by its bound, then
  // their maximum): Funnel's token-type bias, where(token_type_mat, same.expand(..),
  // diff.expand(..)) over [1, heads, L, L]; and two NHWC conv outputs with a per-pixel
  // condition.
  OpCase where_two = {"where_of_two_expanded_activations",
                      [](GraphBuilder& b) {
                        const int t = b.input("t", DType::F32, {1, 4, 6, 2});
                        const std::vector<int> parts = split_equal(b, t, 2, 3, {1, 4, 6, 1});
                        const int same = b.op("tern::expand", {parts[1], b.int_list({1, 4, 6, 6})},
                                              DType::F32, {1, 4, 6, 6});
                        const int diff = b.op("tern::expand", {parts[0], b.int_list({1, 4, 6, 6})},
                                              DType::F32, {1, 4, 6, 6});
                        std::vector<uint8_t> tt(4 * 36);
                        for (size_t i = 0; i < tt.size(); ++i) tt[i] = (i * 5) % 7 < 3;
                        const int m = bool_constant(b, {1, 4, 6, 6}, tt);
                        b.output(b.op("tern::where", {m, same, diff}, DType::F32, {1, 4, 6, 6}));
                      },
                      0.0};
  where_two.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(count(ops, static_cast<uint32_t>(cpu::NodeOp::Minimum)), 2u);
    EXPECT_EQ(count(ops, static_cast<uint32_t>(cpu::NodeOp::Maximum)), 1u);
  };
  c.push_back(where_two);
  c.push_back({"where_of_two_nhwc_convs",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 4, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y1 = conv(b, x, xs, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 75);
                 const int y2 = conv(b, x, xs, 3, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 77);
                 std::vector<uint8_t> px(20);
                 for (size_t i = 0; i < px.size(); ++i) px[i] = i % 3 == 1;
                 const int m = bool_constant(b, {1, 1, 4, 5}, px);
                 const int w = b.op("tern::where", {m, y1, y2}, DType::F32, xs);
                 b.output(conv(b, w, xs, 2, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 79));
               },
               1e-10});
  // permute of an NHWC 4-D input to an NHWC 4-D output (both converted at the edges).
  c.push_back({"permute_nhwc_4d",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 5, 3, 4});
                 b.output(permute(b, x, {2, 5, 3, 4}, {0, 2, 1, 3}));
               },
               0.0});
  c.push_back({"permute_6d_slice_step_select",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 3, 4, 5, 2, 3};
                 const int x = b.input("x", DType::F32, xs);
                 const std::vector<int64_t> ps{3, 0, 5, 1, 4, 2};
                 const int p = permute(b, x, xs, ps);                      // [5, 2, 3, 3, 2, 4]
                 const int s = slice(b, p, permuted(xs, ps), 5, 1, 4, 2);  // [5, 2, 3, 3, 2, 2]
                 const int sel = b.op("tern::select", {s, b.int_value(1), b.int_value(-1)},
                                      DType::F32, {5, 3, 3, 2, 2});
                 b.output(b.op("tern::relu", {sel}, DType::F32, {5, 3, 3, 2, 2}));
               },
               0.0});
  // Llama's grouped keys: view, expand over a new dim, clone, view.
  c.push_back({"expand_clone_view",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 2, 8, 6});
                 const int v = view(b, x, {1, 2, 1, 8, 6});
                 const int e = b.op("tern::expand", {v, b.int_list({1, 2, 3, 8, 6})}, DType::F32,
                                    {1, 2, 3, 8, 6});
                 const int cl = b.op("tern::clone", {e}, DType::F32, {1, 2, 3, 8, 6});
                 b.output(linear(b, view(b, cl, {1, 6, 8, 6}), {1, 6, 8, 6}, 5, 3));
               },
               1e-10});
  OpCase bmm_t = {"bmm_of_a_transpose",
                  [](GraphBuilder& b) {
                    const int a = b.input("a", DType::F32, {3, 7, 5});
                    const int k = b.input("k", DType::F32, {3, 9, 5});
                    const int kt = transpose(b, k, {3, 9, 5}, 1, 2);
                    b.output(matmul(b, "tern::bmm", a, kt, {3, 7, 5}, 9));
                  },
                  1e-10};
  bmm_t.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(count(ops, kMatMulOp), 1u);
    EXPECT_EQ(count(ops, kCopyOp), 1u);
  };
  c.push_back(bmm_t);
  // bmm / matmul by a constant whose batch entries differ (XLNet's and Funnel's relative
  // positions times a per-head weight; blob version 17: BatchMatMul's b a constant).
  OpCase bmm_const = {"bmm_by_a_constant_per_batch",
                      [](GraphBuilder& b) {
                        const int a = b.input("a", DType::F32, {3, 7, 5});
                        const int k = constant(b, "k", {3, 5, 20}, 91);
                        b.output(matmul(b, "tern::bmm", a, k, {3, 7, 5}, 20));
                        const int a4 = b.input("a4", DType::F32, {2, 2, 4, 6});
                        const int k4 = constant(b, "k4", {2, 2, 6, 3}, 92);
                        b.output(matmul(b, "tern::matmul", a4, k4, {2, 2, 4, 6}, 3));
                      },
                      1e-10};
  bmm_const.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), kMatMulOp), 2u);
  };
  c.push_back(bmm_const);
  // A constant on the left (since version 20): Mask2Former's learned queries [B, Q, C] times
  // the pixel embeddings [B, C, H·W] (its mask predictor before the first decoder layer), and
  // a 4-D matmul by a constant a.
  OpCase bmm_left = {"bmm_of_a_constant_by_an_activation",
                     [](GraphBuilder& b) {
                       const std::vector<int64_t> ps{2, 8, 6};
                       const int pix = b.input("pixels", DType::F32, ps);
                       const int e = linear(b, pix, ps, 12, 95);  // [2, 8, 12]
                       const int q = constant(b, "queries", {2, 5, 8}, 96);
                       b.output(matmul(b, "tern::bmm", q, e, {2, 5, 8}, 12));
                       const int x4 = b.input("x4", DType::F32, {1, 3, 6, 4});
                       const int a4 = constant(b, "a4", {1, 3, 2, 6}, 97);
                       b.output(matmul(b, "tern::matmul", a4, x4, {1, 3, 2, 6}, 4));
                     },
                     1e-10};
  bmm_left.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), kMatMulOp), 2u);
  };
  c.push_back(bmm_left);
  // Attention written out with a constant q (Mask2Former's cross-attention of its learned
  // queries before the first decoder layer): one fused node reading q in place.
  OpCase eager_const_q = {"eager_attention_constant_query",
                          [](GraphBuilder& b) {
                            const std::vector<int64_t> ks{4, 9, 8};
                            const int x = b.input("x", DType::F32, ks);
                            const int k = linear(b, x, ks, 8, 98);
                            const int v = linear(b, x, ks, 8, 99);
                            const int q = constant(b, "q", {4, 5, 8}, 100, 0.8f);
                            const int kt = transpose(b, k, ks, 1, 2);
                            const int s = matmul(b, "tern::bmm", q, kt, {4, 5, 8}, 9);
                            const int p = softmax(b, s, {4, 5, 9});
                            b.output(matmul(b, "tern::bmm", p, v, {4, 5, 9}, 8));
                          },
                          1e-10};
  eager_const_q.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), kAttentionOp), 1u);
    EXPECT_EQ(count(blob_ops(blob), kMatMulOp), 0u);
  };
  c.push_back(eager_const_q);
  // 4-D matmul (more than 16 columns: two panels, the last partial), softmax over a 4-D tensor.
  c.push_back({"matmul_4d_softmax",
               [](GraphBuilder& b) {
                 const int a = b.input("a", DType::F32, {2, 3, 7, 5});
                 const int v = b.input("v", DType::F32, {2, 3, 5, 21});
                 const int s = matmul(b, "tern::matmul", a, v, {2, 3, 7, 5}, 21);
                 b.output(softmax(b, s, {2, 3, 7, 21}));
               },
               1e-10});
  // EfficientFormer V2's talking heads: the scores mixed over the heads by a 1x1 conv (its
  // output NHWC), a softmax over the last dim (through a plain copy), a second 1x1 conv; the
  // softmax is also read by a relu, and a matmul reads the second conv's input plain.
  OpCase talking = {"talking_heads_softmax_of_a_conv_output",
                    [](GraphBuilder& b) {
                      const std::vector<int64_t> ss{1, 4, 7, 9};
                      const int s = b.input("s", DType::F32, ss);
                      const int v = b.input("v", DType::F32, {1, 4, 9, 5});
                      const int t1 = conv(b, s, ss, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 41);
                      const int p = softmax(b, t1, ss);
                      b.output(conv(b, p, ss, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 43));
                      b.output(matmul(b, "tern::matmul", p, v, ss, 5));
                      b.output(b.op("tern::relu", {p}, DType::F32, ss));
                    },
                    1e-10};
  talking.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), static_cast<uint32_t>(cpu::NodeOp::Softmax)), 1u);
    EXPECT_GE(count(blob_ops(blob), static_cast<uint32_t>(cpu::NodeOp::StridedCopy)), 1u);
  };
  c.push_back(talking);
  // softmax over a dim other than the last: copies move it last and back. ResNeSt's split
  // attention (over the radix: dim 1 of [N, radix, cardinality, C], made from a linear), over
  // the channels of a conv output (NHWC: a segmentation head's class softmax), over dim 0 of
  // a 3-D tensor and dim 2 of a 5-D one.
  OpCase radix = {"softmax_over_the_radix",
                  [](GraphBuilder& b) {
                    const int x = b.input("x", DType::F32, {2, 24});
                    const int l = linear(b, x, {2, 24}, 24, 45);
                    const int v = view(b, l, {2, 3, 2, 4});
                    b.output(b.op("tern::softmax", {v, b.int_value(1)}, DType::F32,
                                  {2, 3, 2, 4}));
                  },
                  1e-10};
  radix.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), static_cast<uint32_t>(cpu::NodeOp::Softmax)), 1u);
  };
  c.push_back(radix);
  c.push_back({"softmax_over_conv_channels",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 6, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 7, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 47);
                 const int s = b.op("tern::softmax", {y, b.int_value(1)}, DType::F32,
                                    {1, 7, 6, 5});
                 b.output(conv(b, s, {1, 7, 6, 5}, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true,
                               49));
               },
               1e-10});
  c.push_back({"softmax_over_dim0_of_3d",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {5, 3, 4});
                 const int r = b.op("tern::relu", {x}, DType::F32, {5, 3, 4});
                 b.output(b.op("tern::softmax", {r, b.int_value(0)}, DType::F32, {5, 3, 4}));
               },
               1e-10});
  c.push_back({"softmax_over_dim2_of_5d",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 2, 3, 2, 4});
                 const int r = b.op("tern::relu", {x}, DType::F32, {2, 2, 3, 2, 4});
                 b.output(b.op("tern::softmax", {r, b.int_value(-3)}, DType::F32,
                               {2, 2, 3, 2, 4}));
               },
               1e-10});
  // Many batches (split over the pool by batch) of a larger product.
  c.push_back({"bmm_many_batches",
               [](GraphBuilder& b) {
                 const int a = b.input("a", DType::F32, {24, 49, 32});
                 const int v = b.input("v", DType::F32, {24, 32, 49});
                 b.output(matmul(b, "tern::bmm", a, v, {24, 49, 32}, 49));
               },
               1e-10});
  // GPT's attention: fused qkv linear, split, heads, causal SDPA, heads back, projection.
  OpCase attn = {
      "gpt_attention_causal",
      [](GraphBuilder& b) {
        const int64_t t = 12, d = 32, h = 4;
        const int x = b.input("x", DType::F32, {1, t, d});
        const int qkv = linear(b, x, {1, t, d}, 3 * d, 11);
        const std::vector<int> parts = split_equal(b, qkv, 3, 2, {1, t, d});
        std::vector<int> heads;
        for (int p : parts) {
          heads.push_back(transpose(b, view(b, p, {1, t, h, d / h}), {1, t, h, d / h}, 1, 2));
        }
        const int a =
            sdpa(b, heads[0], heads[1], heads[2], {1, h, t, d / h}, b.none(), true, b.none());
        const int back = transpose(b, a, {1, h, t, d / h}, 1, 2);
        b.output(linear(b, view(b, back, {1, t, d}), {1, t, d}, d, 13));
      },
      1e-10};
  attn.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(count(ops, kAttentionOp), 1u);
    EXPECT_EQ(count(ops, kMatMulOp), 0u);
    // q, k, v into heads and the heads back: one copy each (views, transposes composed).
    EXPECT_EQ(count(ops, kCopyOp), 4u);
  };
  c.push_back(attn);
  c.push_back({"sdpa_bool_mask_scale",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> qs{2, 3, 6, 8}, ks{2, 3, 10, 8}, vs{2, 3, 10, 5};
                 const int q = b.input("q", DType::F32, qs);
                 const int k = b.input("k", DType::F32, ks);
                 const int v = b.input("v", DType::F32, vs);
                 std::vector<uint8_t> bits(6 * 10);
                 for (size_t i = 0; i < bits.size(); ++i) bits[i] = (i % 3 != 1 || i % 10 == 0);
                 const int m = bool_constant(b, {6, 10}, bits);
                 b.output(sdpa(b, q, k, v, {2, 3, 6, 5}, m, false, b.double_value(0.3)));
               },
               1e-10});
  c.push_back({"sdpa_float_mask",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> qs{4, 6, 8}, vs{4, 6, 3};
                 const int q = b.input("q", DType::F32, qs);
                 const int k = b.input("k", DType::F32, qs);
                 const int v = b.input("v", DType::F32, vs);
                 const int m = constant(b, "mask", {4, 1, 6}, 5, 2.0f);
                 b.output(sdpa(b, q, k, v, {4, 6, 3}, m, false, b.none()));
               },
               1e-10});
  // Activation masks: SAM's decomposed relative-position bias (a product of q by a constant
  // table, [B, H, L, S]), a method input broadcast over the heads and query rows ([1, 1, 1, S])
  // and one of lower rank ([L, S]) broadcast over the heads.
  OpCase act_mask = {"sdpa_activation_masks",
                     [](GraphBuilder& b) {
                       const std::vector<int64_t> qs{2, 3, 6, 8}, vs{2, 3, 6, 4}, ss{2, 3, 6, 6};
                       const int q = b.input("q", DType::F32, qs);
                       const int k = b.input("k", DType::F32, qs);
                       const int v = b.input("v", DType::F32, vs);
                       const int table = constant(b, "rel", {6, 8}, 21, 0.3f);
                       const int rel = b.op("tern::linear", {q, table, b.none()}, DType::F32, ss);
                       const int a = sdpa(b, q, k, v, vs, rel, false, b.none());
                       const int keys = b.op("tern::mul",
                                             {b.input("keys", DType::F32, {1, 1, 1, 6}),
                                              b.double_value(3.0)},
                                             DType::F32, {1, 1, 1, 6});
                       const int a2 = sdpa(b, a, v, a, vs, keys, false, b.double_value(0.5));
                       const int rows = b.op("tern::mul",
                                             {b.input("rows", DType::F32, {6, 6}),
                                              b.double_value(2.0)},
                                             DType::F32, {6, 6});
                       b.output(sdpa(b, a2, v, v, vs, rows, false, b.none()));
                     },
                     1e-10};
  act_mask.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), kAttentionOp), 3u);
  };
  c.push_back(act_mask);
  // Grouped-query attention as the exporter folds Hugging Face's repeat_kv (tern_export/gqa.py):
  // q [B, Hkv, G, L, E] against k, v [B, Hkv, 1, S, E]. The cpu backend folds G into the rows
  // (one product per key/value head); masks broadcast over G and L, or varying along both.
  OpCase gqa = {"sdpa_grouped_query_heads_causal",
                [](GraphBuilder& b) {
                  const int q = b.input("q", DType::F32, {2, 2, 3, 5, 8});
                  const int k = b.input("k", DType::F32, {2, 2, 1, 5, 8});
                  const int v = b.input("v", DType::F32, {2, 2, 1, 5, 4});
                  b.output(sdpa(b, q, k, v, {2, 2, 3, 5, 4}, b.none(), true, b.none()));
                },
                1e-10};
  gqa.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), kAttentionOp), 1u);
  };
  c.push_back(gqa);
  c.push_back({"sdpa_grouped_mask_per_head_and_row",
               [](GraphBuilder& b) {
                 const int q = b.input("q", DType::F32, {1, 2, 3, 4, 6});
                 const int k = b.input("k", DType::F32, {1, 2, 1, 7, 6});
                 const int v = b.input("v", DType::F32, {1, 2, 1, 7, 5});
                 std::vector<uint8_t> bits(3 * 4 * 7);
                 for (size_t i = 0; i < bits.size(); ++i) bits[i] = (i % 5 != 2 || i % 7 == 0);
                 const int m = bool_constant(b, {3, 4, 7}, bits);  // [G, L, S]
                 const int a = sdpa(b, q, k, v, {1, 2, 3, 4, 5}, m, false, b.double_value(0.4));
                 const int kv = b.input("kv", DType::F32, {1, 2, 1, 7, 5});
                 const int f = constant(b, "fmask", {2, 1, 1, 7}, 9, 1.5f);  // [Hkv, 1, 1, S]
                 b.output(sdpa(b, a, kv, kv, {1, 2, 3, 4, 5}, f, false, b.none()));
               },
               1e-10});
  // Activation masks over grouped query heads: Doge's per-head dynamic mask [B, Hkv, G, L, S]
  // (its rows fold with the query rows, the same bytes) and a mask per key/value head shared by
  // all its query rows [B, Hkv, 1, 1, S].
  OpCase gmask = {"sdpa_grouped_activation_masks",
                  [](GraphBuilder& b) {
                    const int q = b.input("q", DType::F32, {1, 2, 3, 4, 6});
                    const int k = b.input("k", DType::F32, {1, 2, 1, 7, 6});
                    const int v = b.input("v", DType::F32, {1, 2, 1, 7, 5});
                    const int m = b.op("tern::neg", {b.input("m", DType::F32, {1, 2, 3, 4, 7})},
                                       DType::F32, {1, 2, 3, 4, 7});
                    const int a = sdpa(b, q, k, v, {1, 2, 3, 4, 5}, m, false, b.none());
                    const int kv = b.input("kv", DType::F32, {1, 2, 1, 7, 5});
                    const int p = b.op("tern::neg", {b.input("p", DType::F32, {1, 2, 1, 1, 7})},
                                       DType::F32, {1, 2, 1, 1, 7});
                    b.output(sdpa(b, a, kv, kv, {1, 2, 3, 4, 5}, p, false, b.double_value(0.3)));
                  },
                  1e-10};
  gmask.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), kAttentionOp), 2u);
  };
  c.push_back(gmask);
  // A constant q (since version 20): DETR's first decoder layer attends the encoder's memory
  // with its learned object queries alone (an all-zero target plus a constant, projected by the
  // exporter's folding); one with grouped query heads and a float mask read in place too.
  OpCase const_q = {"sdpa_constant_query",
                    [](GraphBuilder& b) {
                      const std::vector<int64_t> ms{1, 9, 16}, qs{1, 4, 5, 4}, ks{1, 4, 9, 4};
                      const int mem = b.input("memory", DType::F32, ms);
                      const int kp = linear(b, mem, ms, 16, 51);
                      const int vp = linear(b, mem, ms, 16, 53);
                      const int k = transpose(b, view(b, kp, {1, 9, 4, 4}), {1, 9, 4, 4}, 1, 2);
                      const int v = transpose(b, view(b, vp, {1, 9, 4, 4}), {1, 9, 4, 4}, 1, 2);
                      const int q = constant(b, "queries", qs, 55, 0.8f);
                      const int a = sdpa(b, q, k, v, qs, b.none(), false, b.none());
                      const int gq = constant(b, "gqueries", {1, 2, 2, 5, 4}, 57, 0.8f);
                      const int gk = view(b, k, {1, 2, 2, 9, 4});
                      const int k1 = slice(b, gk, {1, 2, 2, 9, 4}, 2, 0, 1, 1);
                      const int v1 = slice(b, view(b, v, {1, 2, 2, 9, 4}), {1, 2, 2, 9, 4}, 2,
                                           1, 2, 1);
                      const int m = constant(b, "gmask", {2, 5, 9}, 59, 2.0f);  // [G, L, S]
                      const int g = sdpa(b, gq, k1, v1, {1, 2, 2, 5, 4}, m, false,
                                         b.double_value(0.7));
                      b.output(b.op("tern::add", {a, view(b, g, qs)}, DType::F32, qs));
                    },
                    1e-10};
  const_q.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), kAttentionOp), 2u);
  };
  c.push_back(const_q);
  // Rotary embeddings' rotate_half: cat(-x[..., d/2:], x[..., :d/2]) (tern::neg taken).
  OpCase rotate = {"rotate_half_neg_cat",
                   [](GraphBuilder& b) {
                     const std::vector<int64_t> xs{1, 2, 6, 8}, hs{1, 2, 6, 4};
                     const int x = b.input("x", DType::F32, xs);
                     const int lo = slice(b, x, xs, 3, 0, 4, 1);
                     const int hi = slice(b, x, xs, 3, 4, 8, 1);
                     const int neg = b.op("tern::neg", {hi}, DType::F32, hs);
                     const int rot = cat(b, {neg, lo}, 3, xs);
                     const int xt = transpose(b, x, xs, 2, 3);
                     b.output(matmul(b, "tern::matmul", rot, xt, xs, 6));
                   },
                   1e-10};
  rotate.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count(blob_ops(blob), static_cast<uint32_t>(cpu::NodeOp::Multiply)), 1u);
  };
  c.push_back(rotate);
  // ShuffleNet's unit: split the channels, a branch on one half, cat, channel shuffle, conv.
  OpCase shuffle = {
      "shufflenet_unit",
      [](GraphBuilder& b) {
        const std::vector<int64_t> xs{1, 16, 6, 6}, hs{1, 8, 6, 6};
        const int x = b.input("x", DType::F32, xs);
        const int y = conv(b, x, xs, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 21);
        const std::vector<int> halves = split_equal(b, y, 2, 1, hs);
        const int br = conv(b, halves[1], hs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 8, true, 23);
        const int joined = cat(b, {halves[0], br}, 1, xs);
        const int s = channel_shuffle(b, joined, xs);
        b.output(conv(b, s, xs, 8, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 25));
      },
      1e-10};
  shuffle.check_blob = [](const std::vector<uint8_t>& blob) {
    // The cat and the shuffle's view, transpose, clone and view: one RowConcat interleaving
    // the two halves channel by channel, reading the first half in place (a channel slice of
    // the conv's output); the second half: one copy, for its conv. Before: a copy per half,
    // a concat, a row-major copy of the shuffle's 5-D view and an NHWC copy of that.
    expect_data_movement(blob, 1, 1);
  };
  c.push_back(shuffle);
  // Two ShuffleNet units in a row: the first unit's shuffle is read only by the second unit's
  // channel split, which folds in as well — one RowConcat per half, each interleaving its
  // channel range of the two inputs; the second unit's shuffle is read by a conv (one
  // RowConcat). The one copy left: the first split's second half, for its conv.
  OpCase two = {
      "shufflenet_two_units",
      [](GraphBuilder& b) {
        const std::vector<int64_t> xs{1, 16, 5, 7}, hs{1, 8, 5, 7};
        auto unit = [&](int v, uint32_t seed) {
          const std::vector<int> halves = split_equal(b, v, 2, 1, hs);
          const int br = conv(b, halves[1], hs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 8, true, seed);
          return channel_shuffle(b, cat(b, {halves[0], br}, 1, xs), xs);
        };
        const int x = b.input("x", DType::F32, xs);
        const int y = conv(b, x, xs, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 51);
        const int s = unit(unit(y, 53), 55);
        b.output(conv(b, s, xs, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 57));
      },
      1e-10};
  two.check_blob = [](const std::vector<uint8_t>& blob) { expect_data_movement(blob, 1, 3); };
  c.push_back(two);
  // The same unit in three parts (three slices of one conv's output, a 3x3 conv on the last;
  // cat of the three, shuffle in 3 groups): one RowConcat interleaving 3 inputs (two read in
  // place). And a cat of a slice and a conv output without a shuffle: one plain RowConcat
  // reading the slice in place.
  for (bool shuffled : {true, false}) {
    OpCase three = {
        shuffled ? "shufflenet_unit_3_parts" : "cat_of_a_channel_slice",
        [shuffled](GraphBuilder& b) {
          const std::vector<int64_t> xs{1, 15, 4, 6}, ps{1, 5, 4, 6};
          const int x = b.input("x", DType::F32, xs);
          const int y = conv(b, x, xs, 15, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 41);
          const std::vector<int> parts = split_equal(b, y, 3, 1, ps);
          const int br = conv(b, parts[2], ps, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 43);
          const int joined = shuffled ? cat(b, {parts[0], parts[1], br}, 1, xs)
                                      : cat(b, {parts[1], br}, 1, {1, 10, 4, 6});
          const std::vector<int64_t> js = shuffled ? xs : std::vector<int64_t>{1, 10, 4, 6};
          const int s = shuffled ? channel_shuffle(b, joined, xs, 3) : joined;
          b.output(conv(b, s, js, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 45));
        },
        1e-10};
    three.check_blob = [](const std::vector<uint8_t>& blob) {
      expect_data_movement(blob, 1, 1);  // the copy: the third part, for its conv
    };
    c.push_back(three);
  }
  // ShuffleNet v1's shuffle in 4 groups (odd channels a group: the copy's vector body and its
  // tail), between two convs, and one in 3 groups: each one copy in NHWC order.
  for (int64_t groups : {3, 4}) {
    OpCase g = {"channel_shuffle_" + std::to_string(groups) + "_groups",
                [groups](GraphBuilder& b) {
                  const std::vector<int64_t> xs{1, groups * 7, 5, 3};
                  const int x = b.input("x", DType::F32, xs);
                  const int y = conv(b, x, xs, groups * 7, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1,
                                     true, 27);
                  const int s = channel_shuffle(b, y, xs, groups);
                  b.output(conv(b, s, xs, 5, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 29));
                },
                1e-10};
    g.check_blob = [](const std::vector<uint8_t>& blob) {
      EXPECT_EQ(count(blob_ops(blob), kCopyOp), 1u);
    };
    c.push_back(g);
  }
  // Swin's cyclic shift (roll as slices and a cat along H, then W, of a channels-last tensor)
  // and window partition (view, permute, view), attention-free: a linear per window, then the
  // reverse partition and shift, and back to NHWC for a conv.
  c.push_back(
      {"swin_shift_and_windows",
       [](GraphBuilder& b) {
         const int64_t c = 6;
         const std::vector<int64_t> xs{1, c, 8, 8}, cl{1, 8, 8, c};
         const int x = b.input("x", DType::F32, xs);
         const int y = conv(b, x, xs, c, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 31);
         const int p = permute(b, y, xs, {0, 2, 3, 1});
         auto roll = [&](int v, int64_t shift) {
           const int a =
               cat(b, {slice(b, v, cl, 1, shift, 8, 1), slice(b, v, cl, 1, 0, shift, 1)}, 1, cl);
           return cat(b, {slice(b, a, cl, 2, shift, 8, 1), slice(b, a, cl, 2, 0, shift, 1)}, 2, cl);
         };
         const int r = roll(p, 3);
         const int w6 = view(b, r, {1, 2, 4, 2, 4, c});
         const int wp = permute(b, w6, {1, 2, 4, 2, 4, c}, {0, 1, 3, 2, 4, 5});
         const int wins = view(b, wp, {4, 16, c});
         const int f = linear(b, wins, {4, 16, c}, c, 33);
         const int back6 = view(b, f, {1, 2, 2, 4, 4, c});
         const int bp = permute(b, back6, {1, 2, 2, 4, 4, c}, {0, 1, 3, 2, 4, 5});
         const int merged = view(b, bp, cl);
         const int r2 = roll(merged, 5);
         const int nchw = permute(b, r2, cl, {0, 3, 1, 2});
         b.output(conv(b, nchw, xs, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 35));
       },
       1e-10});
  // A cat along H of NHWC tensors (the rows form of op 22).
  OpCase cat_h = {
      "cat_nhwc_along_h",
      [](GraphBuilder& b) {
        const std::vector<int64_t> xs{2, 4, 5, 6};
        const int x = b.input("x", DType::F32, xs);
        const int y = conv(b, x, xs, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 41);
        const int j = cat(b, {x, y, x}, 2, {2, 4, 15, 6});
        b.output(conv(b, j, {2, 4, 15, 6}, 3, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 43));
      },
      1e-10};
  cat_h.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    ASSERT_EQ(count(ops, kConcatOp), 1u);
    const size_t i =
        static_cast<size_t>(std::find(ops.begin(), ops.end(), kConcatOp) - ops.begin());
    EXPECT_EQ(blob_node(blob, static_cast<uint32_t>(i)).params[0], 2u) << "rows: N";
  };
  c.push_back(cat_h);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceAttention, cases());

TEST(CpuAttention, WhatTheCompileHalfRefuses) {
  auto reason = [](GraphBuilder& b) {
    return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
  };
  {  // bmm with broadcast batch dims
    GraphBuilder b;
    const int a = b.input("a", DType::F32, {3, 4, 5});
    const int c = b.input("c", DType::F32, {1, 5, 6});
    matmul(b, "tern::bmm", a, c, {3, 4, 5}, 6);
    EXPECT_NE(reason(b).find("same batch dims"), std::string::npos) << reason(b);
  }
  {  // bmm of two constants (the exporter folds them; a hand-made graph is refused)
    GraphBuilder b;
    matmul(b, "tern::bmm", constant(b, "p", {2, 3, 4}, 1), constant(b, "r", {2, 4, 5}, 2),
           {2, 3, 4}, 5);
    EXPECT_NE(reason(b).find("a and b: both constants"), std::string::npos) << reason(b);
  }
  {  // a mask that leaves a query row nothing to attend
    GraphBuilder b;
    const int q = b.input("q", DType::F32, {2, 3, 4});
    std::vector<uint8_t> bits(9, 1);
    bits[3] = bits[4] = bits[5] = 0;
    sdpa(b, q, q, q, {2, 3, 4}, bool_constant(b, {3, 3}, bits), false, b.none());
    EXPECT_NE(reason(b).find("attends nothing"), std::string::npos) << reason(b);
  }
  {  // grouped query heads whose k has neither 1 nor G heads in the group dim
    GraphBuilder b;
    const int q = b.input("q", DType::F32, {1, 2, 3, 4, 6});
    const int k = b.input("k", DType::F32, {1, 2, 2, 4, 6});
    sdpa(b, q, k, k, {1, 2, 3, 4, 6}, b.none(), true, b.none());
    EXPECT_NE(reason(b).find("same batch dims"), std::string::npos) << reason(b);
  }
  {  // an activation mask that broadcasts over the keys, and one with grouped query heads
    GraphBuilder b;
    const int q = b.input("q", DType::F32, {2, 3, 4});
    const int m = b.op("tern::neg", {b.input("m", DType::F32, {2, 3, 1})}, DType::F32, {2, 3, 1});
    sdpa(b, q, q, q, {2, 3, 4}, m, false, b.none());
    EXPECT_NE(reason(b).find("is not [.., L or 1, S]"), std::string::npos) << reason(b);
    const int gq = b.input("gq", DType::F32, {1, 2, 3, 4, 6});
    const int gk = b.input("gk", DType::F32, {1, 2, 1, 7, 6});
    const int gm = b.op("tern::neg", {b.input("gm", DType::F32, {4, 7})}, DType::F32, {4, 7});
    sdpa(b, gq, gk, gk, {1, 2, 3, 4, 6}, gm, false, b.none());
    EXPECT_NE(reason(b).find("neither [.., G, L, S] nor [.., 1, 1, S]"), std::string::npos)
        << reason(b);
  }
  {  // causal with a mask
    GraphBuilder b;
    const int q = b.input("q", DType::F32, {2, 3, 4});
    sdpa(b, q, q, q, {2, 3, 4}, bool_constant(b, {3, 3}, std::vector<uint8_t>(9, 1)), true,
         b.none());
    EXPECT_NE(reason(b).find("is_causal with a mask"), std::string::npos) << reason(b);
  }
  {  // a matmul of an NHWC tensor (a conv reads the same input); a softmax of one is taken
    GraphBuilder b;
    const std::vector<int64_t> xs{1, 4, 5, 5};
    const int x = b.input("x", DType::F32, xs);
    conv(b, x, xs, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 1);
    matmul(b, "tern::matmul", x, x, xs, 5);
    EXPECT_NE(reason(b).find("NHWC"), std::string::npos) << reason(b);
  }
  {  // index_select by an index that is no affine walk: a GatherMap (version 20) but 4-D
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 10});
    index_select(b, x, {2, 10}, 1, {0, 5, 3});
    EXPECT_EQ(reason(b), "") << reason(b);
    GraphBuilder b4;
    const int x4 = b4.input("x", DType::F32, {1, 2, 3, 10});
    index_select(b4, x4, {1, 2, 3, 10}, 3, {0, 5, 3});
    EXPECT_NE(reason(b4).find("a 4-D x or output"), std::string::npos) << reason(b4);
  }
  {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 10});
    index_select(b, x, {2, 10}, 1, {8, 9, 10});
    EXPECT_NE(reason(b).find("index 10 outside [0, 10)"), std::string::npos) << reason(b);
  }
  {  // where of two activations, one broadcast; and with a condition computed from an input
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 3});
    const int y = b.input("y", DType::F32, {1, 3});
    const int m = bool_constant(b, {2, 3}, std::vector<uint8_t>(6, 1));
    b.op("tern::where", {m, x, y}, DType::F32, {2, 3});
    EXPECT_NE(reason(b).find("where: an activation is not the output's shape"),
              std::string::npos)
        << reason(b);
  }
  {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 3});
    const int c = b.op("tern::gt", {x, b.double_value(0.0)}, DType::Bool, {2, 3});
    // Taken since version 21 (tern's select, op 44: the condition enters as a bool input);
    // since version 22 the comparison too, fused into the select — unless its mask is read by
    // anything else (here, an and).
    b.op("tern::where", {c, x, b.double_value(1.0)}, DType::F32, {2, 3});
    EXPECT_EQ(reason(b), "");
    EXPECT_EQ(compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[0]), "");
    b.op("tern::logical_and", {c, c}, DType::Bool, {2, 3});
    EXPECT_NE(compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[0])
                  .find("read by tern::logical_and"),
              std::string::npos);
  }
  {  // a slice that is empty
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {4, 6});
    b.op("tern::slice", {x, b.int_value(1), b.int_value(5), b.int_value(2), b.int_value(1)},
         DType::F32, {4, 1});
    EXPECT_NE(reason(b).find("empty"), std::string::npos) << reason(b);
  }
}

/// The blob of `build` delegated whole.
std::vector<uint8_t> blob_of(const std::function<void(GraphBuilder&)>& build) {
  GraphBuilder b;
  build(b);
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.graph().delegates[0].blob;
}


TEST(CpuAttentionBlob, StridedCopyFieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = blob_of([](GraphBuilder& b) {
    const int x = b.input("x", DType::F32, {6, 8, 10});
    b.output(transpose(b, x, {6, 8, 10}, 0, 2));
  });
  ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{kCopyOp});
  const cpu::BlobNode n = blob_node(blob, 0);
  EXPECT_EQ(n.params[cpu::kCopyRank], 3u);
  expect_refused(
      blob, 0,
      {{"rank 0", [](cpu::BlobNode& m) { m.params[cpu::kCopyRank] = 0; }, "rank 0, expected 1..6"},
       {"rank 7", [](cpu::BlobNode& m) { m.params[cpu::kCopyRank] = 7; }, "rank 7"},
       {"an extent 0", [](cpu::BlobNode& m) { m.params[cpu::kCopyExtent + 1] = 0; },
        "extent 1 is 0"},
       {"an unused extent", [](cpu::BlobNode& m) { m.params[cpu::kCopyExtent + 4] = 2; },
        "expected 0 (unused)"},
       {"a stride reading past x", [](cpu::BlobNode& m) { m.params[cpu::kCopyStride] = 80; },
        "which has 480"},
       {"the offset past x", [](cpu::BlobNode& m) { m.params[cpu::kCopyOffset] = 1; },
        "reads element 480"},
       {"a huge stride", [](cpu::BlobNode& m) { m.params[cpu::kCopyStride] = 1u << 31; },
        "a stride in [-2^30, 2^30]"},
       {"a huge negative stride",
        [](cpu::BlobNode& m) { m.params[cpu::kCopyStride] = 0u - ((1u << 30) + 1u); },
        "a stride in [-2^30, 2^30]"},
       {"a negative stride reading before x",
        [](cpu::BlobNode& m) { m.params[cpu::kCopyStride + 2] = 0u - 1u; },
        "reads element -"},
       {"a huge offset", [](cpu::BlobNode& m) { m.params[cpu::kCopyOffset] = 1u << 31; },
        "at most 2^30"},
       {"the count", [](cpu::BlobNode& m) { m.params[cpu::kCopyExtent] = 5; },
        "the extents give 240"},
       {"parameter 15", [](cpu::BlobNode& m) { m.params[15] = 1; }, "parameter 15 is 1"},
       {"two inputs",
        [](cpu::BlobNode& m) {
          m.num_inputs = 2;
          m.inputs[1] = m.inputs[0];
        },
        "(strided_copy): 2 inputs"}});
}

TEST(CpuAttentionBlob, RowConcatFieldsAreChecked) {
  register_all();
  // cat(x's second half of channels, y): one RowConcat reading x in place (NHWC rows of 8
  // channels, 4 from channel 4 on) and y as it is.
  const std::vector<uint8_t> blob = blob_of([](GraphBuilder& b) {
    const std::vector<int64_t> xs{1, 8, 3, 4}, hs{1, 4, 3, 4};
    const int x = b.input("x", DType::F32, xs);
    const int y = b.input("y", DType::F32, hs);
    b.output(cat(b, {split_equal(b, x, 2, 1, hs)[1], y}, 1, xs));
  });
  ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{kRowConcatOp});
  const cpu::BlobNode n = blob_node(blob, 0);
  EXPECT_EQ(n.params[cpu::kRowConcatRows], 12u);
  EXPECT_EQ(n.params[cpu::kRowConcatStride], 8u);
  EXPECT_EQ(n.params[cpu::kRowConcatOffset], 4u);
  expect_refused(
      blob, 0,
      {{"no rows", [](cpu::BlobNode& m) { m.params[cpu::kRowConcatRows] = 0; }, "0 rows"},
       {"rows against the output", [](cpu::BlobNode& m) { m.params[cpu::kRowConcatRows] = 6; },
        "96 elements, 6 rows of 8 give 48"},
       {"a unit the widths are no multiple of",
        [](cpu::BlobNode& m) { m.params[cpu::kRowConcatUnit] = 3; }, "a multiple of the unit 3"},
       {"unequal widths with a unit",
        [](cpu::BlobNode& m) {
          m.params[cpu::kRowConcatUnit] = 1;
          m.params[cpu::kRowConcatWidth + 1] = 3;
        },
        "input 1 has width 3, expected input 0's 4"},
       {"width 0", [](cpu::BlobNode& m) { m.params[cpu::kRowConcatWidth] = 0; }, "width 0"},
       {"a stride reading past x", [](cpu::BlobNode& m) { m.params[cpu::kRowConcatStride] = 9; },
        "reads up to element 106 of value"},
       {"a width reading past y",
        [](cpu::BlobNode& m) { m.params[cpu::kRowConcatWidth + 1] = 5; }, "which has 48"},
       {"a huge offset", [](cpu::BlobNode& m) { m.params[cpu::kRowConcatOffset] = 1u << 31; },
        "at most 2^30"},
       {"a third input's width", [](cpu::BlobNode& m) { m.params[cpu::kRowConcatWidth + 2] = 1; },
        "parameter 4 is 1, expected 0 (unused)"},
       {"parameter 11", [](cpu::BlobNode& m) { m.params[11] = 1; }, "parameter 11 is 1"},
       {"one input", [](cpu::BlobNode& m) { m.num_inputs = 1; }, "(row_concat): 1 inputs"}});
}

TEST(CpuAttentionBlob, BatchMatMulFieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = blob_of([](GraphBuilder& b) {
    const int a = b.input("a", DType::F32, {3, 7, 5});
    const int v = b.input("v", DType::F32, {3, 5, 9});
    b.output(matmul(b, "tern::bmm", a, v, {3, 7, 5}, 9));
  });
  ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{kMatMulOp});
  expect_refused(
      blob, 0,
      {{"transpose flag 2", [](cpu::BlobNode& m) { m.params[0] = 2; }, "transpose flag 2"},
       {"transposed b", [](cpu::BlobNode& m) { m.params[0] = 1; }, "do not multiply transposed"},
       {"a parameter", [](cpu::BlobNode& m) { m.params[4] = 1; }, "unused parameter 4 is 1"},
       {"b is a", [](cpu::BlobNode& m) { m.inputs[1] = m.inputs[0]; }, "do not multiply"},
       {"one input",
        [](cpu::BlobNode& m) {
          m.num_inputs = 1;
          m.inputs[1] = cpu::kNoValue;
        },
        "(batch_matmul): 1 inputs"}});
  // b a constant (since version 17): a stays a data value.
  const std::vector<uint8_t> by_constant = blob_of([](GraphBuilder& b) {
    const int a = b.input("a", DType::F32, {3, 7, 5});
    b.output(matmul(b, "tern::bmm", a, constant(b, "k", {3, 5, 9}, 93), {3, 7, 5}, 9));
  });
  ASSERT_EQ(blob_ops(by_constant), std::vector<uint32_t>{kMatMulOp});
  expect_refused(by_constant, 0,
                 {{"a the constant too", [](cpu::BlobNode& m) { m.inputs[0] = m.inputs[1]; },
                   "must not be a constant"}});
  // a a constant (since version 20): b stays a data value.
  const std::vector<uint8_t> of_constant = blob_of([](GraphBuilder& b) {
    const int v = b.input("v", DType::F32, {3, 5, 9});
    b.output(matmul(b, "tern::bmm", constant(b, "q", {3, 7, 5}, 94), v, {3, 7, 5}, 9));
  });
  ASSERT_EQ(blob_ops(of_constant), std::vector<uint32_t>{kMatMulOp});
  expect_refused(of_constant, 0,
                 {{"b the constant too", [](cpu::BlobNode& m) { m.inputs[1] = m.inputs[0]; },
                   "must not be a constant"}});
}

TEST(CpuAttentionBlob, ConstantQueryIsTheOnlyConstantOperand) {
  register_all();
  // q a constant (since version 20): k and v stay data values.
  const std::vector<uint8_t> blob = blob_of([](GraphBuilder& b) {
    const int k = b.input("k", DType::F32, {2, 6, 4});
    const int v = b.input("v", DType::F32, {2, 6, 4});
    b.output(sdpa(b, constant(b, "q", {2, 6, 4}, 97), k, v, {2, 6, 4}, b.none(), false,
                  b.none()));
  });
  ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{kAttentionOp});
  expect_refused(blob, 0,
                 {{"k the constant", [](cpu::BlobNode& m) { m.inputs[1] = m.inputs[0]; },
                   "input 1 (value 2) must not be a constant"},
                  {"v the constant", [](cpu::BlobNode& m) { m.inputs[2] = m.inputs[0]; },
                   "input 2 (value 2) must not be a constant"}});
}

TEST(CpuAttentionBlob, ConcatRowsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = blob_of([](GraphBuilder& b) {
    const int x = b.input("x", DType::F32, {4, 6});
    const int y = b.input("y", DType::F32, {2, 6});
    b.output(linear(b, cat(b, {x, y}, 0, {6, 6}), {6, 6}, 3, 1));
  });
  const std::vector<uint32_t> ops = blob_ops(blob);
  ASSERT_FALSE(ops.empty());
  ASSERT_EQ(ops[0], kConcatOp);
  EXPECT_EQ(blob_node(blob, 0).params[0], 1u);
  expect_refused(
      blob, 0,
      {{"rows 5", [](cpu::BlobNode& m) { m.params[0] = 5; }, "not a multiple of the 5 rows"},
       {"a parameter", [](cpu::BlobNode& m) { m.params[1] = 1; }, "unused parameter 1 is 1"}});
}

}  // namespace
}  // namespace tern::cpu_test
