// A small graph for the compile driver's tests (compile_test.cpp, pte_file_writer_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "tools/compiler/graph_builder.h"

namespace tern::compiler::testing {

/// x[1,4] -> linear(8) -> relu -> linear(2): activations of 16, 32, 32 and 8 bytes, 64 each
/// after alignment; x/h_relu and h/y can share, so arena = lower bound = 128. fc1's weight is
/// all `w1` (fc1's bias 0, fc2's weight 0.25).
inline Graph mlp_graph(const std::string& name, float w1 = 0.5f) {
  GraphBuilder b(name);
  const int x = b.input("x", DType::F32, {1, 4});
  const int fc1 = b.constant_f32("fc1.weight", {8, 4}, std::vector<float>(32, w1));
  const int b1 = b.constant_f32("fc1.bias", {8}, std::vector<float>(8, 0.0f));
  const int fc2 = b.constant_f32("fc2.weight", {2, 8}, std::vector<float>(16, 0.25f));
  const int none = b.none();
  const int h = b.op("tern::linear", {x, fc1, b1}, DType::F32, {1, 8}, "fc1");
  const int r = b.op("tern::relu", {h}, DType::F32, {1, 8}, "act");
  const int y = b.op("tern::linear", {r, fc2, none}, DType::F32, {1, 2}, "fc2");
  b.output(y);
  return b.build();
}

}  // namespace tern::compiler::testing
