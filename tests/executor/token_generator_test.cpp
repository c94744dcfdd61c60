// TokenGenerator and sample_token (runtime/extension/token_generator.h): greedy and sampled
// choices against distributions worked out by hand, the decoding loop on a counting step
// program, and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <utility>
#include <string>
#include <vector>

#include "runtime/extension/method_memory.h"
#include "runtime/extension/token_generator.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"
#include "tests/support/step_program.h"

namespace tern {
namespace {

std::string message() { return last_error_message(); }

/// Frequencies of each token over `draws` samples.
std::vector<double> frequencies(const std::vector<float>& logits, const SamplingOptions& options,
                                int draws) {
  std::mt19937_64 rng(12345);
  std::vector<int32_t> order(logits.size());
  std::vector<float> probs(logits.size());
  std::vector<double> count(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) {
    auto t = sample_token(Span<const float>(logits.data(), logits.size()), options, rng,
                          Span<int32_t>(order.data(), order.size()),
                          Span<float>(probs.data(), probs.size()));
    EXPECT_TRUE(t.ok()) << message();
    if (t.ok()) count[static_cast<size_t>(*t)] += 1.0 / draws;
  }
  return count;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.01) << "token " << i;
}

// Logits log(1), log(2), log(3), log(4): softmax gives 0.1, 0.2, 0.3, 0.4.
const std::vector<float> kLogits = {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};

TEST(SampleToken, GreedyTakesTheFirstLargest) {
  std::mt19937_64 rng(1);
  std::vector<float> logits = {1, 7, 3, 7};
  auto t = sample_token(Span<const float>(logits.data(), 4), SamplingOptions(), rng,
                        Span<int32_t>(), Span<float>());
  ASSERT_TRUE(t.ok()) << message();
  EXPECT_EQ(*t, 1);
}

TEST(SampleToken, TemperatureOneSamplesTheSoftmax) {
  SamplingOptions o;
  o.temperature = 1.0f;
  expect_near_all(frequencies(kLogits, o, 40000), {0.1, 0.2, 0.3, 0.4});
}

TEST(SampleToken, TemperatureHalfSquaresTheProbabilities) {
  // p^(1/T) = p^2: 1, 4, 9, 16 over 30.
  SamplingOptions o;
  o.temperature = 0.5f;
  expect_near_all(frequencies(kLogits, o, 40000), {1 / 30.0, 4 / 30.0, 9 / 30.0, 16 / 30.0});
}

TEST(SampleToken, TopKAndTopPKeepTheLikeliest) {
  SamplingOptions k2;
  k2.temperature = 1.0f;
  k2.top_k = 2;  // tokens 3 and 2: 4/7 and 3/7
  expect_near_all(frequencies(kLogits, k2, 40000), {0, 0, 3 / 7.0, 4 / 7.0});
  SamplingOptions p5;
  p5.temperature = 1.0f;
  p5.top_p = 0.5f;  // 0.4 < 0.5, 0.4 + 0.3 >= 0.5: the same two
  expect_near_all(frequencies(kLogits, p5, 40000), {0, 0, 3 / 7.0, 4 / 7.0});
  SamplingOptions tiny;
  tiny.temperature = 1.0f;
  tiny.top_p = 0.01f;  // only the likeliest
  expect_near_all(frequencies(kLogits, tiny, 1000), {0, 0, 0, 1});
}

TEST(SampleToken, BadOptionsAreErrors) {
  std::mt19937_64 rng(1);
  std::vector<int32_t> order(4);
  std::vector<float> probs(4);
  SamplingOptions o;
  o.temperature = -1.0f;
  auto span = Span<const float>(kLogits.data(), 4);
  EXPECT_EQ(sample_token(span, o, rng, Span<int32_t>(order.data(), 4), Span<float>(probs.data(), 4))
                .error(),
            Error::InvalidArgument);
  EXPECT_NE(message().find("temperature -1"), std::string::npos) << message();
  o.temperature = 1.0f;
  o.top_p = 0.0f;
  EXPECT_EQ(sample_token(span, o, rng, Span<int32_t>(order.data(), 4), Span<float>(probs.data(), 4))
                .error(),
            Error::InvalidArgument);
  EXPECT_NE(message().find("top_p 0"), std::string::npos) << message();
  o.top_p = 1.0f;
  EXPECT_EQ(sample_token(span, o, rng, Span<int32_t>(order.data(), 3), Span<float>(probs.data(), 4))
                .error(),
            Error::InvalidArgument);
}

class TokenGeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    program_.reset(new testing::LoadedProgram(testing_support::counting_step_program(8)));
    memory_.reset(new testing::MethodMemory(program_->program().method_meta("decode").get()));
    auto method = program_->program().load_method("decode", memory_->manager());
    ASSERT_TRUE(method.ok()) << message();
    method_.reset(new Method(std::move(method.get())));
  }
  std::unique_ptr<testing::LoadedProgram> program_;
  std::unique_ptr<testing::MethodMemory> memory_;
  std::unique_ptr<Method> method_;
};

