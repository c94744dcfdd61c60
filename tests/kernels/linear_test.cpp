// tern::linear against a naive double-precision triple loop, over odd sizes and batch ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

struct LinearCase {
  std::vector<int64_t> x;  // [..., in]
  int64_t out_features;
  bool bias;
};

class LinearShapeTest : public KernelTest, public ::testing::WithParamInterface<LinearCase> {};

TEST_P(LinearShapeTest, MatchesNaiveLoop) {
  const LinearCase& c = GetParam();
  const int64_t in = c.x.back();
  const int64_t n = c.out_features;
  std::vector<int64_t> out_shape = c.x;
  out_shape.back() = n;
  auto x = random_tensor<float>(c.x, 31);
  auto w = random_tensor<float>({n, in}, 32);
  auto bias = random_tensor<float>({n}, 33);
  auto out = zeros<float>(out_shape);
  EValue none;
  EValue* bias_arg = c.bias ? &bias->value : &none;
  ASSERT_EQ(call_kernel("tern::linear", {&x->value, &w->value, bias_arg, &out->value}), Error::Ok)
      << last_error_message();
  const int64_t rows = numel_of(std::vector<int64_t>(c.x.begin(), c.x.end() - 1));
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t j = 0; j < n; ++j) {
      double expected = c.bias ? bias->data[j] : 0.0;
      double abs_sum = std::fabs(expected);
      for (int64_t k = 0; k < in; ++k) {
        const double p = static_cast<double>(x->data[m * in + k]) * w->data[j * in + k];
        expected += p;
        abs_sum += std::fabs(p);
      }
      ASSERT_NEAR(out->data[m * n + j], expected, 1e-6 * abs_sum + 1e-6)
          << "row " << m << " col " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LinearShapeTest,
    ::testing::Values(LinearCase{{1}, 1, true}, LinearCase{{3}, 5, false},
                      LinearCase{{2, 4}, 4, true}, LinearCase{{5, 7}, 3, true},
                      LinearCase{{3, 17}, 9, false}, LinearCase{{2, 3, 33}, 13, true},
                      LinearCase{{7, 600}, 70, true}, LinearCase{{1, 1030}, 5, false},
                      LinearCase{{4, 2, 2, 8}, 6, true}, LinearCase{{0, 8}, 4, true},
                      LinearCase{{3, 0}, 4, true}));

class LinearTest : public KernelTest {};

TEST_F(LinearTest, HandWorkedValues) {
  // x = [[1, 2], [3, 4]], W = [[1, 0], [1, 1], [2, -1]], b = [0.5, 0, -1]
  OwnedTensor<float> x({2, 2}, {1, 2, 3, 4});
  OwnedTensor<float> w({3, 2}, {1, 0, 1, 1, 2, -1});
  OwnedTensor<float> b({3}, {0.5f, 0, -1});
  OwnedTensor<float> out({2, 3}, std::vector<float>(6));
  ASSERT_EQ(call_kernel("tern::linear", {&x.value, &w.value, &b.value, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{1.5f, 3, -1, 3.5f, 7, 1}));
}

TEST_F(LinearTest, Errors) {
  auto x = zeros<float>({2, 4});
  auto w = zeros<float>({3, 4});
  auto b = zeros<float>({3});
  auto out = zeros<float>({2, 3});
  auto w_bad = zeros<float>({3, 5});
  expect_invalid(call_kernel("tern::linear", {&x->value, &w_bad->value, &b->value, &out->value}),
                 {"tern::linear", "weight", "in_features 4", "found 5"});
  auto b_bad = zeros<float>({4});
  expect_invalid(call_kernel("tern::linear", {&x->value, &w->value, &b_bad->value, &out->value}),
                 {"tern::linear", "bias", "expected shape [3]", "found [4]"});
  auto out_bad = zeros<float>({2, 4});
  expect_invalid(call_kernel("tern::linear", {&x->value, &w->value, &b->value, &out_bad->value}),
                 {"out", "expected shape [2, 3]", "found [2, 4]"});
  auto xi = zeros<int32_t>({2, 4});
  expect_invalid(call_kernel("tern::linear", {&xi->value, &w->value, &b->value, &out->value}),
                 {"tern::linear", "x", "expected dtype f32", "found i32"});
  auto w1 = zeros<float>({12});
  expect_invalid(call_kernel("tern::linear", {&x->value, &w1->value, &b->value, &out->value}),
                 {"weight", "expected rank 2", "found rank 1"});
  EValue i = EValue::from_int(0);
  expect_invalid(call_kernel("tern::linear", {&x->value, &w->value, &i, &out->value}),
                 {"bias", "expected a tensor or none, found int"});
  expect_invalid(call_kernel("tern::linear", {&x->value, &w->value, &b->value}),
                 {"expected 4 arguments, found 3"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
