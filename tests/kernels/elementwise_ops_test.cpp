// Elementwise kernels: hand-worked values for the cases PyTorch's harness cannot reach
// (bool bytes other than 0/1, integer edge cases) and the error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/kernels/elementwise_test_util.h"

namespace tern {
namespace testing {
namespace {

class ElementwiseTest : public KernelTest {};

EValue str(const char* s) { return EValue::from_string(s, std::strlen(s)); }

TEST_F(ElementwiseTest, EveryOpIsRegistered) {
  for (const char* name :
       {"tern::add",         "tern::sub",         "tern::mul",        "tern::div",
        "tern::pow",         "tern::maximum",     "tern::minimum",    "tern::eq",
        "tern::ne",          "tern::lt",          "tern::le",         "tern::gt",
        "tern::ge",          "tern::logical_and", "tern::logical_or", "tern::logical_not",
        "tern::where",       "tern::neg",         "tern::abs",        "tern::exp",
        "tern::log",         "tern::sqrt",        "tern::rsqrt",      "tern::reciprocal",
        "tern::sin",         "tern::cos",         "tern::tanh",       "tern::sigmoid",
        "tern::erf",         "tern::floor",       "tern::ceil",       "tern::round",
        "tern::relu",        "tern::hardtanh",    "tern::clamp",      "tern::leaky_relu",
        "tern::elu",         "tern::gelu",        "tern::silu",       "tern::hardswish",
        "tern::hardsigmoid", "tern::softplus",    "tern::cast",       "tern::expm1",
        "tern::log1p",       "tern::acos",        "tern::asin",       "tern::atan"}) {
    EXPECT_NE(find_kernel(name), nullptr) << name;
  }
}

TEST_F(ElementwiseTest, SubWithAlphaAndScalar) {
  OwnedTensor<float> a({3}, {1.0f, 2.0f, 3.0f});
  OwnedTensor<float> out({3}, std::vector<float>(3));
  EValue b = EValue::from_double(0.5);
  EValue alpha = EValue::from_int(4);
  ASSERT_EQ(call_kernel("tern::sub", {&a.value, &b, &alpha, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{-1.0f, 0.0f, 1.0f}));
  // Operands of different dtypes promote (f32 with i64 gives f32).
  OwnedTensor<int64_t> bi({3}, {1, 2, 3});
  ASSERT_EQ(call_kernel("tern::sub", {&a.value, &bi.value, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{0.0f, 0.0f, 0.0f}));
}

TEST_F(ElementwiseTest, IntegerDivisionRounding) {
  OwnedTensor<int64_t> a({6}, {7, -7, 7, -7, INT64_MIN, 0});
  OwnedTensor<int64_t> b({6}, {2, 2, -2, -2, -1, 5});
  OwnedTensor<int64_t> out({6}, std::vector<int64_t>(6));
  EValue trunc = str("trunc");
  ASSERT_EQ(call_kernel("tern::div", {&a.value, &b.value, &trunc, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{3, -3, -3, 3, INT64_MIN, 0}));
  EValue floor = str("floor");
  ASSERT_EQ(call_kernel("tern::div", {&a.value, &b.value, &floor, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{3, -4, -4, 3, INT64_MIN, 0}));
  // True division of integers gives f32.
  OwnedTensor<float> outf({6}, std::vector<float>(6));
  ASSERT_EQ(call_kernel("tern::div", {&a.value, &b.value, &outf.value}), Error::Ok);
  EXPECT_FLOAT_EQ(outf.data[0], 3.5f);
  EXPECT_FLOAT_EQ(outf.data[1], -3.5f);
  expect_invalid(call_kernel("tern::div", {&a.value, &b.value, &out.value}),
                 {"tern::div", "out", "expected dtype f32", "found i64"});
}

TEST_F(ElementwiseTest, IntegerDivisionByZeroIsAnError) {
  OwnedTensor<int32_t> a({2}, {1, 2});
  OwnedTensor<int32_t> b({2}, {1, 0});
  OwnedTensor<int32_t> out({2}, {0, 0});
  EValue floor = str("floor");
  expect_invalid(call_kernel("tern::div", {&a.value, &b.value, &floor, &out.value}),
                 {"tern::div", "division by zero"});
  // Float division by zero is IEEE.
  OwnedTensor<float> fa({2}, {1.0f, -1.0f});
  OwnedTensor<float> fb({2}, {0.0f, 0.0f});
  OwnedTensor<float> fo({2}, {0.0f, 0.0f});
  ASSERT_EQ(call_kernel("tern::div", {&fa.value, &fb.value, &floor, &fo.value}), Error::Ok);
  EXPECT_EQ(fo.data[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(fo.data[1], -std::numeric_limits<float>::infinity());
}

TEST_F(ElementwiseTest, BadRoundingMode) {
  auto a = zeros<float>({2});
  EValue mode = str("ceil");
  expect_invalid(call_kernel("tern::div", {&a->value, &a->value, &mode, &a->value}),
                 {"tern::div", "rounding_mode", "\"trunc\", \"floor\" or None", "\"ceil\""});
  EValue i = EValue::from_int(1);
  expect_invalid(call_kernel("tern::div", {&a->value, &a->value, &i, &a->value}),
                 {"rounding_mode", "found int"});
}

TEST_F(ElementwiseTest, BoolBytesOtherThanOneAreTrue) {
  // A file may hold bool bytes other than 0 and 1: every kernel reads them as true.
  auto a = raw<uint8_t>(DType::Bool, {4}, {0, 1, 2, 255});
  auto b = raw<uint8_t>(DType::Bool, {4}, {2, 2, 1, 128});
  auto out = raw_zeros(DType::Bool, {4});
  ASSERT_EQ(call_kernel("tern::logical_and", {&a->value, &b->value, &out->value}), Error::Ok);
  EXPECT_EQ(out->bytes, (std::vector<uint8_t>{0, 1, 1, 1}));
  ASSERT_EQ(call_kernel("tern::mul", {&a->value, &b->value, &out->value}), Error::Ok);
  EXPECT_EQ(out->bytes, (std::vector<uint8_t>{0, 1, 1, 1}));
  ASSERT_EQ(call_kernel("tern::eq", {&a->value, &b->value, &out->value}), Error::Ok);
  EXPECT_EQ(out->bytes, (std::vector<uint8_t>{0, 1, 1, 1}));
  ASSERT_EQ(call_kernel("tern::logical_not", {&a->value, &out->value}), Error::Ok);
  EXPECT_EQ(out->bytes, (std::vector<uint8_t>{1, 0, 0, 0}));
  OwnedTensor<float> x({4}, {1.0f, 2.0f, 3.0f, 4.0f});
  OwnedTensor<float> y({4}, {-1.0f, -2.0f, -3.0f, -4.0f});
  OwnedTensor<float> o({4}, std::vector<float>(4));
  ASSERT_EQ(call_kernel("tern::where", {&a->value, &x.value, &y.value, &o.value}), Error::Ok);
  EXPECT_EQ(o.data, (std::vector<float>{-1.0f, 2.0f, 3.0f, 4.0f}));
}

TEST_F(ElementwiseTest, LogicalTruthOfFloats) {
  OwnedTensor<float> a({4}, {-0.0f, std::nanf(""), 1e-30f, 0.0f});
  auto out = raw_zeros(DType::Bool, {4});
  ASSERT_EQ(call_kernel("tern::logical_not", {&a.value, &out->value}), Error::Ok);
  EXPECT_EQ(out->bytes, (std::vector<uint8_t>{1, 0, 0, 1}));
  EValue t = EValue::from_bool(true);
  ASSERT_EQ(call_kernel("tern::logical_or", {&a.value, &t, &out->value}), Error::Ok);
  EXPECT_EQ(out->bytes, (std::vector<uint8_t>{1, 1, 1, 1}));
}

TEST_F(ElementwiseTest, RoundHalfToEvenAndIntegerPassThrough) {
  OwnedTensor<float> x({6}, {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 2.4999998f});
  OwnedTensor<float> out({6}, std::vector<float>(6));
  ASSERT_EQ(call_kernel("tern::round", {&x.value, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 2.0f}));
  OwnedTensor<int32_t> xi({2}, {-3, 7});
  OwnedTensor<int32_t> oi({2}, {0, 0});
  ASSERT_EQ(call_kernel("tern::floor", {&xi.value, &oi.value}), Error::Ok);
  EXPECT_EQ(oi.data, (std::vector<int32_t>{-3, 7}));
}

TEST_F(ElementwiseTest, IntegerNegAbsWrap) {
  OwnedTensor<int32_t> x({3}, {INT32_MIN, -5, 5});
  OwnedTensor<int32_t> out({3}, {0, 0, 0});
  ASSERT_EQ(call_kernel("tern::neg", {&x.value, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int32_t>{INT32_MIN, 5, -5}));
  ASSERT_EQ(call_kernel("tern::abs", {&x.value, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int32_t>{INT32_MIN, 5, 5}));
}

TEST_F(ElementwiseTest, ActivationsHandWorked) {
  OwnedTensor<float> x({4}, {-2.0f, -0.5f, 0.0f, 3.0f});
  OwnedTensor<float> out({4}, std::vector<float>(4));
  EValue lo = EValue::from_int(0);
  EValue hi = EValue::from_double(1.0);
  ASSERT_EQ(call_kernel("tern::hardtanh", {&x.value, &lo, &hi, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{0.0f, 0.0f, 0.0f, 1.0f}));
  ASSERT_EQ(call_kernel("tern::hardsigmoid", {&x.value, &out.value}), Error::Ok);
  EXPECT_FLOAT_EQ(out.data[0], 1.0f / 6.0f);
  EXPECT_FLOAT_EQ(out.data[3], 1.0f);
  ASSERT_EQ(call_kernel("tern::hardswish", {&x.value, &out.value}), Error::Ok);
  EXPECT_FLOAT_EQ(out.data[1], -0.5f * 2.5f / 6.0f);
  EXPECT_FLOAT_EQ(out.data[3], 3.0f);
  // Omitted trailing attributes take ATen's defaults: leaky_relu slope 0.01.
  ASSERT_EQ(call_kernel("tern::leaky_relu", {&x.value, &out.value}), Error::Ok);
  EXPECT_FLOAT_EQ(out.data[0], -0.02f);
  // softplus above the threshold is the identity.
  EValue beta = EValue::from_double(1.0);
  EValue threshold = EValue::from_double(2.0);
  ASSERT_EQ(call_kernel("tern::softplus", {&x.value, &beta, &threshold, &out.value}), Error::Ok);
  EXPECT_FLOAT_EQ(out.data[3], 3.0f);
  EXPECT_FLOAT_EQ(out.data[2], std::log(2.0f));
  EValue tanh_form = str("tanh");
  ASSERT_EQ(call_kernel("tern::gelu", {&x.value, &tanh_form, &out.value}), Error::Ok);
  EXPECT_FLOAT_EQ(out.data[2], 0.0f);
}

TEST_F(ElementwiseTest, ClampPromotesIntWithDoubleBound) {
  OwnedTensor<int64_t> x({3}, {-5, 0, 5});
  OwnedTensor<float> out({3}, std::vector<float>(3));
  EValue lo = EValue::from_double(-1.5);
  EValue none;
  ASSERT_EQ(call_kernel("tern::clamp", {&x.value, &lo, &none, &out.value}), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{-1.5f, 0.0f, 5.0f}));
  OwnedTensor<int64_t> outi({3}, {0, 0, 0});
  expect_invalid(call_kernel("tern::clamp", {&x.value, &lo, &none, &outi.value}),
                 {"tern::clamp", "out", "expected dtype f32", "found i64"});
  expect_invalid(call_kernel("tern::clamp", {&x.value, &none, &none, &outi.value}),
                 {"tern::clamp", "min or max", "both None"});
  EValue s = str("x");
  expect_invalid(call_kernel("tern::clamp", {&x.value, &s, &none, &outi.value}),
                 {"argument 1 (min)", "found string"});
}

TEST_F(ElementwiseTest, BinaryErrors) {
  auto a = zeros<float>({3, 4});
  auto b = zeros<float>({5});
  auto out = zeros<float>({3, 4});
  expect_invalid(call_kernel("tern::maximum", {&a->value, &b->value, &out->value}),
                 {"tern::maximum", "[3, 4]", "[5]", "do not broadcast"});
  auto out_shape = zeros<float>({4, 3});
  expect_invalid(call_kernel("tern::pow", {&a->value, &a->value, &out_shape->value}),
                 {"tern::pow", "out", "expected shape [3, 4]", "found [4, 3]"});
  auto ai = zeros<int64_t>({3, 4});
  expect_invalid(call_kernel("tern::pow", {&ai->value, &ai->value, &ai->value}),
                 {"tern::pow", "expected dtype one of {f32}", "found i64"});
  EValue x = EValue::from_int(1), y = EValue::from_double(2.0);
  expect_invalid(call_kernel("tern::mul", {&x, &y, &out->value}),
                 {"tern::mul", "argument 0 (a)", "expected a tensor, found int"});
  EValue big = EValue::from_int(int64_t{1} << 40);
  auto a32 = zeros<int32_t>({2});
  expect_invalid(call_kernel("tern::add", {&a32->value, &big, &a32->value}),
                 {"tern::add", "does not fit"});
  auto out_f = zeros<float>({3, 4});
  expect_invalid(call_kernel("tern::eq", {&a->value, &a->value, &out_f->value}),
                 {"tern::eq", "out", "expected dtype bool", "found f32"});
  auto nf4 = raw_zeros(DType::NF4, {4});
  auto o4 = zeros<float>({4});
  expect_invalid(call_kernel("tern::add", {&nf4->value, &o4->value, &o4->value}),
                 {"tern::add", "a", "nf4", "not supported"});
}

TEST_F(ElementwiseTest, WhereErrors) {
  auto c = raw_zeros(DType::Bool, {3, 1});
  auto a = zeros<float>({4});
  auto out = zeros<float>({3, 4});
  auto ci = zeros<int64_t>({3, 1});
  expect_invalid(call_kernel("tern::where", {&ci->value, &a->value, &a->value, &out->value}),
                 {"tern::where", "cond", "expected dtype bool", "found i64"});
  auto bad = zeros<float>({5});
  expect_invalid(call_kernel("tern::where", {&c->value, &a->value, &bad->value, &out->value}),
                 {"tern::where", "do not broadcast"});
  auto outi = zeros<int64_t>({3, 4});
  expect_invalid(call_kernel("tern::where", {&c->value, &a->value, &a->value, &outi->value}),
                 {"tern::where", "out", "expected dtype f32", "found i64"});
  auto small = zeros<float>({4});
  expect_invalid(call_kernel("tern::where", {&c->value, &a->value, &a->value, &small->value}),
                 {"out", "expected shape [3, 4]", "found [4]"});
}

TEST_F(ElementwiseTest, UnaryErrors) {
  auto x = zeros<float>({2, 3});
  auto out_i = zeros<int32_t>({2, 3});
  expect_invalid(call_kernel("tern::exp", {&x->value, &out_i->value}),
                 {"tern::exp", "out", "expected dtype f32", "found i32"});
  auto xi = zeros<int32_t>({2, 3});
  expect_invalid(call_kernel("tern::gelu", {&xi->value, &x->value}),
                 {"tern::gelu", "expected dtype one of {f32}", "found i32"});
  EValue bad = str("fast");
  expect_invalid(call_kernel("tern::gelu", {&x->value, &bad, &x->value}),
                 {"tern::gelu", "approximate", "\"fast\""});
  auto wrong = zeros<float>({3, 2});
  expect_invalid(call_kernel("tern::sigmoid", {&x->value, &wrong->value}),
                 {"tern::sigmoid", "out", "expected shape [2, 3]", "found [3, 2]"});
  EValue s = str("x");
  expect_invalid(call_kernel("tern::elu", {&x->value, &s, &x->value}),
                 {"tern::elu", "argument 1 (alpha)", "expected a double, found string"});
  expect_invalid(call_kernel("tern::silu", {&x->value, &x->value, &x->value}),
                 {"tern::silu", "expected 2 arguments, found 3"});
  auto xb = raw_zeros(DType::Bool, {2});
  auto ob = raw_zeros(DType::Bool, {2});
  expect_invalid(call_kernel("tern::neg", {&xb->value, &ob->value}), {"tern::neg", "found bool"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
