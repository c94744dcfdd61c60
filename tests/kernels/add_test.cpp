// tern::add: broadcasting, dtypes, alpha, scalars and argument errors against naive loops.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

struct BroadcastCase {
  std::vector<int64_t> a;
  std::vector<int64_t> b;
  std::vector<int64_t> out;
};

// Shapes with equal shapes, size-1 dims, rank mismatch, rank 0, empty and rank 8.
const std::vector<BroadcastCase>& broadcast_cases() {
  static const std::vector<BroadcastCase> cases = {
      {{3, 4}, {3, 4}, {3, 4}},
      {{3, 4}, {4}, {3, 4}},
      {{4}, {3, 4}, {3, 4}},
      {{3, 1}, {1, 4}, {3, 4}},
      {{2, 3, 4}, {3, 1}, {2, 3, 4}},
      {{}, {}, {}},
      {{5}, {}, {5}},
      {{}, {2, 3}, {2, 3}},
      {{1}, {7}, {7}},
      {{2, 1, 5, 1}, {3, 1, 6}, {2, 3, 5, 6}},
      {{17, 33}, {17, 33}, {17, 33}},
      {{17, 1, 33}, {1, 9, 1}, {17, 9, 33}},
      {{0, 3}, {3}, {0, 3}},
      {{1, 1, 1}, {1}, {1, 1, 1}},
      {{2, 1, 2, 1, 2, 1, 2, 1}, {1, 2, 1, 2, 1, 2, 1, 2}, {2, 2, 2, 2, 2, 2, 2, 2}},
  };
  return cases;
}

enum class Alpha { None, Int, Double };

template <typename T>
void check_add(const BroadcastCase& c, Alpha alpha_kind) {
  auto a = random_tensor<T>(c.a, 1);
  auto b = random_tensor<T>(c.b, 2);
  auto out = zeros<T>(c.out);
  EValue alpha;
  double alpha_value = 1.0;
  std::vector<EValue*> args = {&a->value, &b->value};
  if (alpha_kind == Alpha::Int) {
    alpha = EValue::from_int(-3);
    alpha_value = -3;
    args.push_back(&alpha);
  } else if (alpha_kind == Alpha::Double) {
    alpha = EValue::from_double(0.5);
    alpha_value = 0.5;
    args.push_back(&alpha);
  }
  args.push_back(&out->value);
  const Error err = call_kernel("tern::add", args);
  if (alpha_kind == Alpha::Double && !std::is_floating_point<T>::value) {
    expect_invalid(err, {"tern::add", "alpha", "expected an int"});
    return;
  }
  ASSERT_EQ(err, Error::Ok) << last_error_message();
  const int64_t n = numel_of(c.out);
  for (int64_t i = 0; i < n; ++i) {
    const T av = a->data[broadcast_offset(c.a, c.out, i)];
    const T bv = b->data[broadcast_offset(c.b, c.out, i)];
    if constexpr (std::is_floating_point<T>::value) {
      const float expected = av + static_cast<float>(alpha_value) * bv;
      ASSERT_FLOAT_EQ(out->data[i], expected) << "element " << i;
    } else {
      const T expected = static_cast<T>(av + static_cast<T>(alpha_value) * bv);
      ASSERT_EQ(out->data[i], expected) << "element " << i;
    }
  }
}

class AddBroadcastTest : public KernelTest,
                         public ::testing::WithParamInterface<std::tuple<size_t, DType, Alpha>> {};

