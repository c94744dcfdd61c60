// Conformance of the fused Attention node (op 32) against the portable kernels (harness:
// cpu_conformance_util.h): attention written out as Hugging Face's eager attention writes it
// (Whisper: bmm of q and a transposed key, softmax, bmm; GPT-2: a 4-D view, a scale, a constant
// causal mask of the f32 minimum; BERT: an additive mask made from an input; a division by
// sqrt(d); LeViT's v · pᵀ, the transposed second product) becomes one node whose blob says how
// it reads k, the mask and the causal limit; what stays unfused; a row whose mask hides every
// key gives NaN as softmax does; and what the reader checks in op 32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

constexpr uint32_t kMatMulOp = static_cast<uint32_t>(cpu::NodeOp::BatchMatMul);
constexpr uint32_t kAttentionOp = static_cast<uint32_t>(cpu::NodeOp::Attention);
constexpr uint32_t kSoftmaxOp = static_cast<uint32_t>(cpu::NodeOp::Softmax);

size_t count(const std::vector<uint32_t>& ops, uint32_t op) {
  return static_cast<size_t>(std::count(ops.begin(), ops.end(), op));
}

int transpose(GraphBuilder& b, int x, std::vector<int64_t> xs, int64_t d0, int64_t d1) {
  std::swap(xs[static_cast<size_t>(d0)], xs[static_cast<size_t>(d1)]);
  return b.op("tern::transpose", {x, b.int_value(d0), b.int_value(d1)}, DType::F32, xs);
}

int view(GraphBuilder& b, int x, std::vector<int64_t> to) {
  return b.op("tern::view", {x, b.int_list(to)}, DType::F32, to);
}

int bmm(GraphBuilder& b, int a, int c, std::vector<int64_t> as, int64_t n) {
  as.back() = n;
  return b.op("tern::bmm", {a, c}, DType::F32, as);
}

int softmax(GraphBuilder& b, int x, const std::vector<int64_t>& xs) {
  return b.op("tern::softmax", {x, b.int_value(-1)}, DType::F32, xs);
}

int linear(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t out, uint32_t seed) {
  const int w = constant(b, "fc_w" + std::to_string(seed), {out, xs.back()}, seed, 0.3f);
  const int bias = constant(b, "fc_b" + std::to_string(seed), {out}, seed + 1, 0.3f);
  std::vector<int64_t> ys = xs;
  ys.back() = out;
  return b.op("tern::linear", {x, w, bias}, DType::F32, ys);
}

/// The index of the blob's only Attention node (fails the test when there is none or several).
cpu::BlobNode attention_node(const std::vector<uint8_t>& blob) {
  const std::vector<uint32_t> ops = blob_ops(blob);
  EXPECT_EQ(count(ops, kAttentionOp), 1u);
  EXPECT_EQ(count(ops, kMatMulOp), 0u);
  EXPECT_EQ(count(ops, kSoftmaxOp), 0u);
  const auto it = std::find(ops.begin(), ops.end(), kAttentionOp);
  return blob_node(blob, it == ops.end() ? 0 : static_cast<size_t>(it - ops.begin()));
}

/// Whisper's encoder attention on x [1, t, d] with h heads: q, k, v projections, heads by view
/// and transpose, the key transposed again for the product, scores without a mask, heads back.
void whisper_attention(GraphBuilder& b, int64_t t, int64_t d, int64_t h) {
  const int64_t e = d / h;
  const int x = b.input("x", DType::F32, {1, t, d});
  std::vector<int> heads;
  for (uint32_t i = 0; i < 3; ++i) {
    const int p = linear(b, x, {1, t, d}, d, 11 + 2 * i);
    const int hv = transpose(b, view(b, p, {1, t, h, e}), {1, t, h, e}, 1, 2);  // [1, h, t, e]
    heads.push_back(b.op("tern::clone", {hv}, DType::F32, {1, h, t, e}));
  }
  const int kt = view(b, transpose(b, heads[1], {1, h, t, e}, 2, 3), {h, e, t});
  const int s = bmm(b, view(b, heads[0], {h, t, e}), kt, {h, t, e}, t);
  const int a = bmm(b, softmax(b, s, {h, t, t}), view(b, heads[2], {h, t, e}), {h, t, t}, e);
  const int back = transpose(b, view(b, a, {1, h, t, e}), {1, h, t, e}, 1, 2);
  b.output(linear(b, view(b, back, {1, t, d}), {1, t, d}, d, 31));
}

