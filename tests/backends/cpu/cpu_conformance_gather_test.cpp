// Conformance of the cpu backend's gather by a constant element map (tern's GatherMap, op 42,
// since blob version 20) against the portable kernels (harness: cpu_conformance_util.h):
// SEW-D's relative-position gather (torch.gather along the last dim by a log-bucketed index,
// the same for every head: the map folds to one head's block), a gather along a middle dim with
// an index smaller than x in another dim, one whose index differs per batch (no fold), an
// index_select by a permutation that is no affine walk, gathers of a linear's output inside a
// region and split over the pool; then what the compile half refuses and what the blob reader
// checks (the node's fields and every entry of the map).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

int gather(GraphBuilder& b, int x, int64_t dim, std::vector<int64_t> index_sizes,
           const std::vector<int64_t>& index) {
  const int i = int64_constant(b, index_sizes, index);
  return b.op("tern::gather", {x, b.int_value(dim), i}, DType::F32, index_sizes);
}

/// DeBERTa's / SEW-D's log-bucketed relative position of query i to key j, shifted into
/// [0, 2 * span): exact within +-bucket / 2, logarithmic beyond (the index is no affine walk).
int64_t bucketed(int64_t i, int64_t j, int64_t bucket, int64_t max_position, int64_t span) {
  const int64_t rel = i - j;
  const int64_t mid = bucket / 2;
  const int64_t sign = rel > 0 ? 1 : rel < 0 ? -1 : 0;
  const int64_t abs_pos = (rel < mid && rel > -mid) ? mid - 1 : std::llabs(rel);
  const double log_pos =
      std::ceil(std::log(static_cast<double>(abs_pos) / mid) /
                std::log(static_cast<double>(max_position - 1) / mid) * (mid - 1)) +
      mid;
  const int64_t b = abs_pos <= mid ? rel : static_cast<int64_t>(log_pos) * sign;
  return std::min<int64_t>(std::max<int64_t>(b + span, 0), 2 * span - 1);
}

/// SEW-D's c2p gather: scores [H, L, 2 * span] (a product of the queries by the relative
/// embeddings) gathered along the last dim by the constant [H, L, L] index.
void relative_gather(GraphBuilder& b, int64_t heads, int64_t l, int64_t span, uint32_t seed) {
  const std::vector<int64_t> qs{heads, l, 8};
  const int q = b.input("q", DType::F32, qs);
  const int rel = constant(b, "rel" + std::to_string(seed), {2 * span, 8}, seed);
  const int scores = b.op("tern::linear", {q, rel, b.none()}, DType::F32, {heads, l, 2 * span});
  std::vector<int64_t> index;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < l; ++i) {
      for (int64_t j = 0; j < l; ++j) index.push_back(bucketed(i, j, 16, 64, span));
    }
  }
  const int g = gather(b, scores, -1, {heads, l, l}, index);
  b.output(b.op("tern::relu", {g}, DType::F32, {heads, l, l}));
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase sew = {"sew_d_relative_position_gather",
                [](GraphBuilder& b) { relative_gather(b, 4, 23, 16, 3); }, 1e-10};
  sew.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(count_op(blob, cpu::NodeOp::GatherMap), 1u);
    const std::vector<uint32_t> ops = blob_ops(blob);
    for (uint32_t i = 0; i < ops.size(); ++i) {
      if (ops[i] != static_cast<uint32_t>(cpu::NodeOp::GatherMap)) continue;
      EXPECT_EQ(blob_node(blob, i).params[0], 4u) << "one row per head: the index repeats";
      EXPECT_EQ(blob_node(blob, i).params[1], 23u * 32u) << "a head's scores apart";
    }
  };
  c.push_back(sew);
  c.push_back({"sew_d_gather_split_over_the_pool",
               [](GraphBuilder& b) { relative_gather(b, 8, 61, 32, 5); }, 1e-10});
  c.push_back({"gather_middle_dim_smaller_index",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 7, 5});
                 std::vector<int64_t> index;
                 for (int64_t k = 0; k < 3 * 4 * 4; ++k) index.push_back((k * 5 + k / 7) % 7);
                 b.output(gather(b, b.op("tern::neg", {x}, DType::F32, {3, 7, 5}), 1,
                                 {3, 4, 4}, index));
               },
               1e-10});
  OpCase per_batch = {"gather_index_differs_per_batch",
                      [](GraphBuilder& b) {
                        const int x = b.input("x", DType::F32, {2, 9});
                        b.output(gather(b, x, 1, {2, 5}, {8, 0, 3, 3, 1, 2, 7, 7, 0, 5}));
                      },
                      1e-10};
  per_batch.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::GatherMap)});
    EXPECT_EQ(blob_node(blob, 0).params[0], 1u) << "no fold: the whole map";
  };
  c.push_back(per_batch);
  OpCase perm = {"index_select_permutation",
                 [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {4, 6, 3});
                   const int i = int64_constant(b, {5}, {4, 0, 5, 5, 2});
                   const int s = b.op("tern::index_select", {x, b.int_value(1), i}, DType::F32,
                                      {4, 5, 3});
                   b.output(b.op("tern::mul", {s, s}, DType::F32, {4, 5, 3}));
                 },
                 1e-10};
  perm.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(count_op(blob, cpu::NodeOp::GatherMap), 1u);
    EXPECT_EQ(blob_node(blob, 0).params[0], 4u) << "one row per x[b]";
    EXPECT_EQ(blob_node(blob, 0).params[1], 18u) << "a row of x apart";
    EXPECT_EQ(blob_node(blob, 0).params[2], 3u) << "each entry copies a picked row's 3 elements";
  };
  c.push_back(perm);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceGather, cases());

