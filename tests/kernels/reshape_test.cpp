// tern::reshape: -1 inference, copy vs alias, and errors.
#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

class ReshapeTest : public KernelTest {};

TEST_F(ReshapeTest, CopiesWhenNotAliased) {
  auto x = random_tensor<float>({2, 3, 4}, 41);
  auto out = zeros<float>({6, 4});
  const int64_t shape[] = {6, -1};
  EValue s = EValue::from_int_list(Span<const int64_t>(shape));
  ASSERT_EQ(call_kernel("tern::reshape", {&x->value, &s, &out->value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(out->data, x->data);
}

TEST_F(ReshapeTest, AliasedIsANoOp) {
  OwnedTensor<int64_t> x({2, 2}, {1, 2, 3, 4});
  std::vector<int64_t> out_sizes = {4};
  TensorView view = x.view;
  view.rank = 1;
  view.sizes = out_sizes.data();
  EValue out = EValue::from_tensor(&view);
  const int64_t shape[] = {-1};
  EValue s = EValue::from_int_list(Span<const int64_t>(shape));
  ASSERT_EQ(call_kernel("tern::reshape", {&x.value, &s, &out}), Error::Ok);
  EXPECT_EQ(x.data, (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST_F(ReshapeTest, ToAndFromRankZero) {
  OwnedTensor<float> x({1, 1}, {7.0f});
  OwnedTensor<float> out({}, {0.0f});
  EValue s = EValue::from_int_list(Span<const int64_t>());
  ASSERT_EQ(call_kernel("tern::reshape", {&x.value, &s, &out.value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(out.data[0], 7.0f);
  OwnedTensor<float> back({1}, {0.0f});
  const int64_t shape[] = {-1};
  EValue s1 = EValue::from_int_list(Span<const int64_t>(shape));
  ASSERT_EQ(call_kernel("tern::reshape", {&out.value, &s1, &back.value}), Error::Ok);
  EXPECT_EQ(back.data[0], 7.0f);
}

TEST_F(ReshapeTest, Errors) {
  auto x = zeros<float>({2, 3});
  auto out = zeros<float>({3, 2});
  const int64_t bad_numel[] = {4, 2};
  EValue s = EValue::from_int_list(Span<const int64_t>(bad_numel));
  expect_invalid(call_kernel("tern::reshape", {&x->value, &s, &out->value}),
                 {"tern::reshape", "[4, 2]", "invalid for input [2, 3]"});
  const int64_t two_infer[] = {-1, -1};
  EValue s2 = EValue::from_int_list(Span<const int64_t>(two_infer));
  expect_invalid(call_kernel("tern::reshape", {&x->value, &s2, &out->value}),
                 {"only one -1"});
  const int64_t not_divisible[] = {4, -1};
  EValue s3 = EValue::from_int_list(Span<const int64_t>(not_divisible));
  expect_invalid(call_kernel("tern::reshape", {&x->value, &s3, &out->value}), {"invalid for input"});
  const int64_t negative[] = {-2, -3};
  EValue s4 = EValue::from_int_list(Span<const int64_t>(negative));
  expect_invalid(call_kernel("tern::reshape", {&x->value, &s4, &out->value}), {"-2"});
  const int64_t good[] = {6};
  EValue s5 = EValue::from_int_list(Span<const int64_t>(good));
  expect_invalid(call_kernel("tern::reshape", {&x->value, &s5, &out->value}),
                 {"out", "expected shape [6]", "found [3, 2]"});
  auto outi = zeros<int32_t>({6});
  expect_invalid(call_kernel("tern::reshape", {&x->value, &s5, &outi->value}),
                 {"out", "expected dtype f32", "found i32"});
  EValue i = EValue::from_int(6);
  expect_invalid(call_kernel("tern::reshape", {&x->value, &i, &out->value}),
                 {"shape", "expected an int list, found int"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