/// GPT-2's or BERT's eager scores: bmm(q, kᵀ) [h, t, t] viewed to [1, h, t, t], scaled
/// (mul, or div by 1 / scale), the mask added, softmax, viewed back, times v.
int eager_scores_attention(GraphBuilder& b, int q, int kt, int v, int64_t h, int64_t t, int64_t e,
                           double scale, bool divide, int mask) {
  const int s = view(b, bmm(b, q, kt, {h, t, e}, t), {1, h, t, t});
  const int scaled =
      divide ? b.op("tern::div", {s, b.double_value(1.0 / scale)}, DType::F32, {1, h, t, t})
             : b.op("tern::mul", {s, b.double_value(scale)}, DType::F32, {1, h, t, t});
  const int masked =
      mask < 0 ? scaled : b.op("tern::add", {scaled, mask}, DType::F32, {1, h, t, t});
  const int p = view(b, softmax(b, masked, {1, h, t, t}), {h, t, t});
  return bmm(b, p, v, {h, t, t}, e);
}

/// The causal mask GPT-2's eager attention adds: 0 on and below the diagonal, the f32 minimum
/// above.
std::vector<float> causal_minimum_mask(int64_t t) {
  std::vector<float> m(static_cast<size_t>(t * t), 0.0f);
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = i + 1; j < t; ++j) {
      m[static_cast<size_t>(i * t + j)] = std::numeric_limits<float>::lowest();
    }
  }
  return m;
}

/// tern::split of `v` (sizes `vs`) along `dim` into pieces of `parts` sizes: the node's outputs.
std::vector<int> split(GraphBuilder& b, int v, const std::vector<int64_t>& vs,
                       const std::vector<int64_t>& parts, int64_t dim) {
  std::vector<int64_t> piece = vs;
  piece[static_cast<size_t>(dim)] = parts[0];
  const int first =
      b.op("tern::split", {v, b.int_list(parts), b.int_value(dim)}, DType::F32, piece);
  for (size_t i = 1; i < parts.size(); ++i) {
    compiler::Value out = b.graph().values[static_cast<size_t>(first)];
    out.sizes[static_cast<size_t>(dim)] = parts[i];
    b.graph().values.push_back(out);
    b.graph().nodes.back().outputs.push_back(static_cast<int>(b.graph().values.size()) - 1);
  }
  return b.graph().nodes.back().outputs;
}

