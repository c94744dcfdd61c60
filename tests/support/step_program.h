// Test-only: a language-model-shaped step method for the token generator's tests:
// decode(token i64 [1, 1], position i64 [1]) -> logits f32 [1, 1, vocab], whose logits put 5.0
// on token (t + 1) % vocab for input token t and 0 elsewhere, so greedy decoding counts up.
#pragma once

#include <cstdint>
#include <limits>
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

/// Test-only: a language-model-shaped program with both methods of tern_export.export_llm,
/// sharing one state tensor "history" i64 [cache] in which each method writes the tokens it is
/// fed at their positions (so a test reads back where every prompt and generated token went):
///   prefill(tokens i64 [1, seq], positions i64 [seq]) -> logits f32 [1, seq, vocab], seq
///     dynamic in 1..chunk: 5.0 on token (t + 2) % vocab for each input token t;
///   decode(token i64 [1, 1], position i64 [1]) -> logits f32 [1, 1, vocab]: (t + 1) % vocab.
/// Greedy decoding after a prefill therefore starts at last + 2, then counts up by one.
/// last_logits: prefill returns the last position's row only, [1, 1, vocab] (a slice from -1,
/// as export_llm's default prefill). static_prefill: prefill takes exactly `chunk` tokens
/// (export_llm's static_prefill).
inline std::vector<uint8_t> counting_llm_program(int64_t vocab, int64_t chunk, int64_t cache,
                                                 bool last_logits = false,
                                                 bool static_prefill = false) {
  auto table = [&](int64_t step) {
    std::vector<float> t(static_cast<size_t>(vocab * vocab), 0.0f);
    for (int64_t i = 0; i < vocab; ++i) t[static_cast<size_t>(i * vocab + (i + step) % vocab)] = 5.0f;
    return t;
  };
  compiler::ProgramGraph program;
  program.source_model = "counting_llm";
  {
    compiler::GraphBuilder b("prefill");
    // seq: a dynamic dim of 1..chunk, or (static_prefill) exactly chunk tokens.
    const int seq = static_prefill ? -1 : b.symbol("seq", 1, chunk);
    const int tokens = b.input("tokens", DType::I64, {1, chunk});
    if (!static_prefill) b.dynamic_dims(tokens, {-1, seq});
    const int positions = b.input("positions", DType::I64, {chunk});
    if (!static_prefill) b.dynamic_dims(positions, {seq});
    const int weights = b.constant_f32("table2", {vocab, vocab}, table(2));
    const int logits = b.op("tern::embedding", {weights, tokens}, DType::F32, {1, chunk, vocab},
                            "next");
    if (!static_prefill) b.dynamic_dims(logits, {-1, seq, -1});
    const int last = last_logits ? b.op("tern::slice",
                                        {logits, b.int_value(1), b.int_value(-1),
                                         b.int_value(std::numeric_limits<int64_t>::max()),
                                         b.int_value(1)},
                                        DType::F32, {1, 1, vocab}, "last")
                                 : logits;
    const int shape = b.int_list({chunk});
    if (!static_prefill) b.int_symbols(shape, {seq});
    const int flat = b.op("tern::view", {tokens, shape}, DType::I64, {chunk}, "flat");
    if (!static_prefill) b.dynamic_dims(flat, {seq});
    const int history = b.shared_state("history", DType::I64, {cache});
    b.op_into("tern::index_copy", {history, b.int_value(0), positions, flat}, {history},
              "remember");
    b.output(last);
    program.methods.push_back(b.build());
  }
  {
    compiler::GraphBuilder b("decode");
    const int token = b.input("token", DType::I64, {1, 1});
    const int position = b.input("position", DType::I64, {1});
    const int weights = b.constant_f32("table1", {vocab, vocab}, table(1));
    const int logits =
        b.op("tern::embedding", {weights, token}, DType::F32, {1, 1, vocab}, "next");
    const int flat = b.op("tern::view", {token, b.int_list({1})}, DType::I64, {1}, "flat");
    const int history = b.shared_state("history", DType::I64, {cache});
    b.op_into("tern::index_copy", {history, b.int_value(0), position, flat}, {history},
              "remember");
    b.output(logits);
    program.methods.push_back(b.build());
  }
  return compiler::compile_program(program).bytes;
}

}  // namespace tern::testing_support
