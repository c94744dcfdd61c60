// tern::relu over dtypes and shapes, NaN handling and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

template <typename T>
void check_relu(const std::vector<int64_t>& shape) {
  auto x = random_tensor<T>(shape, 21);
  auto out = zeros<T>(shape);
  ASSERT_EQ(call_kernel("tern::relu", {&x->value, &out->value}), Error::Ok) << last_error_message();
  for (size_t i = 0; i < x->data.size(); ++i) {
    const T expected = x->data[i] > 0 ? x->data[i] : T(0);
    ASSERT_EQ(out->data[i], expected) << "element " << i;
  }
}

class ReluShapeTest
    : public KernelTest,
      public ::testing::WithParamInterface<std::tuple<std::vector<int64_t>, DType>> {};

TEST_P(ReluShapeTest, MatchesNaiveLoop) {
  const auto& shape = std::get<0>(GetParam());
  switch (std::get<1>(GetParam())) {
    case DType::F32: check_relu<float>(shape); break;
    case DType::I32: check_relu<int32_t>(shape); break;
    case DType::I64: check_relu<int64_t>(shape); break;
    default: FAIL();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ReluShapeTest,
    ::testing::Combine(::testing::Values(std::vector<int64_t>{}, std::vector<int64_t>{1},
                                         std::vector<int64_t>{37}, std::vector<int64_t>{3, 5, 7},
                                         std::vector<int64_t>{0, 4}),
                       ::testing::Values(DType::F32, DType::I32, DType::I64)));

class ReluTest : public KernelTest {};

TEST_F(ReluTest, HandWorkedValuesAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  OwnedTensor<float> x({5}, {-1.0f, 0.0f, 2.5f, nan, -0.0f});
  OwnedTensor<float> out({5}, std::vector<float>(5, 9.0f));
  ASSERT_EQ(call_kernel("tern::relu", {&x.value, &out.value}), Error::Ok);
  EXPECT_EQ(out.data[0], 0.0f);
  EXPECT_EQ(out.data[1], 0.0f);
  EXPECT_EQ(out.data[2], 2.5f);
  EXPECT_TRUE(std::isnan(out.data[3]));
  EXPECT_EQ(out.data[4], 0.0f);
}

TEST_F(ReluTest, InPlace) {
  OwnedTensor<int32_t> x({3}, {-4, 4, 0});
  ASSERT_EQ(call_kernel("tern::relu", {&x.value, &x.value}), Error::Ok);
  EXPECT_EQ(x.data, (std::vector<int32_t>{0, 4, 0}));
}

TEST_F(ReluTest, Errors) {
  auto x = zeros<float>({2, 3});
  auto out_shape = zeros<float>({3, 2});
  expect_invalid(call_kernel("tern::relu", {&x->value, &out_shape->value}),
                 {"tern::relu", "out", "expected shape [2, 3]", "found [3, 2]"});
  auto out_dtype = zeros<int32_t>({2, 3});
  expect_invalid(call_kernel("tern::relu", {&x->value, &out_dtype->value}),
                 {"tern::relu", "out", "expected dtype f32", "found i32"});
  auto h = zeros<int16_t>({2});
  expect_invalid(call_kernel("tern::relu", {&h->value, &h->value}),
                 {"tern::relu", "x", "found i16"});
  EValue d = EValue::from_double(1.0);
  expect_invalid(call_kernel("tern::relu", {&d, &x->value}),
                 {"tern::relu", "argument 0 (x)", "expected a tensor, found double"});
  expect_invalid(call_kernel("tern::relu", {&x->value}),
                 {"tern::relu", "expected 2 arguments, found 1"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