TEST_F(TokenGeneratorTest, GreedyCountsUpAndStops) {
  auto g = TokenGenerator::create(method_.get());
  ASSERT_TRUE(g.ok()) << message();
  EXPECT_EQ(g->vocab_size(), 8);
  const std::vector<int64_t> prompt = {2, 5};
  std::vector<int64_t> out;
  GenerationStats stats;
  GenerationOptions o;
  o.max_new_tokens = 5;
  ASSERT_EQ(g->generate(Span<const int64_t>(prompt.data(), 2), o, &out, &stats), Error::Ok)
      << message();
  EXPECT_EQ(out, (std::vector<int64_t>{6, 7, 0, 1, 2}));
  EXPECT_EQ(stats.prompt_tokens, 2u);
  EXPECT_EQ(stats.generated_tokens, 5u);
  EXPECT_LE(stats.prompt_seconds, stats.first_token_seconds);
  o.stop_token = 7;
  ASSERT_EQ(g->generate(Span<const int64_t>(prompt.data(), 2), o, &out, &stats), Error::Ok);
  EXPECT_EQ(out, (std::vector<int64_t>{6, 7}));
}

TEST_F(TokenGeneratorTest, BadPromptsAndSignaturesAreErrors) {
  auto g = TokenGenerator::create(method_.get());
  ASSERT_TRUE(g.ok()) << message();
  std::vector<int64_t> out;
  GenerationStats stats;
  const std::vector<int64_t> bad = {3, 8};
  EXPECT_EQ(g->generate(Span<const int64_t>(bad.data(), 2), GenerationOptions(), &out, &stats),
            Error::InvalidArgument);
  EXPECT_NE(message().find("prompt token 1 is 8, outside the vocabulary [0, 8)"),
            std::string::npos)
      << message();
  EXPECT_EQ(g->generate(Span<const int64_t>(), GenerationOptions(), &out, &stats),
            Error::InvalidArgument);
  EXPECT_NE(message().find("empty"), std::string::npos) << message();

  // A method that is not a step (one input, one f32 output): refused, naming the shape wanted.
  compiler::GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 4});
  b.output(b.op("tern::relu", {x}, DType::F32, {1, 4}, "relu"));
  testing::LoadedProgram lp(testing::compile_graph(b.build()));
  testing::MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();
  auto not_a_step = TokenGenerator::create(&method.get());
  ASSERT_FALSE(not_a_step.ok());
  EXPECT_NE(message().find("takes (tokens [1, 1], position [1])"), std::string::npos) << message();
}

