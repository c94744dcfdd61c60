// The `tern` command end to end: compile a hand-written graph.json, run it on .npy inputs and
// check the outputs against hand-computed values; inspect and verify; and every failure is
// one "tern: error:" line on stderr with a non-zero exit code.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tools/cli/npy.h"
#include "tests/cli/cli_test_util.h"
#include "tests/support/step_program.h"

namespace tern {
namespace {

namespace fs = std::filesystem;
using cli_test::CommandResult;
using cli_test::read_text;
using cli_test::write_bytes;




std::string f32_bytes(const std::vector<float>& values) {
  std::string s(values.size() * 4, '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

std::vector<float> npy_floats(const fs::path& path, std::vector<int64_t>* shape) {
  const NpyArray a = read_npy(path.string());
  EXPECT_EQ(a.dtype, DType::F32);
  *shape = a.shape;
  std::vector<float> v(a.data.size() / 4);
  std::memcpy(v.data(), a.data.data(), v.size() * 4);
  return v;
}

void write_f32_npy(const fs::path& path, std::vector<int64_t> shape, const std::vector<float>& values) {
  NpyArray a;
  a.dtype = DType::F32;
  a.shape = std::move(shape);
  const std::string bytes = f32_bytes(values);
  a.data.assign(bytes.begin(), bytes.end());
  write_npy(path.string(), a);
}

// The graph: r = relu(linear(x, W, b)); z = reshape(r + s, [-1]); outputs r and z.
// x: [2, 3], W: [2, 3], b: [2], s: [2].
const char kGraphJson[] = R"({
  "format": "tern-graph",
  "version": 1,
  "producer": "cli_test",
  "source_model": "hand-written",
  "weights": "weights.safetensors",
  "methods": [{
    "name": "forward",
    "values": [
      {"type": "tensor", "name": "x", "dtype": "f32", "shape": [2, 3]},
      {"type": "tensor", "name": "s", "dtype": "f32", "shape": [2]},
      {"type": "tensor", "name": "W", "dtype": "f32", "shape": [2, 3], "weight": "W"},
      {"type": "tensor", "name": "b", "dtype": "f32", "shape": [2], "weight": "b"},
      {"type": "tensor", "name": "h", "dtype": "f32", "shape": [2, 2]},
      {"type": "tensor", "name": "r", "dtype": "f32", "shape": [2, 2]},
      {"type": "tensor", "name": "sum", "dtype": "f32", "shape": [2, 2]},
      {"type": "int_list", "name": "flat", "value": [-1]},
      {"type": "tensor", "name": "z", "dtype": "f32", "shape": [4]}
    ],
    "inputs": ["x", "s"],
    "outputs": ["r", "z"],
    "nodes": [
      {"op": "tern::linear", "args": ["x", "W", "b"], "outputs": ["h"], "name": "fc"},
      {"op": "tern::relu", "args": ["h"], "outputs": ["r"], "name": "act"},
      {"op": "tern::add", "args": ["r", "s"], "outputs": ["sum"], "name": "shift"},
      {"op": "tern::reshape", "args": ["sum", "flat"], "outputs": ["z"], "name": "flatten"}
    ]
  }]
})";

// W = [[1, 0, -1], [0.5, 0.5, 0.5]], b = [10, -4].
const std::vector<float> kW = {1, 0, -1, 0.5f, 0.5f, 0.5f};
const std::vector<float> kB = {10, -4};

// A safetensors file written by hand: u64 header length, JSON header, data.
std::string safetensors_bytes() {
  std::string header =
      R"({"W":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[24,32]}})";
  while (header.size() % 8 != 0) header += ' ';
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + f32_bytes(kW) + f32_bytes(kB);
}

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* bin = TERN_BINARY_DIR;
    binary_ = new std::string(std::string(bin) + "/tern");
    dir_ = new fs::path(fs::path(::testing::TempDir()) / ("tern_cli_test_" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    write_bytes(*dir_ / "graph.json", kGraphJson);
    write_bytes(*dir_ / "weights.safetensors", safetensors_bytes());
    const CommandResult r = run_tern("compile " + q(*dir_ / "graph.json") + " -o " + q(*dir_ / "model.pte"));
    compile_result_ = new CommandResult(r);
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete binary_;
    delete dir_;
    delete compile_result_;
  }

  static std::string q(const fs::path& p) { return cli_test::quote(p); }

  static CommandResult run_tern(const std::string& args) { return cli_test::run_tern(args, *dir_); }

  // Asserts a failed command: the given exit code and exactly one stderr line, "tern: error:".
  static void expect_one_error_line(const CommandResult& r, int exit_code, const std::string& what) {
    EXPECT_EQ(r.exit_code, exit_code) << what << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.rfind("tern: error:", 0), 0u) << what << "\nstderr: " << r.err;
    ASSERT_FALSE(r.err.empty()) << what;
    EXPECT_EQ(r.err.back(), '\n') << what;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << "\nstderr: " << r.err;
  }

