// Conformance of the cpu backend's IndexRows (tern's own node, op 45, since blob version 22: an
// index_select whose int64 index is computed at run time outside the delegate)
// against the portable kernels (NMSE 1e-12: the copies are exact, the linears around them are
// GEMMs, whose sums differ from the portable kernel's in the sanitized build; harness:
// cpu_conformance_util.h; int64 inputs hold integers in
// [0, index_bound), repeats included): CLIP's pooling (the hidden states' rows at run-time
// positions, then a projection), index_select along a middle and the last dim, embeddings of
// f32 tables by input ids (tokens [2, 3], a class label [1]); then an index outside the dim at run time (the
// execution fails, naming it, as the portable kernel's), what the compile half refuses and the
// reader's checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

int linear(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t out, uint32_t seed) {
  const int w = constant(b, "w" + std::to_string(seed), {out, xs.back()}, seed, 0.5f);
  std::vector<int64_t> ys = xs;
  ys.back() = out;
  return b.op("tern::linear", {x, w, b.none()}, DType::F32, ys);
}

int index_select(GraphBuilder& b, int x, int64_t dim, int idx, std::vector<int64_t> out) {
  return b.op("tern::index_select", {x, b.int_value(dim), idx}, DType::F32, std::move(out));
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase pool = {"clip_pooling_rows", [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {7, 16});
                   const int h = linear(b, x, {7, 16}, 16, 3);
                   const int at = b.input("at", DType::I64, {3});
                   const int p = index_select(b, h, 0, at, {3, 16});
                   b.output(linear(b, p, {3, 16}, 8, 5));
                 }, 1e-12};
  pool.index_bound = 7;
  pool.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::IndexRows), 1u);
  };
  c.push_back(pool);
  OpCase dims = {"middle_and_last_dims", [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {2, 5, 6});
                   const int h = linear(b, x, {2, 5, 6}, 6, 7);
                   const int i = b.input("i", DType::I64, {4});
                   b.output(index_select(b, h, 1, i, {2, 4, 6}));
                   const int j = b.input("j", DType::I64, {9});
                   b.output(index_select(b, h, -1, j, {2, 5, 9}));
                 }, 1e-12};
  dims.index_bound = 5;
  c.push_back(dims);
  // Embeddings of f32 tables by ids that are method inputs (since 2026-12-07; the rows of
  // IndexRows seen as [ids..., D]): a text model's token embedding (ids [2, 3], then a
  // linear; also a region output through a reshape) and DiT's class label (ids [1]) added to
  // a timestep embedding, each in the one region.
  OpCase tokens = {"token_embedding_of_input_ids", [](GraphBuilder& b) {
                     const int ids = b.input("ids", DType::I64, {2, 3});
                     const int table = constant(b, "table", {11, 8}, 9, 1.0f);
                     const int e = b.op("tern::embedding", {table, ids}, DType::F32, {2, 3, 8});
                     b.output(linear(b, e, {2, 3, 8}, 5, 11));
                     b.output(e);
                   }, 1e-12};
  tokens.index_bound = 11;
  tokens.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::IndexRows), 1u);
  };
  c.push_back(tokens);
  OpCase label = {"class_label_embedding", [](GraphBuilder& b) {
                    const int t = b.input("t", DType::F32, {1, 16});
                    const int label = b.input("label", DType::I64, {1});
                    const int table = constant(b, "classes", {5, 16}, 13, 1.0f);
                    const int e = b.op("tern::embedding", {table, label}, DType::F32, {1, 16});
                    const int h = b.op("tern::add", {linear(b, t, {1, 16}, 16, 15), e},
                                       DType::F32, {1, 16});
                    const int a = b.op("tern::silu", {h}, DType::F32,
                                       {1, 16});
                    b.output(linear(b, a, {1, 16}, 8, 17));
                  }, 1e-12};
  label.index_bound = 5;
  label.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::IndexRows), 1u);
  };
  c.push_back(label);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceIndexRows, cases());

