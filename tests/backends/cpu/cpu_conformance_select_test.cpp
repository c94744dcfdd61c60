// Conformance of the cpu backend's select (tern's own node, op 44, since blob version 21: a
// where whose condition is a bool activation made outside the delegate; since version 22 also
// a comparison of an activation with a number inside the region, fused into the select) against the portable
// kernel (harness: cpu_conformance_util.h; a bool input is true where its random float is
// positive): Apertus' xIELU (where(x > 0, quadratic, expm1 branch) on a linear's output),
// XLM's masked scores (a [B, 1, 1, S] mask over 4-D plain scores, filled with float32's lowest,
// then softmax), numbers and 0-D constants on either side, a condition broadcast over the
// leading and the last dims, an NHWC conv output selected and read by a conv again; fused
// comparisons: xIELU's where(h > 0, ..) on a linear's output, each of the six comparisons of a
// relu's output with 0 (exact zeros: the equal cases), one mask read by two selects with a
// broadcast; then what the compile half refuses and the reader's checks (a bool value read by
// another node, another node's input where the bool one must be, the mode and its number).
#include <gtest/gtest.h>

#include <cfloat>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/compile/register_cpu_backend_compiler.h"
#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/partitioner.h"

namespace tern::cpu_test {
namespace {

int linear(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t out, uint32_t seed) {
  const int w = constant(b, "w" + std::to_string(seed), {out, xs.back()}, seed, 0.5f);
  const int bias = constant(b, "b" + std::to_string(seed), {out}, seed + 1, 0.5f);
  std::vector<int64_t> ys = xs;
  ys.back() = out;
  return b.op("tern::linear", {x, w, bias}, DType::F32, ys);
}

int where(GraphBuilder& b, int c, int x, int y, std::vector<int64_t> out) {
  return b.op("tern::where", {c, x, y}, DType::F32, std::move(out));
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase xielu = {"xielu_branches", [](GraphBuilder& b) {
                    const std::vector<int64_t> xs{2, 5, 8};
                    const int x = b.input("x", DType::F32, xs);
                    const int pos = b.input("positive", DType::Bool, xs);
                    const int h = linear(b, x, xs, 8, 11);
                    const int sq = b.op("tern::mul", {h, h}, DType::F32, xs);
                    const int em = b.op("tern::expm1", {h}, DType::F32, xs);
                    const int y = where(b, pos, sq, em, xs);
                    b.output(linear(b, y, xs, 4, 13));
                  }, 1e-12};
  xielu.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Select), 1u);
  };
  c.push_back(xielu);
  c.push_back({"masked_scores_softmax", [](GraphBuilder& b) {
                 const std::vector<int64_t> qs{2, 3, 4, 8}, ss{2, 3, 4, 4};
                 const int q = b.input("q", DType::F32, qs);
                 const int k = b.input("k", DType::F32, qs);
                 const int mask = b.input("mask", DType::Bool, {2, 1, 1, 4});
                 const int kt = b.op("tern::transpose", {k, b.int_value(2), b.int_value(3)},
                                     DType::F32, {2, 3, 8, 4});
                 const int s = b.op("tern::matmul", {q, kt}, DType::F32, ss);
                 const int m = where(b, mask, b.double_value(-FLT_MAX), s, ss);
                 b.output(b.op("tern::softmax", {m, b.int_value(-1)}, DType::F32, ss));
               }, 1e-12});
  c.push_back({"numbers_and_0d_constants", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{3, 7};
                 const int x = b.input("x", DType::F32, xs);
                 const int cond = b.input("c", DType::Bool, {3, 1});
                 const int k = b.constant_f32("k", {}, {2.5f});
                 const int y = b.op("tern::mul", {x, b.double_value(3.0)}, DType::F32, xs);
                 b.output(where(b, cond, y, k, xs));
                 b.output(where(b, cond, b.double_value(1.0), y, xs));
                 const int row = b.input("row", DType::Bool, {7});
                 b.output(where(b, row, y, b.op("tern::neg", {y}, DType::F32, xs), xs));
               }, 1e-12});
  c.push_back({"nhwc_conv_output_selected", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 6, 5}, ys{1, 4, 6, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 21);
                 const int cond = b.input("c", DType::Bool, {1, 1, 6, 5});
                 const int z = where(b, cond, y, b.double_value(0.0), ys);
                 b.output(conv(b, z, ys, 2, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 23));
               }, 1e-12});
  OpCase fused = {"xielu_fused_comparison", [](GraphBuilder& b) {
                    const std::vector<int64_t> xs{2, 5, 8};
                    const int x = b.input("x", DType::F32, xs);
                    const int h = linear(b, x, xs, 8, 31);
                    const int pos = b.op("tern::gt", {h, b.double_value(0.0)}, DType::Bool, xs);
                    const int sq = b.op("tern::mul", {h, h}, DType::F32, xs);
                    const int em = b.op("tern::expm1", {h}, DType::F32, xs);
                    const int y = where(b, pos, sq, em, xs);
                    b.output(linear(b, y, xs, 4, 33));
                  }, 1e-12};
  fused.check_blob = [](const std::vector<uint8_t>& blob) {  // one region, no bool input
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Select), 1u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::FullyConnected), 2u);
  };
  c.push_back(fused);
  OpCase all = {"six_comparisons_with_exact_ties", [](GraphBuilder& b) {
                  const std::vector<int64_t> xs{3, 16};
                  const int x = b.input("x", DType::F32, xs);
                  const int r = b.op("tern::relu", {x}, DType::F32, xs);
                  const int neg = b.op("tern::neg", {r}, DType::F32, xs);
                  for (const char* op : {"tern::gt", "tern::ge", "tern::lt", "tern::le",
                                         "tern::eq", "tern::ne"}) {
                    const int m = b.op(op, {r, b.double_value(0.0)}, DType::Bool, xs);
                    b.output(where(b, m, b.op("tern::add", {r, b.double_value(1.0)}, DType::F32,
                                              xs),
                                   neg, xs));
                  }
                }, 1e-12};
  all.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Select), 6u);
  };
  c.push_back(all);
  c.push_back({"one_mask_two_selects_broadcast", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {4, 1});
                 const int y = b.input("y", DType::F32, {4, 5});
                 const int t = b.op("tern::tanh", {x}, DType::F32, {4, 1});
                 const int m = b.op("tern::lt", {t, b.int_value(0)}, DType::Bool, {4, 1});
                 b.output(where(b, m, y, b.double_value(2.0), {4, 5}));
                 b.output(where(b, m, b.double_value(-3.0), t, {4, 1}));
               }, 1e-12});
  OpCase tri = {"tril_and_triu_of_activations", [](GraphBuilder& b) {
                  // OLMo-Hybrid's tril(x, -1) of a 5-D activation; triu above and below the
                  // diagonal, on a wide and a tall matrix; a 4-D NHWC conv output.
                  const std::vector<int64_t> fs{1, 4, 1, 6, 6};
                  const int f = b.input("f", DType::F32, fs);
                  const int ft = b.op("tern::tanh", {f}, DType::F32, fs);
                  b.output(b.op("tern::tril", {ft, b.int_value(-1)}, DType::F32, fs));
                  const int w = b.input("w", DType::F32, {3, 9});
                  const int wt = b.op("tern::tanh", {w}, DType::F32, {3, 9});
                  b.output(b.op("tern::triu", {wt, b.int_value(2)}, DType::F32, {3, 9}));
                  b.output(b.op("tern::tril", {wt, b.int_value(4)}, DType::F32, {3, 9}));
                  const int t = b.input("t", DType::F32, {2, 8, 3});
                  const int tt = b.op("tern::tanh", {t}, DType::F32, {2, 8, 3});
                  b.output(b.op("tern::triu", {tt, b.int_value(-2)}, DType::F32, {2, 8, 3}));
                  const std::vector<int64_t> xs{1, 3, 6, 5}, ys{1, 4, 6, 5};
                  const int x = b.input("x", DType::F32, xs);
                  const int y = conv(b, x, xs, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 41);
                  const int l = b.op("tern::tril", {y, b.int_value(0)}, DType::F32, ys);
                  b.output(conv(b, l, ys, 2, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 43));
                }, 1e-12};
  tri.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Select), 5u);
  };
  c.push_back(tri);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceSelect, cases());

