// tern's own elementwise math and running sum in the cpu delegate (blob version 18): exp and
// softplus (op 38, Mamba's step sizes and decays; sin, cos and log since version 19) and cumsum (op 39, Mamba2's chunked scan),
// each computed as the portable kernel computes it, so the outputs equal the portable ones
// exactly (harness: cpu_conformance_util.h); on plain and NHWC tensors, along every dim. Then
// what the reader checks in the two nodes' fields.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

int cumsum(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t dim) {
  return b.op("tern::cumsum", {x, b.int_value(dim)}, DType::F32, xs);
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase exp = {"exp_and_softplus",
                [](GraphBuilder& b) {
                  const int x = b.input("x", DType::F32, {3, 50});
                  b.output(b.op("tern::exp", {x}, DType::F32, {3, 50}));
                  b.output(b.op("tern::softplus", {x}, DType::F32, {3, 50}));
                  // beta 8, threshold 2: x * 8 > 2 takes x itself for x > 0.25.
                  b.output(b.op("tern::softplus", {x, b.double_value(8.0), b.double_value(2.0)},
                                DType::F32, {3, 50}));
                },
                0.0};
  exp.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::UnaryMath), 3u);
  };
  c.push_back(exp);
  // Since version 19: sin, cos and log (op 38), sqrt (XNNPACK's square root, op 28) and abs
  // (max(x, -x)); the Snake activation of audio decoders, x + sin²(αx) / α, whole.
  OpCase trig = {"sin_cos_log_sqrt_abs",
                 [](GraphBuilder& b) {
                   const std::vector<int64_t> xs{3, 50};
                   const int x = b.input("x", DType::F32, xs);
                   const int a = b.op("tern::abs", {x}, DType::F32, xs);
                   b.output(b.op("tern::sin", {x}, DType::F32, xs));
                   b.output(b.op("tern::cos", {x}, DType::F32, xs));
                   b.output(b.op("tern::log", {a}, DType::F32, xs));
                   b.output(b.op("tern::sqrt", {a}, DType::F32, xs));
                   b.output(a);
                   const int s = b.op("tern::sin", {b.op("tern::mul", {x, b.double_value(3.0)},
                                                         DType::F32, xs)},
                                      DType::F32, xs);
                   const int s2 = b.op("tern::mul", {s, s}, DType::F32, xs);
                   b.output(b.op("tern::add", {x, b.op("tern::div", {s2, b.double_value(3.0)},
                                                       DType::F32, xs)},
                                 DType::F32, xs));
                 },
                 0.0};
  trig.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::UnaryMath), 4u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::SquareRoot), 1u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Maximum), 1u);
  };
  c.push_back(trig);
  // expm1 and log1p (since version 21): Apertus' xIELU, xLSTM's gates; near 0 too.
  OpCase near_zero = {"expm1_log1p",
                      [](GraphBuilder& b) {
                        const std::vector<int64_t> xs{3, 50};
                        const int x = b.input("x", DType::F32, xs);
                        const int t = b.op("tern::mul", {x, b.double_value(1e-6)}, DType::F32,
                                           xs);
                        b.output(b.op("tern::expm1", {x}, DType::F32, xs));
                        b.output(b.op("tern::expm1", {t}, DType::F32, xs));
                        const int a = b.op("tern::abs", {t}, DType::F32, xs);
                        b.output(b.op("tern::log1p", {a}, DType::F32, xs));
                      },
                      0.0};
  near_zero.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::UnaryMath), 3u);
  };
  c.push_back(near_zero);
  // acos, asin, atan and pow by a constant exponent other than 2, 3, 0.5 (since version 22):
  // YOSO's collision probabilities (1 - acos(cos sim) / pi)^9; a non-integer, a negative and
  // an integer exponent (of negative x too). Outputs equal the portable ones exactly.
  OpCase inverse = {"acos_asin_atan_pow",
                    [](GraphBuilder& b) {
                      const std::vector<int64_t> xs{3, 50};
                      const int x = b.input("x", DType::F32, xs);
                      // x / 4 in (-1, 1), exact on both sides (tanh is not: the delegate's
                      // is 2 sigmoid(2x) - 1).
                      const int t = b.op("tern::mul", {x, b.double_value(0.25)}, DType::F32, xs);
                      b.output(b.op("tern::acos", {t}, DType::F32, xs));
                      b.output(b.op("tern::asin", {t}, DType::F32, xs));
                      b.output(b.op("tern::atan", {x}, DType::F32, xs));
                      const int a = b.op("tern::abs", {x}, DType::F32, xs);
                      b.output(b.op("tern::pow", {a, b.double_value(9.0)}, DType::F32, xs));
                      b.output(b.op("tern::pow", {a, b.double_value(1.5)}, DType::F32, xs));
                      b.output(b.op("tern::pow", {a, b.double_value(-0.75)}, DType::F32, xs));
                      b.output(b.op("tern::pow", {x, b.int_value(4)}, DType::F32, xs));
                    },
                    0.0};
  inverse.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::UnaryMath), 7u);
  };
  c.push_back(inverse);
  // reciprocal (a divide of 1 by x, correctly rounded as the portable 1.0f / x): Inkling's
  // head norms; of both signs, of small magnitudes (large results) and of an NHWC conv output
  // (the divide follows its operand's layout). Outputs equal the portable ones exactly.
  OpCase reciprocal = {"reciprocal",
                       [](GraphBuilder& b) {
                         const std::vector<int64_t> xs{3, 50};
                         const int x = b.input("x", DType::F32, xs);
                         b.output(b.op("tern::reciprocal", {x}, DType::F32, xs));
                         const int t = b.op("tern::mul", {x, b.double_value(1e-4)}, DType::F32,
                                            xs);
                         b.output(b.op("tern::reciprocal", {t}, DType::F32, xs));
                       },
                       0.0};
  reciprocal.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Divide), 2u);
  };
  c.push_back(reciprocal);
  c.push_back({"reciprocal_of_nhwc_conv",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 6, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 92);
                 const std::vector<int64_t> ys{1, 4, 6, 5};
                 // 1 / (y² + 1): away from y's zeros, where the two convs' rounding would be
                 // amplified without bound.
                 const int y2 = b.op("tern::mul", {y, y}, DType::F32, ys);
                 const int d = b.op("tern::add", {y2, b.double_value(1.0)}, DType::F32, ys);
                 b.output(conv(b, b.op("tern::reciprocal", {d}, DType::F32, ys), ys, 2, 1, 1,
                               {1, 1}, {0, 0}, {1, 1}, 1, true, 93));
               },
               1e-10});
  // A big tensor (split over the pool in chunks) and an NHWC conv output.
  c.push_back({"exp_split_over_the_pool",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {4, 9000});
                 b.output(b.op("tern::softplus", {x}, DType::F32, {4, 9000}));
               },
               0.0});
  c.push_back({"exp_of_nhwc_conv",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 6, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 91);
                 const std::vector<int64_t> ys{1, 4, 6, 5};
                 b.output(conv(b, b.op("tern::exp", {y}, DType::F32, ys), ys, 2, 1, 1, {1, 1},
                               {0, 0}, {1, 1}, 1, true, 93));
               },
               1e-10});
  OpCase sums = {"cumsum_along_each_dim",
                 [](GraphBuilder& b) {
                   const std::vector<int64_t> xs{3, 70, 5};
                   const int x = b.input("x", DType::F32, xs);
                   b.output(cumsum(b, x, xs, 0));
                   b.output(cumsum(b, x, xs, 1));
                   b.output(cumsum(b, x, xs, -1));
                   const std::vector<int64_t> big{40, 30, 20};  // split over the pool
                   b.output(cumsum(b, b.input("y", DType::F32, big), big, 1));
                 },
                 0.0};
  sums.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Cumsum), 4u);
  };
  c.push_back(sums);
  // Along the channels and along W of an NHWC conv output (the blob dims 3 and 2).
  c.push_back({"cumsum_of_nhwc_conv",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 6, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 95);
                 const std::vector<int64_t> ys{1, 4, 6, 5};
                 const int s = cumsum(b, cumsum(b, y, ys, 1), ys, 3);
                 b.output(conv(b, s, ys, 2, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 97));
               },
               1e-10});
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceUnaryMath, cases());