/// LeViT's conv-mode attention on x [1, c, r, r] with h heads of key dim kd and value dim vd:
/// a 1x1 conv to the heads' q, k, v channels, viewed [1, h, 2 kd + vd, r²] and split;
/// (qᵀ · k) · scale + a learned bias [h, r², r²], softmax, then v · pᵀ [h, vd, r²] viewed back
/// into channels, hardswish and the 1x1 projection.
void levit_attention(GraphBuilder& b, int64_t c, int64_t r, int64_t h, int64_t kd, int64_t vd) {
  const int64_t n = r * r, per_head = 2 * kd + vd;
  const int x = b.input("x", DType::F32, {1, c, r, r});
  const int qkv =
      conv(b, x, {1, c, r, r}, h * per_head, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 3);
  const int heads = view(b, qkv, {1, h, per_head, n});
  const std::vector<int> parts = split(b, heads, {1, h, per_head, n}, {kd, kd, vd}, 2);
  const int q = view(b, transpose(b, parts[0], {1, h, kd, n}, 2, 3), {h, n, kd});
  const int s = view(b, bmm(b, q, view(b, parts[1], {h, kd, n}), {h, n, kd}, n), {1, h, n, n});
  const int scaled = b.op("tern::mul", {s, b.double_value(0.35)}, DType::F32, {1, h, n, n});
  const int bias = constant(b, "attention_bias", {h, n, n}, 5, 2.0f);
  const int p = softmax(b, b.op("tern::add", {scaled, bias}, DType::F32, {1, h, n, n}),
                        {1, h, n, n});
  const int pt = view(b, transpose(b, p, {1, h, n, n}, 2, 3), {h, n, n});
  const int o = b.op("tern::bmm", {view(b, parts[2], {h, vd, n}), pt}, DType::F32, {h, vd, n});
  const int back = view(b, view(b, o, {1, h, vd, n}), {1, h * vd, r, r});
  const int act = b.op("tern::hardswish", {back}, DType::F32, {1, h * vd, r, r});
  b.output(conv(b, act, {1, h * vd, r, r}, c, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 9));
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase whisper = {"whisper_encoder_attention",
                    [](GraphBuilder& b) { whisper_attention(b, 40, 32, 4); }, 1e-10};
  whisper.check_blob = [](const std::vector<uint8_t>& blob) {
    const cpu::BlobNode n = attention_node(blob);
    EXPECT_EQ(n.num_inputs, 3u);
    // The key copied out of the projection as [heads, keys, features] (its transpose undone),
    // no causal limit, softmax's NaN rows.
    EXPECT_EQ(n.params[cpu::kAttentionFlags], cpu::kAttentionEmptyRowsNan);
    EXPECT_EQ(n.params[cpu::kAttentionCausal], 0u);
    EXPECT_EQ(n.fparams[0], 1.0f);
  };
  c.push_back(whisper);
  // Long enough for several row blocks of scores, split over the pool.
  c.push_back({"whisper_long_sequence",
               [](GraphBuilder& b) { whisper_attention(b, 600, 32, 2); }, 1e-10});
  OpCase gpt2 = {"gpt2_causal_minimum_mask",
                 [](GraphBuilder& b) {
                   const int64_t h = 4, t = 37, e = 8;
                   const int q = b.input("q", DType::F32, {h, t, e});
                   const int kt = b.input("kt", DType::F32, {h, e, t});
                   const int v = b.input("v", DType::F32, {h, t, e});
                   const int mask = b.constant_f32("bias", {1, 1, t, t}, causal_minimum_mask(t));
                   b.output(eager_scores_attention(b, q, kt, v, h, t, e, 0.125, false, mask));
                 },
                 1e-10};
  gpt2.check_blob = [](const std::vector<uint8_t>& blob) {
    const cpu::BlobNode n = attention_node(blob);
    EXPECT_EQ(n.num_inputs, 3u);  // the mask became the causal limit
    EXPECT_EQ(n.params[cpu::kAttentionCausal], 37u);
    // kᵀ was an input: read transposed.
    EXPECT_EQ(n.params[cpu::kAttentionFlags],
              cpu::kAttentionKTransposed | cpu::kAttentionEmptyRowsNan);
    EXPECT_EQ(n.fparams[0], 0.125f);
  };
  c.push_back(gpt2);
  OpCase bert = {"bert_mask_from_an_input",
                 [](GraphBuilder& b) {
                   const int64_t h = 3, t = 20, e = 16;
                   const int q = b.input("q", DType::F32, {h, t, e});
                   const int kt = b.input("kt", DType::F32, {h, e, t});
                   const int v = b.input("v", DType::F32, {h, t, e});
                   const int pad = b.input("pad", DType::F32, {1, 1, 1, t});  // 0 or -large
                   const int m =
                       b.op("tern::mul", {pad, b.double_value(30.0)}, DType::F32, {1, 1, 1, t});
                   b.output(eager_scores_attention(b, q, kt, v, h, t, e, 0.25, true, m));
                 },
                 1e-10};
  bert.check_blob = [](const std::vector<uint8_t>& blob) {
    const cpu::BlobNode n = attention_node(blob);
    EXPECT_EQ(n.num_inputs, 4u);
    EXPECT_EQ(n.params[cpu::kAttentionMaskBatchRank], 2u);
    EXPECT_EQ(n.params[cpu::kAttentionMaskBatch], 1u);
    EXPECT_EQ(n.params[cpu::kAttentionMaskBatch + 1], 3u);
    EXPECT_EQ(n.fparams[0], 0.25f);
  };
  c.push_back(bert);
  c.push_back({"constant_mask_per_row_three_dims",
               [](GraphBuilder& b) {
                 const int64_t h = 2, t = 9, e = 5;
                 const int q = b.input("q", DType::F32, {h, t, e});
                 const int kt = b.input("kt", DType::F32, {h, e, t});
                 const int v = b.input("v", DType::F32, {h, t, e});
                 const int mask = constant(b, "mask", {t, t}, 7, 3.0f);
                 const int s = bmm(b, q, kt, {h, t, e}, t);
                 const int m = b.op("tern::add", {mask, s}, DType::F32, {h, t, t});
                 b.output(bmm(b, softmax(b, m, {h, t, t}), v, {h, t, t}, e));
               },
               1e-10});
  // PVT's one-head attention: the key viewed as [1, keys, heads, features], its heads permuted
  // to the front and transposed: the transposed key's bytes are that view's in order, but its
  // dims are not [.., keys, features]: copied into that shape, not read as that value.
  c.push_back({"key_viewed_from_a_flat_input",
               [](GraphBuilder& b) {
                 const int64_t t = 12, e = 8;
                 const int q = b.input("q", DType::F32, {1, t, e});
                 const int flat = b.input("k", DType::F32, {1, t * e});
                 const int v = b.input("v", DType::F32, {1, t, e});
                 const int k4 = view(b, flat, {1, t, 1, e});  // [1, keys, heads, features]
                 const int kh = b.op("tern::permute", {k4, b.int_list({0, 2, 1, 3})}, DType::F32,
                                     {1, 1, t, e});
                 const int kt = view(b, transpose(b, kh, {1, 1, t, e}, 2, 3), {1, e, t});
                 const int s = bmm(b, q, kt, {1, t, e}, t);
                 b.output(bmm(b, softmax(b, s, {1, t, t}), v, {1, t, t}, e));
               },
               1e-10});
  // The transposed second product (bmm(v, pᵀ)): LeViT's heads from a conv's channels, the
  // output viewed back into channels; a sequence long enough for several row blocks.
  OpCase levit = {"levit_conv_attention",
                  [](GraphBuilder& b) { levit_attention(b, 24, 6, 2, 8, 16); }, 1e-10};
  levit.check_blob = [](const std::vector<uint8_t>& blob) {
    const cpu::BlobNode n = attention_node(blob);
    EXPECT_EQ(n.num_inputs, 4u);  // q, k, v and the bias
    EXPECT_EQ(n.params[cpu::kAttentionFlags], cpu::kAttentionEmptyRowsNan);
    EXPECT_EQ(n.fparams[0], 0.35f);
  };
  c.push_back(levit);
  c.push_back({"levit_conv_attention_long",
               [](GraphBuilder& b) { levit_attention(b, 16, 24, 2, 16, 32); }, 1e-10});
  // The transposed form with plain inputs, L != S, a permute for the transpose, and the
  // output [h, ev, L] a region output (its pending transpose copied at the end).
  OpCase vpt = {"v_times_transposed_scores",
                [](GraphBuilder& b) {
                  const int64_t h = 3, l = 7, sk = 11, e = 5, ev = 6;
                  const int q = b.input("q", DType::F32, {h, l, e});
                  const int kt = b.input("kt", DType::F32, {h, e, sk});
                  const int v = b.input("v", DType::F32, {h, ev, sk});
                  const int p = softmax(b, bmm(b, q, kt, {h, l, e}, sk), {h, l, sk});
                  const int pt = b.op("tern::permute", {p, b.int_list({0, 2, 1})}, DType::F32,
                                      {h, sk, l});
                  b.output(b.op("tern::bmm", {v, pt}, DType::F32, {h, ev, l}));
                },
                1e-10};
  vpt.check_blob = [](const std::vector<uint8_t>& blob) {
    const cpu::BlobNode n = attention_node(blob);
    EXPECT_EQ(n.num_inputs, 3u);
    EXPECT_EQ(n.params[cpu::kAttentionFlags],
              cpu::kAttentionKTransposed | cpu::kAttentionEmptyRowsNan);
  };
  c.push_back(vpt);
  // The transposed scores also leave the region: nothing fuses.
  OpCase vpt_twice = {"transposed_scores_read_twice_stay_unfused",
                      [](GraphBuilder& b) {
                        const int64_t h = 2, t = 6, e = 4;
                        const int q = b.input("q", DType::F32, {h, t, e});
                        const int kt = b.input("kt", DType::F32, {h, e, t});
                        const int v = b.input("v", DType::F32, {h, e, t});
                        const int p = softmax(b, bmm(b, q, kt, {h, t, e}, t), {h, t, t});
                        const int pt = transpose(b, p, {h, t, t}, 1, 2);
                        b.output(b.op("tern::bmm", {v, pt}, DType::F32, {h, e, t}));
                        b.output(pt);
                      },
                      1e-10};
  vpt_twice.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(count(ops, kAttentionOp), 0u);
    EXPECT_EQ(count(ops, kMatMulOp), 2u);
  };
  c.push_back(vpt_twice);
  // The scores also leave the region: nothing fuses (two products and a softmax remain).
  OpCase read_twice = {"scores_read_twice_stay_unfused",
                       [](GraphBuilder& b) {
                         const int64_t h = 2, t = 6, e = 4;
                         const int q = b.input("q", DType::F32, {h, t, e});
                         const int kt = b.input("kt", DType::F32, {h, e, t});
                         const int v = b.input("v", DType::F32, {h, t, e});
                         const int p = softmax(b, bmm(b, q, kt, {h, t, e}, t), {h, t, t});
                         b.output(bmm(b, p, v, {h, t, t}, e));
                         b.output(p);
                       },
                       1e-10};
  read_twice.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(count(ops, kAttentionOp), 0u);
    EXPECT_EQ(count(ops, kMatMulOp), 2u);
  };
  c.push_back(read_twice);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceFusedAttention, cases());