/// The two methods of counting_llm_program (vocab 8, prefill chunks of up to 3, a cache of 16
/// positions) over one shared state buffer.
class PrefillGeneratorTest : public ::testing::Test {
 protected:
  /// Whether prefill returns the last position's logits only ([1, 1, vocab]).
  virtual bool last_logits() const { return false; }
  /// Whether prefill takes exactly 3 tokens (export_llm's static_prefill).
  virtual bool static_prefill() const { return false; }
  void SetUp() override {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    program_.reset(new testing::LoadedProgram(
        testing_support::counting_llm_program(8, 3, 16, last_logits(), static_prefill())));
    const Program& p = program_->program();
    ASSERT_EQ(shared_.allocate(p), Error::Ok) << message();
    for (const char* name : {"prefill", "decode"}) {
      memory_.emplace_back(new testing::MethodMemory(p.method_meta(name).get()));
      memory_.back()->manager()->shared_state = shared_.span();
      auto method = p.load_method(name, memory_.back()->manager());
      ASSERT_TRUE(method.ok()) << name << ": " << message();
      methods_.emplace_back(new Method(std::move(method.get())));
    }
  }
  Method* prefill() { return methods_[0].get(); }
  Method* decode() { return methods_[1].get(); }
  /// The shared "history" state: the token written at each position.
  std::vector<int64_t> history() const {
    const int64_t* h = reinterpret_cast<const int64_t*>(shared_.span().data());
    return std::vector<int64_t>(h, h + 16);
  }

  std::unique_ptr<testing::LoadedProgram> program_;
  SharedStateBuffer shared_;
  std::vector<std::unique_ptr<testing::MethodMemory>> memory_;
  std::vector<std::unique_ptr<Method>> methods_;
};

void record_logits(void* context, uint32_t index, Span<const float> logits) {
  auto* seen = static_cast<std::vector<std::pair<uint32_t, int64_t>>*>(context);
  int64_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int64_t>(i);
  }
  seen->push_back({index, best});
}

TEST_F(PrefillGeneratorTest, PromptGoesThroughPrefillInChunksThenDecodeContinues) {
  auto g = TokenGenerator::create(decode(), prefill());
  ASSERT_TRUE(g.ok()) << message();
  EXPECT_EQ(g->prefill_chunk(), 3);
  // 7 prompt tokens: chunks of 3, 3 and 1 at positions 0-2, 3-5, 6.
  const std::vector<int64_t> prompt = {1, 2, 3, 4, 5, 6, 3};
  std::vector<int64_t> out;
  GenerationStats stats;
  GenerationOptions o;
  o.max_new_tokens = 4;
  std::vector<std::pair<uint32_t, int64_t>> seen;
  o.on_logits = &record_logits;
  o.on_logits_context = &seen;
  ASSERT_EQ(g->generate(Span<const int64_t>(prompt.data(), prompt.size()), o, &out, &stats),
            Error::Ok)
      << message();
  // The first token comes from prefill's last row (3 + 2), then decode counts up by one.
  EXPECT_EQ(out, (std::vector<int64_t>{5, 6, 7, 0}));
  EXPECT_EQ(seen, (std::vector<std::pair<uint32_t, int64_t>>{{0, 5}, {1, 6}, {2, 7}, {3, 0}}));
  EXPECT_EQ(stats.prompt_tokens, 7u);
  // Both methods wrote the one shared history: the prompt at 0-6, the fed tokens at 7-9.
  EXPECT_EQ(history(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 3, 5, 6, 7, 0, 0, 0, 0, 0, 0}));
}

/// export_llm's default prefill: logits of the chunk's last position only.
class LastLogitsPrefillTest : public PrefillGeneratorTest {
 protected:
  bool last_logits() const override { return true; }
};

TEST_F(LastLogitsPrefillTest, PrefillOfTheLastPositionOnlyGivesTheSameTokens) {
  ASSERT_EQ(prefill()->meta().output_tensor_info(0)->sizes[1], 1);
  auto g = TokenGenerator::create(decode(), prefill());
  ASSERT_TRUE(g.ok()) << message();
  const std::vector<int64_t> prompt = {1, 2, 3, 4, 5, 6, 3};  // chunks of 3, 3 and 1
  std::vector<int64_t> out;
  GenerationStats stats;
  GenerationOptions o;
  o.max_new_tokens = 4;
  ASSERT_EQ(g->generate(Span<const int64_t>(prompt.data(), prompt.size()), o, &out, &stats),
            Error::Ok)
      << message();
  EXPECT_EQ(out, (std::vector<int64_t>{5, 6, 7, 0}));
  const std::vector<int64_t> two = {4, 1};  // one chunk of 2: its last token 1 gives 3
  ASSERT_EQ(g->generate(Span<const int64_t>(two.data(), two.size()), o, &out, &stats), Error::Ok)
      << message();
  EXPECT_EQ(out, (std::vector<int64_t>{3, 4, 5, 6}));
}

