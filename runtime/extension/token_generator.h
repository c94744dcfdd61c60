// TokenGenerator: the decoding loop of a language model exported as a step method (issue 15,
// docs/llm-decoding.md): step(tokens int [1, 1], position int [1]) -> logits f32 [1, 1, vocab],
// its KV cache kept in state tensors — and optionally a prefill method of the same program,
// sharing that cache: prefill(tokens int [1, seq], positions int [seq]) -> logits f32
// [1, seq, vocab], or the last position's only, [1, 1, vocab], with seq bounded-dynamic
// (tern_export.export_llm). Feeds the prompt through
// prefill in chunks of at most its bound (else one token at a time through the step), then
// samples each next token (greedy, or temperature / top-k / top-p with a seeded generator)
// until the stop token or max_new_tokens. Scratch is sized once, from the logits' vocabulary
// and the prefill bound, when the generator is made; generating allocates nothing.
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

/// Called with the logits each token is chosen from: index 0 after the prompt, n after the
/// n-th generated token was fed. `logits` is valid during the call only.
using LogitsObserver = void (*)(void* context, uint32_t index, Span<const float> logits);

struct GenerationOptions {
  uint32_t max_new_tokens = 32;
  /// Generation ends after this token (it is included in the output); -1: none.
  int64_t stop_token = -1;
  SamplingOptions sampling;
  uint64_t seed = 0;
  /// Optional (null: none); sees every set of logits (tests compare them with a reference).
  LogitsObserver on_logits = nullptr;
  void* on_logits_context = nullptr;
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
  /// A generator over `step` and, when given, `prefill` (both must outlive it; prefill's
  /// state must be the step's — shared state of one program): checks their signatures — step:
  /// tokens int [1, 1] and position int [1] (i64 or i32) in, logits f32 [1, 1, vocab] out;
  /// prefill: tokens int [1, seq] and positions int [seq] with seq one dynamic dim (chunks of
  /// 1..its bound) or a static chunk (export_llm's static_prefill: whole chunks only, the rest
  /// of a prompt through the step), logits f32 [1, seq, vocab] or [1, 1, vocab] (the last
  /// position's) out, the same vocab — and sizes the scratch. InvalidArgument naming what
  /// differs.
  static Result<TokenGenerator> create(Method* step, Method* prefill = nullptr);

  /// The vocabulary size (the logits' last dim).
  int64_t vocab_size() const { return vocab_; }
  /// The most prompt tokens one prefill call takes (0: no prefill method).
  int64_t prefill_chunk() const { return chunk_; }
  /// Whether the prefill method takes exactly prefill_chunk() tokens (a static chunk): a
  /// prompt's last partial chunk then goes through the step method token by token.
  bool prefill_static() const { return prefill_static_; }

  /// Feeds `prompt` at positions 0, 1, ... (state from an earlier call is overwritten from
  /// position 0 on; reset the method's or program's state to start clean), then generates up
  /// to max_new_tokens tokens into `out` (cleared first; capacity reserved up front). Errors:
  /// InvalidArgument for an empty prompt or a token outside [0, vocab) (naming both), the
  /// methods' own errors (a position past the cache) with the token number.
  Error generate(Span<const int64_t> prompt, const GenerationOptions& options,
                 std::vector<int64_t>* out, GenerationStats* stats);

 private:
  TokenGenerator() = default;
  /// Checks `prefill`'s signature against the step's vocabulary and sizes its scratch.
  Error attach_prefill(Method* prefill);
  Error run_step(int64_t token, int64_t position, Span<const float>* logits);
  /// Prefill of prompt[begin, begin + count) at positions begin...; logits of the last one.
  Error run_prefill(Span<const int64_t> prompt, size_t begin, size_t count,
                    Span<const float>* logits);

  Method* step_ = nullptr;
  Method* prefill_ = nullptr;
  bool prefill_last_only_ = false;  ///< prefill returns the last position's logits only
  bool prefill_static_ = false;     ///< prefill takes exactly chunk_ tokens
  DType token_dtype_ = DType::I64;
  DType position_dtype_ = DType::I64;
  DType prefill_token_dtype_ = DType::I64;
  DType prefill_position_dtype_ = DType::I64;
  int64_t vocab_ = 0;
  int64_t chunk_ = 0;
  std::vector<int32_t> order_;
  std::vector<float> probs_;
  std::vector<int64_t> chunk_tokens_;     ///< prefill inputs (i32 ones use the first half)
  std::vector<int64_t> chunk_positions_;
};

}  // namespace tern
