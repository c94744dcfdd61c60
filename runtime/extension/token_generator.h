// TokenGenerator: the decoding loop of a language model exported as a step method (issue 15,
// docs/llm-decoding.md): step(tokens int [1, 1], position int [1]) -> logits f32 [1, 1, vocab],
// its KV cache kept in state tensors. Feeds the prompt one token at a time, then samples each
// next token (greedy, or temperature / top-k / top-p with a seeded generator) until the stop
// token or max_new_tokens. Scratch is sized once, from the logits' vocabulary, when the
// generator is made; a step allocates nothing.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/executor/method.h"

namespace tern {

/// How the next token is chosen from the logits.
struct SamplingOptions {
  /// 0: greedy (the first largest logit); else softmax(logits / temperature) is sampled.
  float temperature = 0.0f;
  /// Only the k most likely tokens are candidates (0: all).
  uint32_t top_k = 0;
  /// Only the most likely tokens whose probabilities add up to top_p are candidates (the one
  /// that crosses it included); 1: all.
  float top_p = 1.0f;
};

struct GenerationOptions {
  uint32_t max_new_tokens = 32;
  /// Generation ends after this token (it is included in the output); -1: none.
  int64_t stop_token = -1;
  SamplingOptions sampling;
  uint64_t seed = 0;
};

/// Timings of one generate() call, in seconds from its start.
struct GenerationStats {
  uint32_t prompt_tokens = 0;
  uint32_t generated_tokens = 0;
  double prompt_seconds = 0;       ///< feeding the prompt (prefill)
  double first_token_seconds = 0;  ///< until the first new token was chosen
  double decode_seconds = 0;       ///< the steps after the first new token
};

/// Picks the next token from `logits` (f32, vocab entries) as `options` says, drawing from
/// `rng` when sampling. `order` and `probs` are scratch of vocab entries each. Never
/// allocates. InvalidArgument for a negative temperature, top_p outside (0, 1] or scratch of
/// the wrong size.
Result<int64_t> sample_token(Span<const float> logits, const SamplingOptions& options,
                             std::mt19937_64& rng, Span<int32_t> order, Span<float> probs);

class TokenGenerator {
 public:
  /// A generator over `step` (which must outlive it): checks its signature — two inputs,
  /// tokens int [1, 1] and position int [1] (i64 or i32), one output f32 [1, 1, vocab] — and
  /// sizes the scratch. InvalidArgument naming what differs.
  static Result<TokenGenerator> create(Method* step);

  /// The vocabulary size (the logits' last dim).
  int64_t vocab_size() const { return vocab_; }

  /// Feeds `prompt` at positions 0, 1, ... (state from an earlier call is overwritten from
  /// position 0 on; reset the method's or program's state to start clean), then generates up
  /// to max_new_tokens tokens into `out` (cleared first; capacity reserved up front). Errors:
  /// InvalidArgument for an empty prompt or a token outside [0, vocab) (naming both), the
  /// step's own errors (a position past its cache) with the step number.
  Error generate(Span<const int64_t> prompt, const GenerationOptions& options,
                 std::vector<int64_t>* out, GenerationStats* stats);

 private:
  TokenGenerator() = default;
  Error run_step(int64_t token, int64_t position, Span<const float>* logits);

  Method* step_ = nullptr;
  DType token_dtype_ = DType::I64;
  DType position_dtype_ = DType::I64;
  int64_t vocab_ = 0;
  std::vector<int32_t> order_;
  std::vector<float> probs_;
};

}  // namespace tern