std::vector<uint8_t> blob_of(const std::function<void(GraphBuilder&)>& build) {
  GraphBuilder b;
  build(b);
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.graph().delegates[0].blob;
}

uint32_t bits(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(CpuUnaryMathBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = blob_of([](GraphBuilder& b) {
    const int x = b.input("x", DType::F32, {4, 6});
    const int s = b.op("tern::softplus", {x, b.double_value(2.0), b.double_value(10.0)},
                       DType::F32, {4, 6});
    b.output(cumsum(b, s, {4, 6}, 1));
  });
  ASSERT_EQ(blob_ops(blob), (std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::UnaryMath),
                                                   static_cast<uint32_t>(cpu::NodeOp::Cumsum)}));
  const cpu::BlobNode math = blob_node(blob, 0);
  EXPECT_EQ(math.params[0], 2u);
  EXPECT_EQ(math.params[1], bits(2.0f));
  EXPECT_EQ(math.params[2], bits(10.0f));
  expect_refused(
      blob, 0,
      {{"function 0", [](cpu::BlobNode& m) { m.params[0] = 0; }, "function 0, expected 1 (exp)"},
       {"function 12", [](cpu::BlobNode& m) { m.params[0] = 12; }, "function 12"},
       {"pow with a NaN exponent",
        [](cpu::BlobNode& m) {
          m.params[0] = 11;
          m.params[1] = bits(std::numeric_limits<float>::quiet_NaN());
          m.params[2] = 0;
        },
        "a finite exponent"},
       {"pow with a threshold",
        [](cpu::BlobNode& m) { m.params[0] = 11; },
        "a finite exponent (f32 bits), 0"},
       {"beta 0", [](cpu::BlobNode& m) { m.params[1] = 0; }, "a finite non-zero beta"},
       {"a NaN threshold",
        [](cpu::BlobNode& m) { m.params[2] = bits(std::numeric_limits<float>::quiet_NaN()); },
        "a finite non-zero beta and a finite threshold"},
       {"exp with a beta",
        [](cpu::BlobNode& m) {
          m.params[0] = 1;
          m.params[2] = 0;
        },
        "expected 0, 0"},
       {"parameter 5", [](cpu::BlobNode& m) { m.params[5] = 1; }, "unused parameter 5 is 1"},
       {"bounds", [](cpu::BlobNode& m) { m.fparams[0] = 0.0f; }, "expected (-inf, +inf)"}});
  expect_refused(
      blob, 1,
      {{"dim 2 of rank 2", [](cpu::BlobNode& m) { m.params[0] = 2; }, "dim 2 of a rank-2 value"},
       {"parameter 1", [](cpu::BlobNode& m) { m.params[1] = 4; }, "unused parameter 1 is 4"},
       {"bounds", [](cpu::BlobNode& m) { m.fparams[1] = 1.0f; }, "expected (-inf, +inf)"}});
}

TEST(CpuUnaryMath, WhatTheCompileHalfRefuses) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {4, 6});
  b.op("tern::softplus", {x, b.double_value(0.0), b.double_value(20.0)}, DType::F32, {4, 6});
  EXPECT_THROW(delegate_cpu(b, 0, 0), std::exception);
}

}  // namespace
}  // namespace tern::cpu_test