TEST(CpuGather, WhatTheCompileHalfRefuses) {
  register_all();
  auto reason = [](GraphBuilder& b) {
    return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
  };
  {  // an index outside x's dim
    GraphBuilder b;
    gather(b, b.input("x", DType::F32, {2, 4}), 1, {2, 2}, {0, 4, 1, 1});
    EXPECT_NE(reason(b).find("index 4 outside [0, 4)"), std::string::npos) << reason(b);
  }
  {  // a negative index (torch.gather refuses it too)
    GraphBuilder b;
    gather(b, b.input("x", DType::F32, {2, 4}), 1, {2, 2}, {0, -1, 1, 1});
    EXPECT_NE(reason(b).find("index -1 outside"), std::string::npos) << reason(b);
  }
  {  // an index larger than x in another dim
    GraphBuilder b;
    gather(b, b.input("x", DType::F32, {2, 4}), 1, {3, 1}, {0, 1, 2});
    EXPECT_NE(reason(b).find("no larger in the other dims"), std::string::npos) << reason(b);
  }
  {  // an index computed at run time
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 4});
    const int i = b.input("i", DType::I64, {2, 2});
    b.op("tern::gather", {x, b.int_value(1), i}, DType::F32, {2, 2});
    EXPECT_NE(reason(b).find("not a constant int64 tensor"), std::string::npos) << reason(b);
  }
  {  // 4-D: its bytes are NHWC in the delegate
    GraphBuilder b;
    gather(b, b.input("x", DType::F32, {1, 2, 2, 2}), 3, {1, 2, 2, 1},
           {1, 0, 0, 1});
    EXPECT_NE(reason(b).find("a 4-D x or output"), std::string::npos) << reason(b);
  }
}

std::vector<uint8_t> gather_blob(std::vector<int64_t> index_sizes, std::vector<int64_t> index) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {3, 8});
  b.output(gather(b, x, 1, std::move(index_sizes), index));
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.graph().delegates[0].blob;
}

