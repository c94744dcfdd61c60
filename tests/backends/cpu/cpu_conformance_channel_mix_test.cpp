// Conformance of the cpu backend's ChannelMix (tern's own node, op 49, since blob version 28: a
// linear map along an inner dim of a row-major tensor) against the portable kernels (harness:
// cpu_conformance_util.h): CaiT's talking heads (the scores' heads mixed by a linear written
// around permutes to heads-last and back, before and after the softmax, the bias as an add),
// a 3-D transpose-linear-transpose with the linear's own bias and 6 -> 5 channels, a mix of
// dim 2 of a 5-D tensor, and the chains the compile half leaves as they were (an intermediate
// also read elsewhere, a mix wider than kMaxChannelMixWidth, a second permute that is no
// inverse of the first). Then the kernel against its formula, and the blob reader's checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/kernels/channel_mix.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"
#include "runtime/kernels/util/simd_dispatch.h"
#include "tests/backends/cpu/kernel_test_util.h"

namespace tern::cpu_test {
namespace {

int view(GraphBuilder& b, int x, std::vector<int64_t> s) {
  return b.op("tern::view", {x, b.int_list(s)}, DType::F32, s);
}

int permute(GraphBuilder& b, int x, const std::vector<int64_t>& perm, std::vector<int64_t> s) {
  return b.op("tern::permute", {x, b.int_list(perm)}, DType::F32, std::move(s));
}

/// CaiT's mix of the heads of s [1, H, L, S] (timm's proj_l / proj_w): permute to [1, L, S, H],
/// a linear without bias over [L, S, H] rows, then the bias added and the heads moved back.
int talking_heads(GraphBuilder& b, int s, int64_t h, int64_t l, int64_t n, uint32_t seed) {
  const int t = view(b, permute(b, s, {0, 2, 3, 1}, {1, l, n, h}), {l, n, h});
  const int w = constant(b, "proj" + std::to_string(seed), {h, h}, seed);
  const int u = b.op("tern::linear", {t, w, b.none()}, DType::F32, {l, n, h});
  const int bias = constant(b, "bias" + std::to_string(seed), {h}, seed + 1);
  const int a = b.op("tern::add", {view(b, u, {1, l, n, h}), bias}, DType::F32, {1, l, n, h});
  return permute(b, a, {0, 3, 1, 2}, {1, h, l, n});
}

OpCase cait_attention(const std::string& name, int64_t h, int64_t l) {
  OpCase k = {name, [=](GraphBuilder& b) {
                const int64_t e = 8;
                const int q = b.input("q", DType::F32, {h, l, e});
                const int kt = b.input("kt", DType::F32, {h, e, l});
                const int v = b.input("v", DType::F32, {h, l, e});
                const int s = view(b, b.op("tern::bmm", {q, kt}, DType::F32, {h, l, l}),
                                   {1, h, l, l});
                const int mixed = talking_heads(b, s, h, l, l, 11);
                const int p = b.op("tern::softmax", {mixed, b.int_value(-1)}, DType::F32,
                                   {1, h, l, l});
                const int p2 = view(b, talking_heads(b, p, h, l, l, 21), {h, l, l});
                b.output(b.op("tern::bmm", {p2, v}, DType::F32, {h, l, e}));
              }, 1e-10};
  k.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ChannelMix), 2u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::StridedCopy), 0u);  // no permute copied
    EXPECT_EQ(count_op(blob, cpu::NodeOp::PackedFullyConnected), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::FullyConnected), 0u);
  };
  return k;
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  c.push_back(cait_attention("cait_talking_heads", 4, 9));
  c.push_back(cait_attention("cait_talking_heads_long_rows", 3, 70));  // tiles of 64 and a tail
  // [N, C, T] mixed over C with transposes and the linear's own bias, 6 -> 5 channels.
  OpCase three = {"transposed_linear_with_bias", [](GraphBuilder& b) {
                    const int x = b.input("x", DType::F32, {2, 6, 40});
                    const int y = b.op("tern::relu", {x}, DType::F32, {2, 6, 40});
                    const int t = b.op("tern::transpose", {y, b.int_value(1), b.int_value(2)},
                                       DType::F32, {2, 40, 6});
                    const int w = constant(b, "w", {5, 6}, 31);
                    const int bias = constant(b, "b", {5}, 32);
                    const int u = b.op("tern::linear", {t, w, bias}, DType::F32, {2, 40, 5});
                    b.output(b.op("tern::transpose", {u, b.int_value(1), b.int_value(2)},
                                  DType::F32, {2, 5, 40}));
                  }, 1e-10};
  three.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ChannelMix), 1u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::StridedCopy), 0u);
  };
  c.push_back(three);
  // Dim 2 of a 5-D value (outer 2 * 3 samples, inner 5 * 6), no bias.
  OpCase five = {"five_dims_inner_dim", [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {2, 3, 4, 5, 6});
                   const int y = b.op("tern::sigmoid", {x}, DType::F32, {2, 3, 4, 5, 6});
                   const int t = permute(b, y, {0, 1, 3, 4, 2}, {2, 3, 5, 6, 4});
                   const int w = constant(b, "w", {3, 4}, 41);
                   const int u = b.op("tern::linear", {view(b, t, {180, 4}), w, b.none()},
                                      DType::F32, {180, 3});
                   b.output(permute(b, view(b, u, {2, 3, 5, 6, 3}), {0, 1, 4, 2, 3},
                                    {2, 3, 3, 5, 6}));
                 }, 1e-10};
  five.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ChannelMix), 1u);
  };
  c.push_back(five);
  // The linear's output also leaves the region: the chain stays as it was.
  OpCase shared = {"linear_output_also_read_stays", [](GraphBuilder& b) {
                     const int x = b.input("x", DType::F32, {2, 6, 40});
                     const int y = b.op("tern::relu", {x}, DType::F32, {2, 6, 40});
                     const int t = b.op("tern::transpose", {y, b.int_value(1), b.int_value(2)},
                                        DType::F32, {2, 40, 6});
                     const int w = constant(b, "w", {5, 6}, 51);
                     const int u = b.op("tern::linear", {t, w, b.none()}, DType::F32, {2, 40, 5});
                     b.output(b.op("tern::transpose", {u, b.int_value(1), b.int_value(2)},
                                   DType::F32, {2, 5, 40}));
                     b.output(u);
                   }, 1e-10};
  shared.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ChannelMix), 0u);
  };
  c.push_back(shared);
  // 80 channels: wider than the ChannelMix takes.
  OpCase wide = {"wider_than_the_mix_stays", [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {1, 80, 24});
                   const int y = b.op("tern::relu", {x}, DType::F32, {1, 80, 24});
                   const int t = b.op("tern::transpose", {y, b.int_value(1), b.int_value(2)},
                                      DType::F32, {1, 24, 80});
                   const int w = constant(b, "w", {8, 80}, 61);
                   const int u = b.op("tern::linear", {t, w, b.none()}, DType::F32, {1, 24, 8});
                   b.output(b.op("tern::transpose", {u, b.int_value(1), b.int_value(2)},
                                 DType::F32, {1, 8, 24}));
                 }, 1e-10};
  wide.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ChannelMix), 0u);
  };
  c.push_back(wide);
  // The heads moved back to another place: no inverse, no mix.
  OpCase other = {"other_permute_back_stays", [](GraphBuilder& b) {
                    const int q = b.input("q", DType::F32, {4, 6, 8});
                    const int kt = b.input("kt", DType::F32, {4, 8, 6});
                    const int s = view(b, b.op("tern::bmm", {q, kt}, DType::F32, {4, 6, 6}),
                                       {1, 4, 6, 6});
                    const int t = view(b, permute(b, s, {0, 2, 3, 1}, {1, 6, 6, 4}), {6, 6, 4});
                    const int w = constant(b, "w", {4, 4}, 71);
                    const int u = b.op("tern::linear", {t, w, b.none()}, DType::F32, {6, 6, 4});
                    b.output(permute(b, view(b, u, {1, 6, 6, 4}), {0, 3, 2, 1}, {1, 4, 6, 6}));
                  }, 1e-10};
  other.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ChannelMix), 0u);
  };
  c.push_back(other);
  // YOLO's box-distribution head (blob version 29): the box and class features concatenated
  // (tern's Concat: the bins read in place from its output), the first 4·16 rows viewed as
  // [1, 4, 16, A], bins moved to dim 1, softmax over them, a 1x1 conv with weights 0..15: one
  // ChannelMix with its softmax flag, no softmax, no copies. A = 40 (two tiles and a tail).
  for (const bool bias : {false, true}) {
    OpCase dfl = {bias ? "yolo_dfl_head_with_bias" : "yolo_dfl_head", [=](GraphBuilder& b) {
                    const int64_t a = 40;
                    const int box = b.input("box", DType::F32, {1, 64, a});
                    const int cls = b.input("cls", DType::F32, {1, 80, a});
                    const int x = b.op("tern::cat", {tensor_list(b, {box, cls}), b.int_value(1)},
                                       DType::F32, {1, 144, a});
                    const int bins = b.op("tern::slice",
                                          {x, b.int_value(1), b.int_value(0), b.int_value(64),
                                           b.int_value(1)},
                                          DType::F32, {1, 64, a});
                    const int t = b.op("tern::transpose",
                                       {view(b, bins, {1, 4, 16, a}), b.int_value(2), b.int_value(1)},
                                       DType::F32, {1, 16, 4, a});
                    const int sm = b.op("tern::softmax", {t, b.int_value(1)}, DType::F32, {1, 16, 4, a});
                    std::vector<float> ramp(16);
                    for (int i = 0; i < 16; ++i) ramp[static_cast<size_t>(i)] = static_cast<float>(i);
                    const int w = b.constant_f32("dfl_w", {1, 16, 1, 1}, ramp);
                    const int bv = bias ? b.constant_f32("dfl_b", {1}, {0.25f}) : b.none();
                    const int y = b.op("tern::conv2d",
                                       {sm, w, bv, b.int_list({1, 1}), b.int_list({0, 0}),
                                        b.int_list({1, 1}), b.int_value(1)},
                                       DType::F32, {1, 1, 4, a});
                    b.output(b.op("tern::sigmoid", {view(b, y, {1, 4, a})}, DType::F32, {1, 4, a}));
                    b.output(b.op("tern::slice",
                                  {x, b.int_value(1), b.int_value(64), b.int_value(144),
                                   b.int_value(1)},
                                  DType::F32, {1, 80, a}));
                  }, 1e-10};
    dfl.check_blob = [](const std::vector<uint8_t>& blob) {
      EXPECT_EQ(count_op(blob, cpu::NodeOp::Softmax), 0u);
      EXPECT_EQ(count_op(blob, cpu::NodeOp::StridedCopy), 1u);  // the class rows leaving
      const uint32_t at = last_node_of(blob, cpu::NodeOp::ChannelMix);
      ASSERT_LT(at, blob_ops(blob).size());
      EXPECT_EQ(blob_node(blob, at).params[2], 1u);
    };
    c.push_back(dfl);
  }
  // A softmax over the channels of a region input (not a value tern's kernels made) into a
  // 1x1 conv of 3 outputs: lowered as before (softmax, conv), the same numbers.
  OpCase input_softmax = {
      "softmax_of_an_input_into_a_1x1_conv",
      [](GraphBuilder& b) {
        const int x = b.input("x", DType::F32, {2, 8, 5, 6});
        const int sm = b.op("tern::softmax", {x, b.int_value(1)}, DType::F32, {2, 8, 5, 6});
        b.output(conv(b, sm, {2, 8, 5, 6}, 3, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 81));
      },
      1e-10};
  input_softmax.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ChannelMix), 0u);
  };
  c.push_back(input_softmax);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceChannelMix, cases());

