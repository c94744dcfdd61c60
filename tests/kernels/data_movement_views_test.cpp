// View and piece kernels (view, squeeze, unsqueeze, flatten, slice, select, split, clone):
// the copy path (out has its own memory), the alias path (out.data already at the piece's
// address: nothing may be written), and argument errors naming expected and found.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

class DataMovementViewsTest : public KernelTest {};

/// An IntList EValue; its entries are kept alive until the process ends.
EValue ints(std::vector<int64_t> v) {
  static std::deque<std::vector<int64_t>> storage;
  storage.push_back(std::move(v));
  return EValue::from_int_list(Span<const int64_t>(storage.back().data(), storage.back().size()));
}

TEST_F(DataMovementViewsTest, ViewSqueezeUnsqueezeFlattenCopy) {
  auto x = random_tensor<float>({1, 3, 1, 2}, 1);
  auto out = zeros<float>({3, 2});
  EValue shape = ints({3, -1});
  ASSERT_EQ(call_kernel("tern::view", {&x->value, &shape, &out->value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(out->data, x->data);

  auto sq = zeros<float>({3, 2});
  EValue all = ints({});
  ASSERT_EQ(call_kernel("tern::squeeze", {&x->value, &all, &sq->value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(sq->data, x->data);
  auto sq2 = zeros<float>({1, 3, 2});
  EValue dims = ints({-2, 1});  // dim 1 has size 3: kept, as ATen
  ASSERT_EQ(call_kernel("tern::squeeze", {&x->value, &dims, &sq2->value}), Error::Ok)
      << last_error_message();

  auto un = zeros<float>({1, 3, 1, 2, 1});
  EValue dim = EValue::from_int(-1);
  ASSERT_EQ(call_kernel("tern::unsqueeze", {&x->value, &dim, &un->value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(un->data, x->data);

  auto fl = zeros<float>({1, 6});
  EValue start = EValue::from_int(1), end = EValue::from_int(-1);
  ASSERT_EQ(call_kernel("tern::flatten", {&x->value, &start, &end, &fl->value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(fl->data, x->data);
}

TEST_F(DataMovementViewsTest, ViewErrors) {
  auto x = zeros<float>({1, 3, 1, 2});
  auto out = zeros<float>({3, 2});
  EValue dims = ints({4});
  expect_invalid(call_kernel("tern::squeeze", {&x->value, &dims, &out->value}),
                 {"tern::squeeze", "dim 4 out of range", "[-4, 3]"});
  EValue twice = ints({0, -4});
  expect_invalid(call_kernel("tern::squeeze", {&x->value, &twice, &out->value}),
                 {"appears more than once"});
  EValue dim = EValue::from_int(5);
  auto un = zeros<float>({1, 3, 1, 2, 1});
  expect_invalid(call_kernel("tern::unsqueeze", {&x->value, &dim, &un->value}),
                 {"tern::unsqueeze", "5 out of range", "[-5, 4]"});
  EValue start = EValue::from_int(2), end = EValue::from_int(1);
  expect_invalid(call_kernel("tern::flatten", {&x->value, &start, &end, &out->value}),
                 {"tern::flatten", "start_dim 2", "after end_dim 1"});
  EValue s0 = EValue::from_int(0), s1 = EValue::from_int(-1);
  expect_invalid(call_kernel("tern::flatten", {&x->value, &s0, &s1, &out->value}),
                 {"out", "expected shape [6]", "found [3, 2]"});
  auto outi = zeros<int32_t>({6});
  expect_invalid(call_kernel("tern::flatten", {&x->value, &s0, &s1, &outi->value}),
                 {"out", "expected dtype f32", "found i32"});
}

TEST_F(DataMovementViewsTest, SliceCopiesWithStepsAndClamping) {
  // x [3, 5] = 0..14; x[:, -4:100:2] picks columns 1, 3 of every row.
  std::vector<float> v(15);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  OwnedTensor<float> x({3, 5}, v);
  auto out = zeros<float>({3, 2});
  EValue dim = EValue::from_int(1), start = EValue::from_int(-4), end = EValue::from_int(100),
         step = EValue::from_int(2);
  ASSERT_EQ(call_kernel("tern::slice", {&x.value, &dim, &start, &end, &step, &out->value}),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(out->data, (std::vector<float>{1, 3, 6, 8, 11, 13}));
  // x[1:None] along dim 0, None end.
  auto rows = zeros<float>({2, 5});
  EValue d0 = EValue::from_int(0), one = EValue::from_int(1), none = EValue::none();
  ASSERT_EQ(call_kernel("tern::slice", {&x.value, &d0, &one, &none, &one, &rows->value}),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(rows->data, std::vector<float>(v.begin() + 5, v.end()));
  // An empty slice (start beyond the end).
  auto empty = zeros<float>({0, 5});
  EValue far = EValue::from_int(9);
  ASSERT_EQ(call_kernel("tern::slice", {&x.value, &d0, &far, &none, &one, &empty->value}),
            Error::Ok)
      << last_error_message();
}

TEST_F(DataMovementViewsTest, AliasedPiecesWriteNothing) {
  // x lives in a read-only page and every out already points at its piece inside x (what the
  // planner makes): any write, even a self-copy, would fault.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* mem = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  int64_t* data = static_cast<int64_t*>(mem);
  for (int64_t i = 0; i < 12; ++i) data[i] = i;
  ASSERT_EQ(mprotect(mem, page, PROT_READ), 0);
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::unique_ptr<TensorView>> views;
  std::vector<std::unique_ptr<EValue>> values;
  auto view_at = [&](size_t offset, std::vector<int64_t> sizes) {
    shapes.push_back(std::move(sizes));
    auto v = std::make_unique<TensorView>();
    v->dtype = DType::I64;
    v->rank = static_cast<uint32_t>(shapes.back().size());
    v->sizes = shapes.back().data();
    v->data = data + offset;
    v->nbytes = static_cast<uint64_t>(numel_of(shapes.back())) * 8;
    views.push_back(std::move(v));
    values.push_back(std::make_unique<EValue>(EValue::from_tensor(views.back().get())));
    return values.back().get();
  };
  EValue* x = view_at(0, {1, 4, 3});
  EValue dim = EValue::from_int(1), start = EValue::from_int(1), end = EValue::from_int(3),
         step = EValue::from_int(1);
  EXPECT_EQ(call_kernel("tern::slice", {x, &dim, &start, &end, &step, view_at(3, {1, 2, 3})}),
            Error::Ok)
      << last_error_message();
  EValue index = EValue::from_int(-2);
  EXPECT_EQ(call_kernel("tern::select", {x, &dim, &index, view_at(6, {1, 3})}), Error::Ok)
      << last_error_message();
  EValue sizes = ints({1, 3});
  EXPECT_EQ(call_kernel("tern::split", {x, &sizes, &dim, view_at(0, {1, 1, 3}),
                                        view_at(3, {1, 3, 3})}),
            Error::Ok)
      << last_error_message();
  EValue whole = EValue::from_int(0), none = EValue::none();  // x[0:] along dim 0 of [1, 4, 3]
  EXPECT_EQ(call_kernel("tern::slice", {x, &whole, &whole, &none, &step, view_at(0, {1, 4, 3})}),
            Error::Ok);
  EValue shape = ints({12});
  EXPECT_EQ(call_kernel("tern::reshape", {x, &shape, view_at(0, {12})}), Error::Ok);
  EValue all = ints({});
  EXPECT_EQ(call_kernel("tern::squeeze", {x, &all, view_at(0, {4, 3})}), Error::Ok);
  EXPECT_EQ(call_kernel("tern::clone", {x, view_at(0, {1, 4, 3})}), Error::Ok);
  // The same select into memory of its own is a copy.
  auto own = zeros<int64_t>({1, 3});
  EXPECT_EQ(call_kernel("tern::select", {x, &dim, &index, &own->value}), Error::Ok);
  EXPECT_EQ(own->data, (std::vector<int64_t>{6, 7, 8}));
  munmap(mem, page);
}

TEST_F(DataMovementViewsTest, SplitCopies) {
  std::vector<int32_t> v(12);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i);
  OwnedTensor<int32_t> x({3, 4}, v);
  // Chunks of 3 along dim 1: [3, 3] and [3, 1].
  auto a = zeros<int32_t>({3, 3});
  auto b = zeros<int32_t>({3, 1});
  EValue chunk = ints({3}), dim = EValue::from_int(-1);
  ASSERT_EQ(call_kernel("tern::split", {&x.value, &chunk, &dim, &a->value, &b->value}), Error::Ok)
      << last_error_message();
  EXPECT_EQ(a->data, (std::vector<int32_t>{0, 1, 2, 4, 5, 6, 8, 9, 10}));
  EXPECT_EQ(b->data, (std::vector<int32_t>{3, 7, 11}));
  // Sizes that do not add up.
  EValue bad = ints({2, 1});
  expect_invalid(call_kernel("tern::split", {&x.value, &bad, &dim, &a->value, &b->value}),
                 {"tern::split", "split_sizes [2, 1]", "dim 1 of size 4", "2 outputs"});
  // Right sizes, wrong output shape.
  EValue sizes = ints({1, 3});
  expect_invalid(call_kernel("tern::split", {&x.value, &sizes, &dim, &a->value, &b->value}),
                 {"out0", "expected shape [3, 1]", "found [3, 3]"});
  expect_invalid(call_kernel("tern::split", {&x.value, &sizes, &dim}), {"at least one output"});
}

TEST_F(DataMovementViewsTest, SliceAndSelectErrors) {
  auto x = zeros<float>({2, 3});
  auto out = zeros<float>({2, 3});
  EValue dim = EValue::from_int(2), zero = EValue::from_int(0), step = EValue::from_int(1),
         none = EValue::none();
  expect_invalid(call_kernel("tern::slice", {&x->value, &dim, &zero, &none, &step, &out->value}),
                 {"tern::slice", "dim 2 out of range", "[-2, 1]"});
  EValue d1 = EValue::from_int(1), bad_step = EValue::from_int(0);
  expect_invalid(
      call_kernel("tern::slice", {&x->value, &d1, &zero, &none, &bad_step, &out->value}),
      {"expected a positive step, found 0"});
  EValue dbl = EValue::from_double(1.0);
  expect_invalid(call_kernel("tern::slice", {&x->value, &d1, &dbl, &none, &step, &out->value}),
                 {"start", "expected an int or none, found double"});
  EValue two = EValue::from_int(2);
  expect_invalid(call_kernel("tern::slice", {&x->value, &d1, &zero, &two, &step, &out->value}),
                 {"out", "expected shape [2, 2]", "found [2, 3]"});
  auto row = zeros<float>({3});
  EValue index = EValue::from_int(2);
  expect_invalid(call_kernel("tern::select", {&x->value, &zero, &index, &row->value}),
                 {"tern::select", "index 2 out of range", "size 2", "[-2, 1]"});
  OwnedTensor<float> scalar({}, {1.0f});
  expect_invalid(call_kernel("tern::select", {&scalar.value, &zero, &zero, &row->value}),
                 {"rank-0"});
}

TEST_F(DataMovementViewsTest, CloneCopiesAndChecks) {
  auto x = random_tensor<int64_t>({2, 3}, 7);
  auto out = zeros<int64_t>({2, 3});
  ASSERT_EQ(call_kernel("tern::clone", {&x->value, &out->value}), Error::Ok);
  EXPECT_EQ(out->data, x->data);
  auto wrong = zeros<int64_t>({3, 2});
  expect_invalid(call_kernel("tern::clone", {&x->value, &wrong->value}),
                 {"tern::clone", "expected shape [2, 3]", "found [3, 2]"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
