// Span, DType, TensorView, EValue, checked math.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "runtime/core/checked_math.h"
#include "runtime/core/dtype.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"
#include "runtime/core/tensor_view.h"

namespace tern {
namespace {

TEST(SpanTest, ViewsAndSubspans) {
  int a[] = {1, 2, 3, 4};
  Span<int> s(a);
  EXPECT_EQ(s.size(), 4u);
  Span<const int> c = s;
  EXPECT_EQ(c[2], 3);
  Span<int> sub = s.subspan(1, 2);
  EXPECT_EQ(sub.size(), 2u);
  EXPECT_EQ(sub[0], 2);
  int sum = 0;
  for (int v : sub) sum += v;
  EXPECT_EQ(sum, 5);
  EXPECT_TRUE(Span<int>().empty());
}

TEST(CheckedMathTest, DetectsOverflow) {
  uint64_t out;
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  EXPECT_TRUE(checked_add(1, 2, &out));
  EXPECT_EQ(out, 3u);
  EXPECT_FALSE(checked_add(max, 1, &out));
  EXPECT_FALSE(checked_mul(max / 2 + 1, 2, &out));
  EXPECT_TRUE(checked_align_up(65, 64, &out));
  EXPECT_EQ(out, 128u);
  EXPECT_FALSE(checked_align_up(max - 3, 64, &out));
  EXPECT_TRUE(range_within(10, 5, 15));
  EXPECT_FALSE(range_within(10, 6, 15));
  EXPECT_FALSE(range_within(max, 2, max));
  EXPECT_TRUE(is_power_of_two(4096));
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_FALSE(is_power_of_two(96));
}

TEST(DTypeTest, SizesAndNames) {
  uint64_t n;
  ASSERT_TRUE(dtype_nbytes(DType::F32, 10, &n));
  EXPECT_EQ(n, 40u);
  ASSERT_TRUE(dtype_nbytes(DType::NF4, 7, &n));  // 7 codes -> 4 bytes (last low nibble padded)
  EXPECT_EQ(n, 4u);
  ASSERT_TRUE(dtype_nbytes(DType::FP8E4M3, 7, &n));
  EXPECT_EQ(n, 7u);
  ASSERT_TRUE(dtype_nbytes(DType::I64, 3, &n));
  EXPECT_EQ(n, 24u);
  EXPECT_FALSE(dtype_nbytes(DType::I64, std::numeric_limits<uint64_t>::max() / 4, &n));
  EXPECT_STREQ(to_string(DType::FP8E5M2), "fp8_e5m2");
  EXPECT_STREQ(to_string(DType::Bool), "bool");
  EXPECT_TRUE(is_valid_dtype(11));
  EXPECT_FALSE(is_valid_dtype(12));
}

TEST(TensorViewTest, NumelContiguityAndShapeText) {
  int64_t sizes[] = {2, 3, 4};
  uint8_t order[] = {0, 2, 1};
  TensorView t;
  t.rank = 3;
  t.sizes = sizes;
  EXPECT_EQ(t.numel(), 24u);
  EXPECT_TRUE(t.is_contiguous());
  t.dim_order = order;
  EXPECT_FALSE(t.is_contiguous());
  char buf[64];
  EXPECT_STREQ(format_shape(t.shape(), buf, sizeof(buf)), "[2, 3, 4]");
  char tiny[5];
  EXPECT_STREQ(format_shape(t.shape(), tiny, sizeof(tiny)), "[2, ");
  TensorView scalar;
  EXPECT_EQ(scalar.numel(), 1u);
  EXPECT_STREQ(format_shape(scalar.shape(), buf, sizeof(buf)), "[]");
}

TEST(EValueTest, TagsAndPayloads) {
  TensorView t;
  EValue et = EValue::from_tensor(&t);
  EXPECT_TRUE(et.is_tensor());
  EXPECT_EQ(&et.to_tensor(), &t);
  EXPECT_EQ(EValue::from_int(-7).to_int(), -7);
  EXPECT_DOUBLE_EQ(EValue::from_double(2.5).to_double(), 2.5);
  EXPECT_TRUE(EValue::from_bool(true).to_bool());
  const int64_t ints[] = {1, -1};
  EValue il = EValue::from_int_list({ints, 2});
  ASSERT_TRUE(il.is_int_list());
  EXPECT_EQ(il.to_int_list()[1], -1);
  EXPECT_TRUE(EValue::none().is_none());
  EXPECT_STREQ(to_string(EValue::Tag::TensorList), "tensor list");
}

}  // namespace
}  // namespace tern
