// `tern generate`: prompt token ids in, generated token ids out, with the speed figures of
// issue 15 (prefill and decode tokens/s, time to first token, peak RSS). Tokenization stays
// in the app (docs/llm-decoding.md pairs this with a Hugging Face tokenizer).
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/extension/module.h"
#include "runtime/extension/token_generator.h"
#include "tools/cli/commands.h"

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
  clear_error_message();
  Result<TokenGenerator> generator = TokenGenerator::create(&method);
  if (!generator.ok()) throw_if_error(generator.error(), "cannot generate with " + options.model);

  std::vector<int64_t> tokens;
  GenerationStats stats;
  clear_error_message();
  throw_if_error(generator->generate(Span<const int64_t>(prompt.data(), prompt.size()), options.generation,
                                     &tokens, &stats),
                 "generation with method '" + method_name + "' failed");

  std::string ids;
  for (size_t i = 0; i < tokens.size(); ++i) {
    ids += (i ? " " : "") + std::to_string(tokens[i]);
  }
  std::printf("generated: %s\n", ids.c_str());
  std::printf("prompt: %u tokens in %.3f ms (%.1f tokens/s)\n", stats.prompt_tokens,
              stats.prompt_seconds * 1e3, per_second(stats.prompt_tokens, stats.prompt_seconds));
  std::printf("time to first token: %.3f ms\n", stats.first_token_seconds * 1e3);
  const uint32_t decoded = stats.generated_tokens > 0 ? stats.generated_tokens - 1 : 0;
  std::printf("decode: %u tokens in %.3f ms (%.1f tokens/s)\n", decoded,
              stats.decode_seconds * 1e3, per_second(decoded, stats.decode_seconds));
  std::printf("peak RSS: %.1f MiB\n", peak_rss_mib());
  return 0;
}

}  // namespace tern::cli
