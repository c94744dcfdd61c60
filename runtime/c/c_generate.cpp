// The C API's token generation (tern.h): TokenGenerator (runtime/extension/token_generator.h)
// over a loaded method, its arguments checked and its result copied into the caller's buffer.
#include <cstring>
#include <new>
#include <vector>

#include "c_handles.h"
#include "runtime/extension/token_generator.h"

using namespace tern;
using namespace tern::c_api;

extern "C" {

void tern_generate_options_init(tern_generate_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->max_new_tokens = 32;
  options->stop_token = -1;
  options->temperature = 0.0f;
  options->top_k = 0;
  options->top_p = 1.0f;
  options->seed = 0;
  options->prefill = nullptr;
}

tern_status tern_method_generate(tern_method* method, const int64_t* prompt,
                                 size_t prompt_length, const tern_generate_options* options,
                                 int64_t* out, size_t out_capacity, size_t* out_length,
                                 tern_generate_stats* stats) {
  TERN_C_CHECK_METHOD(method, "tern_method_generate");
  TERN_C_CHECK(prompt != nullptr || prompt_length == 0, method, TERN_STATUS_NULL_ARGUMENT,
               "tern_method_generate: prompt is NULL with %zu tokens", prompt_length);
  TERN_C_CHECK(out != nullptr, method, TERN_STATUS_NULL_ARGUMENT,
               "tern_method_generate: out is NULL");
  TERN_C_CHECK(out_length != nullptr, method, TERN_STATUS_NULL_ARGUMENT,
               "tern_method_generate: out_length is NULL");
  tern_generate_options o;
  tern_generate_options_init(&o);
  if (options != nullptr) {
    TERN_C_CHECK(options->struct_size == sizeof(tern_generate_options), method,
                 TERN_STATUS_INVALID_ARGUMENT,
                 "tern_method_generate: options->struct_size is %zu, expected %zu (initialise "
                 "the options with tern_generate_options_init)",
                 options->struct_size, sizeof(tern_generate_options));
    o = *options;
  }
  TERN_C_CHECK(out_capacity >= o.max_new_tokens, method, TERN_STATUS_INVALID_ARGUMENT,
               "tern_method_generate: out has room for %zu tokens, max_new_tokens is %u",
               out_capacity, o.max_new_tokens);
  TERN_C_CHECK(o.prefill == nullptr || o.prefill->program == method->program, method,
               TERN_STATUS_INVALID_ARGUMENT,
               "tern_method_generate: options->prefill is a method of another program load; "
               "it must share the step method's state (load both from one tern_program)");
  *out_length = 0;
  Result<TokenGenerator> generator = TokenGenerator::create(
      method->method.get(), o.prefill != nullptr ? o.prefill->method.get() : nullptr);
  if (!generator.ok()) return from_runtime(method, generator.error());
  GenerationOptions g;
  g.max_new_tokens = o.max_new_tokens;
  g.stop_token = o.stop_token;
  g.sampling.temperature = o.temperature;
  g.sampling.top_k = o.top_k;
  g.sampling.top_p = o.top_p;
  g.seed = o.seed;
  std::vector<int64_t> tokens;
  GenerationStats s;
  const Error err = generator->generate(Span<const int64_t>(prompt, prompt_length), g, &tokens, &s);
  if (err != Error::Ok) return from_runtime(method, err);
  if (!tokens.empty()) std::memcpy(out, tokens.data(), tokens.size() * sizeof(int64_t));
  *out_length = tokens.size();
  if (stats != nullptr) {
    stats->prompt_tokens = s.prompt_tokens;
    stats->generated_tokens = s.generated_tokens;
    stats->prompt_seconds = s.prompt_seconds;
    stats->first_token_seconds = s.first_token_seconds;
    stats->decode_seconds = s.decode_seconds;
  }
  return TERN_STATUS_OK;
}

}  // extern "C"
