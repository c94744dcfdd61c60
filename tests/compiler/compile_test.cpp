// compile_program: validate -> plan -> serialize, with one report per method.
#include "tools/compiler/compile.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tools/compiler/graph_builder.h"

namespace tern::compiler {
namespace {

// x[1,4] -> linear(8) -> relu -> linear(2): activations of 16, 32, 32 and 8 bytes, 64 each
// after alignment; x/h_relu and h/y can share, so arena = lower bound = 128.
Graph mlp(const std::string& name) {
  GraphBuilder b(name);
  const int x = b.input("x", DType::F32, {1, 4});
  const int w1 = b.constant_f32("fc1.weight", {8, 4}, std::vector<float>(32, 0.5f));
  const int b1 = b.constant_f32("fc1.bias", {8}, std::vector<float>(8, 0.0f));
  const int w2 = b.constant_f32("fc2.weight", {2, 8}, std::vector<float>(16, 0.25f));
  const int none = b.none();
  const int h = b.op("tern::linear", {x, w1, b1}, DType::F32, {1, 8}, "fc1");
  const int r = b.op("tern::relu", {h}, DType::F32, {1, 8}, "act");
  const int y = b.op("tern::linear", {r, w2, none}, DType::F32, {1, 2}, "fc2");
  b.output(y);
  return b.build();
}

TEST(CompileProgram, ReportsEveryMethod) {
  ProgramGraph p;
  p.methods.push_back(mlp("forward"));
  p.methods.push_back(mlp("other"));
  p.methods[1].nodes.pop_back();  // other: x -> fc1 -> act, output h_relu
  p.methods[1].values.pop_back();
  p.methods[1].outputs = {p.methods[1].nodes.back().outputs[0]};
  const CompileResult r = compile_program(p);
  EXPECT_FALSE(r.bytes.empty());
  ASSERT_EQ(r.methods.size(), 2u);
  EXPECT_EQ(r.methods[0].name, "forward");
  EXPECT_EQ(r.methods[0].num_nodes, 3u);
  // x [-1, 2] (an input keeps its bytes), h [0, 1], h_relu [1, 2], y [2, 2]: y takes h's.
  EXPECT_EQ(r.methods[0].arena_size, 192u);
  EXPECT_EQ(r.methods[0].lower_bound, 192u);
  EXPECT_EQ(r.methods[1].name, "other");
  EXPECT_EQ(r.methods[1].num_nodes, 2u);
  // x [-1, 1], h [0, 1], h_relu [1, 1]: all three live at position 1.
  EXPECT_EQ(r.methods[1].lower_bound, 192u);
  EXPECT_EQ(r.methods[1].arena_size, 192u);
}

TEST(CompileProgram, RejectsInvalidPrograms) {
  ProgramGraph empty;
  EXPECT_THROW(compile_program(empty), std::invalid_argument);

  ProgramGraph dup;
  dup.methods = {mlp("forward"), mlp("forward")};
  try {
    compile_program(dup);
    ADD_FAILURE() << "accepted two methods named forward";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'forward'"), std::string::npos) << e.what();
  }

  ProgramGraph bad;
  bad.methods = {mlp("forward")};
  bad.methods[0].nodes[1].args[0] = 99;
  try {
    compile_program(bad);
    ADD_FAILURE() << "accepted an out-of-range arg";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node 1 (tern::relu): arg 0: value 99 out of range"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tern::compiler
