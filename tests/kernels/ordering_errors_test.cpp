// The mixture-of-experts kernels' checks of what the data says (argsort, topk_indices, histc,
// grouped_mm; their values are checked against PyTorch in tests/ops/cases_ordering.py): offsets
// that go backwards or past the rows, k out of range, bad bins and ranges, wrong dtypes.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

class OrderingErrorsTest : public KernelTest {};

TEST_F(OrderingErrorsTest, GroupedMmRefusesOffsetsThatGoBackwardsOrPastTheRows) {
  auto x = zeros<float>({5, 3});
  auto w = zeros<float>({2, 3, 4});
  auto out = zeros<float>({5, 4});
  OwnedTensor<int32_t> backwards({2}, {4, 2});
  expect_invalid(call_kernel("tern::grouped_mm", {&x->value, &w->value, &backwards.value,
                                                  &out->value}),
                 {"tern::grouped_mm", "offsets[1] is 2", "expected 4..5"});
  OwnedTensor<int64_t> past({2}, {1, 6});
  expect_invalid(call_kernel("tern::grouped_mm", {&x->value, &w->value, &past.value, &out->value}),
                 {"offsets[1] is 6", "expected 1..5"});
  OwnedTensor<int64_t> negative({2}, {-1, 5});
  expect_invalid(call_kernel("tern::grouped_mm", {&x->value, &w->value, &negative.value,
                                                  &out->value}),
                 {"offsets[0] is -1"});
  OwnedTensor<int64_t> three({3}, {1, 2, 5});
  expect_invalid(call_kernel("tern::grouped_mm", {&x->value, &w->value, &three.value,
                                                  &out->value}),
                 {"expected x [S, K], w [E, K, N] and offsets [E]"});
  OwnedTensor<float> float_offsets({2}, {1.0f, 5.0f});
  expect_invalid(call_kernel("tern::grouped_mm", {&x->value, &w->value, &float_offsets.value,
                                                  &out->value}),
                 {"offsets"});
}

TEST_F(OrderingErrorsTest, GroupedMmZeroesTheRowsAfterTheLastEnd) {
  OwnedTensor<float> x({3, 2}, {1, 2, 3, 4, 5, 6});
  OwnedTensor<float> w({1, 2, 1}, {10, 1});
  OwnedTensor<int64_t> ends({1}, {2});
  OwnedTensor<float> out({3, 1}, {7, 7, 7});
  ASSERT_EQ(call_kernel("tern::grouped_mm", {&x.value, &w.value, &ends.value, &out.value}),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(out.data, (std::vector<float>{12, 34, 0}));
}

// grouped_linear: grouped_mm with each expert's matrix transposed in one [E N, K] weight (what
// the quantization pass makes of a grouped_mm); values worked by hand, then its refusals.
TEST_F(OrderingErrorsTest, GroupedLinearMultipliesEachGroupByItsExpertsRows) {
  OwnedTensor<float> x({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  // Expert 0: [[1, 0], [0, 1], [1, 1]] (N = 3 rows of K = 2); expert 1: [[2, 0], [0, 2], [1, -1]].
  OwnedTensor<float> w({6, 2}, {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 1, -1});
  OwnedTensor<int32_t> ends({2}, {1, 3});
  OwnedTensor<float> out({4, 3}, std::vector<float>(12, 7.0f));
  ASSERT_EQ(call_kernel("tern::grouped_linear", {&x.value, &w.value, &ends.value, &out.value}),
            Error::Ok)
      << last_error_message();
  // row 0 by expert 0: [1, 2, 3]; rows 1, 2 by expert 1: [6, 8, -1], [10, 12, -1]; row 3: 0.
  EXPECT_EQ(out.data, (std::vector<float>{1, 2, 3, 6, 8, -1, 10, 12, -1, 0, 0, 0}));
  OwnedTensor<int32_t> backwards({2}, {3, 1});
  expect_invalid(call_kernel("tern::grouped_linear",
                             {&x.value, &w.value, &backwards.value, &out.value}),
                 {"tern::grouped_linear", "ends[1] is 1", "expected 3..4"});
  OwnedTensor<int64_t> four({4}, {1, 2, 3, 4});  // 6 rows are not 4 experts
  expect_invalid(call_kernel("tern::grouped_linear", {&x.value, &w.value, &four.value, &out.value}),
                 {"expected ends [E] (E >= 1) and w [E * N, 2]", "w [6, 2]"});
}

TEST_F(OrderingErrorsTest, TopkRefusesKBeyondTheDim) {
  auto x = zeros<float>({3, 4});
  auto out = zeros<int64_t>({3, 5});
  EValue k = EValue::from_int(5), dim = EValue::from_int(1), largest = EValue::from_bool(true);
  expect_invalid(call_kernel("tern::topk_indices", {&x->value, &k, &dim, &largest, &out->value}),
                 {"tern::topk_indices", "k is 5, expected 0..4"});
  EValue minus = EValue::from_int(-1);
  expect_invalid(call_kernel("tern::topk_indices", {&x->value, &minus, &dim, &largest,
                                                    &out->value}),
                 {"k is -1"});
  auto wrong = zeros<int64_t>({3, 3});
  EValue two = EValue::from_int(2);
  expect_invalid(call_kernel("tern::topk_indices", {&x->value, &two, &dim, &largest,
                                                    &wrong->value}),
                 {"out"});
}

TEST_F(OrderingErrorsTest, ArgsortChecksDtypesAndShapes) {
  auto x = zeros<float>({3, 4});
  auto out = zeros<int32_t>({3, 4});
  EValue dim = EValue::from_int(1), desc = EValue::from_bool(false);
  expect_invalid(call_kernel("tern::argsort", {&x->value, &dim, &desc, &out->value}),
                 {"tern::argsort", "out"});
  EValue far = EValue::from_int(2);
  auto good = zeros<int64_t>({3, 4});
  expect_invalid(call_kernel("tern::argsort", {&x->value, &far, &desc, &good->value}),
                 {"dim"});
}

TEST_F(OrderingErrorsTest, HistcRefusesBadBinsAndRanges) {
  auto x = zeros<float>({6});
  auto out = zeros<float>({4});
  EValue bins = EValue::from_int(0), lo = EValue::from_double(0.0), hi = EValue::from_double(1.0);
  expect_invalid(call_kernel("tern::histc", {&x->value, &bins, &lo, &hi, &out->value}),
                 {"tern::histc", "bins is 0"});
  EValue four = EValue::from_int(4), big = EValue::from_double(2.0), small = EValue::from_double(1.0);
  expect_invalid(call_kernel("tern::histc", {&x->value, &four, &big, &small, &out->value}),
                 {"range [2, 1]"});
  auto wrong = zeros<float>({5});
  expect_invalid(call_kernel("tern::histc", {&x->value, &four, &lo, &hi, &wrong->value}),
                 {"out"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