/// The 3-D case's blob (one ChannelMix with a bias).
std::vector<uint8_t> mix_blob() {
  GraphBuilder b;
  for (const OpCase& k : cases()) {
    if (k.name == "transposed_linear_with_bias") k.build(b);
  }
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.build().delegates.at(0).blob;
}

TEST(CpuChannelMixBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = mix_blob();
  std::string message;
  ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
  const uint32_t at = last_node_of(blob, cpu::NodeOp::ChannelMix);
  ASSERT_LT(at, blob_ops(blob).size());
  const cpu::BlobNode node = blob_node(blob, at);
  ASSERT_EQ(node.num_inputs, 3u);
  ASSERT_EQ(node.params[0], 1u);
  ASSERT_EQ(node.params[1], 5u);
  expect_refused(
      blob, at,
      {{"the last dim", [](cpu::BlobNode& n) { n.params[0] = 2; },
        "expected a dim before x's last"},
       {"no outputs", [](cpu::BlobNode& n) { n.params[1] = 0; }, "parameter 1 is 0"},
       {"another J", [](cpu::BlobNode& n) { n.params[1] = 4; }, "expected x's with dim 1 4"},
       {"too wide", [](cpu::BlobNode& n) { n.params[1] = 65; }, "expected at most 64 each"},
       {"a parameter", [](cpu::BlobNode& n) { n.params[3] = 1; }, "unused parameter 3 is 1"},
       {"softmax flag 2", [](cpu::BlobNode& n) { n.params[2] = 2; },
        "softmax flag 2, expected 0 or 1"},
       {"bounds", [](cpu::BlobNode& n) { n.fparams[0] = 0.0f; }, "expected (-inf, +inf)"},
       {"the bias as the matrix", [node](cpu::BlobNode& n) { n.inputs[1] = node.inputs[2]; },
        "the matrix (value"},
       {"the matrix as the bias", [node](cpu::BlobNode& n) { n.inputs[2] = node.inputs[1]; },
        "the bias (value"},
       {"the output as x", [node](cpu::BlobNode& n) { n.inputs[0] = node.output; },
        "(channel_mix)"}});
}