std::string reason(GraphBuilder& b) {
  return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
}

TEST(CpuSelect, WhatTheCompileHalfRefuses) {
  register_all();
  {  // a condition that does not broadcast to the output
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 3});
    const int c = b.input("c", DType::Bool, {2, 2});
    where(b, c, x, b.double_value(0.0), {2, 3});
    EXPECT_NE(reason(b).find("does not broadcast"), std::string::npos) << reason(b);
  }
  {  // an int64 operand
    GraphBuilder b;
    const int x = b.input("x", DType::I64, {2, 3});
    const int c = b.input("c", DType::Bool, {2, 3});
    b.op("tern::where", {c, x, b.int_value(0)}, DType::I64, {2, 3});
    EXPECT_NE(reason(b).find("dtype is not f32"), std::string::npos) << reason(b);
  }
  auto comparison_reason = [](GraphBuilder& b, int cmp_node) {
    return compiler::CpuBackendCompiler::unsupported_reason(
        b.graph(), b.graph().nodes.at(static_cast<size_t>(cmp_node)));
  };
  {  // a comparison whose mask is also cast: it would have to be made, and bool ops are not
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 3});
    const int m = b.op("tern::gt", {x, b.double_value(0.0)}, DType::Bool, {2, 3});
    where(b, m, x, b.double_value(0.0), {2, 3});
    b.output(b.op("tern::cast", {m}, DType::F32, {2, 3}));
    EXPECT_NE(comparison_reason(b, 0).find("read by tern::cast"), std::string::npos)
        << comparison_reason(b, 0);
  }
  {  // a comparison of two tensors
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 3});
    const int y = b.input("y", DType::F32, {2, 3});
    const int m = b.op("tern::lt", {x, y}, DType::Bool, {2, 3});
    b.output(where(b, m, x, y, {2, 3}));
    EXPECT_NE(comparison_reason(b, 0).find("compares with a tensor"), std::string::npos)
        << comparison_reason(b, 0);
  }
  {  // a mask that is a method output
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 3});
    const int m = b.op("tern::ne", {x, b.double_value(1.0)}, DType::Bool, {2, 3});
    b.output(where(b, m, x, b.double_value(0.0), {2, 3}));
    b.output(m);
    EXPECT_NE(comparison_reason(b, 0).find("method output"), std::string::npos)
        << comparison_reason(b, 0);
  }
}

