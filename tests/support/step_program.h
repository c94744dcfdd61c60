// Test-only: a language-model-shaped step method for the token generator's tests:
// decode(token i64 [1, 1], position i64 [1]) -> logits f32 [1, 1, vocab], whose logits put 5.0
// on token (t + 1) % vocab for input token t and 0 elsewhere, so greedy decoding counts up.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/compiler/compile.h"
#include "tools/compiler/graph_builder.h"

namespace tern::testing_support {

inline std::vector<uint8_t> counting_step_program(int64_t vocab) {
  compiler::GraphBuilder b("decode");
  const int token = b.input("token", DType::I64, {1, 1});
  const int position = b.input("position", DType::I64, {1});
  std::vector<float> table(static_cast<size_t>(vocab * vocab), 0.0f);
  for (int64_t t = 0; t < vocab; ++t) table[static_cast<size_t>(t * vocab + (t + 1) % vocab)] = 5.0f;
  const int weights = b.constant_f32("table", {vocab, vocab}, table);
  const int logits =
      b.op("tern::embedding", {weights, token}, DType::F32, {1, 1, vocab}, "next");
  // The position is read (a state counts the steps it saw) so that the signature is a step's.
  const int seen = b.state("seen", DType::I64, {1});
  b.op_into("tern::add", {seen, position}, {seen}, "seen");
  b.output(logits);
  compiler::ProgramGraph program;
  program.source_model = "counting_step";
  program.methods.push_back(b.build());
  return compiler::compile_program(program).bytes;
}

}  // namespace tern::testing_support
