// Normalisation kernels: naive double-precision loops and error paths.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

class NormTest : public KernelTest {};

TEST_F(NormTest, SoftmaxAlongMiddleDimMatchesNaive) {
  auto x = random_tensor<float>({3, 5, 4}, 11);
  EValue dim = EValue::from_int(1);
  auto out = zeros<float>({3, 5, 4});
  auto log_out = zeros<float>({3, 5, 4});
  ASSERT_EQ(call_kernel("tern::softmax", {&x->value, &dim, &out->value}), Error::Ok)
      << last_error_message();
  ASSERT_EQ(call_kernel("tern::log_softmax", {&x->value, &dim, &log_out->value}), Error::Ok);
  for (int64_t a = 0; a < 3; ++a) {
    for (int64_t c = 0; c < 4; ++c) {
      double sum = 0;
      for (int64_t b = 0; b < 5; ++b)
        sum += std::exp(static_cast<double>(x->data[(a * 5 + b) * 4 + c]));
      for (int64_t b = 0; b < 5; ++b) {
        const int64_t i = (a * 5 + b) * 4 + c;
        EXPECT_NEAR(out->data[i], std::exp(static_cast<double>(x->data[i])) / sum, 1e-6);
        EXPECT_NEAR(log_out->data[i], x->data[i] - std::log(sum), 1e-5);
      }
    }
  }
}

TEST_F(NormTest, LayerNormAndRmsNormMatchNaive) {
  auto x = random_tensor<float>({4, 6}, 12);
  auto w = random_tensor<float>({6}, 13);
  auto b = random_tensor<float>({6}, 14);
  std::vector<int64_t> shape = {6};
  EValue norm = EValue::from_int_list(Span<const int64_t>(shape.data(), 1));
  EValue eps = EValue::from_double(1e-5);
  EValue none;
  auto out = zeros<float>({4, 6});
  ASSERT_EQ(
      call_kernel("tern::layer_norm", {&x->value, &norm, &w->value, &b->value, &eps, &out->value}),
      Error::Ok)
      << last_error_message();
  auto rms = zeros<float>({4, 6});
  ASSERT_EQ(call_kernel("tern::rms_norm", {&x->value, &norm, &w->value, &none, &rms->value}),
            Error::Ok)
      << last_error_message();
  for (int64_t r = 0; r < 4; ++r) {
    double mean = 0, sq = 0;
    for (int64_t i = 0; i < 6; ++i) {
      mean += x->data[r * 6 + i];
      sq += static_cast<double>(x->data[r * 6 + i]) * x->data[r * 6 + i];
    }
    mean /= 6;
    double var = 0;
    for (int64_t i = 0; i < 6; ++i) var += std::pow(x->data[r * 6 + i] - mean, 2);
    var /= 6;
    for (int64_t i = 0; i < 6; ++i) {
      const double v = x->data[r * 6 + i];
      EXPECT_NEAR(out->data[r * 6 + i],
                  (v - mean) / std::sqrt(var + 1e-5) * w->data[i] + b->data[i], 1e-5);
      EXPECT_NEAR(rms->data[r * 6 + i], v / std::sqrt(sq / 6 + FLT_EPSILON) * w->data[i], 1e-5);
    }
  }
}

TEST_F(NormTest, GroupNormAndBatchNormHandWorked) {
  // One sample, 2 channels, 2 positions: [[1, 3], [5, 7]].
  OwnedTensor<float> x({1, 2, 2}, {1, 3, 5, 7});
  EValue none;
  EValue eps = EValue::from_double(0.0);
  EValue one_group = EValue::from_int(1);
  OwnedTensor<float> out({1, 2, 2}, std::vector<float>(4));
  ASSERT_EQ(call_kernel("tern::group_norm", {&x.value, &one_group, &none, &none, &eps, &out.value}),
            Error::Ok)
      << last_error_message();
  // mean 4, var (9 + 1 + 1 + 9) / 4 = 5
  const float s = 1.0f / std::sqrt(5.0f);
  EXPECT_NEAR(out.data[0], -3 * s, 1e-6);
  EXPECT_NEAR(out.data[3], 3 * s, 1e-6);
  OwnedTensor<float> mean({2}, {2, 6});
  OwnedTensor<float> var({2}, {4, 1});
  OwnedTensor<float> w({2}, {1, 2});
  OwnedTensor<float> b({2}, {0, 1});
  ASSERT_EQ(call_kernel("tern::batch_norm",
                        {&x.value, &w.value, &b.value, &mean.value, &var.value, &eps, &out.value}),
            Error::Ok)
      << last_error_message();
  // ch0: (x - 2) / 2; ch1: (x - 6) * 2 + 1
  EXPECT_EQ(out.data, (std::vector<float>{-0.5f, 0.5f, -1.0f, 3.0f}));
}

TEST_F(NormTest, Errors) {
  auto x = zeros<float>({2, 6, 3});
  auto out = zeros<float>({2, 6, 3});
  EValue none;
  EValue eps = EValue::from_double(1e-5);
  std::vector<int64_t> wrong_shape = {4};
  EValue norm = EValue::from_int_list(Span<const int64_t>(wrong_shape.data(), 1));
  expect_invalid(
      call_kernel("tern::layer_norm", {&x->value, &norm, &none, &none, &eps, &out->value}),
      {"tern::layer_norm", "expected trailing dims [4]", "found shape [2, 6, 3]"});
  std::vector<int64_t> good_shape = {3};
  EValue good = EValue::from_int_list(Span<const int64_t>(good_shape.data(), 1));
  auto w_bad = zeros<float>({4});
  expect_invalid(
      call_kernel("tern::rms_norm", {&x->value, &good, &w_bad->value, &none, &out->value}),
      {"tern::rms_norm", "weight", "expected shape [3]", "found [4]"});
  EValue groups = EValue::from_int(4);
  expect_invalid(
      call_kernel("tern::group_norm", {&x->value, &groups, &none, &none, &eps, &out->value}),
      {"tern::group_norm", "num_groups", "6 channels", "found 4"});
  auto rm = zeros<float>({6});
  auto rv_bad = zeros<int64_t>({6});
  expect_invalid(call_kernel("tern::batch_norm", {&x->value, &none, &none, &rm->value,
                                                  &rv_bad->value, &eps, &out->value}),
                 {"tern::batch_norm", "running_var", "expected dtype f32", "found i64"});
  expect_invalid(call_kernel("tern::batch_norm",
                             {&x->value, &none, &none, &none, &rm->value, &eps, &out->value}),
                 {"tern::batch_norm", "running_mean", "expected a tensor", "found none"});
  EValue dim = EValue::from_int(3);
  expect_invalid(call_kernel("tern::softmax", {&x->value, &dim, &out->value}),
                 {"tern::softmax", "dim", "[-3, 2]", "found 3"});
  EValue eps_str = EValue::from_string("x", 1);
  expect_invalid(
      call_kernel("tern::layer_norm", {&x->value, &good, &none, &none, &eps_str, &out->value}),
      {"tern::layer_norm", "eps", "expected a double", "found string"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