  void SetUp() override {
    ASSERT_NE(compile_result_, nullptr) << "test suite set-up failed";
    ASSERT_EQ(compile_result_->exit_code, 0) << compile_result_->err << compile_result_->out;
    write_f32_npy(*dir_ / "x.npy", {2, 3}, {1, 2, 3, 4, 5, 6});
    write_f32_npy(*dir_ / "s.npy", {2}, {1, 2});
  }

  static std::string* binary_;
  static fs::path* dir_;
  static CommandResult* compile_result_;
};

std::string* CliTest::binary_ = nullptr;
fs::path* CliTest::dir_ = nullptr;
CommandResult* CliTest::compile_result_ = nullptr;

TEST_F(CliTest, CompileReportsArena) {
  EXPECT_NE(compile_result_->out.find("forward"), std::string::npos) << compile_result_->out;
  EXPECT_NE(compile_result_->out.find("lower bound"), std::string::npos) << compile_result_->out;
  EXPECT_TRUE(fs::exists(*dir_ / "model.pte"));
}

TEST_F(CliTest, RunWritesHandComputedOutputs) {
  const fs::path out_dir = *dir_ / "out";
  const CommandResult r = run_tern("run " + q(*dir_ / "model.pte") + " --input " + q(*dir_ / "x.npy") +
                                   " --input " + q(*dir_ / "s.npy") + " --output-dir " + q(out_dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("execute:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("f32 [2, 2]"), std::string::npos) << r.out;
  // h = x W^T + b: row 0 = [1 - 3 + 10, 3 - 4] = [8, -1]; row 1 = [4 - 6 + 10, 7.5 - 4] = [8, 3.5]
  // r = relu(h) = [[8, 0], [8, 3.5]]; z = flatten(r + [1, 2]) = [9, 2, 9, 5.5]
  std::vector<int64_t> shape;
  EXPECT_EQ(npy_floats(out_dir / "output_0.npy", &shape), (std::vector<float>{8, 0, 8, 3.5f}));
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(npy_floats(out_dir / "output_1.npy", &shape), (std::vector<float>{9, 2, 9, 5.5f}));
  EXPECT_EQ(shape, (std::vector<int64_t>{4}));
}

TEST_F(CliTest, RunWithOnesAndRandom) {
  const fs::path out_dir = *dir_ / "ones";
  CommandResult r = run_tern("run " + q(*dir_ / "model.pte") + " --ones --output-dir " + q(out_dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // x = ones: h = [1 + 0 - 1 + 10, 1.5 - 4] = [10, -2.5] per row; r = [10, 0]; z = r + 1.
  std::vector<int64_t> shape;
  EXPECT_EQ(npy_floats(out_dir / "output_1.npy", &shape), (std::vector<float>{11, 1, 11, 1}));
  r = run_tern("run " + q(*dir_ / "model.pte") + " --random --seed 7");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("output 1"), std::string::npos) << r.out;
}

TEST_F(CliTest, InspectDescribesTheProgram) {
  const CommandResult r = run_tern("inspect " + q(*dir_ / "model.pte"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"producer: cli_test", "source model: hand-written", "method 'forward'",
                        "tern::linear", "tern::relu", "tern::add", "tern::reshape", "f32 [2, 3]",
                        "lower bound", "weights by dtype", "32 bytes"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << "missing '" << s << "' in\n" << r.out;
  }
}

// Shared state (format 1.2): two methods name the state "acc"; inspect lists the program's
// entry and each method's view of it; run --repeat keeps it from one execute to the next;
// methods that disagree do not compile.
TEST_F(CliTest, InspectListsSharedState) {
  const std::string graph = R"({"format": "tern-graph", "version": 1, "producer": "cli_test",
    "methods": [
      {"name": "forward",
       "values": [{"type": "tensor", "name": "x", "dtype": "f32", "shape": [2]},
                  {"type": "tensor", "name": "acc", "dtype": "f32", "shape": [2],
                   "state": true, "shared": "acc"}],
       "inputs": ["x"], "outputs": ["acc"],
       "nodes": [{"op": "tern::add", "args": ["acc", "x"], "outputs": ["acc"]}]},
      {"name": "peek",
       "values": [{"type": "tensor", "name": "acc", "dtype": "f32", "shape": [2],
                   "state": true, "shared": "acc"},
                  {"type": "tensor", "name": "y", "dtype": "f32", "shape": [2]}],
       "inputs": [], "outputs": ["y"],
       "nodes": [{"op": "tern::relu", "args": ["acc"], "outputs": ["y"]}]}]})";
  write_bytes(*dir_ / "shared.json", graph);
  CommandResult r =
      run_tern("compile " + q(*dir_ / "shared.json") + " -o " + q(*dir_ / "shared.pte"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_tern("inspect " + q(*dir_ / "shared.pte"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"format version: 1.2", "shared state: 1 tensors, a 64-byte buffer",
                        "0 acc: f32 [2], zero-initialized", "method 'peek'",
                        "acc: f32 [2], 8 bytes, shared state 0 (the program's)"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << "missing '" << s << "' in\n" << r.out;
  }
  // run --repeat: the state carries over from one execute to the next (acc = k * ones).
  const fs::path out_dir = *dir_ / "repeat";
  r = run_tern("run " + q(*dir_ / "shared.pte") + " --ones --repeat 3 --output-dir " +
               q(out_dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("run 2 of 3"), std::string::npos) << r.out;
  std::vector<int64_t> shape;
  for (int k = 0; k < 3; ++k) {
    const float v = static_cast<float>(k + 1);
    EXPECT_EQ(npy_floats(out_dir / ("run_" + std::to_string(k)) / "output_0.npy", &shape),
              (std::vector<float>{v, v}))
        << "run " << k;
  }
  // Two methods that disagree about the state are a compile error naming both.
  std::string bad = graph;
  bad.replace(bad.rfind("\"shape\": [2],\n                   \"state\""), 12, "\"shape\": [3]");
  write_bytes(*dir_ / "shared_bad.json", bad);
  r = run_tern("compile " + q(*dir_ / "shared_bad.json") + " -o " + q(*dir_ / "bad.pte"));
  expect_one_error_line(r, 1, "compile shared_bad.json");
  EXPECT_NE(r.err.find("methods disagree about shared state 'acc'"), std::string::npos) << r.err;
}

TEST_F(CliTest, DelegateRegionInspectAndFallbackRun) {
  // The same graph with fc and act handed to a backend no build has ("absent"),
  // so the method runs the region's portable fallback and gives the same values.
  std::string graph = kGraphJson;
  const std::string anchor = R"("nodes": [)";
  graph.insert(graph.find(anchor),
               R"("delegates": [{"backend": "absent", "nodes": [0, 1], "compile_specs": {"threads": "4"}}],
    )");
  write_bytes(*dir_ / "graph_delegate.json", graph);
  CommandResult r = run_tern("compile " + q(*dir_ / "graph_delegate.json") + " -o " + q(*dir_ / "delegate.pte"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_tern("inspect " + q(*dir_ / "delegate.pte"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"delegate:absent", "tern::linear (fallback)", "tern::relu (fallback)",
                        "compile specs [threads]", "fallback 2 instructions"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << "missing '" << s << "' in\n" << r.out;
  }
  const fs::path out_dir = *dir_ / "delegate_out";
  r = run_tern("run " + q(*dir_ / "delegate.pte") + " --input " + q(*dir_ / "x.npy") + " --input " +
               q(*dir_ / "s.npy") + " --output-dir " + q(out_dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("delegate call 0: portable fallback"), std::string::npos) << r.out;
  std::vector<int64_t> shape;
  EXPECT_EQ(npy_floats(out_dir / "output_1.npy", &shape), (std::vector<float>{9, 2, 9, 5.5f}));
}

// `tern compile --explain` lists each node left on the portable kernels with the op, its name
// and every backend's reason: here a log_softmax, which the cpu backend does not take,
// and so the add and reshape after it, which alone are not worth a delegate.
TEST_F(CliTest, CompileExplainNamesWhyANodeStaysPortable) {
  std::string graph = kGraphJson;
  const std::string relu = R"({"op": "tern::relu", "args": ["h"], "outputs": ["r"], "name": "act"})";
  const std::string softmax =
      R"({"op": "tern::log_softmax", "args": ["h", "dim0"], "outputs": ["r"], "name": "sm"})";
  graph.replace(graph.find(relu), relu.size(), softmax);
  const std::string flat = R"({"type": "int_list", "name": "flat", "value": [-1]},)";
  graph.insert(graph.find(flat) + flat.size(), R"(
      {"type": "int", "name": "dim0", "value": 0},)");
  write_bytes(*dir_ / "graph_explain.json", graph);
  const std::string compile =
      "compile " + q(*dir_ / "graph_explain.json") + " -o " + q(*dir_ / "explain.pte");
  CommandResult r = run_tern(compile + " --backend cpu --explain");
  if (r.exit_code != 0 && r.err.find("not a registered backend") != std::string::npos) {
    GTEST_SKIP() << "this build has no cpu backend: " << r.err;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"1 delegates", "3 nodes on the portable kernels:",
                        "1 x tern::log_softmax (sm)\n          cpu: tern::log_softmax: op not taken",
                        "1 x tern::add (shift)\n          cpu: tern::add: taken, but its run of "
                        "nodes was declined"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << "missing '" << s << "' in\n" << r.out;
  }
  r = run_tern(compile + " --backend cpu");  // without --explain: the summary alone
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("portable kernels"), std::string::npos) << r.out;
}

TEST_F(CliTest, VerifySucceeds) {
  const CommandResult r = run_tern("verify " + q(*dir_ / "model.pte"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("OK: 1 methods, ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("segments"), std::string::npos) << r.out;
}

TEST_F(CliTest, TruncatedProgramFailsCleanly) {
  const std::string bytes = read_text(*dir_ / "model.pte");
  ASSERT_GT(bytes.size(), 100u);
  for (size_t cut : {size_t{0}, size_t{10}, size_t{63}, size_t{64}, bytes.size() / 2, bytes.size() - 1}) {
    const fs::path truncated = *dir_ / ("truncated_" + std::to_string(cut) + ".pte");
    write_bytes(truncated, bytes.substr(0, cut));
    const std::string label = "cut at " + std::to_string(cut);
    expect_one_error_line(run_tern("run " + q(truncated) + " --ones"), 1, "run " + label);
    expect_one_error_line(run_tern("inspect " + q(truncated)), 1, "inspect " + label);
    expect_one_error_line(run_tern("verify " + q(truncated)), 1, "verify " + label);
  }
}

TEST_F(CliTest, CorruptedWeightFailsVerify) {
  std::string bytes = read_text(*dir_ / "model.pte");
  const std::string weights = f32_bytes(kW);
  const size_t at = bytes.find(weights);
  ASSERT_NE(at, std::string::npos) << "the weight bytes should be stored verbatim";
  bytes[at + 5] ^= 0x40;
  write_bytes(*dir_ / "corrupt.pte", bytes);
  const CommandResult r = run_tern("verify " + q(*dir_ / "corrupt.pte"));
  expect_one_error_line(r, 1, "verify corrupt");
  EXPECT_NE(r.err.find("ChecksumMismatch"), std::string::npos) << r.err;
}

TEST_F(CliTest, MissingFiles) {
  const std::string missing = q(*dir_ / "does_not_exist.pte");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run " + missing + " --ones", "does_not_exist.pte"},
      {"inspect " + missing, "does_not_exist.pte"},
      {"verify " + missing, "does_not_exist.pte"},
      {"compile " + q(*dir_ / "nope.json") + " -o " + q(*dir_ / "x.pte"), "nope.json"}};
  for (const auto& [cmd, named] : cases) {
    const CommandResult r = run_tern(cmd);
    expect_one_error_line(r, 1, cmd);
    EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
  }
  const CommandResult r = run_tern("run " + q(*dir_ / "model.pte") + " --input " + q(*dir_ / "nope.npy") +
                                   " --input " + q(*dir_ / "s.npy"));
  expect_one_error_line(r, 1, "missing npy");
  EXPECT_NE(r.err.find("nope.npy"), std::string::npos) << r.err;
}

TEST_F(CliTest, WrongInputShapeAndCount) {
  write_f32_npy(*dir_ / "x_bad.npy", {3, 2}, {1, 2, 3, 4, 5, 6});
  CommandResult r = run_tern("run " + q(*dir_ / "model.pte") + " --input " + q(*dir_ / "x_bad.npy") +
                             " --input " + q(*dir_ / "s.npy"));
  expect_one_error_line(r, 1, "wrong shape");
  EXPECT_NE(r.err.find("expected f32 [2, 3], found f32 [3, 2]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("x_bad.npy"), std::string::npos) << r.err;

  r = run_tern("run " + q(*dir_ / "model.pte") + " --input " + q(*dir_ / "x.npy"));
  expect_one_error_line(r, 1, "wrong count");
  EXPECT_NE(r.err.find("takes 2 inputs"), std::string::npos) << r.err;

  r = run_tern("run " + q(*dir_ / "model.pte"));
  expect_one_error_line(r, 1, "no inputs");

  r = run_tern("run " + q(*dir_ / "model.pte") + " --method nope --ones");
  expect_one_error_line(r, 1, "unknown method");
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
}

TEST_F(CliTest, UsageErrorsExitTwo) {
  expect_one_error_line(run_tern(""), 2, "no subcommand");
  expect_one_error_line(run_tern("run"), 2, "run without a model");
  expect_one_error_line(run_tern("frobnicate x"), 2, "unknown subcommand");
  expect_one_error_line(run_tern("run " + q(*dir_ / "model.pte") + " --random --ones"), 2, "exclusive flags");
  const CommandResult help = run_tern("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("inspect"), std::string::npos) << help.out;
}

TEST_F(CliTest, BadGraphFailsCompile) {
  write_bytes(*dir_ / "bad.json", "{\"version\": 1, \"methods\": [ {\"name\": ");
  const CommandResult r = run_tern("compile " + q(*dir_ / "bad.json") + " -o " + q(*dir_ / "bad.pte"));
  expect_one_error_line(r, 1, "bad json");
  const CommandResult a = run_tern("compile " + q(*dir_ / "graph.json") + " -o " + q(*dir_ / "a.pte") +
                                   " --segment-alignment 3");
  expect_one_error_line(a, 1, "bad alignment");
  EXPECT_NE(a.err.find("power of two"), std::string::npos) << a.err;
}

// `tern generate` over a prefill + decode program (tests/support/step_program.h: prefill's
// logits choose (t + 2) % 8, decode's (t + 1) % 8): the prompt goes through prefill in chunks,
// --logits-dir writes the logits of every choice, --no-prefill feeds it token by token, and a
// prefill method the program lacks is one error line.
TEST_F(CliTest, GenerateTakesThePromptThroughPrefill) {
  const std::vector<uint8_t> bytes = testing_support::counting_llm_program(8, 3, 16);
  write_bytes(*dir_ / "llm.pte", std::string(bytes.begin(), bytes.end()));
  const std::string model = "generate " + q(*dir_ / "llm.pte") + " --prompt 1,2,3,4,5,6,3";
  CommandResult r = run_tern(model + " --max-new-tokens 4 --logits-dir " + q(*dir_ / "logits"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("generated: 5 6 7 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("prompt: 7 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("prefill 'prefill', chunks of up to 3"), std::string::npos) << r.out;
  for (int k = 0; k < 4; ++k) {
    const NpyArray logits = read_npy((*dir_ / "logits" / ("logits_" + std::to_string(k) + ".npy")).string());
    ASSERT_EQ(logits.shape, (std::vector<int64_t>{8})) << k;
    float row[8];
    std::memcpy(row, logits.data.data(), sizeof row);
    EXPECT_EQ(std::max_element(row, row + 8) - row, (5 + k) % 8) << k;
  }
  EXPECT_FALSE(fs::exists(*dir_ / "logits" / "logits_4.npy"));
  r = run_tern(model + " --max-new-tokens 2 --no-prefill");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("generated: 4 5\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("token by token"), std::string::npos) << r.out;
  r = run_tern(model + " --prefill-method nope");
  expect_one_error_line(r, 1, "generate --prefill-method nope");
  EXPECT_NE(r.err.find("no method 'nope'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tern
