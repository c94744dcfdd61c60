// tern bench's reporting functions and the executor's StepRecorder, on hand-made timings.
#include "tools/cli/bench_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/executor/profiler.h"

namespace tern::cli {
namespace {

TEST(LatencyStats, HandWorkedValues) {
  // Sorted: 1 2 3 4 5 6 7 8 9 10. Median (5 + 6) / 2; p90 nearest rank ceil(9) = 9th = 9.
  const LatencyStats s = latency_stats({10, 3, 1, 7, 2, 9, 4, 6, 5, 8});
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.p90, 9);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  // Odd count: median is the middle; p90 of 3 samples is rank ceil(2.7) = 3.
  const LatencyStats t = latency_stats({3, 1, 2});
  EXPECT_DOUBLE_EQ(t.median, 2);
  EXPECT_DOUBLE_EQ(t.p90, 3);
  const LatencyStats one = latency_stats({4});
  EXPECT_DOUBLE_EQ(one.p90, 4);
  const LatencyStats none = latency_stats({});
  EXPECT_DOUBLE_EQ(none.max, 0);
}

TEST(OpLabel, KernelsAndDelegates) {
  EXPECT_EQ(op_label("tern::conv2d"), "tern::conv2d");
  EXPECT_EQ(op_label("cpu"), "delegate:cpu");
  EXPECT_EQ(op_label(nullptr), "?");
}

std::vector<RecordedStep> sample_events() {
  // Two iterations of three steps; times in ns. Step 1 is a delegate call.
  std::vector<RecordedStep> e;
  for (uint32_t it = 0; it < 2; ++it) {
    const uint64_t base = 1000000 + it * 100000;
    e.push_back({it, 0, "tern::conv2d", "c1", base, base + 3000000});
    e.push_back({it, 1, "cpu", "region0", base + 3000000, base + 4000000});
    e.push_back({it, 2, "tern::conv2d", "c2", base + 4000000, base + 5000000});
  }
  return e;
}

TEST(Profile, AggregatesPerStepAndPerOp) {
  const std::vector<ProfileRow> steps = profile_by_step(sample_events());
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].step, 0u);  // 2 x 3 ms, the longest
  EXPECT_DOUBLE_EQ(steps[0].total_ms, 6.0);
  EXPECT_EQ(steps[0].count, 2u);
  EXPECT_EQ(steps[0].debug_name, "c1");
  const std::vector<ProfileRow> ops = profile_by_op(sample_events());
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].op, "tern::conv2d");
  EXPECT_EQ(ops[0].steps, 2u);
  EXPECT_EQ(ops[0].count, 4u);
  EXPECT_DOUBLE_EQ(ops[0].total_ms, 8.0);  // 2 x (3 + 1)
  EXPECT_EQ(ops[1].op, "delegate:cpu");
  EXPECT_DOUBLE_EQ(ops[1].total_ms, 2.0);
  std::ostringstream text;
  print_profile(text, sample_events(), 12.0);
  EXPECT_NE(text.str().find("80.0%"), std::string::npos) << text.str();  // conv2d: 8 of 10 ms
  EXPECT_NE(text.str().find("2.000 ms"), std::string::npos) << text.str();  // 12 - 10 outside
}

TEST(ChromeTrace, ValidJsonInMicroseconds) {
  std::ostringstream out;
  write_chrome_trace(out, sample_events(), {{1000000, 6000000}, {1100000, 6200000}},
                     "m \"quoted\".pte");
  const nlohmann::json doc = nlohmann::json::parse(out.str());
  size_t x = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++x;
    if (e["cat"] == "step" && e["args"]["step"] == 0 && e["args"]["iteration"] == 1) {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 100.0);  // (1100000 - 1000000) ns
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 3000.0);
      EXPECT_EQ(e["name"], "tern::conv2d / c1");
    }
  }
  EXPECT_EQ(x, 8u);  // 6 steps + 2 iterations
  EXPECT_EQ(doc["otherData"]["model"], "m \"quoted\".pte");
}

TEST(Profile, DelegatePartsAggregatePerStepAndLabel) {
  const char* a = "stage 0: packed_conv2d [1, 8, 8, 16]";
  const char* b = "stage 1: xnnpack max_pool2d [1, 4, 4, 16]";
  const std::vector<RecordedPart> parts = {
      {0, 1, a, 1000000, 3000000}, {0, 1, b, 3000000, 3500000},
      {1, 1, a, 6000000, 8000000}, {1, 1, b, 8000000, 8500000},
  };
  const std::vector<PartRow> rows = profile_parts(parts);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].label, a);  // 2 x 2 ms, the longest
  EXPECT_EQ(rows[0].step, 1u);
  EXPECT_EQ(rows[0].count, 2u);
  EXPECT_DOUBLE_EQ(rows[0].total_ms, 4.0);
  EXPECT_DOUBLE_EQ(rows[1].total_ms, 1.0);
  std::ostringstream text;
  print_parts(text, parts, 10.0);
  EXPECT_NE(text.str().find("inside delegate steps"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("40.0%"), std::string::npos) << text.str();  // 4 of 10 ms
  std::ostringstream none;
  print_parts(none, {}, 10.0);
  EXPECT_TRUE(none.str().empty());
  // The trace has the parts too, with cat "part".
  std::ostringstream trace;
  write_chrome_trace(trace, sample_events(), {{1000000, 6000000}}, "m.pte", parts);
  size_t part_events = 0;
  const nlohmann::json doc = nlohmann::json::parse(trace.str());
  for (const auto& e : doc["traceEvents"]) {
    if (e.contains("cat") && e["cat"] == "part") ++part_events;
  }
  EXPECT_EQ(part_events, 4u) << trace.str();
}

TEST(StepRecorder, StoresUntilFullThenCountsDropped) {
  StepEvent buffer[2];
  StepRecorder recorder(Span<StepEvent>(buffer, 2));
  ExecutionObserver& observer = recorder;
  for (size_t i = 0; i < 3; ++i) {
    observer.on_step_begin(i, "tern::add", "n");
    observer.on_step_end(i, "tern::add", "n");
  }
  ASSERT_EQ(recorder.size(), 2u);
  EXPECT_EQ(recorder.dropped(), 1u);
  EXPECT_EQ(recorder.event(1).step, 1u);
  EXPECT_LE(recorder.event(1).begin_ns, recorder.event(1).end_ns);
  EXPECT_LE(recorder.event(0).end_ns, recorder.event(1).begin_ns);
  recorder.clear();
  EXPECT_EQ(recorder.size(), 0u);
  EXPECT_EQ(recorder.dropped(), 0u);
}

}  // namespace
}  // namespace tern::cli
