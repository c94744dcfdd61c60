// Copying data-movement kernels: the strided copy against a naive index walk (every element
// size, random shapes and permutations, tiled transposes, broadcast strides), then the argument
// errors of permute, transpose, expand, cat, pad, repeat, triu/tril and the upsamplers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <numeric>
#include <random>
#include <vector>

#include "runtime/kernels/portable/strided_copy.h"
#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

class DataMovementCopyTest : public KernelTest {};

EValue ints(std::vector<int64_t> v) {
  static std::deque<std::vector<int64_t>> storage;
  storage.push_back(std::move(v));
  return EValue::from_int_list(Span<const int64_t>(storage.back().data(), storage.back().size()));
}

// Naive: out element n (row-major over `shape`) comes from source element
// start + sum(c_d * stride_d).
std::vector<uint8_t> naive_strided(const std::vector<uint8_t>& src, size_t es,
                                   const std::vector<int64_t>& shape,
                                   const std::vector<int64_t>& strides, int64_t start = 0) {
  const int64_t total = numel_of(shape);
  std::vector<uint8_t> out(static_cast<size_t>(total) * es);
  for (int64_t n = 0; n < total; ++n) {
    int64_t rest = n, offset = start;
    for (size_t d = shape.size(); d-- > 0;) {
      offset += (rest % shape[d]) * strides[d];
      rest /= shape[d];
    }
    std::memcpy(out.data() + n * es, src.data() + offset * es, es);
  }
  return out;
}

TEST(StridedCopy, MatchesANaiveWalk) {
  std::mt19937 rng(5);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 400; ++trial) {
    const size_t es = std::vector<size_t>{1, 2, 3, 4, 8}[static_cast<size_t>(uni(0, 4))];
    const int rank = uni(0, 5);
    std::vector<int64_t> in_shape;
    for (int d = 0; d < rank; ++d) in_shape.push_back(trial % 50 == 0 ? uni(40, 70) : uni(1, 5));
    if (rank > 2 && numel_of(in_shape) > 20000) continue;
    std::vector<uint8_t> src(static_cast<size_t>(numel_of(in_shape)) * es);
    for (uint8_t& b : src) b = static_cast<uint8_t>(uni(0, 255));
    std::vector<int64_t> in_strides(static_cast<size_t>(rank));
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; --d) {
      in_strides[static_cast<size_t>(d)] = s;
      s *= in_shape[static_cast<size_t>(d)];
    }
    // A random permutation, size-1 dims sometimes broadcast (stride 0), and other dims
    // sometimes read backwards (a negative stride from the dim's last element: a flip).
    std::vector<size_t> order(static_cast<size_t>(rank));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int64_t> shape, strides;
    int64_t start = 0;
    for (size_t d : order) {
      const bool broadcast = in_shape[d] == 1 && uni(0, 2) == 0;
      const bool flip = !broadcast && uni(0, 3) == 0;
      shape.push_back(broadcast ? uni(2, 4) : in_shape[d]);
      strides.push_back(broadcast ? 0 : flip ? -in_strides[d] : in_strides[d]);
      if (flip) start += (in_shape[d] - 1) * in_strides[d];
    }
    std::vector<uint8_t> got(static_cast<size_t>(numel_of(shape)) * es, 0xAB);
    got.push_back(0xCD);  // a guard byte after the output
    portable::dm::strided_copy(got.data(), src.data() + start * static_cast<int64_t>(es), es,
                               Span<const int64_t>(shape.data(), shape.size()), strides.data());
    EXPECT_EQ(got.back(), 0xCD) << "trial " << trial << " wrote past the output";
    got.pop_back();
    ASSERT_EQ(got, naive_strided(src, es, shape, strides, start)) << "trial " << trial;
  }
}

TEST_F(DataMovementCopyTest, PermuteAndTransposeErrors) {
  auto x = zeros<float>({2, 3, 4});
  auto out = zeros<float>({4, 2, 3});
  EValue short_dims = ints({2, 0});
  expect_invalid(call_kernel("tern::permute", {&x->value, &short_dims, &out->value}),
                 {"tern::permute", "expected 3 entries", "found 2"});
  EValue repeated = ints({2, 0, -1});
  expect_invalid(call_kernel("tern::permute", {&x->value, &repeated, &out->value}),
                 {"dim 2 appears more than once"});
  EValue wrong = ints({2, 1, 0});
  expect_invalid(call_kernel("tern::permute", {&x->value, &wrong, &out->value}),
                 {"out", "expected shape [4, 3, 2]", "found [4, 2, 3]"});
  EValue d0 = EValue::from_int(0), d3 = EValue::from_int(3);
  expect_invalid(call_kernel("tern::transpose", {&x->value, &d0, &d3, &out->value}),
                 {"tern::transpose", "dim1", "dim 3 out of range"});
}