TEST_P(AddBroadcastTest, MatchesNaiveLoop) {
  const BroadcastCase& c = broadcast_cases()[std::get<0>(GetParam())];
  const Alpha alpha = std::get<2>(GetParam());
  switch (std::get<1>(GetParam())) {
    case DType::F32: check_add<float>(c, alpha); break;
    case DType::I32: check_add<int32_t>(c, alpha); break;
    case DType::I64: check_add<int64_t>(c, alpha); break;
    default: FAIL();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AddBroadcastTest,
    ::testing::Combine(::testing::Range<size_t>(0, broadcast_cases().size()),
                       ::testing::Values(DType::F32, DType::I32, DType::I64),
                       ::testing::Values(Alpha::None, Alpha::Int, Alpha::Double)));

class AddTest : public KernelTest {};

TEST_F(AddTest, HandWorkedValues) {
  OwnedTensor<float> a({2, 2}, {1.0f, 2.0f, 3.0f, 4.0f});
  OwnedTensor<float> b({2}, {10.0f, 20.0f});
  OwnedTensor<float> out({2, 2}, std::vector<float>(4));
  EValue alpha = EValue::from_int(2);
  ASSERT_EQ(call_kernel("tern::add", {&a.value, &b.value, &alpha, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{21.0f, 42.0f, 23.0f, 44.0f}));
}

TEST_F(AddTest, ScalarOther) {
  OwnedTensor<float> a({3}, {1.0f, -2.0f, 0.5f});
  OwnedTensor<float> out({3}, std::vector<float>(3));
  EValue b = EValue::from_double(1.5);
  ASSERT_EQ(call_kernel("tern::add", {&a.value, &b, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{2.5f, -0.5f, 2.0f}));
  OwnedTensor<int64_t> ai({2}, {5, -5});
  OwnedTensor<int64_t> outi({2}, {0, 0});
  EValue bi = EValue::from_int(7);
  ASSERT_EQ(call_kernel("tern::add", {&ai.value, &bi, &outi.value}), Error::Ok);
  EXPECT_EQ(outi.data, (std::vector<int64_t>{12, 2}));
}

TEST_F(AddTest, InPlaceSameShape) {
  OwnedTensor<float> a({4}, {1.0f, 2.0f, 3.0f, 4.0f});
  OwnedTensor<float> b({4}, {1.0f, 1.0f, 1.0f, 1.0f});
  ASSERT_EQ(call_kernel("tern::add", {&a.value, &b.value, &a.value}), Error::Ok);
  EXPECT_EQ(a.data, (std::vector<float>{2.0f, 3.0f, 4.0f, 5.0f}));
}

TEST_F(AddTest, IntegerOverflowWraps) {
  OwnedTensor<int32_t> a({1}, {INT32_MAX});
  OwnedTensor<int32_t> b({1}, {1});
  OwnedTensor<int32_t> out({1}, {0});
  ASSERT_EQ(call_kernel("tern::add", {&a.value, &b.value, &out.value}), Error::Ok);
  EXPECT_EQ(out.data[0], INT32_MIN);
}

TEST_F(AddTest, ShapesThatDoNotBroadcast) {
  auto a = zeros<float>({3, 4});
  auto b = zeros<float>({5});
  auto out = zeros<float>({3, 4});
  expect_invalid(call_kernel("tern::add", {&a->value, &b->value, &out->value}),
                 {"tern::add", "[3, 4]", "[5]", "do not broadcast"});
}

TEST_F(AddTest, WrongOutShape) {
  auto a = zeros<float>({3, 4});
  auto b = zeros<float>({4});
  auto out = zeros<float>({3, 5});
  expect_invalid(call_kernel("tern::add", {&a->value, &b->value, &out->value}),
                 {"tern::add", "out", "expected shape [3, 4]", "found [3, 5]"});
  auto out_rank = zeros<float>({12});
  expect_invalid(call_kernel("tern::add", {&a->value, &b->value, &out_rank->value}),
                 {"out", "expected shape [3, 4]", "found [12]"});
}

TEST_F(AddTest, WrongDtypes) {
  auto a = zeros<float>({2});
  auto b = zeros<int32_t>({2});
  auto out = zeros<float>({2});
  // f32 + i32 promotes to f32 (torch.result_type); out must have the promoted dtype.
  ASSERT_EQ(call_kernel("tern::add", {&a->value, &b->value, &out->value}), Error::Ok);
  expect_invalid(call_kernel("tern::add", {&a->value, &b->value, &b->value}),
                 {"tern::add", "out", "expected dtype f32", "found i32"});
  auto outi = zeros<int32_t>({2});
  auto bf = zeros<float>({2});
  expect_invalid(call_kernel("tern::add", {&a->value, &bf->value, &outi->value}),
                 {"out", "expected dtype f32", "found i32"});
  auto h = zeros<int16_t>({2});
  expect_invalid(call_kernel("tern::add", {&h->value, &h->value, &h->value}),
                 {"a", "f32, i32, i64", "found i16"});
}

TEST_F(AddTest, WrongArgumentKinds) {
  auto a = zeros<float>({2});
  auto out = zeros<float>({2});
  EValue i = EValue::from_int(1);
  expect_invalid(call_kernel("tern::add", {&i, &a->value, &out->value}),
                 {"tern::add", "argument 0 (a)", "expected a tensor, found int"});
  EValue none;
  expect_invalid(call_kernel("tern::add", {&a->value, &none, &out->value}),
                 {"argument 1 (b)", "found none"});
  expect_invalid(call_kernel("tern::add", {&a->value, &a->value, &a->value, &i}),
                 {"argument 3 (out)", "found int"});
  EValue s = EValue::from_string("x", 1);
  expect_invalid(call_kernel("tern::add", {&a->value, &a->value, &s, &out->value}),
                 {"alpha", "found string"});
  expect_invalid(call_kernel("tern::add", {&a->value, &out->value}),
                 {"tern::add", "expected 3 to 4 arguments, found 2"});
  expect_invalid(call_kernel("tern::add", {&a->value, nullptr, &out->value}), {"null"});
}

TEST_F(AddTest, BadTensorViews) {
  auto a = zeros<float>({4});
  auto out = zeros<float>({4});
  a->view.nbytes = 8;
  expect_invalid(call_kernel("tern::add", {&a->value, &a->value, &out->value}),
                 {"a", "expected at least 16 bytes", "found 8"});
  a->view.nbytes = 16;
  const uint8_t order[2] = {1, 0};
  auto m = zeros<float>({2, 2});
  m->view.dim_order = order;
  expect_invalid(call_kernel("tern::add", {&m->value, &m->value, &m->value}),
                 {"contiguous"});
  a->view.data = nullptr;
  expect_invalid(call_kernel("tern::add", {&a->value, &a->value, &out->value}), {"null data"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
