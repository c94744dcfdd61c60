// `tern generate`: prompt token ids in, generated token ids out, with the speed figures of
// issue 15 (prefill and decode tokens/s, time to first token, peak RSS). Tokenization stays
// in the app (docs/llm-decoding.md pairs this with a Hugging Face tokenizer).
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/extension/module.h"
#include "runtime/extension/token_generator.h"
#include "tools/cli/commands.h"
#include "tools/cli/npy.h"

namespace tern::cli {
namespace {

/// Token ids from text: integers separated by commas and/or whitespace.
std::vector<int64_t> parse_ids(const std::string& text, const std::string& where) {
  std::vector<int64_t> ids;
  std::string item;
  std::istringstream in(text);
  auto flush = [&]() {
    if (item.empty()) return;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size()) {
      throw std::runtime_error(where + ": '" + item + "' is not a token id (an integer)");
    }
    ids.push_back(static_cast<int64_t>(v));
    item.clear();
  };
  char c = 0;
  while (in.get(c)) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      flush();
    } else {
      item.push_back(c);
    }
  }
  flush();
  if (ids.empty()) throw std::runtime_error(where + ": no token ids");
  return ids;
}

double per_second(double count, double seconds) { return seconds > 0 ? count / seconds : 0; }

/// --logits-dir: each set of logits as <dir>/logits_<k>.npy (f32 [vocab]). Errors are kept
/// (the observer cannot throw through the generator) and reported after generation.
struct LogitsWriter {
  std::string dir;
  std::string error;

  static void observe(void* context, uint32_t index, Span<const float> logits) {
    auto* self = static_cast<LogitsWriter*>(context);
    if (!self->error.empty()) return;
    NpyArray array;
    array.dtype = DType::F32;
    array.shape = {static_cast<int64_t>(logits.size())};
    array.data.resize(logits.size() * sizeof(float));
    std::memcpy(array.data.data(), logits.data(), array.data.size());
    try {
      write_npy(self->dir + "/logits_" + std::to_string(index) + ".npy", array);
    } catch (const std::exception& e) {
      self->error = e.what();
    }
  }
};

}  // namespace

int cmd_generate(const GenerateOptions& options) {
  std::vector<int64_t> prompt;
  if (!options.prompt_file.empty()) {
    std::ifstream f(options.prompt_file);
    if (!f) throw std::runtime_error("cannot open the prompt file " + options.prompt_file);
    std::stringstream text;
    text << f.rdbuf();
    prompt = parse_ids(text.str(), options.prompt_file);
  } else {
    prompt = parse_ids(options.prompt, "--prompt");
  }

  Module module;
  std::string method_name;
  Method& method = load_chosen_method(module, options.model, options.method, &method_name,
                                      Module::Options(), "decode");
  // The prompt goes through the prefill method when the program has one (export_llm's
  // "prefill", sharing the step method's KV cache), else token by token through the step.
  Method* prefill = nullptr;
  std::string prefill_name = options.prefill_method;
  if (prefill_name.empty() && !options.no_prefill && method_name != "prefill" &&
      module.program()->method_meta("prefill").ok()) {
    prefill_name = "prefill";
  }
  if (!prefill_name.empty()) {
    clear_error_message();
    Result<Method*> loaded = module.method(prefill_name.c_str());
    if (!loaded.ok()) {
      throw_if_error(loaded.error(),
                     "cannot load prefill method '" + prefill_name + "' of " + options.model);
    }
    prefill = *loaded;
  }
  clear_error_message();
  Result<TokenGenerator> generator = TokenGenerator::create(&method, prefill);
  if (!generator.ok()) throw_if_error(generator.error(), "cannot generate with " + options.model);

  GenerationOptions generation = options.generation;
  LogitsWriter logits_writer;
  if (!options.logits_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.logits_dir, ec);
    if (ec) {
      throw std::runtime_error("cannot create the logits directory " + options.logits_dir +
                               ": " + ec.message());
    }
    logits_writer.dir = options.logits_dir;
    generation.on_logits = &LogitsWriter::observe;
    generation.on_logits_context = &logits_writer;
  }

  std::vector<int64_t> tokens;
  GenerationStats stats;
  clear_error_message();
  const std::string methods =
      prefill != nullptr ? "methods '" + prefill_name + "' and '" + method_name + "'"
                         : "method '" + method_name + "'";
  throw_if_error(generator->generate(Span<const int64_t>(prompt.data(), prompt.size()),
                                     generation, &tokens, &stats),
                 "generation with " + methods + " failed");
  if (!logits_writer.error.empty()) throw std::runtime_error(logits_writer.error);

  std::string ids;
  for (size_t i = 0; i < tokens.size(); ++i) {
    ids += (i ? " " : "") + std::to_string(tokens[i]);
  }
  std::printf("generated: %s\n", ids.c_str());
  const std::string chunk = std::to_string(generator->prefill_chunk());
  const std::string how =
      prefill == nullptr             ? "token by token"
      : generator->prefill_static() ? "prefill '" + prefill_name + "', chunks of exactly " +
                                          chunk + ", the rest token by token"
                                    : "prefill '" + prefill_name + "', chunks of up to " + chunk;
  std::printf("prompt: %u tokens in %.3f ms (%.1f tokens/s, %s)\n", stats.prompt_tokens,
              stats.prompt_seconds * 1e3, per_second(stats.prompt_tokens, stats.prompt_seconds),
              how.c_str());
  std::printf("time to first token: %.3f ms\n", stats.first_token_seconds * 1e3);
  const uint32_t decoded = stats.generated_tokens > 0 ? stats.generated_tokens - 1 : 0;
  std::printf("decode: %u tokens in %.3f ms (%.1f tokens/s)\n", decoded,
              stats.decode_seconds * 1e3, per_second(decoded, stats.decode_seconds));
  std::printf("peak RSS: %.1f MiB\n", peak_rss_mib());
  return 0;
}

}  // namespace tern::cli
