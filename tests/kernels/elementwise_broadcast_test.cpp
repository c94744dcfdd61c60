// The broadcast plan (dim coalescing, runs) against a naive broadcast index, and ATen type
// promotion against values worked from torch.result_type's rules.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/type_promotion.h"
#include "tests/kernels/elementwise_test_util.h"

namespace tern {
namespace testing {
namespace {

using portable::BroadcastPlan;
using portable::for_each_run;
using portable::make_broadcast_plan;

TEST(BroadcastPlanTest, CoalescesChannelBroadcast) {
  const std::vector<int64_t> out = {2, 3, 4, 5};
  const std::vector<int64_t> a = {2, 3, 4, 5};
  const std::vector<int64_t> b = {1, 3, 1, 1};
  const Span<const int64_t> inputs[2] = {Span<const int64_t>(a.data(), a.size()),
                                         Span<const int64_t>(b.data(), b.size())};
  BroadcastPlan plan;
  make_broadcast_plan(Span<const int64_t>(out.data(), out.size()), inputs, 2, &plan);
  ASSERT_EQ(plan.rank, 3u);
  EXPECT_EQ(plan.sizes[0], 2);
  EXPECT_EQ(plan.sizes[1], 3);
  EXPECT_EQ(plan.sizes[2], 20);
  EXPECT_EQ(plan.strides[0][0], 60);
  EXPECT_EQ(plan.strides[0][1], 20);
  EXPECT_EQ(plan.strides[0][2], 1);
  EXPECT_EQ(plan.strides[1][0], 0);
  EXPECT_EQ(plan.strides[1][1], 1);
  EXPECT_EQ(plan.strides[1][2], 0);
}

TEST(BroadcastPlanTest, SameShapeIsOneRun) {
  const std::vector<int64_t> s = {3, 1, 7, 2};
  const Span<const int64_t> inputs[2] = {Span<const int64_t>(s.data(), s.size()),
                                         Span<const int64_t>(s.data(), s.size())};
  BroadcastPlan plan;
  make_broadcast_plan(Span<const int64_t>(s.data(), s.size()), inputs, 2, &plan);
  ASSERT_EQ(plan.rank, 1u);
  EXPECT_EQ(plan.sizes[0], 42);
  EXPECT_EQ(plan.strides[0][0], 1);
  EXPECT_EQ(plan.strides[1][0], 1);
}

struct PlanCase {
  std::vector<int64_t> out;
  std::vector<std::vector<int64_t>> inputs;
};

TEST(BroadcastPlanTest, RunsMatchNaiveIndex) {
  const std::vector<PlanCase> cases = {
      {{}, {{}, {}}},
      {{5}, {{}, {5}}},
      {{3, 4}, {{3, 1}, {1, 4}, {4}}},
      {{2, 3, 5, 6}, {{2, 1, 5, 1}, {3, 1, 6}, {1}}},
      {{4, 1, 3}, {{4, 1, 3}, {1, 1, 1}, {3}}},
      {{2, 2, 2, 2, 2, 2, 2, 2}, {{2, 1, 2, 1, 2, 1, 2, 1}, {1, 2, 1, 2, 1, 2, 1, 2}, {2, 2}}},
      {{0, 3}, {{0, 3}, {3}}},
      {{7, 1, 9}, {{1, 1, 9}, {7, 1, 1}, {7, 1, 9}}},
  };
  for (const PlanCase& c : cases) {
    std::vector<Span<const int64_t>> spans;
    for (const auto& s : c.inputs) spans.emplace_back(s.data(), s.size());
    BroadcastPlan plan;
    make_broadcast_plan(Span<const int64_t>(c.out.data(), c.out.size()), spans.data(), spans.size(),
                        &plan);
    const int64_t numel = numel_of(c.out);
    std::vector<int> visits(static_cast<size_t>(numel), 0);
    for_each_run(plan, [&](const int64_t* off, int64_t out_off, int64_t n, const int64_t* st) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t flat = out_off + i;
        ASSERT_LT(flat, numel);
        ++visits[static_cast<size_t>(flat)];
        for (size_t k = 0; k < c.inputs.size(); ++k) {
          EXPECT_TRUE(st[k] == 0 || st[k] == 1);
          EXPECT_EQ(off[k] + i * st[k], broadcast_offset(c.inputs[k], c.out, flat))
              << "input " << k << " element " << flat;
        }
      }
    });
    for (int v : visits) EXPECT_EQ(v, 1);
  }
}

TEST(TypePromotionTest, PromoteTypes) {
  using portable::promote_types;
  EXPECT_EQ(promote_types(DType::I32, DType::I64), DType::I64);
  EXPECT_EQ(promote_types(DType::U8, DType::I8), DType::I16);
  EXPECT_EQ(promote_types(DType::U8, DType::I32), DType::I32);
  EXPECT_EQ(promote_types(DType::Bool, DType::I8), DType::I8);
  EXPECT_EQ(promote_types(DType::I64, DType::F16), DType::F16);
  EXPECT_EQ(promote_types(DType::F16, DType::BF16), DType::F32);
  EXPECT_EQ(promote_types(DType::BF16, DType::F32), DType::F32);
}

TEST(TypePromotionTest, ResultTypePriorities) {
  auto dim = [](DType d) {
    TensorView t;
    t.dtype = d;
    t.rank = 1;
    return t;
  };
  auto zero = [](DType d) {
    TensorView t;
    t.dtype = d;
    t.rank = 0;
    return t;
  };
  {  // i32 [n] + i64 0-dim: same category, the dimensioned tensor wins.
    portable::ResultType rt;
    rt.add_tensor(dim(DType::I32));
    rt.add_tensor(zero(DType::I64));
    EXPECT_EQ(rt.result(), DType::I32);
  }
  {  // i64 [n] + f32 0-dim: a higher category wins.
    portable::ResultType rt;
    rt.add_tensor(dim(DType::I64));
    rt.add_tensor(zero(DType::F32));
    EXPECT_EQ(rt.result(), DType::F32);
  }
  {  // i32 [n] + Int scalar stays i32; + Double gives the default f32.
    portable::ResultType rt;
    rt.add_tensor(dim(DType::I32));
    rt.add_scalar(EValue::from_int(1 << 20));
    EXPECT_EQ(rt.result(), DType::I32);
    rt.add_scalar(EValue::from_double(0.5));
    EXPECT_EQ(rt.result(), DType::F32);
  }
  {  // bool [n] + Int scalar gives i64; f16 [n] + Double stays f16.
    portable::ResultType rt;
    rt.add_tensor(dim(DType::Bool));
    rt.add_scalar(EValue::from_int(2));
    EXPECT_EQ(rt.result(), DType::I64);
    portable::ResultType h;
    h.add_tensor(dim(DType::F16));
    h.add_scalar(EValue::from_double(2.0));
    EXPECT_EQ(h.result(), DType::F16);
  }
  {  // Only scalars: Int and Double give f32; None is ignored.
    portable::ResultType rt;
    rt.add_scalar(EValue::from_int(1));
    rt.add_scalar(EValue::none());
    EXPECT_EQ(rt.result(), DType::I64);
    rt.add_scalar(EValue::from_double(1.0));
    EXPECT_EQ(rt.result(), DType::F32);
  }
}

}  // namespace
}  // namespace testing
}  // namespace tern
