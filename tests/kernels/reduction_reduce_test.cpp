// tern::sum/mean/amax/amin/argmax/argmin/cumsum: hand-worked values, a naive multi-dim loop,
// and error paths (messages name op, argument, expected and found).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

class ReduceTest : public KernelTest {};

// Scalar argument values owned by the test.
struct Dims {
  std::vector<int64_t> v;
  EValue value;
  explicit Dims(std::vector<int64_t> d) : v(std::move(d)) {
    value = EValue::from_int_list(Span<const int64_t>(v.data(), v.size()));
  }
};

TEST_F(ReduceTest, SumMeanHandWorked) {
  // x = [[1, 2, 3], [4, 5, 6]]
  OwnedTensor<float> x({2, 3}, {1, 2, 3, 4, 5, 6});
  Dims d0({0});
  Dims d1({-1});
  Dims all({});
  EValue keep = EValue::from_bool(true);
  EValue drop = EValue::from_bool(false);
  OwnedTensor<float> s0({3}, std::vector<float>(3));
  ASSERT_EQ(call_kernel("tern::sum", {&x.value, &d0.value, &drop, &s0.value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(s0.data, (std::vector<float>{5, 7, 9}));
  OwnedTensor<float> m1({2, 1}, std::vector<float>(2));
  ASSERT_EQ(call_kernel("tern::mean", {&x.value, &d1.value, &keep, &m1.value}), Error::Ok);
  EXPECT_EQ(m1.data, (std::vector<float>{2, 5}));
  OwnedTensor<float> total({}, std::vector<float>(1));
  ASSERT_EQ(call_kernel("tern::sum", {&x.value, &all.value, &drop, &total.value}), Error::Ok);
  EXPECT_EQ(total.data[0], 21.0f);
  OwnedTensor<float> mx({3}, std::vector<float>(3));
  ASSERT_EQ(call_kernel("tern::amax", {&x.value, &d0.value, &drop, &mx.value}), Error::Ok);
  EXPECT_EQ(mx.data, (std::vector<float>{4, 5, 6}));
  OwnedTensor<float> mn({2}, std::vector<float>(2));
  ASSERT_EQ(call_kernel("tern::amin", {&x.value, &d1.value, &drop, &mn.value}), Error::Ok);
  EXPECT_EQ(mn.data, (std::vector<float>{1, 4}));
}

TEST_F(ReduceTest, SumOverNonAdjacentDimsMatchesNaiveLoop) {
  const std::vector<int64_t> shape = {3, 4, 5, 6};
  auto x = random_tensor<float>(shape, 7);
  Dims dims({0, -2});
  EValue drop = EValue::from_bool(false);
  auto out = zeros<float>({4, 6});
  ASSERT_EQ(call_kernel("tern::sum", {&x->value, &dims.value, &drop, &out->value}), Error::Ok)
      << last_error_message();
  for (int64_t b = 0; b < 4; ++b) {
    for (int64_t d = 0; d < 6; ++d) {
      double expected = 0;
      for (int64_t a = 0; a < 3; ++a) {
        for (int64_t c = 0; c < 5; ++c) expected += x->data[((a * 4 + b) * 5 + c) * 6 + d];
      }
      EXPECT_NEAR(out->data[b * 6 + d], expected, 1e-5) << b << "," << d;
    }
  }
}

TEST_F(ReduceTest, IntegerSumPromotesToI64) {
  OwnedTensor<int32_t> x({2, 2}, {2000000000, 2000000000, -1, 5});
  Dims d1({1});
  EValue drop = EValue::from_bool(false);
  OwnedTensor<int64_t> out({2}, std::vector<int64_t>(2));
  ASSERT_EQ(call_kernel("tern::sum", {&x.value, &d1.value, &drop, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{4000000000LL, 4}));
}

TEST_F(ReduceTest, EmptyReductions) {
  auto x = zeros<float>({0, 3});
  Dims d0({0});
  EValue drop = EValue::from_bool(false);
  OwnedTensor<float> out({3}, std::vector<float>(3, 9.0f));
  ASSERT_EQ(call_kernel("tern::sum", {&x->value, &d0.value, &drop, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{0, 0, 0}));
  ASSERT_EQ(call_kernel("tern::mean", {&x->value, &d0.value, &drop, &out.value}), Error::Ok);
  EXPECT_TRUE(std::isnan(out.data[0]));
  expect_invalid(call_kernel("tern::amax", {&x->value, &d0.value, &drop, &out.value}),
                 {"tern::amax", "non-zero size", "size 0"});
}

TEST_F(ReduceTest, ReduceErrors) {
  auto x = zeros<float>({2, 3});
  EValue drop = EValue::from_bool(false);
  auto out = zeros<float>({3});
  Dims bad_dim({2});
  expect_invalid(call_kernel("tern::sum", {&x->value, &bad_dim.value, &drop, &out->value}),
                 {"tern::sum", "dims", "[-2, 1]", "found 2"});
  Dims dup({0, -2});
  expect_invalid(call_kernel("tern::sum", {&x->value, &dup.value, &drop, &out->value}),
                 {"tern::sum", "more than once"});
  Dims d0({0});
  auto wrong = zeros<float>({2});
  expect_invalid(call_kernel("tern::mean", {&x->value, &d0.value, &drop, &wrong->value}),
                 {"tern::mean", "out", "expected shape [3]", "found [2]"});
  EValue not_bool = EValue::from_int(1);
  expect_invalid(call_kernel("tern::sum", {&x->value, &d0.value, &not_bool, &out->value}),
                 {"tern::sum", "keepdim", "expected a bool", "found int"});
  auto xi = zeros<int64_t>({2, 3});
  expect_invalid(call_kernel("tern::mean", {&xi->value, &d0.value, &drop, &out->value}),
                 {"tern::mean", "x", "expected dtype f32", "found i64"});
  auto out_i32 = zeros<int32_t>({3});
  expect_invalid(call_kernel("tern::sum", {&xi->value, &d0.value, &drop, &out_i32->value}),
                 {"tern::sum", "out", "expected dtype i64", "found i32"});
  expect_invalid(call_kernel("tern::sum", {&x->value, &d0.value, &drop}),
                 {"tern::sum", "expected 4 arguments", "found 3"});
}

TEST_F(ReduceTest, ArgmaxFirstTieAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // rows: [1, 3, 3, 0], [2, nan, 5, nan]
  OwnedTensor<float> x({2, 4}, {1, 3, 3, 0, 2, nan, 5, nan});
  EValue dim1 = EValue::from_int(1);
  EValue dim0 = EValue::from_int(0);
  EValue drop = EValue::from_bool(false);
  OwnedTensor<int64_t> out({2}, std::vector<int64_t>(2));
  ASSERT_EQ(call_kernel("tern::argmax", {&x.value, &dim1, &drop, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{1, 1}));
  ASSERT_EQ(call_kernel("tern::argmin", {&x.value, &dim1, &drop, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{3, 1}));
  OwnedTensor<int64_t> cols({4}, std::vector<int64_t>(4));
  ASSERT_EQ(call_kernel("tern::argmax", {&x.value, &dim0, &drop, &cols.value}), Error::Ok);
  EXPECT_EQ(cols.data, (std::vector<int64_t>{1, 1, 1, 1}));
  EValue none;
  OwnedTensor<int64_t> flat({}, std::vector<int64_t>(1));
  OwnedTensor<int64_t> y({3}, {4, 9, 9});
  ASSERT_EQ(call_kernel("tern::argmax", {&y.value, &none, &drop, &flat.value}), Error::Ok);
  EXPECT_EQ(flat.data[0], 1);
}

TEST_F(ReduceTest, ArgErrors) {
  auto x = zeros<float>({2, 3});
  EValue dim = EValue::from_int(-3);
  EValue drop = EValue::from_bool(false);
  auto out = zeros<int64_t>({2});
  expect_invalid(call_kernel("tern::argmax", {&x->value, &dim, &drop, &out->value}),
                 {"tern::argmax", "dim", "found -3"});
  EValue dim1 = EValue::from_int(1);
  auto out_f = zeros<float>({2});
  expect_invalid(call_kernel("tern::argmin", {&x->value, &dim1, &drop, &out_f->value}),
                 {"tern::argmin", "out", "expected dtype i64", "found f32"});
  auto empty = zeros<float>({2, 0});
  expect_invalid(call_kernel("tern::argmax", {&empty->value, &dim1, &drop, &out->value}),
                 {"tern::argmax", "non-empty", "size 0"});
}

TEST_F(ReduceTest, CumsumHandWorkedAndErrors) {
  OwnedTensor<float> x({2, 3}, {1, 2, 3, 4, 5, 6});
  EValue dim0 = EValue::from_int(0);
  EValue dim1 = EValue::from_int(-1);
  OwnedTensor<float> out({2, 3}, std::vector<float>(6));
  ASSERT_EQ(call_kernel("tern::cumsum", {&x.value, &dim1, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{1, 3, 6, 4, 9, 15}));
  ASSERT_EQ(call_kernel("tern::cumsum", {&x.value, &dim0, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{1, 2, 3, 5, 7, 9}));
  OwnedTensor<int32_t> xi({3}, {1, -2, 7});
  OwnedTensor<int64_t> oi({3}, std::vector<int64_t>(3));
  ASSERT_EQ(call_kernel("tern::cumsum", {&xi.value, &dim0, &oi.value}), Error::Ok);
  EXPECT_EQ(oi.data, (std::vector<int64_t>{1, -1, 6}));
  EValue dim2 = EValue::from_int(2);
  expect_invalid(call_kernel("tern::cumsum", {&x.value, &dim2, &out.value}),
                 {"tern::cumsum", "dim", "found 2"});
  OwnedTensor<float> bad({3, 2}, std::vector<float>(6));
  expect_invalid(call_kernel("tern::cumsum", {&x.value, &dim0, &bad.value}),
                 {"tern::cumsum", "out", "expected shape [2, 3]", "found [3, 2]"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
