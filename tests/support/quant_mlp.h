// The small quantized-weight model of the GPU backends' quant tests (vulkan_quant_test,
// cuda_quant_test): idx [5] (i64) -> embedding [300, 45] -> linear 19 (+bias) -> relu -> linear
// 70 (GEMMs of 5 rows); x1 [1, 45] -> linear 19 with the same weight (a GEMV). Outputs: the
// embedding, y, v. Shapes chosen for edge cases once quantized: the table's 13500 elements are
// 422 NF4 blocks of 32 (two absmax2 groups of 256) with a partial last block at 64 and 128;
// fc1.weight [19, 45] has an odd element count and a partial block; fc2.weight [70, 19] spans two
// 64-wide GEMM blocks with K = 19, not a multiple of a 16-wide slab.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <string>

#include "tests/support/backend_test_values.h"
#include "tools/compiler/graph_builder.h"

namespace tern::test_support {

constexpr int64_t kQuantVocab = 300, kQuantDim = 45, kQuantHidden = 19, kQuantOut = 70,
                  kQuantRows = 5;

/// Adds the model's inputs, constants, nodes and outputs to `g`.
inline void add_quant_mlp(compiler::GraphBuilder& g) {
  const int idx = g.input("idx", DType::I64, {kQuantRows});
  const int x1 = g.input("x1", DType::F32, {1, kQuantDim});
  const int emb = g.constant_f32("emb.weight", {kQuantVocab, kQuantDim},
                                 random_floats(kQuantVocab * kQuantDim, 1));
  const int w1 = g.constant_f32("fc1.weight", {kQuantHidden, kQuantDim},
                                random_floats(kQuantHidden * kQuantDim, 2, -0.2f, 0.2f));
  const int b1 = g.constant_f32("fc1.bias", {kQuantHidden}, random_floats(kQuantHidden, 3));
  const int w2 = g.constant_f32("fc2.weight", {kQuantOut, kQuantHidden},
                                random_floats(kQuantOut * kQuantHidden, 4, -0.3f, 0.3f));
  const int e = g.op("tern::embedding", {emb, idx}, DType::F32, {kQuantRows, kQuantDim});
  const int h = g.op("tern::linear", {e, w1, b1}, DType::F32, {kQuantRows, kQuantHidden});
  const int r = g.op("tern::relu", {h}, DType::F32, {kQuantRows, kQuantHidden});
  const int y = g.op("tern::linear", {r, w2, g.none()}, DType::F32, {kQuantRows, kQuantOut});
  const int v = g.op("tern::linear", {x1, w1, b1}, DType::F32, {1, kQuantHidden});
  g.output(e);
  g.output(y);
  g.output(v);
}

/// A scheme string ("nf4:block=32") as a GoogleTest parameter name ("nf4_block_32").
inline std::string scheme_test_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string s = info.param;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

}  // namespace tern::test_support