// The partitioner may put a fused comparison and a where reading it in different runs (an
// operand of the where made by a node the backend does not take, between them): the run
// holding the comparison cannot make its mask, so it is not lowered fused — that run is
// declined (portable), the program compiles and matches the portable kernels.
TEST(CpuSelect, AComparisonReadOutsideItsRunLeavesThatRunPortable) {
  register_all();
  compiler::register_cpu_backend_compiler();
  GraphBuilder b;
  const std::vector<int64_t> xs{2, 8};
  const int x = b.input("x", DType::F32, xs);
  const int h = linear(b, x, xs, 8, 51);
  const int m = b.op("tern::gt", {h, b.double_value(0.0)}, DType::Bool, xs);
  const int e = b.op("tern::erf", {h}, DType::F32, xs);  // not taken by the cpu backend
  const int w = where(b, m, e, b.double_value(0.0), xs);
  b.output(linear(b, w, xs, 4, 53));
  const compiler::Graph graph = b.build();
  ASSERT_NE(compiler::CpuBackendCompiler::unsupported_reason(graph, graph.nodes[2]), "");
  compiler::Graph partitioned = graph;
  ASSERT_NO_THROW(compiler::partition(partitioned, {"cpu"}));
  for (const compiler::DelegateRegion& r : partitioned.delegates) {
    for (int out : r.outputs) EXPECT_NE(out, m) << "the mask leaves a region";
  }
  compiler::ProgramGraph program;
  program.methods.push_back(graph);
  compiler::CompileOptions options;
  options.backends = {"cpu"};
  const std::vector<uint8_t> pte = compiler::compile_program(program, options).bytes;
  const std::vector<std::vector<float>> inputs{random_floats(16, 7)};
  const RunResult delegated = run_program(pte, graph, inputs, /*disable_cpu=*/false);
  const RunResult portable = run_program(pte, graph, inputs, /*disable_cpu=*/true);
  ASSERT_EQ(delegated.outputs.size(), 1u);
  EXPECT_LE(nmse(delegated.outputs[0], portable.outputs[0]), 1e-12);
}

