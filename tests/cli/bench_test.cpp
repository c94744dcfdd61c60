// `tern bench` end to end on a small hand-written graph: the report's format, the profile
// table names every op, --trace is valid Chrome-trace JSON with one event per executed step
// per iteration, --json summarizes the run. No assertion depends on how fast anything ran.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/cli/cli_test_util.h"

namespace tern {
namespace {

namespace fs = std::filesystem;
using cli_test::CommandResult;
using cli_test::read_text;
using cli_test::write_bytes;




// y = sigmoid(relu(linear(x, W, b)) + s): four kernel steps, none of them a view.
// x: [4, 8], W: [16, 8], b: [16], s: [16].
const char kGraphJson[] = R"({
  "format": "tern-graph",
  "version": 1,
  "producer": "bench_test",
  "source_model": "hand-written",
  "weights": "weights.safetensors",
  "methods": [{
    "name": "forward",
    "values": [
      {"type": "tensor", "name": "x", "dtype": "f32", "shape": [4, 8]},
      {"type": "tensor", "name": "s", "dtype": "f32", "shape": [16]},
      {"type": "tensor", "name": "W", "dtype": "f32", "shape": [16, 8], "weight": "W"},
      {"type": "tensor", "name": "b", "dtype": "f32", "shape": [16], "weight": "b"},
      {"type": "tensor", "name": "h", "dtype": "f32", "shape": [4, 16]},
      {"type": "tensor", "name": "r", "dtype": "f32", "shape": [4, 16]},
      {"type": "tensor", "name": "t", "dtype": "f32", "shape": [4, 16]},
      {"type": "tensor", "name": "y", "dtype": "f32", "shape": [4, 16]}
    ],
    "inputs": ["x", "s"],
    "outputs": ["y"],
    "nodes": [
      {"op": "tern::linear", "args": ["x", "W", "b"], "outputs": ["h"], "name": "fc"},
      {"op": "tern::relu", "args": ["h"], "outputs": ["r"], "name": "act"},
      {"op": "tern::add", "args": ["r", "s"], "outputs": ["t"], "name": "shift"},
      {"op": "tern::sigmoid", "args": ["t"], "outputs": ["y"], "name": "gate"}
    ]
  }]
})";

const std::vector<std::string> kOps = {"tern::linear", "tern::relu", "tern::add", "tern::sigmoid"};
const std::vector<std::string> kNames = {"fc", "act", "shift", "gate"};

std::string safetensors_bytes() {
  std::string header = R"({"W":{"dtype":"F32","shape":[16,8],"data_offsets":[0,512]},)"
                       R"("b":{"dtype":"F32","shape":[16],"data_offsets":[512,576]}})";
  while (header.size() % 8 != 0) header += ' ';
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  std::string data(576, '\0');
  for (size_t i = 0; i < 144; ++i) {
    const float v = 0.01f * static_cast<float>(static_cast<int>(i % 17) - 8);
    std::memcpy(&data[4 * i], &v, 4);
  }
  return out + header + data;
}

// The number after `label` on its line of `text` ("  median  1.234 ms"), or -1.
double value_after(const std::string& text, const std::string& label) {
  const std::regex re("\\n\\s*" + label + "\\s+([0-9.]+) ms");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return -1;
  return std::stod(m[1].str());
}

class BenchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    binary_ = new std::string(std::string(TERN_BINARY_DIR) + "/tern");
    dir_ = new fs::path(fs::path(::testing::TempDir()) /
                        ("tern_bench_test_" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    write_bytes(*dir_ / "graph.json", kGraphJson);
    write_bytes(*dir_ / "weights.safetensors", safetensors_bytes());
    compile_ = new CommandResult(
        run_tern("compile " + q(*dir_ / "graph.json") + " -o " + q(*dir_ / "model.pte")));
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete binary_;
    delete dir_;
    delete compile_;
  }
  void SetUp() override {
    ASSERT_EQ(compile_->exit_code, 0) << compile_->err << compile_->out;
  }

  static std::string q(const fs::path& p) { return cli_test::quote(p); }
  static std::string model() { return q(*dir_ / "model.pte"); }

  static CommandResult run_tern(const std::string& args) { return cli_test::run_tern(args, *dir_); }

  static std::string* binary_;
  static fs::path* dir_;
  static CommandResult* compile_;
};