TEST_F(PrefillGeneratorTest, WithoutPrefillThePromptGoesTokenByToken) {
  auto g = TokenGenerator::create(decode());
  ASSERT_TRUE(g.ok()) << message();
  EXPECT_EQ(g->prefill_chunk(), 0);
  const std::vector<int64_t> prompt = {1, 2, 3};
  std::vector<int64_t> out;
  GenerationStats stats;
  GenerationOptions o;
  o.max_new_tokens = 2;
  ASSERT_EQ(g->generate(Span<const int64_t>(prompt.data(), 3), o, &out, &stats), Error::Ok)
      << message();
  EXPECT_EQ(out, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(history(), (std::vector<int64_t>{1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST_F(PrefillGeneratorTest, PromptPastTheCacheNamesTheChunk) {
  auto g = TokenGenerator::create(decode(), prefill());
  ASSERT_TRUE(g.ok()) << message();
  const std::vector<int64_t> prompt(17, 1);  // positions 0..16 in a 16-position cache
  std::vector<int64_t> out;
  GenerationStats stats;
  EXPECT_NE(g->generate(Span<const int64_t>(prompt.data(), prompt.size()), GenerationOptions(),
                        &out, &stats),
            Error::Ok);
  EXPECT_NE(message().find("prefill of prompt tokens 15..16"), std::string::npos) << message();
}

TEST_F(PrefillGeneratorTest, AStepAsPrefillIsAStaticChunkOfOne) {
  // The decode method as "prefill": its tokens are a fixed [1, 1], a static chunk of one.
  auto g = TokenGenerator::create(decode(), decode());
  ASSERT_TRUE(g.ok()) << message();
  EXPECT_TRUE(g->prefill_static());
  EXPECT_EQ(g->prefill_chunk(), 1);
  // A prefill as the step method: its signature is not a step's.
  auto swapped = TokenGenerator::create(prefill(), decode());
  ASSERT_FALSE(swapped.ok());
}

/// export_llm(static_prefill=True): prefill takes exactly 3 tokens.
class StaticPrefillTest : public PrefillGeneratorTest {
 protected:
  bool static_prefill() const override { return true; }
};

TEST_F(StaticPrefillTest, WholeChunksThroughPrefillTheRestThroughTheStep) {
  ASSERT_EQ(prefill()->meta().input_tensor_info(0)->sizes[1], 3);
  auto g = TokenGenerator::create(decode(), prefill());
  ASSERT_TRUE(g.ok()) << message();
  EXPECT_TRUE(g->prefill_static());
  EXPECT_EQ(g->prefill_chunk(), 3);
  GenerationStats stats;
  GenerationOptions o;
  o.max_new_tokens = 4;
  std::vector<int64_t> out;
  // 7 tokens: prefill chunks at 0-2 and 3-5, the last token (3) through decode at position 6:
  // the first generated token is decode's 3 + 1, then decode counts up by one.
  const std::vector<int64_t> seven = {1, 2, 3, 4, 5, 6, 3};
  ASSERT_EQ(g->generate(Span<const int64_t>(seven.data(), seven.size()), o, &out, &stats),
            Error::Ok)
      << message();
  EXPECT_EQ(out, (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(history(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0}));
  // 6 tokens: two whole chunks; the first token from prefill's last row (6 + 2) % 8.
  const std::vector<int64_t> six = {1, 2, 3, 4, 5, 6};
  ASSERT_EQ(g->generate(Span<const int64_t>(six.data(), six.size()), o, &out, &stats),
            Error::Ok)
      << message();
  EXPECT_EQ(out, (std::vector<int64_t>{0, 1, 2, 3}));
  // 2 tokens, shorter than a chunk: all through decode.
  const std::vector<int64_t> two = {4, 1};
  ASSERT_EQ(g->generate(Span<const int64_t>(two.data(), two.size()), o, &out, &stats), Error::Ok)
      << message();
  EXPECT_EQ(out, (std::vector<int64_t>{2, 3, 4, 5}));
}

}  // namespace
}  // namespace tern