TEST(CpuIndexRows, AnIndexOutsideTheDimFailsTheExecution) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {7, 16});
  const int h = linear(b, x, {7, 16}, 16, 3);
  const int at = b.input("at", DType::I64, {3});
  b.output(linear(b, index_select(b, h, 0, at, {3, 16}), {3, 16}, 8, 5));
  delegate_cpu(b, 0, 2);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
  std::vector<float> xs = random_floats(7 * 16, 1);
  std::vector<int64_t> sizes{7, 16}, isizes{3};
  ASSERT_EQ(method->set_input(0, testing::f32_view(sizes, xs)), Error::Ok);
  std::vector<int64_t> bad{2, 7, 0};
  TensorView idx;
  idx.dtype = DType::I64;
  idx.rank = 1;
  idx.sizes = isizes.data();
  idx.data = bad.data();
  idx.nbytes = bad.size() * sizeof(int64_t);
  ASSERT_EQ(method->set_input(1, idx), Error::Ok);
  EXPECT_EQ(method->execute(), Error::InvalidArgument);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("index 7 at position 1 is outside [0, 7)"), std::string::npos) << msg;
  bad[1] = 6;  // the same method runs again once the index is in range
  ASSERT_EQ(method->set_input(1, idx), Error::Ok);
  EXPECT_EQ(method->execute(), Error::Ok) << last_error_message();
}

std::string reason(GraphBuilder& b) {
  return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
}

TEST(CpuIndexRows, WhatTheCompileHalfRefuses) {
  register_all();
  {  // a 2-D index for index_select
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {5, 6});
    const int i = b.input("i", DType::I64, {2, 2});
    b.op("tern::index_select", {x, b.int_value(0), i}, DType::F32, {4, 6});
    EXPECT_NE(reason(b).find("not 1-D"), std::string::npos) << reason(b);
  }
  {  // an embedding whose ids the program makes (portable int ops: kept out of the region)
    GraphBuilder b;
    const int ids = b.input("ids", DType::I64, {3});
    const int shifted = b.op("tern::add", {ids, ids}, DType::I64, {3});
    const int table = constant(b, "table", {11, 8}, 9, 1.0f);
    b.op("tern::embedding", {table, shifted}, DType::F32, {3, 8});
    EXPECT_NE(reason(b).find("ids made in the program"), std::string::npos) << reason(b);
  }
  {  // a 4-D x (NHWC layouts are not followed through a run-time index)
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 3, 4, 5});
    const int i = b.input("i", DType::I64, {2});
    index_select(b, x, 1, i, {1, 2, 4, 5});
    EXPECT_NE(reason(b).find("4-D"), std::string::npos) << reason(b);
  }
}

/// x [5, 6] -> linear -> index_select(., 0, i [3]) -> linear.
std::vector<uint8_t> index_rows_blob() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {5, 6});
  const int h = linear(b, x, {5, 6}, 6, 3);
  const int i = b.input("i", DType::I64, {3});
  b.output(linear(b, index_select(b, h, 0, i, {3, 6}), {3, 6}, 4, 5));
  delegate_cpu(b, 0, 2);
  return b.build().delegates.at(0).blob;
}

TEST(CpuIndexRowsBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = index_rows_blob();
  std::string message;
  ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
  const uint32_t at = last_node_of(blob, cpu::NodeOp::IndexRows);
  ASSERT_LT(at, blob_ops(blob).size());
  const cpu::BlobNode node = blob_node(blob, at);
  expect_refused(
      blob, at,
      {{"dim past the rank", [](cpu::BlobNode& n) { n.params[0] = 2; }, "dim 2 of a rank-2 x"},
       {"dim 1: another output", [](cpu::BlobNode& n) { n.params[0] = 1; }, "(index_rows)"},
       {"a parameter", [](cpu::BlobNode& n) { n.params[3] = 1; }, "unused parameter 3 is 1"},
       {"bounds", [](cpu::BlobNode& n) { n.fparams[1] = 2.0f; }, "expected (-inf, +inf)"},
       {"x and index swapped",
        [node](cpu::BlobNode& n) {
          n.inputs[0] = node.inputs[1];
          n.inputs[1] = node.inputs[0];
        },
        "an int64 value"},
       {"one input",
        [](cpu::BlobNode& n) {
          n.num_inputs = 1;
          n.inputs[1] = cpu::kNoValue;
        },
        "(index_rows): 1 inputs"}});
}

}  // namespace
}  // namespace tern::cpu_test
