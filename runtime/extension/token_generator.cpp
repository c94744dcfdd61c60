// TokenGenerator and sample_token: the decoding loop over a step method (token_generator.h).
#include "runtime/extension/token_generator.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstring>

#include "runtime/core/tensor_view.h"
#include "runtime/executor/method_meta.h"

namespace tern {
namespace {

bool is_int_dtype(DType d) { return d == DType::I64 || d == DType::I32; }

bool has_sizes(Span<const int64_t> sizes, std::initializer_list<int64_t> want) {
  if (sizes.size() != want.size()) return false;
  size_t i = 0;
  for (int64_t w : want) {
    if (sizes[i++] != w) return false;
  }
  return true;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The symbol index of dim `d` of `info`, or -1 when the dim is static.
int32_t dim_symbol(const TensorInfo& info, size_t d) {
  return d < info.dim_symbols.size() ? info.dim_symbols[d] : -1;
}

/// What a step or prefill method takes and returns.
struct Signature {
  TensorInfo tokens, positions, logits;
};

/// The signature of a method with two inputs and one output (`role` names the method in the
/// message, `expected` says what it should take); InvalidArgument for other counts.
Result<Signature> read_signature(const MethodMeta& meta, const char* role, const char* expected) {
  TERN_CHECK_OR_RETURN_ERROR(meta.num_inputs() == 2 && meta.num_outputs() == 1, InvalidArgument,
                             "TokenGenerator: %s '%s' has %zu inputs and %zu outputs; %s", role,
                             meta.name(), meta.num_inputs(), meta.num_outputs(), expected);
  Signature s;
  TERN_ASSIGN_OR_RETURN(s.tokens, meta.input_tensor_info(0));
  TERN_ASSIGN_OR_RETURN(s.positions, meta.input_tensor_info(1));
  TERN_ASSIGN_OR_RETURN(s.logits, meta.output_tensor_info(0));
  return s;
}

/// An int tensor view of `count` values into `storage` as `dtype` (i64 or i32): `values`, or
/// first, first + 1, ... when `values` is null.
TensorView int_view(DType dtype, const int64_t* values, int64_t first, size_t count,
                    const int64_t* sizes, uint32_t rank, int64_t* storage) {
  TensorView v;
  v.dtype = dtype;
  v.rank = rank;
  v.sizes = sizes;
  for (size_t i = 0; i < count; ++i) {
    const int64_t x = values != nullptr ? values[i] : first + static_cast<int64_t>(i);
    if (dtype == DType::I32) {
      reinterpret_cast<int32_t*>(storage)[i] = static_cast<int32_t>(x);
    } else {
      storage[i] = x;
    }
  }
  v.nbytes = count * (dtype == DType::I32 ? 4 : 8);
  v.data = storage;
  return v;
}

}  // namespace

Result<int64_t> sample_token(Span<const float> logits, const SamplingOptions& options,
                             std::mt19937_64& rng, Span<int32_t> order, Span<float> probs) {
  const size_t n = logits.size();
  TERN_CHECK_OR_RETURN_ERROR(n > 0, InvalidArgument, "sample_token: no logits");
  TERN_CHECK_OR_RETURN_ERROR(options.temperature >= 0.0f && std::isfinite(options.temperature),
                             InvalidArgument, "sample_token: temperature %g, expected >= 0",
                             static_cast<double>(options.temperature));
  TERN_CHECK_OR_RETURN_ERROR(options.top_p > 0.0f && options.top_p <= 1.0f, InvalidArgument,
                             "sample_token: top_p %g, expected in (0, 1]",
                             static_cast<double>(options.top_p));
  if (options.temperature == 0.0f) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i) {
      if (logits[i] > logits[best]) best = i;
    }
    return static_cast<int64_t>(best);
  }
  TERN_CHECK_OR_RETURN_ERROR(order.size() == n && probs.size() == n, InvalidArgument,
                             "sample_token: scratch of %zu and %zu entries for %zu logits",
                             order.size(), probs.size(), n);
  // Candidates in descending logit order (ties: lower index first), the top k only.
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<int32_t>(i);
  const size_t k = options.top_k == 0 ? n : std::min<size_t>(options.top_k, n);
  auto more_likely = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(order.begin(), order.begin() + k, order.end(), more_likely);
  // Softmax of logits / temperature over the candidates (max subtracted), in double.
  const double max_logit = logits[order[0]];
  double total = 0;
  for (size_t i = 0; i < k; ++i) {
    const double p = std::exp((static_cast<double>(logits[order[i]]) - max_logit) /
                              static_cast<double>(options.temperature));
    probs[i] = static_cast<float>(p);
    total += p;
  }
  // Nucleus: the shortest prefix whose probability reaches top_p.
  size_t keep = k;
  if (options.top_p < 1.0f) {
    double cumulative = 0;
    for (size_t i = 0; i < k; ++i) {
      cumulative += static_cast<double>(probs[i]) / total;
      if (cumulative >= static_cast<double>(options.top_p)) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += probs[i];
  const double u = std::uniform_real_distribution<double>(0.0, kept)(rng);
  double running = 0;
  for (size_t i = 0; i < keep; ++i) {
    running += probs[i];
    if (u < running) return static_cast<int64_t>(order[i]);
  }
  return static_cast<int64_t>(order[keep - 1]);  // u at the very top (rounding)
}

Result<TokenGenerator> TokenGenerator::create(Method* step, Method* prefill) {
  TERN_CHECK_OR_RETURN_ERROR(step != nullptr, InvalidArgument, "TokenGenerator: no method");
  const MethodMeta meta = step->meta();
  TERN_ASSIGN_OR_RETURN(const Signature sig,
                        read_signature(meta, "method", "a step method takes (tokens [1, 1], "
                                       "position [1]) and returns logits [1, 1, vocab]"));
  const TensorInfo& tokens = sig.tokens;
  const TensorInfo& position = sig.positions;
  const TensorInfo& logits = sig.logits;
  TERN_CHECK_OR_RETURN_ERROR(is_int_dtype(tokens.dtype) && has_sizes(tokens.sizes, {1, 1}),
                             InvalidArgument,
                             "TokenGenerator: method '%s' input 0 is %s of rank %zu; expected "
                             "the token, i64 or i32 [1, 1]",
                             meta.name(), to_string(tokens.dtype), tokens.sizes.size());
  TERN_CHECK_OR_RETURN_ERROR(is_int_dtype(position.dtype) && has_sizes(position.sizes, {1}),
                             InvalidArgument,
                             "TokenGenerator: method '%s' input 1 is %s of rank %zu; expected "
                             "the position, i64 or i32 [1]",
                             meta.name(), to_string(position.dtype), position.sizes.size());
  TERN_CHECK_OR_RETURN_ERROR(logits.dtype == DType::F32 && logits.sizes.size() == 3 &&
                                 logits.sizes[0] == 1 && logits.sizes[1] == 1 &&
                                 logits.sizes[2] > 0,
                             InvalidArgument,
                             "TokenGenerator: method '%s' output 0 is %s of rank %zu; expected "
                             "the logits, f32 [1, 1, vocab]",
                             meta.name(), to_string(logits.dtype), logits.sizes.size());
  TokenGenerator g;
  g.step_ = step;
  g.token_dtype_ = tokens.dtype;
  g.position_dtype_ = position.dtype;
  g.vocab_ = logits.sizes[2];
  g.order_.resize(static_cast<size_t>(g.vocab_));
  g.probs_.resize(static_cast<size_t>(g.vocab_));
  if (prefill != nullptr) TERN_RETURN_IF_ERROR(g.attach_prefill(prefill));
  return g;
}

Error TokenGenerator::attach_prefill(Method* prefill) {
  const MethodMeta pm = prefill->meta();
  TERN_ASSIGN_OR_RETURN(const Signature sig,
                        read_signature(pm, "prefill method", "a prefill method takes (tokens "
                                       "[1, seq], positions [seq]) and returns logits [1, seq, "
                                       "vocab] or, of the last position, [1, 1, vocab]"));
  const TensorInfo& ptokens = sig.tokens;
  const TensorInfo& ppositions = sig.positions;
  const TensorInfo& plogits = sig.logits;
  // seq: a dynamic dim (chunks of 1..its bound), or static (chunks of exactly that many).
  const int32_t seq = dim_symbol(ptokens, 1);
  TERN_CHECK_OR_RETURN_ERROR(is_int_dtype(ptokens.dtype) && ptokens.sizes.size() == 2 &&
                                 ptokens.sizes[0] == 1 && ptokens.sizes[1] >= 1,
                             InvalidArgument,
                             "TokenGenerator: prefill method '%s' input 0 is %s of rank %zu; "
                             "expected the tokens, i64 or i32 [1, seq]",
                             pm.name(), to_string(ptokens.dtype), ptokens.sizes.size());
  const int64_t chunk = ptokens.sizes[1];  // a dynamic dim's size is its bound
  TERN_CHECK_OR_RETURN_ERROR(is_int_dtype(ppositions.dtype) && ppositions.sizes.size() == 1 &&
                                 dim_symbol(ppositions, 0) == seq &&
                                 ppositions.sizes[0] == chunk,
                             InvalidArgument,
                             "TokenGenerator: prefill method '%s' input 1 is %s of rank %zu; "
                             "expected the positions, i64 or i32 [seq] (the tokens' seq)",
                             pm.name(), to_string(ppositions.dtype), ppositions.sizes.size());
  // Every position's logits, or (export_llm's default) the last position's only.
  const bool last_only = plogits.sizes.size() == 3 && plogits.sizes[1] == 1 &&
                         dim_symbol(plogits, 1) < 0;
  const bool every = plogits.sizes.size() == 3 && dim_symbol(plogits, 1) == seq &&
                     plogits.sizes[1] == chunk;
  TERN_CHECK_OR_RETURN_ERROR(plogits.dtype == DType::F32 && plogits.sizes.size() == 3 &&
                                 plogits.sizes[0] == 1 && (last_only || every) &&
                                 plogits.sizes[2] == vocab_,
                             InvalidArgument,
                             "TokenGenerator: prefill method '%s' output 0 is %s of rank %zu; "
                             "expected the logits, f32 [1, seq, %" PRId64
                             "] or [1, 1, vocab] (the step method's vocabulary)",
                             pm.name(), to_string(plogits.dtype), plogits.sizes.size(),
                             vocab_);
  if (seq >= 0) {
    TERN_ASSIGN_OR_RETURN(DimSymbolInfo symbol, pm.symbol(static_cast<size_t>(seq)));
    TERN_CHECK_OR_RETURN_ERROR(symbol.min <= 1 && symbol.max >= 1, InvalidArgument,
                               "TokenGenerator: prefill method '%s' takes %" PRId64 "..%" PRId64
                               " tokens; it must take chunks down to one token",
                               pm.name(), symbol.min, symbol.max);
  }
  prefill_ = prefill;
  prefill_last_only_ = last_only;
  prefill_static_ = seq < 0;
  prefill_token_dtype_ = ptokens.dtype;
  prefill_position_dtype_ = ppositions.dtype;
  chunk_ = chunk;
  chunk_tokens_.resize(static_cast<size_t>(chunk));
  chunk_positions_.resize(static_cast<size_t>(chunk));
  return Error::Ok;
}

Error TokenGenerator::run_prefill(Span<const int64_t> prompt, size_t begin, size_t count,
                                  Span<const float>* logits) {
  const int64_t token_sizes[2] = {1, static_cast<int64_t>(count)};
  const int64_t position_sizes[1] = {static_cast<int64_t>(count)};
  TERN_RETURN_IF_ERROR(prefill_->set_input(
      0, int_view(prefill_token_dtype_, prompt.data() + begin, 0, count, token_sizes, 2,
                  chunk_tokens_.data())));
  TERN_RETURN_IF_ERROR(prefill_->set_input(
      1, int_view(prefill_position_dtype_, nullptr, static_cast<int64_t>(begin), count,
                  position_sizes, 1, chunk_positions_.data())));
  TERN_RETURN_IF_ERROR(prefill_->execute());
  TERN_ASSIGN_OR_RETURN(const TensorView* out, prefill_->output(0));
  const int64_t rows = prefill_last_only_ ? 1 : static_cast<int64_t>(count);
  TERN_CHECK_OR_RETURN_ERROR(out->rank == 3 && out->sizes[1] == rows && out->sizes[2] == vocab_,
                             Internal, "prefill returned logits of rank %u for %zu tokens",
                             out->rank, count);
  *logits = Span<const float>(static_cast<const float*>(out->data) + (rows - 1) * vocab_,
                              static_cast<size_t>(vocab_));
  return Error::Ok;
}

Error TokenGenerator::run_step(int64_t token, int64_t position, Span<const float>* logits) {
  static const int64_t kTokenSizes[2] = {1, 1};
  static const int64_t kPositionSizes[1] = {1};
  int64_t token_storage = 0;
  int64_t position_storage = 0;
  TERN_RETURN_IF_ERROR(step_->set_input(
      0, int_view(token_dtype_, &token, 0, 1, kTokenSizes, 2, &token_storage)));
  TERN_RETURN_IF_ERROR(step_->set_input(
      1, int_view(position_dtype_, nullptr, position, 1, kPositionSizes, 1, &position_storage)));
  TERN_RETURN_IF_ERROR(step_->execute());
  TERN_ASSIGN_OR_RETURN(const TensorView* out, step_->output(0));
  *logits = Span<const float>(static_cast<const float*>(out->data), static_cast<size_t>(vocab_));
  return Error::Ok;
}

Error TokenGenerator::generate(Span<const int64_t> prompt, const GenerationOptions& options,
                               std::vector<int64_t>* out, GenerationStats* stats) {
  TERN_CHECK_OR_RETURN_ERROR(out != nullptr && stats != nullptr, InvalidArgument,
                             "TokenGenerator::generate: null output");
  TERN_CHECK_OR_RETURN_ERROR(prompt.size() > 0, InvalidArgument,
                             "TokenGenerator::generate: the prompt is empty (give at least one "
                             "token)");
  for (size_t i = 0; i < prompt.size(); ++i) {
    TERN_CHECK_OR_RETURN_ERROR(prompt[i] >= 0 && prompt[i] < vocab_, InvalidArgument,
                               "prompt token %zu is %" PRId64 ", outside the vocabulary [0, %" PRId64
                               ")",
                               i, prompt[i], vocab_);
  }
  out->clear();
  out->reserve(options.max_new_tokens);
  *stats = GenerationStats();
  stats->prompt_tokens = static_cast<uint32_t>(prompt.size());
  std::mt19937_64 rng(options.seed);
  const auto start = std::chrono::steady_clock::now();
  Span<const float> logits;
  int64_t position = 0;
  // Prefill: chunks of at most chunk_ tokens (a static chunk: whole chunks only); the rest of
  // the prompt, or all of it without a prefill method, token by token through the step.
  size_t fed = 0;
  if (prefill_ != nullptr) {
    const size_t chunk = static_cast<size_t>(chunk_);
    const size_t through = prefill_static_ ? prompt.size() / chunk * chunk : prompt.size();
    while (fed < through) {
      const size_t count = std::min(through - fed, chunk);
      const Error err = run_prefill(prompt, fed, count, &logits);
      if (err != Error::Ok) {
        return chain_error_message(err, "prefill of prompt tokens %zu..%zu", fed,
                                   fed + count - 1);
      }
      fed += count;
    }
  }
  for (position = static_cast<int64_t>(fed); fed < prompt.size(); ++fed, ++position) {
    const Error err = run_step(prompt[fed], position, &logits);
    if (err != Error::Ok) {
      return chain_error_message(err, "prompt token %zu (position %" PRId64 ")", fed, position);
    }
  }
  stats->prompt_seconds = seconds_since(start);
  for (uint32_t n = 0; n < options.max_new_tokens; ++n) {
    if (options.on_logits != nullptr) options.on_logits(options.on_logits_context, n, logits);
    TERN_ASSIGN_OR_RETURN(const int64_t next,
                          sample_token(logits, options.sampling, rng,
                                       Span<int32_t>(order_.data(), order_.size()),
                                       Span<float>(probs_.data(), probs_.size())));
    out->push_back(next);
    if (n == 0) stats->first_token_seconds = seconds_since(start);
    stats->generated_tokens = n + 1;
    if (next == options.stop_token || n + 1 == options.max_new_tokens) break;
    const Error err = run_step(next, position, &logits);
    if (err != Error::Ok) {
      return chain_error_message(err, "generated token %u (position %" PRId64 ")", n, position);
    }
    ++position;
  }
  if (stats->generated_tokens > 0) {
    stats->decode_seconds = seconds_since(start) - stats->first_token_seconds;
  }
  return Error::Ok;
}

}  // namespace tern
