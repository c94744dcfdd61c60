// Planner aliases end to end: a graph whose slice/select/split pieces the planner places at
// byte offsets inside their roots (an intermediate, a planned input, a constant) is compiled,
// loaded and executed; outputs are compared with a naive reference computed here. The same
// graph with a caller-bound input runs the kernels' copy path for the piece of that input.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"
#include "tools/compiler/graph_builder.h"
#include "tools/compiler/memory_planner.h"

namespace tern {
namespace {

using compiler::GraphBuilder;

constexpr int64_t kRows = 6, kCols = 4;

struct Ids {
  int x, h, a, b, p0, p1, p2, c, w, wr, d, e;
};

// x [1, 6, 4] -> h = relu(x); a = h[:, 1:5]; b = a.select(1, -1); (p0, p1, p2) =
// h.split([2, 3, 1], 1); c = cat([p2, p0], 1); wr = w[1:4]; d = c + wr; e = x.select(1, 0).
// Outputs b, p1, d, e.
compiler::Graph alias_graph(bool caller_bound_input, Ids* ids) {
  GraphBuilder g;
  Ids& i = *ids;
  i.x = g.input("x", DType::F32, {1, kRows, kCols});
  g.graph().values[static_cast<size_t>(i.x)].caller_bound = caller_bound_input;
  std::vector<float> wv(5 * kCols);
  for (size_t k = 0; k < wv.size(); ++k) wv[k] = 100.0f + static_cast<float>(k);
  i.w = g.constant_f32("w", {5, kCols}, wv);
  const int one = g.int_value(1);
  i.h = g.op("tern::relu", {i.x}, DType::F32, {1, kRows, kCols});
  i.a = g.op("tern::slice", {i.h, one, one, g.int_value(5), one}, DType::F32, {1, 4, kCols});
  i.b = g.op("tern::select", {i.a, one, g.int_value(-1)}, DType::F32, {1, kCols});
  i.p0 = g.tensor("p0", DType::F32, {1, 2, kCols});
  i.p1 = g.tensor("p1", DType::F32, {1, 3, kCols});
  i.p2 = g.tensor("p2", DType::F32, {1, 1, kCols});
  g.op_into("tern::split", {i.h, g.int_list({2, 3, 1}), one}, {i.p0, i.p1, i.p2});
  compiler::Value list;
  list.kind = compiler::Value::Kind::TensorList;
  list.tensors = {i.p2, i.p0};
  g.graph().values.push_back(list);
  const int l = static_cast<int>(g.graph().values.size() - 1);
  i.c = g.op("tern::cat", {l, one}, DType::F32, {1, 3, kCols});
  i.wr = g.op("tern::slice", {i.w, g.int_value(0), one, g.int_value(4), one}, DType::F32,
              {3, kCols});
  i.d = g.op("tern::add", {i.c, i.wr}, DType::F32, {1, 3, kCols});
  i.e = g.op("tern::select", {i.x, one, g.int_value(0)}, DType::F32, {1, kCols});
  for (int out : {i.b, i.p1, i.d, i.e}) g.output(out);
  return g.build();
}

void run_and_check(bool caller_bound_input) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  Ids ids{};
  const compiler::Graph graph = alias_graph(caller_bound_input, &ids);
  // The planner aliased the pieces (x's piece only when x is planned).
  const compiler::MemoryPlan plan = compiler::plan_memory(graph);
  EXPECT_EQ(plan.alias_of[ids.a], ids.h);
  EXPECT_EQ(plan.alias_offset[ids.a], 1u * kCols * 4);
  EXPECT_EQ(plan.alias_of[ids.b], ids.h);
  EXPECT_EQ(plan.alias_offset[ids.b], 4u * kCols * 4);
  EXPECT_EQ(plan.alias_offset[ids.p2], 5u * kCols * 4);
  EXPECT_EQ(plan.alias_of[ids.wr], ids.w);
  EXPECT_EQ(plan.alias_offset[ids.wr], 1u * kCols * 4);
  EXPECT_EQ(plan.alias_of[ids.e], caller_bound_input ? -1 : ids.x);

  testing::LoadedProgram lp(testing::compile_graph(graph));
  auto meta = lp.program().method_meta("forward");
  ASSERT_TRUE(meta.ok()) << last_error_message();
  testing::MethodMemory memory(*meta);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<int64_t> sizes = {1, kRows, kCols};
  for (float seed : {0.0f, 2.0f}) {
    std::vector<float> x(kRows * kCols);
    for (size_t k = 0; k < x.size(); ++k) x[k] = std::sin(seed + 0.9f * static_cast<float>(k));
    ASSERT_EQ(method->set_input(0, testing::f32_view(sizes, x)), Error::Ok) << last_error_message();
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    auto h = [&](int64_t r, int64_t c) { return std::max(x[static_cast<size_t>(r * kCols + c)], 0.0f); };
    std::vector<float> b, p1, d, e;
    for (int64_t c = 0; c < kCols; ++c) b.push_back(h(4, c));  // a's last row is h's row 4
    for (int64_t r = 2; r < 5; ++r) {
      for (int64_t c = 0; c < kCols; ++c) p1.push_back(h(r, c));
    }
    const int64_t cat_rows[] = {5, 0, 1};  // p2 then p0
    for (int64_t k = 0; k < 3; ++k) {
      for (int64_t c = 0; c < kCols; ++c) {
        d.push_back(h(cat_rows[k], c) + 100.0f + static_cast<float>((k + 1) * kCols + c));
      }
    }
    for (int64_t c = 0; c < kCols; ++c) e.push_back(x[static_cast<size_t>(c)]);
    const std::vector<float>* want[] = {&b, &p1, &d, &e};
    for (size_t o = 0; o < 4; ++o) {
      auto out = method->output(o);
      ASSERT_TRUE(out.ok()) << last_error_message();
      EXPECT_EQ(testing::to_vector(**out), *want[o]) << "output " << o << " seed " << seed;
    }
  }
}

TEST(DataMovementAlias, OffsetAliasesExecute) { run_and_check(false); }

TEST(DataMovementAlias, CallerBoundInputIsCopied) { run_and_check(true); }

}  // namespace
}  // namespace tern