TEST(CpuGatherBlob, FieldsAreChecked) {
  register_all();
  // The same 2 picks in every row: 3 rows of a 2-entry map, 8 elements apart.
  const std::vector<uint8_t> blob = gather_blob({3, 2}, {5, 1, 5, 1, 5, 1});
  ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::GatherMap)});
  const cpu::BlobNode n = blob_node(blob, 0);
  ASSERT_EQ(n.params[0], 3u);
  ASSERT_EQ(n.params[1], 8u);
  expect_refused(
      blob, 0,
      {{"rows against the output", [](cpu::BlobNode& m) { m.params[0] = 2; },
        "2 rows of the 2-entry map copying runs of 1, expected the output's 6 elements"},
       {"no rows", [](cpu::BlobNode& m) { m.params[0] = 0; }, "parameter 0 is 0"},
       {"a step leaving the map past x", [](cpu::BlobNode& m) { m.params[1] = 10; },
        "map entry 0 is 5, expected 0..3 (x's 24 elements less the last row's start 20 and "
        "the run of 1)"},
       {"a last row past x", [](cpu::BlobNode& m) { m.params[1] = 12; },
        "the last row starts at 24, and with a run of 1 passes x's 24 elements"},
       {"runs the output has no room for", [](cpu::BlobNode& m) { m.params[2] = 2; },
        "3 rows of the 2-entry map copying runs of 2, expected the output's 6 elements"},
       {"a huge step", [](cpu::BlobNode& m) { m.params[1] = 1u << 31; }, "above"},
       {"an unused parameter", [](cpu::BlobNode& m) { m.params[3] = 1; },
        "unused parameter 3 is 1"},
       {"the map as x", [](cpu::BlobNode& m) { m.inputs[0] = m.inputs[1]; },
        "must not be a constant"},
       {"x as the map", [](cpu::BlobNode& m) { m.inputs[1] = m.inputs[0]; },
        "must be a constant"}});
  // One row (an index that differs per row): a step is refused.
  const std::vector<uint8_t> one = gather_blob({2, 2}, {5, 1, 0, 7});
  ASSERT_EQ(blob_node(one, 0).params[0], 1u);
  expect_refused(one, 0,
                 {{"a step with one row", [](cpu::BlobNode& m) { m.params[1] = 8; },
                   "step 8 with one row, expected 0"}});
  // Every entry of the map is read against x: one past its end, and a negative one.
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  cpu::BlobValue map;
  std::memcpy(&map, blob.data() + sizeof(h) + n.inputs[1] * sizeof(cpu::BlobValue), sizeof(map));
  for (int32_t entry : {17, -1}) {
    std::vector<uint8_t> bad = blob;
    std::memcpy(bad.data() + h.data_offset + map.data_offset + 4, &entry, 4);
    std::string message;
    EXPECT_EQ(parse(bad, &message), Error::InvalidProgram) << entry;
    EXPECT_NE(message.find("map entry 1 is " + std::to_string(entry) + ", expected 0..7"),
              std::string::npos)
        << message;
  }
}

/// An index_select of rows: each map entry copies one of x's rows (a run of 4).
TEST(CpuGatherBlob, RunsAreChecked) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {5, 4});
  const int i = int64_constant(b, {3}, {4, 0, 2});
  b.output(b.op("tern::index_select", {x, b.int_value(0), i}, DType::F32, {3, 4}));
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  const std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::GatherMap)});
  const cpu::BlobNode n = blob_node(blob, 0);
  ASSERT_EQ(n.params[0], 1u);
  ASSERT_EQ(n.params[2], 4u);
  expect_refused(blob, 0,
                 {{"a run longer than the output's share",
                   [](cpu::BlobNode& m) { m.params[2] = 5; },
                   "1 rows of the 3-entry map copying runs of 5, expected the output's 12 "
                   "elements"},
                  {"a run of 0 as 1: sizes disagree", [](cpu::BlobNode& m) { m.params[2] = 0; },
                   "copying runs of 1, expected the output's 12 elements"}});
  // The last entry's run must end inside x: row 4 starts at 16, so 17 passes x's 20 elements.
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  cpu::BlobValue map;
  std::memcpy(&map, blob.data() + sizeof(h) + n.inputs[1] * sizeof(cpu::BlobValue), sizeof(map));
  std::vector<uint8_t> bad = blob;
  const int32_t entry = 17;
  std::memcpy(bad.data() + h.data_offset + map.data_offset, &entry, 4);
  std::string message;
  EXPECT_EQ(parse(bad, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("map entry 0 is 17, expected 0..16"), std::string::npos) << message;
}

}  // namespace
}  // namespace tern::cpu_test
