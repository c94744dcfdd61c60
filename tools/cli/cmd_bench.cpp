// `tern bench`: load a method, time N executes after a warm-up, report latency percentiles,
// load time and peak RSS; optionally a per-step profile and a Chrome trace.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>

#include "runtime/executor/method.h"
#include "runtime/extension/module.h"
#include "runtime/executor/profiler.h"
#include "tools/cli/bench_report.h"
#include "tools/cli/cmd_bench.h"
#include "tools/cli/commands.h"
#include "tools/cli/half.h"
#include "tools/cli/npy.h"

namespace tern::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Most step events kept for --trace (about 40 MB of JSON); later iterations are profiled but
// not traced.
constexpr size_t kMaxTraceEvents = 200000;
// Delegate parts recorded per timed iteration (a cpu delegate reports one per stage plus two).
constexpr size_t kMaxPartsPerIteration = 4096;

// Sets every input of `method`; `arrays` keeps the bytes alive (caller-bound inputs).
void set_inputs(Method& method, const BenchOptions& options, std::vector<NpyArray>* arrays) {
  MethodMeta meta = method.meta();
  const size_t n = meta.num_inputs();
  if (!options.inputs.empty() && options.inputs.size() != n) {
    throw std::runtime_error("the method takes " + std::to_string(n) + " inputs, " +
                             std::to_string(options.inputs.size()) + " --input files given");
  }
  arrays->assign(n, NpyArray());
  std::mt19937_64 rng(options.seed);
  for (size_t i = 0; i < n; ++i) {
    const std::string label = "input " + std::to_string(i);
    Result<EValue::Tag> tag = meta.input_tag(i);
    if (!tag.ok()) throw_if_error(tag.error(), "cannot read " + label);
    if (*tag != EValue::Tag::Tensor) {
      EValue value;
      if (*tag == EValue::Tag::Int) value = EValue::from_int(1);
      else if (*tag == EValue::Tag::Double) value = EValue::from_double(1.0);
      else if (*tag == EValue::Tag::Bool) value = EValue::from_bool(true);
      else throw std::runtime_error(label + ": unsupported input kind " + std::string(to_string(*tag)));
      clear_error_message();
      throw_if_error(method.set_input(i, value), "cannot set " + label);
      continue;
    }
    Result<TensorInfo> info = meta.input_tensor_info(i);
    if (!info.ok()) throw_if_error(info.error(), "cannot read " + label);
    NpyArray& array = (*arrays)[i];
    if (!options.inputs.empty()) {
      array = read_npy(options.inputs[i]);
    } else {
      array.dtype = info->dtype;
      array.shape.assign(info->sizes.begin(), info->sizes.end());
      array.data = generated_input(info->dtype, array.numel(), options.ones, rng, label);
    }
    static uint8_t empty_byte = 0;
    TensorView view;
    view.dtype = array.dtype;
    view.rank = static_cast<uint32_t>(array.shape.size());
    view.sizes = array.shape.data();
    view.data = array.data.empty() ? &empty_byte : array.data.data();
    view.nbytes = array.data.size();
    clear_error_message();
    throw_if_error(method.set_input(i, view), "cannot set " + label);
  }
}

void execute_or_throw(Method& method, const std::string& name) {
  clear_error_message();
  throw_if_error(method.execute(), "execution of method '" + name + "' failed");
}

// A progress bar on stderr for long runs: drawn only when stderr is a terminal and once the
// phase has taken more than half a second.
class Progress {
 public:
  Progress(const char* what, size_t total)
      : what_(what), total_(total), tty_(isatty(2) != 0), start_(Clock::now()) {}
  void update(size_t done) {
    if (!tty_ || total_ == 0) return;
    if (!drawn_ && ms_between(start_, Clock::now()) < 500.0) return;
    drawn_ = true;
    const size_t width = 30;
    const size_t filled = done * width / total_;
    if (done != total_ && filled == last_) return;
    last_ = filled;
    std::fprintf(stderr, "\r%s [%s%s] %zu/%zu", what_, std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), done, total_);
    std::fflush(stderr);
  }
  void finish() {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  const char* what_;
  size_t total_;
  bool tty_;
  Clock::time_point start_;
  bool drawn_ = false;
  size_t last_ = SIZE_MAX;
};

}  // namespace