std::string* BenchTest::binary_ = nullptr;
fs::path* BenchTest::dir_ = nullptr;
CommandResult* BenchTest::compile_ = nullptr;

TEST_F(BenchTest, ReportsOrderedPercentiles) {
  const CommandResult r = run_tern("bench " + model() + " --iterations 9 --warmup 2 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;  // stderr is not a TTY here: no progress bar
  EXPECT_NE(r.out.find("method 'forward', 4 steps, threads 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("latency over 9 iterations after 2 warm-up"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("file to first output:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peak RSS:"), std::string::npos) << r.out;
  const double mn = value_after(r.out, "min"), med = value_after(r.out, "median"),
               p90 = value_after(r.out, "p90"), mx = value_after(r.out, "max");
  ASSERT_GE(mn, 0) << r.out;
  EXPECT_LE(mn, med);
  EXPECT_LE(med, p90);
  EXPECT_LE(p90, mx);
  EXPECT_EQ(r.out.find("profile by"), std::string::npos) << "no profile without --profile";
}

TEST_F(BenchTest, ProfileNamesEveryOpAndStep) {
  const CommandResult r = run_tern("bench " + model() + " --iterations 6 --warmup 1 --profile --ones");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t by_step = r.out.find("profile by step");
  const size_t by_op = r.out.find("profile by op");
  ASSERT_NE(by_step, std::string::npos) << r.out;
  ASSERT_NE(by_op, std::string::npos) << r.out;
  const std::string step_table = r.out.substr(by_step, by_op - by_step);
  const std::string op_table = r.out.substr(by_op);
  for (size_t i = 0; i < kOps.size(); ++i) {
    // Each step row: op, debug name, and count 6 (one execution per timed iteration).
    const std::regex row(kOps[i] + "\\s+" + kNames[i] + "\\s+6\\s");
    EXPECT_TRUE(std::regex_search(step_table, row)) << kOps[i] << "\n" << step_table;
    // Each op row: one step of that op, executed 6 times.
    const std::regex op_row("\\n\\s*" + kOps[i] + "\\s+1\\s+6\\s");
    EXPECT_TRUE(std::regex_search(op_table, op_row)) << kOps[i] << "\n" << op_table;
  }
  EXPECT_NE(r.out.find("share"), std::string::npos);
  EXPECT_NE(r.out.find("executor overhead"), std::string::npos);
}

TEST_F(BenchTest, ProfileShowsTheStagesInsideACpuDelegate) {
  const CommandResult c = run_tern("compile " + q(*dir_ / "graph.json") + " -o " +
                                   q(*dir_ / "model_cpu.pte") + " --backend cpu");
  if (c.exit_code != 0 && c.err.find("backend") != std::string::npos) {
    GTEST_SKIP() << "this build has no cpu backend: " << c.err;
  }
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const CommandResult r = run_tern("bench " + q(*dir_ / "model_cpu.pte") +
                                   " --iterations 5 --warmup 1 --profile --ones --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t parts = r.out.find("inside delegate steps");
  ASSERT_NE(parts, std::string::npos) << r.out;
  const std::string table = r.out.substr(parts);
  // All four nodes form one XNNPACK stage; the edges are the input and output copies.
  const std::regex stage("\\n\\s+0\\s+stage 0: xnnpack fully_connected \\.\\. sigmoid \\(4 nodes\\) "
                         "\\[4, 16\\]\\s+5\\s");
  EXPECT_TRUE(std::regex_search(table, stage)) << table;
  EXPECT_NE(table.find("inputs in (copies"), std::string::npos) << table;
  EXPECT_NE(table.find("outputs out (copies"), std::string::npos) << table;
}

TEST_F(BenchTest, TraceIsChromeTraceJsonWithOneEventPerStepPerIteration) {
  const fs::path trace = *dir_ / "trace.json";
  const fs::path summary = *dir_ / "summary.json";
  const int iterations = 5;
  const CommandResult r = run_tern("bench " + model() + " --iterations " + std::to_string(iterations) +
                                   " --warmup 0 --trace " + q(trace) + " --json " + q(summary));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = nlohmann::json::parse(read_text(trace))) << read_text(trace);
  ASSERT_TRUE(doc.contains("traceEvents"));
  ASSERT_TRUE(doc["traceEvents"].is_array());
  size_t steps = 0, iters = 0;
  std::set<std::string> names;
  std::vector<int> per_iteration(iterations, 0);
  for (const nlohmann::json& e : doc["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("name")) << e.dump();
    if (e["ph"] != "X") continue;
    ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e.dump();
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    if (e["cat"] == "step") {
      ++steps;
      names.insert(e["name"].get<std::string>());
      const int it = e["args"]["iteration"].get<int>();
      ASSERT_GE(it, 0);
      ASSERT_LT(it, iterations);
      ++per_iteration[it];
    } else if (e["cat"] == "iteration") {
      ++iters;
    }
  }
  EXPECT_EQ(steps, kOps.size() * iterations);
  EXPECT_EQ(iters, static_cast<size_t>(iterations));
  for (int count : per_iteration) EXPECT_EQ(count, static_cast<int>(kOps.size()));
  for (size_t i = 0; i < kOps.size(); ++i) {
    EXPECT_EQ(names.count(kOps[i] + " / " + kNames[i]), 1u) << kOps[i];
  }

  nlohmann::json s;
  ASSERT_NO_THROW(s = nlohmann::json::parse(read_text(summary)));
  EXPECT_EQ(s["iterations"], iterations);
  EXPECT_EQ(s["steps"], 4);
  EXPECT_EQ(s["samples_ms"].size(), static_cast<size_t>(iterations));
  EXPECT_LE(s["latency_ms"]["min"].get<double>(), s["latency_ms"]["median"].get<double>());
}

TEST_F(BenchTest, RepeatedExecutesOfAnIndexInputSeeTheSameIndices) {
  // ids (i64 [4], 32 bytes) is read only by the first node; t = sum(e, 1) (f32 [4]) comes
  // after it and would fit in its bytes. bench sets its inputs once and executes 1 + 1 + 3
  // times: were the input's memory reused, the second execute would read t's floats as
  // indices and fail "out of range".
  const char graph[] = R"({
    "format": "tern-graph", "version": 1, "weights": "emb.safetensors",
    "methods": [{"name": "forward",
      "values": [
        {"type": "tensor", "name": "ids", "dtype": "i64", "shape": [4]},
        {"type": "tensor", "name": "E", "dtype": "f32", "shape": [10, 16], "weight": "E"},
        {"type": "tensor", "name": "e", "dtype": "f32", "shape": [4, 16]},
        {"type": "int_list", "name": "dims", "value": [1]},
        {"type": "bool", "name": "keep", "value": false},
        {"type": "tensor", "name": "t", "dtype": "f32", "shape": [4]},
        {"type": "tensor", "name": "y", "dtype": "f32", "shape": [4]}
      ],
      "inputs": ["ids"], "outputs": ["y"],
      "nodes": [
        {"op": "tern::embedding", "args": ["E", "ids"], "outputs": ["e"]},
        {"op": "tern::sum", "args": ["e", "dims", "keep"], "outputs": ["t"]},
        {"op": "tern::relu", "args": ["t"], "outputs": ["y"]}
      ]}]})";
  std::string header = R"({"E":{"dtype":"F32","shape":[10,16],"data_offsets":[0,640]}})";
  while (header.size() % 8 != 0) header += ' ';
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  std::string data(640, '\0');
  for (size_t i = 0; i < 160; ++i) {
    const float v = 0.25f + 0.5f * static_cast<float>(i % 7);  // every row sums to > 0
    std::memcpy(&data[4 * i], &v, 4);
  }
  write_bytes(*dir_ / "emb.json", graph);
  write_bytes(*dir_ / "emb.safetensors", bytes + header + data);
  CommandResult r = run_tern("compile " + q(*dir_ / "emb.json") + " -o " + q(*dir_ / "emb.pte"));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  r = run_tern("bench " + q(*dir_ / "emb.pte") + " --ones --iterations 3 --warmup 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("latency over 3 iterations after 1 warm-up"), std::string::npos) << r.out;
}

TEST_F(BenchTest, BadArgumentsAreOneErrorLine) {
  CommandResult r = run_tern("bench " + model() + " --iterations 0");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.err.rfind("tern: error:", 0), 0u) << r.err;
  r = run_tern("bench " + q(*dir_ / "missing.pte"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("tern: error:", 0), 0u) << r.err;
  r = run_tern("bench " + model() + " --method nope");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tern
