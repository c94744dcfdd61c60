// `tern bench` reporting: latency statistics, the per-step / per-op profile tables and the
// Chrome trace (JSON) writer. Pure functions over recorded timings; no runtime calls.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace tern::cli {

/// Latency summary in milliseconds. median: mean of the two middle samples for an even
/// count; p90: nearest rank (the smallest sample with at least 90% of samples <= it).
struct LatencyStats {
  double min = 0, median = 0, p90 = 0, max = 0, mean = 0;
};

/// Statistics of `samples_ms`; all zero for an empty vector.
LatencyStats latency_stats(std::vector<double> samples_ms);

/// One executed step of one timed iteration. `op` and `debug_name` point into the Program
/// (may be null) and must outlive the report calls.
struct RecordedStep {
  uint32_t iteration = 0;
  uint32_t step = 0;
  const char* op = nullptr;
  const char* debug_name = nullptr;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
};

/// One part of a delegate step that its backend timed (a stage, the edge copies). `label`
/// points into the backend's delegate state and must outlive the report calls.
struct RecordedPart {
  uint32_t iteration = 0;
  uint32_t step = 0;
  const char* label = nullptr;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
};

/// The start and end of one timed execute() call (monotonic ns).
struct IterationSpan {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
};

/// How a step's operator is shown: the kernel's op name ("tern::conv2d"), or
/// "delegate:<backend>" for a delegate call (whose op is the backend name, without "::").
std::string op_label(const char* op);

/// One row of a profile table.
struct ProfileRow {
  std::string op;          ///< op_label()
  std::string debug_name;  ///< per-step rows only
  uint32_t step = 0;       ///< per-step rows only
  uint64_t steps = 0;      ///< distinct steps aggregated (per-op rows)
  uint64_t count = 0;      ///< executions
  double total_ms = 0;
};

/// Per-step rows (one per step index), sorted by total time, longest first.
std::vector<ProfileRow> profile_by_step(const std::vector<RecordedStep>& events);
/// Per-op rows (steps with the same op_label summed), sorted by total time, longest first.
std::vector<ProfileRow> profile_by_op(const std::vector<RecordedStep>& events);

/// Writes both tables as aligned text: each row's count, total ms, mean ms and share of the
/// summed step time. `wall_ms` (the timed executes' total) adds a line with the time spent
/// outside steps (the executor's own overhead).
void print_profile(std::ostream& out, const std::vector<RecordedStep>& events, double wall_ms);

/// One row of the delegate-parts table: a (step, label) pair over the iterations.
struct PartRow {
  uint32_t step = 0;
  std::string label;
  uint64_t count = 0;
  double total_ms = 0;
};

/// Per (delegate step, part label) rows, sorted by total time, longest first.
std::vector<PartRow> profile_parts(const std::vector<RecordedPart>& parts);

/// Writes the delegate-parts table (nothing when `parts` is empty): step, label, count, total
/// ms, mean ms and share of the summed step time `steps_ms`.
void print_parts(std::ostream& out, const std::vector<RecordedPart>& parts, double steps_ms);

/// Writes a Chrome trace event file (the JSON object form) that chrome://tracing and Perfetto
/// open: one complete ("ph":"X") event with cat "step" per recorded step, named
/// "<op> / <debug name>", one with cat "part" per delegate part (nested in its step's time),
/// and one with cat "iteration" per timed execute; ts and dur in microseconds from the first
/// iteration's start.
void write_chrome_trace(std::ostream& out, const std::vector<RecordedStep>& events,
                        const std::vector<IterationSpan>& iterations, const std::string& model,
                        const std::vector<RecordedPart>& parts = {});

/// `s` escaped as the inside of a JSON string.
std::string json_escape(const std::string& s);

}  // namespace tern::cli
