// tern::cast: conversions worked by hand, f16/bf16 rounding included (bf16 has no .npy form,
// so the PyTorch harness cannot check it).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/kernels/elementwise_test_util.h"

namespace tern {
namespace testing {
namespace {

class CastTest : public KernelTest {};

TEST_F(CastTest, F32ToBf16RoundsToNearestEven) {
  // bf16 keeps 7 mantissa bits: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 (even: 1);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6 (even: 1 + 2^-6).
  OwnedTensor<float> x(
      {6}, {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.0f, std::numeric_limits<float>::infinity(),
            std::nanf(""), 1.0f + 0x1p-7f + 0x1p-12f});
  auto out = raw_zeros(DType::BF16, {6});
  ASSERT_EQ(call_kernel("tern::cast", {&x.value, &out->value}), Error::Ok);
  EXPECT_EQ(out->get<uint16_t>(0), 0x3f80);
  EXPECT_EQ(out->get<uint16_t>(1), 0x3f82);
  EXPECT_EQ(out->get<uint16_t>(2), 0xc000);
  EXPECT_EQ(out->get<uint16_t>(3), 0x7f80);
  EXPECT_EQ(out->get<uint16_t>(4) & 0x7f80, 0x7f80);
  EXPECT_NE(out->get<uint16_t>(4) & 0x007f, 0);
  EXPECT_EQ(out->get<uint16_t>(5), 0x3f81);
  // And back: exact.
  OwnedTensor<float> back({6}, std::vector<float>(6));
  ASSERT_EQ(call_kernel("tern::cast", {&out->value, &back.value}), Error::Ok);
  EXPECT_EQ(back.data[0], 1.0f);
  EXPECT_EQ(back.data[1], 1.0f + 0x1p-6f);
  EXPECT_EQ(back.data[2], -2.0f);
  EXPECT_TRUE(std::isnan(back.data[4]));
}

TEST_F(CastTest, HalfEdges) {
  // 65504 is the largest half; 65520 rounds to infinity; 2^-24 the smallest subnormal.
  OwnedTensor<float> x({6}, {65504.0f, 65520.0f, 0x1p-24f, 0x1p-25f, 0x1.8p-24f, -0.0f});
  auto out = raw_zeros(DType::F16, {6});
  ASSERT_EQ(call_kernel("tern::cast", {&x.value, &out->value}), Error::Ok);
  EXPECT_EQ(out->get<uint16_t>(0), 0x7bff);
  EXPECT_EQ(out->get<uint16_t>(1), 0x7c00);
  EXPECT_EQ(out->get<uint16_t>(2), 0x0001);
  EXPECT_EQ(out->get<uint16_t>(3), 0x0000);  // a tie, to even
  EXPECT_EQ(out->get<uint16_t>(4), 0x0002);  // 1.5 ulp: a tie, to even
  EXPECT_EQ(out->get<uint16_t>(5), 0x8000);
  // f16 -> bf16 goes through f32 exactly: 65504 = 0x477fe000 -> bf16 rounds to 65536.
  auto bf = raw_zeros(DType::BF16, {6});
  ASSERT_EQ(call_kernel("tern::cast", {&out->value, &bf->value}), Error::Ok);
  EXPECT_EQ(bf->get<uint16_t>(0), 0x4780);
  EXPECT_EQ(bf->get<uint16_t>(2), 0x3380);  // 2^-24
}

TEST_F(CastTest, FloatToIntTruncatesAndBoolIsNonzero) {
  OwnedTensor<float> x({5}, {-2.7f, 2.7f, -0.0f, std::nanf(""), -1.5f});
  OwnedTensor<int32_t> i({5}, std::vector<int32_t>(5));
  ASSERT_EQ(call_kernel("tern::cast", {&x.value, &i.value}), Error::Ok);
  EXPECT_EQ(i.data[0], -2);
  EXPECT_EQ(i.data[1], 2);
  EXPECT_EQ(i.data[2], 0);
  EXPECT_EQ(i.data[4], -1);
  auto u = raw_zeros(DType::U8, {5});
  ASSERT_EQ(call_kernel("tern::cast", {&x.value, &u->value}), Error::Ok);
  EXPECT_EQ(u->bytes[0], 254);  // -2 wraps
  EXPECT_EQ(u->bytes[4], 255);
  auto b = raw_zeros(DType::Bool, {5});
  ASSERT_EQ(call_kernel("tern::cast", {&x.value, &b->value}), Error::Ok);
  EXPECT_EQ(b->bytes, (std::vector<uint8_t>{1, 1, 0, 1, 1}));
}

TEST_F(CastTest, IntegerWrapAndBoolBytes) {
  OwnedTensor<int64_t> x({3}, {(int64_t{1} << 32) + 5, -1, 300});
  OwnedTensor<int32_t> i({3}, std::vector<int32_t>(3));
  ASSERT_EQ(call_kernel("tern::cast", {&x.value, &i.value}), Error::Ok);
  EXPECT_EQ(i.data, (std::vector<int32_t>{5, -1, 300}));
  auto i8 = raw_zeros(DType::I8, {3});
  ASSERT_EQ(call_kernel("tern::cast", {&x.value, &i8->value}), Error::Ok);
  EXPECT_EQ(i8->get<int8_t>(2), 44);  // 300 - 256
  auto b = raw<uint8_t>(DType::Bool, {3}, {0, 7, 1});
  OwnedTensor<float> f({3}, std::vector<float>(3));
  ASSERT_EQ(call_kernel("tern::cast", {&b->value, &f.value}), Error::Ok);
  EXPECT_EQ(f.data, (std::vector<float>{0.0f, 1.0f, 1.0f}));
  auto b2 = raw_zeros(DType::Bool, {3});
  ASSERT_EQ(call_kernel("tern::cast", {&b->value, &b2->value}), Error::Ok);
  EXPECT_EQ(b2->bytes, (std::vector<uint8_t>{0, 1, 1}));
}

TEST_F(CastTest, Errors) {
  OwnedTensor<float> x({2}, {1.0f, 2.0f});
  auto nf4 = raw_zeros(DType::NF4, {2});
  expect_invalid(call_kernel("tern::cast", {&x.value, &nf4->value}),
                 {"tern::cast", "out", "nf4", "not a cast target"});
  auto small = raw_zeros(DType::F16, {3});
  expect_invalid(call_kernel("tern::cast", {&x.value, &small->value}),
                 {"tern::cast", "out", "expected shape [2]", "found [3]"});
  expect_invalid(call_kernel("tern::cast", {&nf4->value, &x.value}), {"tern::cast", "x", "nf4"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