int cmd_bench(const BenchOptions& options) {
  if (options.iterations == 0) throw std::runtime_error("--iterations must be at least 1");

  // Load: file to first output.
  const Clock::time_point t0 = Clock::now();
  Module module;
  Module::Options module_options;
  module_options.method.num_threads = options.threads;
  std::string method_name;
  Method& method =
      load_chosen_method(module, options.model, options.method, &method_name, module_options);
  const Clock::time_point t1 = Clock::now();
  std::vector<NpyArray> arrays;
  set_inputs(method, options, &arrays);
  const Clock::time_point t2 = Clock::now();
  execute_or_throw(method, method_name);
  const Clock::time_point t3 = Clock::now();
  const double load_ms = ms_between(t0, t1);
  const double first_ms = ms_between(t2, t3);

  Progress warm_progress("warm-up", options.warmup);
  for (uint32_t i = 0; i < options.warmup; ++i) {
    execute_or_throw(method, method_name);
    warm_progress.update(i + 1);
  }
  warm_progress.finish();

  const bool observe = options.profile || !options.trace.empty();
  std::vector<StepEvent> buffer(observe ? std::max<size_t>(method.num_steps(), 1) : 1);
  // Parts the backends time inside their delegate steps (a cpu delegate: its stages).
  std::vector<PartEvent> part_buffer(observe ? kMaxPartsPerIteration : 1);
  StepRecorder recorder(Span<StepEvent>(buffer.data(), buffer.size()),
                        Span<PartEvent>(part_buffer.data(), part_buffer.size()));
  if (observe) method.set_observer(&recorder);

  std::vector<double> samples;
  samples.reserve(options.iterations);
  std::vector<RecordedStep> events;
  std::vector<RecordedPart> parts;
  size_t parts_dropped = 0;
  std::vector<IterationSpan> spans;
  size_t untraced = 0;
  Progress progress("bench", options.iterations);
  for (uint32_t it = 0; it < options.iterations; ++it) {
    recorder.clear();
    const uint64_t begin_ns = monotonic_ns();
    const Clock::time_point a = Clock::now();
    execute_or_throw(method, method_name);
    const Clock::time_point b = Clock::now();
    const uint64_t end_ns = monotonic_ns();
    samples.push_back(ms_between(a, b));
    if (observe) {
      spans.push_back({begin_ns, end_ns});
      for (size_t k = 0; k < recorder.size(); ++k) {
        const StepEvent& e = recorder.event(k);
        events.push_back({it, e.step, e.op, e.debug_name, e.begin_ns, e.end_ns});
      }
      for (size_t k = 0; k < recorder.parts_size(); ++k) {
        const PartEvent& e = recorder.part(k);
        parts.push_back({it, e.step, e.label, e.begin_ns, e.end_ns});
      }
      parts_dropped += recorder.parts_dropped();
    }
    progress.update(it + 1);
  }
  progress.finish();
  method.set_observer(nullptr);

  const LatencyStats stats = latency_stats(samples);
  std::printf("model %s, method '%s', %zu steps, threads %u%s\n", options.model.c_str(),
              method_name.c_str(), method.num_steps(), options.threads,
              options.threads == 0 ? " (backend default)" : "");
  for (size_t i = 0; i < method.num_delegate_calls(); ++i) {
    Result<DelegatePath> path = method.delegate_path(i);
    if (path.ok()) {
      std::printf("delegate call %zu: %s\n", i,
                  *path == DelegatePath::Backend ? "backend" : "portable fallback");
    }
  }
  for (size_t i = 0; i < method.num_delegates(); ++i) {
    Result<DelegateMemory> m = method.delegate_memory(i);
    if (m.ok() && m->device_bytes > 0) {
      std::printf("delegate %zu (%s): device memory %.2f MiB\n", i, m->backend,
                  static_cast<double>(m->device_bytes) / (1024.0 * 1024.0));
    }
  }
  std::printf("load: %.3f ms, first execute: %.3f ms, file to first output: %.3f ms\n", load_ms,
              first_ms, load_ms + first_ms);
  std::printf("peak RSS: %.1f MiB\n", peak_rss_mib());
  std::printf("latency over %u iterations after %u warm-up%s:\n", options.iterations,
              options.warmup, observe ? " (observer installed)" : "");
  std::printf("  min     %10.3f ms\n  median  %10.3f ms\n  p90     %10.3f ms\n  max     %10.3f ms\n"
              "  mean    %10.3f ms\n",
              stats.min, stats.median, stats.p90, stats.max, stats.mean);

  double wall_ms = 0;
  for (double s : samples) wall_ms += s;
  if (options.profile) {
    print_profile(std::cout, events, wall_ms);
    double steps_ms = 0;
    for (const RecordedStep& e : events) steps_ms += (e.end_ns - e.begin_ns) / 1e6;
    print_parts(std::cout, parts, steps_ms);
    if (parts_dropped > 0) {
      std::printf("(%zu delegate parts past %zu per iteration were not recorded)\n",
                  parts_dropped, kMaxPartsPerIteration);
    }
  }
  std::cout.flush();

  if (!options.trace.empty()) {
    std::vector<RecordedStep> traced = events;
    if (traced.size() > kMaxTraceEvents) {
      untraced = traced.size() - kMaxTraceEvents;
      traced.resize(kMaxTraceEvents);
    }
    std::ofstream out(options.trace, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + options.trace);
    std::vector<RecordedPart> traced_parts = parts;
    if (traced_parts.size() > kMaxTraceEvents) traced_parts.resize(kMaxTraceEvents);
    write_chrome_trace(out, traced, spans, options.model, traced_parts);
    out.close();
    if (!out) throw std::runtime_error("cannot write " + options.trace);
    std::printf("trace: %s (%zu step events%s)\n", options.trace.c_str(), traced.size(),
                untraced ? (", " + std::to_string(untraced) + " more left out").c_str() : "");
  }

  if (!options.json.empty()) {
    std::ofstream out(options.json, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + options.json);
    char buf[64];
    auto num = [&buf](double v) {
      std::snprintf(buf, sizeof(buf), "%.6f", v);
      return std::string(buf);
    };
    out << "{\"model\":\"" << json_escape(options.model) << "\",\"method\":\""
        << json_escape(method_name) << "\",\"threads\":" << options.threads
        << ",\"steps\":" << method.num_steps() << ",\"iterations\":" << options.iterations
        << ",\"warmup\":" << options.warmup << ",\"load_ms\":" << num(load_ms)
        << ",\"first_execute_ms\":" << num(first_ms) << ",\"peak_rss_mib\":" << num(peak_rss_mib())
        << ",\"latency_ms\":{\"min\":" << num(stats.min) << ",\"median\":" << num(stats.median)
        << ",\"p90\":" << num(stats.p90) << ",\"max\":" << num(stats.max)
        << ",\"mean\":" << num(stats.mean) << "},\"samples_ms\":[";
    for (size_t i = 0; i < samples.size(); ++i) out << (i ? "," : "") << num(samples[i]);
    out << "]}\n";
    if (!out) throw std::runtime_error("cannot write " + options.json);
  }
  return 0;
}

}  // namespace tern::cli