TEST_F(DataMovementCopyTest, FlipReversesTheListedDims) {
  // [2, 3] = {{0, 1, 2}, {3, 4, 5}}: flipped along dim 1 {{2, 1, 0}, {5, 4, 3}}, along both
  // dims {{5, 4, 3}, {2, 1, 0}}.
  auto x = std::make_unique<OwnedTensor<float>>(std::vector<int64_t>{2, 3},
                                                std::vector<float>{0, 1, 2, 3, 4, 5});
  auto out = zeros<float>({2, 3});
  EValue last = ints({-1});
  ASSERT_EQ(call_kernel("tern::flip", {&x->value, &last, &out->value}), Error::Ok);
  EXPECT_EQ(out->data, (std::vector<float>{2, 1, 0, 5, 4, 3}));
  EValue both = ints({0, 1});
  ASSERT_EQ(call_kernel("tern::flip", {&x->value, &both, &out->value}), Error::Ok);
  EXPECT_EQ(out->data, (std::vector<float>{5, 4, 3, 2, 1, 0}));
  EValue twice = ints({1, -1});
  expect_invalid(call_kernel("tern::flip", {&x->value, &twice, &out->value}),
                 {"tern::flip", "dim 1 appears more than once"});
  EValue outside = ints({2});
  expect_invalid(call_kernel("tern::flip", {&x->value, &outside, &out->value}),
                 {"tern::flip", "dims", "out of range"});
  auto wrong = zeros<float>({3, 2});
  expect_invalid(call_kernel("tern::flip", {&x->value, &last, &wrong->value}),
                 {"out", "expected shape [2, 3]", "found [3, 2]"});
}

