// tern::mul: broadcasting over shapes and dtypes against a naive loop, plus errors.
#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

struct MulCase {
  std::vector<int64_t> a;
  std::vector<int64_t> b;
  std::vector<int64_t> out;
};

const std::vector<MulCase>& mul_cases() {
  static const std::vector<MulCase> cases = {
      {{6}, {6}, {6}},
      {{3, 5}, {5}, {3, 5}},
      {{3, 1}, {1, 5}, {3, 5}},
      {{}, {4, 3}, {4, 3}},
      {{4, 3}, {}, {4, 3}},
      {{}, {}, {}},
      {{2, 1, 3}, {4, 1}, {2, 4, 3}},
      {{31, 7}, {31, 1}, {31, 7}},
      {{1, 65}, {65}, {1, 65}},
      {{2, 0}, {1}, {2, 0}},
  };
  return cases;
}

template <typename T>
void check_mul(const MulCase& c) {
  auto a = random_tensor<T>(c.a, 11);
  auto b = random_tensor<T>(c.b, 12);
  auto out = zeros<T>(c.out);
  ASSERT_EQ(call_kernel("tern::mul", {&a->value, &b->value, &out->value}), Error::Ok)
      << last_error_message();
  for (int64_t i = 0; i < numel_of(c.out); ++i) {
    const T expected = static_cast<T>(a->data[broadcast_offset(c.a, c.out, i)] *
                                      b->data[broadcast_offset(c.b, c.out, i)]);
    ASSERT_EQ(out->data[i], expected) << "element " << i;
  }
}

class MulBroadcastTest : public KernelTest,
                         public ::testing::WithParamInterface<std::tuple<size_t, DType>> {};

TEST_P(MulBroadcastTest, MatchesNaiveLoop) {
  const MulCase& c = mul_cases()[std::get<0>(GetParam())];
  switch (std::get<1>(GetParam())) {
    case DType::F32: check_mul<float>(c); break;
    case DType::I32: check_mul<int32_t>(c); break;
    case DType::I64: check_mul<int64_t>(c); break;
    default: FAIL();
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MulBroadcastTest,
                         ::testing::Combine(::testing::Range<size_t>(0, mul_cases().size()),
                                            ::testing::Values(DType::F32, DType::I32,
                                                              DType::I64)));

class MulTest : public KernelTest {};

TEST_F(MulTest, HandWorkedValues) {
  OwnedTensor<float> a({2, 1}, {2.0f, -3.0f});
  OwnedTensor<float> b({3}, {1.0f, 0.5f, 4.0f});
  OwnedTensor<float> out({2, 3}, std::vector<float>(6));
  ASSERT_EQ(call_kernel("tern::mul", {&a.value, &b.value, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{2.0f, 1.0f, 8.0f, -3.0f, -1.5f, -12.0f}));
}

TEST_F(MulTest, RejectsAlpha) {
  auto a = zeros<float>({2});
  EValue alpha = EValue::from_int(2);
  expect_invalid(call_kernel("tern::mul", {&a->value, &a->value, &alpha, &a->value}),
                 {"tern::mul", "expected 3 arguments, found 4"});
}

TEST_F(MulTest, Errors) {
  auto a = zeros<float>({2, 3});
  auto b = zeros<float>({2});
  auto out = zeros<float>({2, 3});
  expect_invalid(call_kernel("tern::mul", {&a->value, &b->value, &out->value}),
                 {"tern::mul", "do not broadcast"});
  auto outi = zeros<int64_t>({2, 3});
  expect_invalid(call_kernel("tern::mul", {&a->value, &a->value, &outi->value}),
                 {"tern::mul", "out", "expected dtype f32", "found i64"});
  auto out_small = zeros<float>({3});
  expect_invalid(call_kernel("tern::mul", {&a->value, &a->value, &out_small->value}),
                 {"out", "expected shape [2, 3]", "found [3]"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