/// The eager pattern with an input mask: rows whose mask hides every key.
compiler::Graph masked_rows_graph(int64_t h, int64_t t, int64_t e) {
  GraphBuilder b;
  const int q = b.input("q", DType::F32, {h, t, e});
  const int kt = b.input("kt", DType::F32, {h, e, t});
  const int v = b.input("v", DType::F32, {h, t, e});
  const int mask = b.input("mask", DType::F32, {1, 1, t, t});
  b.output(eager_scores_attention(b, q, kt, v, h, t, e, 0.5, false, mask));
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.build();
}

TEST(CpuFusedAttention, ARowWithNothingAttendedIsNaNAsSoftmaxGives) {
  register_all();
  const int64_t h = 2, t = 8, e = 4;
  const compiler::Graph graph = masked_rows_graph(h, t, e);
  (void)attention_node(graph.delegates.at(0).blob);
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  std::vector<std::vector<float>> inputs = {random_floats(static_cast<size_t>(h * t * e), 1),
                                            random_floats(static_cast<size_t>(h * e * t), 2),
                                            random_floats(static_cast<size_t>(h * t * e), 3),
                                            std::vector<float>(static_cast<size_t>(t * t), 0.0f)};
  for (int64_t j = 0; j < t; ++j) inputs[3][static_cast<size_t>(3 * t + j)] = -INFINITY;  // row 3
  const RunResult delegated = run_program(pte, graph, inputs, /*disable_cpu=*/false);
  const RunResult portable = run_program(pte, graph, inputs, /*disable_cpu=*/true);
  ASSERT_EQ(delegated.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(portable.paths, std::vector<DelegatePath>{DelegatePath::Fallback});
  const std::vector<float>& got = delegated.outputs.at(0);
  const std::vector<float>& want = portable.outputs.at(0);
  ASSERT_EQ(got.size(), want.size());
  size_t nans = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const int64_t row = static_cast<int64_t>(i) / e % t;
    ASSERT_EQ(std::isnan(want[i]), row == 3) << "the portable kernels, element " << i;
    if (row == 3) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
      ++nans;
    } else {
      EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
    }
  }
  EXPECT_EQ(nans, static_cast<size_t>(h * e));
}