TEST_F(DataMovementCopyTest, ExpandBroadcastsAndChecks) {
  OwnedTensor<int32_t> x({3, 1}, {1, 2, 3});
  auto out = zeros<int32_t>({2, 3, 2});
  EValue sizes = ints({2, -1, 2});
  ASSERT_EQ(call_kernel("tern::expand", {&x.value, &sizes, &out->value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(out->data, (std::vector<int32_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  EValue bad = ints({4, 2});
  expect_invalid(call_kernel("tern::expand", {&x.value, &bad, &out->value}),
                 {"tern::expand", "cannot expand dim 0", "[3, 1]", "(size 3) to 4"});
  EValue lead = ints({-1, 3, 2});
  expect_invalid(call_kernel("tern::expand", {&x.value, &lead, &out->value}),
                 {"-1 at new leading dim 0"});
  EValue few = ints({3});
  expect_invalid(call_kernel("tern::expand", {&x.value, &few, &out->value}),
                 {"at least 2 entries", "found 1"});
}

TEST_F(DataMovementCopyTest, CatErrors) {
  auto a = zeros<float>({2, 3});
  auto b = zeros<float>({2, 4});
  auto c = zeros<int32_t>({2, 3});
  auto out = zeros<float>({4, 3});
  TensorView* ab[] = {&a->view, &b->view};
  EValue list = EValue::from_tensor_list(Span<TensorView* const>(ab, 2));
  EValue d0 = EValue::from_int(0);
  expect_invalid(call_kernel("tern::cat", {&list, &d0, &out->value}),
                 {"tern::cat", "tensors[1]", "shape [2, 4] does not match [2, 3] except in dim 0"});
  TensorView* ac[] = {&a->view, &c->view};
  EValue mixed = EValue::from_tensor_list(Span<TensorView* const>(ac, 2));
  expect_invalid(call_kernel("tern::cat", {&mixed, &d0, &out->value}),
                 {"tensors[1]", "expected dtype f32", "found i32"});
  EValue empty = EValue::from_tensor_list(Span<TensorView* const>());
  expect_invalid(call_kernel("tern::cat", {&empty, &d0, &out->value}), {"non-empty list"});
  TensorView* aa[] = {&a->view, &a->view};
  EValue twice = EValue::from_tensor_list(Span<TensorView* const>(aa, 2));
  EValue d1 = EValue::from_int(1);
  expect_invalid(call_kernel("tern::cat", {&twice, &d1, &out->value}),
                 {"out", "expected shape [2, 6]", "found [4, 3]"});
  ASSERT_EQ(call_kernel("tern::cat", {&twice, &d0, &out->value}), Error::Ok);
  EXPECT_EQ(call_kernel("tern::cat", {&a->value, &d0, &out->value}), Error::InvalidArgument);
}

TEST_F(DataMovementCopyTest, PadConstantAndReflectByHand) {
  OwnedTensor<float> x({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = zeros<float>({3, 4});
  // pad (left 1, right 0) on dim 1, (top 0, bottom 1) on dim 0, value 9.
  EValue pads = ints({1, 0, 0, 1});
  EValue constant = EValue::from_string("constant", 8), value = EValue::from_double(9.0);
  ASSERT_EQ(call_kernel("tern::pad", {&x.value, &pads, &constant, &value, &out->value}),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(out->data, (std::vector<float>{9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9}));
  // Reflect (2, 1) on the last dim: row 1 2 3 -> 3 2 | 1 2 3 | 2.
  auto refl = zeros<float>({2, 6});
  EValue rp = ints({2, 1});
  EValue reflect = EValue::from_string("reflect", 7), none = EValue::none();
  ASSERT_EQ(call_kernel("tern::pad", {&x.value, &rp, &reflect, &none, &refl->value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(refl->data, (std::vector<float>{3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}));
  // Negative constant padding crops.
  auto crop = zeros<float>({2, 2});
  EValue cp = ints({-1, 0});
  ASSERT_EQ(call_kernel("tern::pad", {&x.value, &cp, &constant, &none, &crop->value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(crop->data, (std::vector<float>{2, 3, 5, 6}));
}

TEST_F(DataMovementCopyTest, PadErrors) {
  auto x = zeros<float>({2, 3});
  auto out = zeros<float>({2, 9});
  EValue reflect = EValue::from_string("reflect", 7), none = EValue::none();
  EValue big = ints({3, 3});
  expect_invalid(call_kernel("tern::pad", {&x->value, &big, &reflect, &none, &out->value}),
                 {"tern::pad", "reflect padding (3, 3) of dim 1", "less than its size 3"});
  EValue odd = ints({1, 1, 1});
  EValue constant = EValue::from_string("constant", 8);
  expect_invalid(call_kernel("tern::pad", {&x->value, &odd, &constant, &none, &out->value}),
                 {"even number of entries", "found 3"});
  EValue replicate = EValue::from_string("replicate", 9);
  EValue one = ints({1, 1});
  expect_invalid(call_kernel("tern::pad", {&x->value, &one, &replicate, &none, &out->value}),
                 {"expected \"constant\" or \"reflect\"", "\"replicate\""});
  expect_invalid(call_kernel("tern::pad", {&x->value, &one, &constant, &none, &out->value}),
                 {"out", "expected shape [2, 5]", "found [2, 9]"});
  EValue shrink = ints({-2, -2});
  expect_invalid(call_kernel("tern::pad", {&x->value, &shrink, &constant, &none, &out->value}),
                 {"gives size -1"});
}

TEST_F(DataMovementCopyTest, RepeatTriangleUpsampleErrors) {
  auto x = zeros<float>({2, 3});
  auto out = zeros<float>({4, 3});
  EValue few = ints({2});
  expect_invalid(call_kernel("tern::repeat", {&x->value, &few, &out->value}),
                 {"tern::repeat", "at least 2 entries", "found 1"});
  EValue negative = ints({2, -1});
  expect_invalid(call_kernel("tern::repeat", {&x->value, &negative, &out->value}),
                 {"-1 at dim 1"});
  auto v = zeros<float>({3});
  EValue zero = EValue::from_int(0);
  expect_invalid(call_kernel("tern::triu", {&v->value, &zero, &v->value}),
                 {"tern::triu", "expected rank >= 2", "found 1"});
  EValue none = EValue::none();
  auto img = zeros<float>({1, 1, 2, 2});
  auto big = zeros<float>({1, 2, 4, 4});
  expect_invalid(call_kernel("tern::upsample_nearest2d", {&img->value, &none, &none, &big->value}),
                 {"tern::upsample_nearest2d", "expected shape [1, 1, 4, 4]", "found [1, 2, 4, 4]"});
  expect_invalid(call_kernel("tern::upsample_nearest2d", {&x->value, &none, &none, &big->value}),
                 {"expected rank 4", "found rank 2"});
  auto imgi = zeros<int32_t>({1, 1, 2, 2});
  auto outi = zeros<int32_t>({1, 1, 4, 4});
  EValue no = EValue::from_bool(false);
  expect_invalid(
      call_kernel("tern::upsample_bilinear2d", {&imgi->value, &no, &none, &none, &outi->value}),
      {"tern::upsample_bilinear2d", "expected dtype f32", "found i32"});
  auto empty = zeros<float>({1, 1, 0, 4});
  expect_invalid(
      call_kernel("tern::upsample_bilinear2d", {&img->value, &no, &none, &none, &empty->value}),
      {"sizes must be greater than 0"});
}

TEST_F(DataMovementCopyTest, UpsampleByHand) {
  // Nearest 2x2 -> 3x3 (scale in/out = 2/3): rows/cols 0, floor(0.667) = 0, floor(1.333) = 1.
  OwnedTensor<float> x({1, 1, 2, 2}, {1, 2, 3, 4});
  auto out = zeros<float>({1, 1, 3, 3});
  EValue none = EValue::none();
  ASSERT_EQ(call_kernel("tern::upsample_nearest2d", {&x.value, &none, &none, &out->value}),
            Error::Ok);
  EXPECT_EQ(out->data, (std::vector<float>{1, 1, 2, 1, 1, 2, 3, 3, 4}));
  // Bilinear with align_corners 2x2 -> 3x3: the middle is the average of its neighbours.
  EValue yes = EValue::from_bool(true);
  ASSERT_EQ(call_kernel("tern::upsample_bilinear2d", {&x.value, &yes, &none, &none, &out->value}),
            Error::Ok);
  const std::vector<float> want = {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(out->data[i], want[i]) << i;
}

// index_copy with out the same tensor as x: a state (KV cache) written in place, rows 2 and 0
// of a [4, 2] tensor replaced, the others untouched.
TEST_F(DataMovementCopyTest, IndexCopyInPlaceAndItsErrors) {
  OwnedTensor<float> x({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  OwnedTensor<int64_t> index({2}, {2, 0});
  OwnedTensor<float> source({2, 2}, {-1, -2, -3, -4});
  EValue d0 = EValue::from_int(0);
  ASSERT_EQ(call_kernel("tern::index_copy",
                        {&x.value, &d0, &index.value, &source.value, &x.value}),
            Error::Ok);
  EXPECT_EQ(x.data, (std::vector<float>{-3, -4, 3, 4, -1, -2, 7, 8}));
  OwnedTensor<int64_t> past({1}, {4});
  auto one = zeros<float>({1, 2});
  expect_invalid(
      call_kernel("tern::index_copy", {&x.value, &d0, &past.value, &one->value, &x.value}),
      {"tern::index_copy", "index[0] = 4 out of range", "size 4"});
  expect_invalid(
      call_kernel("tern::index_copy", {&x.value, &d0, &index.value, &one->value, &x.value}),
      {"tern::index_copy", "source"});
}

TEST_F(DataMovementCopyTest, IndexErrorsNameTheBadIndex) {
  auto x = zeros<float>({4, 3});
  OwnedTensor<int64_t> index({3}, {0, 4, 1});
  auto out = zeros<float>({3, 3});
  EValue d0 = EValue::from_int(0);
  expect_invalid(call_kernel("tern::index_select", {&x->value, &d0, &index.value, &out->value}),
                 {"tern::index_select", "index[1] = 4 out of range", "size 4", "[0, 4)"});
  OwnedTensor<int32_t> negative({1}, {-1});
  auto one = zeros<float>({1, 3});
  expect_invalid(call_kernel("tern::index_select", {&x->value, &d0, &negative.value, &one->value}),
                 {"index[0] = -1 out of range"});
  OwnedTensor<float> float_index({1}, {0.0f});
  expect_invalid(
      call_kernel("tern::index_select", {&x->value, &d0, &float_index.value, &one->value}),
      {"index", "expected dtype one of {i64, i32}", "found f32"});

  OwnedTensor<int64_t> gidx({2, 3}, {0, 1, 2, 3, 7, 0});
  auto gout = zeros<float>({2, 3});
  expect_invalid(call_kernel("tern::gather", {&x->value, &d0, &gidx.value, &gout->value}),
                 {"tern::gather", "index element 4 = 7 out of range", "size 4"});
  OwnedTensor<int64_t> wide({2, 5}, std::vector<int64_t>(10, 0));
  auto wout = zeros<float>({2, 5});
  expect_invalid(call_kernel("tern::gather", {&x->value, &d0, &wide.value, &wout->value}),
                 {"size 5 of dim 1 exceeds x [4, 3]"});

  // scatter checks every index before writing: out keeps x's copy, nothing lands out of range.
  OwnedTensor<float> sx({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  OwnedTensor<float> src({2, 3}, {-1, -2, -3, -4, -5, -6});
  auto sout = zeros<float>({4, 3});
  EValue none_mode = EValue::from_string("none", 4), max_mode = EValue::from_string("max", 3);
  expect_invalid(call_kernel("tern::scatter", {&sx.value, &d0, &gidx.value, &src.value,
                                               &none_mode, &sout->value}),
                 {"tern::scatter", "index element 4 = 7 out of range", "size 4"});
  expect_invalid(call_kernel("tern::scatter", {&sx.value, &d0, &wide.value, &src.value,
                                               &none_mode, &sout->value}),
                 {"tern::scatter", "size 5 of dim 1 exceeds x [4, 3]"});
  OwnedTensor<int64_t> narrow({2, 2}, {0, 1, 2, 3});
  expect_invalid(call_kernel("tern::scatter", {&sx.value, &d0, &narrow.value, &src.value,
                                               &none_mode, &sout->value}),
                 {"src", "expected shape [2, 2]", "found [2, 3]"});
  OwnedTensor<int64_t> ok_index({2, 3}, {0, 1, 2, 3, 0, 1});
  expect_invalid(call_kernel("tern::scatter", {&sx.value, &d0, &ok_index.value, &src.value,
                                               &max_mode, &sout->value}),
                 {"reduce", "expected \"none\" or \"add\"", "found \"max\""});
  EValue add_mode = EValue::from_string("add", 3);
  OwnedTensor<int16_t> shorts({4, 3}, std::vector<int16_t>(12, 0));
  OwnedTensor<int16_t> ssrc({2, 3}, std::vector<int16_t>(6, 1));
  auto shorts_out = zeros<int16_t>({4, 3});
  expect_invalid(call_kernel("tern::scatter", {&shorts.value, &d0, &ok_index.value, &ssrc.value,
                                               &add_mode, &shorts_out->value}),
                 {"reduce \"add\"", "expected x of dtype f32, i64 or i32", "found i16"});
  for (float v : sout->data) EXPECT_EQ(v, 0.0f);  // the failed calls wrote nothing

  // grid_sample2d: bicubic (mode 2) is not taken; the grid must be [N, HO, WO, 2].
  auto image = zeros<float>({1, 2, 4, 4});
  auto grid = zeros<float>({1, 3, 5, 2});
  auto sampled = zeros<float>({1, 2, 3, 5});
  EValue bicubic = EValue::from_int(2), bilinear = EValue::from_int(0);
  EValue zeros_pad = EValue::from_int(0), no_align = EValue::from_bool(false);
  expect_invalid(call_kernel("tern::grid_sample2d", {&image->value, &grid->value, &bicubic,
                                                     &zeros_pad, &no_align, &sampled->value}),
                 {"tern::grid_sample2d", "mode: expected 0 (bilinear) or 1 (nearest)", "found 2"});
  auto bad_grid = zeros<float>({1, 3, 5, 3});
  expect_invalid(call_kernel("tern::grid_sample2d", {&image->value, &bad_grid->value, &bilinear,
                                                     &zeros_pad, &no_align, &sampled->value}),
                 {"grid: expected [1, HO, WO, 2]", "found [1, 3, 5, 3]"});

  OwnedTensor<int64_t> ids({2}, {1, 9});
  auto eout = zeros<float>({2, 3});
  expect_invalid(call_kernel("tern::embedding", {&x->value, &ids.value, &eout->value}),
                 {"tern::embedding", "indices element 1 = 9 out of range for 4 embeddings"});
  TensorView nf4 = x->view;
  nf4.dtype = DType::NF4;
  EValue nf4_value = EValue::from_tensor(&nf4);
  // An nf4 weight needs its quantization parameters (tests/quant runs the quantized path).
  expect_invalid(call_kernel("tern::embedding", {&nf4_value, &ids.value, &eout->value}),
                 {"tern::embedding", "nf4 weight without quantization parameters"});
  // A valid lookup, by hand.
  OwnedTensor<float> w({3, 2}, {0, 1, 10, 11, 20, 21});
  OwnedTensor<int32_t> pick({2, 2}, {2, 0, 1, 2});
  auto got = zeros<float>({2, 2, 2});
  ASSERT_EQ(call_kernel("tern::embedding", {&w.value, &pick.value, &got->value}), Error::Ok);
  EXPECT_EQ(got->data, (std::vector<float>{20, 21, 0, 1, 10, 11, 20, 21}));
}

}  // namespace
}  // namespace testing
}  // namespace tern
