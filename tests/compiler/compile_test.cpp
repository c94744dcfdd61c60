// compile_program: validate -> plan -> serialize, with one report per method.
#include "tools/compiler/compile.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tests/compiler/mlp_graph.h"

namespace tern::compiler {
namespace {

using testing::mlp_graph;

TEST(CompileProgram, ReportsEveryMethod) {
  ProgramGraph p;
  p.methods.push_back(mlp_graph("forward"));
  p.methods.push_back(mlp_graph("other"));
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
  dup.methods = {mlp_graph("forward"), mlp_graph("forward")};
  try {
    compile_program(dup);
    ADD_FAILURE() << "accepted two methods named forward";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'forward'"), std::string::npos) << e.what();
  }

  ProgramGraph bad;
  bad.methods = {mlp_graph("forward")};
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