/// A region of one select: cond (a bool input) ? x + 1 : 0.
std::vector<uint8_t> select_blob() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 6});
  const int c = b.input("c", DType::Bool, {1, 6});
  const int y = b.op("tern::add", {x, b.double_value(1.0)}, DType::F32, {2, 6});
  b.output(where(b, c, y, b.double_value(0.0), {2, 6}));
  delegate_cpu(b, 0, 1);
  return b.build().delegates.at(0).blob;
}

TEST(CpuSelectBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = select_blob();
  std::string message;
  ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
  const std::vector<uint32_t> ops = blob_ops(blob);
  ASSERT_EQ(ops.size(), 2u);
  ASSERT_EQ(ops[1], static_cast<uint32_t>(cpu::NodeOp::Select));
  const cpu::BlobNode sel = blob_node(blob, 1);
  const cpu::BlobNode add = blob_node(blob, 0);
  expect_refused(
      blob, 1,
      {{"a comparison mode over a bool condition", [](cpu::BlobNode& n) { n.params[0] = 1; },
        "is a bool value"},
       {"a number in the bool mode", [](cpu::BlobNode& n) { n.params[1] = 5; },
        "unused parameter 1 is 5"},
       {"output bounds", [](cpu::BlobNode& n) { n.fparams[0] = 0.0f; }, "(select)"},
       {"cond swapped with a",
        [sel](cpu::BlobNode& n) {
          n.inputs[0] = sel.inputs[1];
          n.inputs[1] = sel.inputs[0];
        },
        "a bool value"},
       {"two inputs",
        [](cpu::BlobNode& n) {
          n.num_inputs = 2;
          n.inputs[2] = cpu::kNoValue;
        },
        "(select): 2 inputs"}});
  expect_refused(blob, 0,
                 {{"the add reads the bool value",
                   [sel](cpu::BlobNode& n) { n.inputs[0] = sel.inputs[0]; },
                   "is a bool value"}});
  (void)add;
}

TEST(CpuSelectBlob, FusedComparisonFieldsAreChecked) {
  register_all();
  GraphBuilder b;  // where(x + 1 <= 0.5, x + 1, 0)
  const int x = b.input("x", DType::F32, {2, 6});
  const int y = b.op("tern::add", {x, b.double_value(1.0)}, DType::F32, {2, 6});
  const int m = b.op("tern::le", {y, b.double_value(0.5)}, DType::Bool, {2, 6});
  b.output(where(b, m, y, b.double_value(0.0), {2, 6}));
  delegate_cpu(b, 0, 2);
  const std::vector<uint8_t> blob = b.build().delegates.at(0).blob;
  std::string message;
  ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
  const std::vector<uint32_t> ops = blob_ops(blob);
  ASSERT_EQ(ops.size(), 2u);  // the comparison makes no node of its own
  ASSERT_EQ(ops[1], static_cast<uint32_t>(cpu::NodeOp::Select));
  const cpu::BlobNode sel = blob_node(blob, 1);
  EXPECT_EQ(sel.params[0], static_cast<uint32_t>(cpu::SelectMode::LessEqual));
  float s = 0.0f;
  std::memcpy(&s, &sel.params[1], 4);
  EXPECT_EQ(s, 0.5f);
  EXPECT_EQ(sel.inputs[0], blob_node(blob, 0).output);  // x + 1 itself
  expect_refused(blob, 1,
                 {{"a parameter past the number", [](cpu::BlobNode& n) { n.params[2] = 3; },
                   "unused parameter 2 is 3"},
                  {"a mode past the last", [](cpu::BlobNode& n) { n.params[0] = 9; },
                   "mode 9"}});
}

}  // namespace
}  // namespace tern::cpu_test