TEST(CpuFusedAttention, FieldsAreChecked) {
  register_all();
  const compiler::Graph graph = masked_rows_graph(2, 8, 4);
  const std::vector<uint8_t>& blob = graph.delegates.at(0).blob;
  const std::vector<uint32_t> ops = blob_ops(blob);
  const size_t at = static_cast<size_t>(std::find(ops.begin(), ops.end(), kAttentionOp) -
                                        ops.begin());
  ASSERT_LT(at, ops.size());
  expect_refused(
      blob, at,
      {{"an unknown flag",
        [](cpu::BlobNode& m) { m.params[cpu::kAttentionFlags] |= 4; }, "flags 7"},
       {"a causal period past the rows",
        [](cpu::BlobNode& m) { m.params[cpu::kAttentionCausal] = 9; }, "causal period 9"},
       {"a mask batch rank of 5",
        [](cpu::BlobNode& m) { m.params[cpu::kAttentionMaskBatchRank] = 5; },
        "mask batch rank 5"},
       {"mask batch dims that miss the heads",
        [](cpu::BlobNode& m) { m.params[cpu::kAttentionMaskBatch + 1] = 3; },
        "multiply to 3, expected the 2 heads"},
       {"a mask batch dim of 0",
        [](cpu::BlobNode& m) { m.params[cpu::kAttentionMaskBatch] = 0; }, "expected 1..2^30"},
       {"an unused parameter", [](cpu::BlobNode& m) { m.params[9] = 1; },
        "parameter 9 is 1, expected 0"},
       {"a NaN scale", [](cpu::BlobNode& m) { m.fparams[0] = NAN; }, "expected a finite scale"},
       {"a second fparam", [](cpu::BlobNode& m) { m.fparams[1] = 1.0f; }, "expected a finite"},
       {"v as k", [](cpu::BlobNode& m) { m.inputs[1] = m.inputs[2]; }, "do not agree"},
       {"the mask as q", [](cpu::BlobNode& m) { m.inputs[0] = m.inputs[3]; },
        "the same product of the dims before their last two"},
       {"q as the mask", [](cpu::BlobNode& m) { m.inputs[3] = m.inputs[0]; },
        "expected an f32 value of rank 4"},
       {"no v",
        [](cpu::BlobNode& m) {
          m.num_inputs = 2;
          m.inputs[2] = m.inputs[3] = cpu::kNoValue;
        },
        "(attention): 2 inputs, expected 3..4"}});
}

}  // namespace
}  // namespace tern::cpu_test