/// channel_mix against its formula in double: with and without a bias, with and without the
/// softmax first (every instruction-set variant), one thread and a pool, inner sizes of whole
/// tiles and with a tail; y ends at a guard page.
TEST(CpuChannelMixKernel, MatchesTheFormula) {
  cpu::kernel_test::Pool two(2);
  const portable::SimdLevel saved = portable::simd_level_cap();
  for (const portable::SimdLevel isa :
       {portable::SimdLevel::Baseline, portable::SimdLevel::Avx2, portable::SimdLevel::Avx512}) {
    portable::simd_level_cap() = isa;
    for (int softmax = 0; softmax < 2; ++softmax) {
      struct Shape {
        int64_t outer, k, j, inner;
      };
      const Shape shapes[] = {{1, 4, 4, 38416}, {3, 5, 7, 70},    {2, 1, 3, 64},
                              {1, 16, 2, 1},    {4, 16, 1, 8400}, {2, 64, 2, 37}};
      for (const Shape& s : shapes) {
        for (int biased = 0; biased < 2; ++biased) {
          for (int pooled = 0; pooled < 2; ++pooled) {
            const std::vector<float> x =
                random_floats(static_cast<size_t>(s.outer * s.k * s.inner), 3);
            const std::vector<float> w = random_floats(static_cast<size_t>(s.j * s.k), 4);
            const std::vector<float> bias = random_floats(static_cast<size_t>(s.j), 5);
            const size_t out = static_cast<size_t>(s.outer * s.j * s.inner);
            cpu::kernel_test::GuardedBuffer y(out * 4);
            ASSERT_NE(y.data(), nullptr);
            cpu::ChannelMixProblem p;
            p.x = x.data();
            p.w = w.data();
            p.bias = biased ? bias.data() : nullptr;
            p.y = y.data();
            p.outer = s.outer;
            p.k = s.k;
            p.j = s.j;
            p.inner = s.inner;
            p.softmax = softmax != 0;
            cpu::channel_mix(p, pooled ? two.pool : nullptr);
            int bad = 0;
            for (int64_t o = 0; o < s.outer; ++o) {
              std::vector<double> col(static_cast<size_t>(s.k));
              for (int64_t i = 0; i < s.inner; ++i) {
                double top = -INFINITY, sum = 0.0;
                for (int64_t c = 0; c < s.k; ++c) {
                  col[static_cast<size_t>(c)] = x[static_cast<size_t>((o * s.k + c) * s.inner + i)];
                  top = std::max(top, col[static_cast<size_t>(c)]);
                }
                if (softmax) {
                  for (double& v : col) sum += (v = std::exp(v - top));
                  for (double& v : col) v /= sum;
                }
                for (int64_t r = 0; r < s.j; ++r) {
                  {
                    double want = biased ? bias[static_cast<size_t>(r)] : 0.0;
                    for (int64_t c = 0; c < s.k; ++c) {
                      want += static_cast<double>(w[static_cast<size_t>(r * s.k + c)]) *
                              col[static_cast<size_t>(c)];
                    }
                    const double got = y.data()[(o * s.j + r) * s.inner + i];
                    if (std::abs(got - want) > 1e-5 * (1.0 + std::abs(want)) && ++bad <= 3) {
                      ADD_FAILURE()
                          << "isa " << static_cast<int>(isa) << " softmax " << softmax << " shape "
                          << s.outer << "x" << s.k << "->" << s.j << "x" << s.inner << " bias "
                          << biased << " pool " << pooled << " at (" << o << ", " << r << ", " << i
                          << "): " << got << " vs " << want;
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  portable::simd_level_cap() = saved;
}

}  // namespace
}  // namespace tern::cpu_test
