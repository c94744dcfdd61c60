// `tern bench` reporting: statistics, profile tables, Chrome trace JSON.
#include "tools/cli/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>

namespace tern::cli {
namespace {

double ns_to_ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

uint64_t duration_ns(const RecordedStep& e) { return e.end_ns >= e.begin_ns ? e.end_ns - e.begin_ns : 0; }

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

void sort_rows(std::vector<ProfileRow>* rows) {
  std::stable_sort(rows->begin(), rows->end(), [](const ProfileRow& a, const ProfileRow& b) {
    return a.total_ms > b.total_ms;
  });
}

// Longest debug name shown in the per-step table (a delegate's lists its whole region).
constexpr size_t kMaxNameWidth = 60;

std::string shorten(const std::string& s) {
  return s.size() <= kMaxNameWidth ? s : s.substr(0, kMaxNameWidth - 3) + "...";
}

// Prints `rows` as a table; `per_step` selects the column set.
void print_rows(std::ostream& out, std::vector<ProfileRow> rows, double sum_ms, bool per_step) {
  size_t op_w = 2, name_w = 4;
  for (ProfileRow& r : rows) {
    r.debug_name = shorten(r.debug_name);
    op_w = std::max(op_w, r.op.size());
    name_w = std::max(name_w, r.debug_name.size());
  }
  char line[512];
  if (per_step) {
    std::snprintf(line, sizeof(line), "  %5s  %-*s  %-*s  %7s  %10s  %9s  %6s\n", "step",
                  static_cast<int>(op_w), "op", static_cast<int>(name_w), "name", "count",
                  "total ms", "mean ms", "share");
  } else {
    std::snprintf(line, sizeof(line), "  %-*s  %5s  %7s  %10s  %9s  %6s\n", static_cast<int>(op_w),
                  "op", "steps", "count", "total ms", "mean ms", "share");
  }
  out << line;
  for (const ProfileRow& r : rows) {
    const double mean = r.count ? r.total_ms / static_cast<double>(r.count) : 0.0;
    const double share = sum_ms > 0 ? 100.0 * r.total_ms / sum_ms : 0.0;
    // Long names are not truncated: snprintf would cut them, so build the row in pieces.
    std::string row = "  ";
    if (per_step) {
      std::snprintf(line, sizeof(line), "%5u  ", r.step);
      row += line;
      row += r.op + std::string(op_w - r.op.size(), ' ') + "  ";
      row += r.debug_name + std::string(name_w - r.debug_name.size(), ' ') + "  ";
    } else {
      row += r.op + std::string(op_w - r.op.size(), ' ') + "  ";
      std::snprintf(line, sizeof(line), "%5llu  ", static_cast<unsigned long long>(r.steps));
      row += line;
    }
    std::snprintf(line, sizeof(line), "%7llu  %10.3f  %9.4f  %5.1f%%\n",
                  static_cast<unsigned long long>(r.count), r.total_ms, mean, share);
    row += line;
    out << row;
  }
}

}  // namespace

LatencyStats latency_stats(std::vector<double> samples_ms) {
  LatencyStats s;
  if (samples_ms.empty()) return s;
  std::sort(samples_ms.begin(), samples_ms.end());
  const size_t n = samples_ms.size();
  s.min = samples_ms.front();
  s.max = samples_ms.back();
  s.median = n % 2 ? samples_ms[n / 2] : 0.5 * (samples_ms[n / 2 - 1] + samples_ms[n / 2]);
  // Nearest rank: ceil(0.9 n), 1-based.
  size_t rank = (9 * n + 9) / 10;
  if (rank < 1) rank = 1;
  s.p90 = samples_ms[rank - 1];
  s.mean = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / static_cast<double>(n);
  return s;
}

std::string op_label(const char* op) {
  if (op == nullptr || op[0] == '\0') return "?";
  if (std::strstr(op, "::") != nullptr) return op;
  return std::string("delegate:") + op;
}

std::vector<ProfileRow> profile_by_step(const std::vector<RecordedStep>& events) {
  std::map<uint32_t, ProfileRow> by_step;
  for (const RecordedStep& e : events) {
    ProfileRow& r = by_step[e.step];
    if (r.count == 0) {
      r.op = op_label(e.op);
      r.debug_name = e.debug_name ? e.debug_name : "";
      r.step = e.step;
      r.steps = 1;
    }
    ++r.count;
    r.total_ms += ns_to_ms(duration_ns(e));
  }
  std::vector<ProfileRow> rows;
  for (auto& kv : by_step) rows.push_back(std::move(kv.second));
  sort_rows(&rows);
  return rows;
}

std::vector<ProfileRow> profile_by_op(const std::vector<RecordedStep>& events) {
  std::map<std::string, ProfileRow> by_op;
  std::map<std::string, std::vector<uint32_t>> steps_of;
  for (const RecordedStep& e : events) {
    const std::string label = op_label(e.op);
    ProfileRow& r = by_op[label];
    r.op = label;
    ++r.count;
    r.total_ms += ns_to_ms(duration_ns(e));
    steps_of[label].push_back(e.step);
  }
  std::vector<ProfileRow> rows;
  for (auto& kv : by_op) {
    std::vector<uint32_t>& steps = steps_of[kv.first];
    std::sort(steps.begin(), steps.end());
    kv.second.steps = static_cast<uint64_t>(std::unique(steps.begin(), steps.end()) - steps.begin());
    rows.push_back(std::move(kv.second));
  }
  sort_rows(&rows);
  return rows;
}

void print_profile(std::ostream& out, const std::vector<RecordedStep>& events, double wall_ms) {
  double sum_ms = 0;
  for (const RecordedStep& e : events) sum_ms += ns_to_ms(duration_ns(e));
  out << "\nprofile by step (sorted by total time):\n";
  print_rows(out, profile_by_step(events), sum_ms, true);
  out << "\nprofile by op:\n";
  print_rows(out, profile_by_op(events), sum_ms, false);
  out << "\nsteps: " << fixed(sum_ms, 3) << " ms of " << fixed(wall_ms, 3)
      << " ms executing; outside steps (executor overhead and timer): "
      << fixed(std::max(0.0, wall_ms - sum_ms), 3) << " ms\n";
}

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::vector<PartRow> profile_parts(const std::vector<RecordedPart>& parts) {
  std::map<std::pair<uint32_t, std::string>, PartRow> by_part;
  for (const RecordedPart& p : parts) {
    const std::string label = p.label ? p.label : "?";
    PartRow& r = by_part[{p.step, label}];
    r.step = p.step;
    r.label = label;
    ++r.count;
    r.total_ms += ns_to_ms(p.end_ns >= p.begin_ns ? p.end_ns - p.begin_ns : 0);
  }
  std::vector<PartRow> rows;
  for (auto& kv : by_part) rows.push_back(std::move(kv.second));
  std::stable_sort(rows.begin(), rows.end(),
                   [](const PartRow& a, const PartRow& b) { return a.total_ms > b.total_ms; });
  return rows;
}

void print_parts(std::ostream& out, const std::vector<RecordedPart>& parts, double steps_ms) {
  if (parts.empty()) return;
  const std::vector<PartRow> rows = profile_parts(parts);
  size_t label_w = 4;
  for (const PartRow& r : rows) label_w = std::max(label_w, r.label.size());
  out << "\ninside delegate steps (parts the backends timed, sorted by total time):\n";
  out << " step  part" << std::string(label_w - 4, ' ')
      << "    count    total ms    mean ms   share\n";
  char line[128];
  for (const PartRow& r : rows) {
    const double mean = r.count ? r.total_ms / static_cast<double>(r.count) : 0.0;
    const double share = steps_ms > 0 ? 100.0 * r.total_ms / steps_ms : 0.0;
    std::snprintf(line, sizeof(line), "%5u  ", r.step);
    std::string row = line;
    row += r.label + std::string(label_w - r.label.size(), ' ');
    std::snprintf(line, sizeof(line), "  %7llu  %10.3f  %9.4f  %5.1f%%\n",
                  static_cast<unsigned long long>(r.count), r.total_ms, mean, share);
    row += line;
    out << row;
  }
}

void write_chrome_trace(std::ostream& out, const std::vector<RecordedStep>& events,
                        const std::vector<IterationSpan>& iterations, const std::string& model,
                        const std::vector<RecordedPart>& parts) {
  uint64_t origin = UINT64_MAX;
  for (const IterationSpan& it : iterations) origin = std::min(origin, it.begin_ns);
  for (const RecordedStep& e : events) origin = std::min(origin, e.begin_ns);
  if (origin == UINT64_MAX) origin = 0;
  auto us = [origin](uint64_t ns) { return fixed(static_cast<double>(ns - origin) / 1e3, 3); };
  auto dur_us = [](uint64_t b, uint64_t e) { return fixed(e >= b ? static_cast<double>(e - b) / 1e3 : 0.0, 3); };

  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"model\":\"" << json_escape(model)
      << "\"},\"traceEvents\":[\n";
  out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"tern bench "
      << json_escape(model) << "\"}}";
  for (size_t i = 0; i < iterations.size(); ++i) {
    const IterationSpan& it = iterations[i];
    out << ",\n{\"name\":\"execute\",\"cat\":\"iteration\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":"
        << us(it.begin_ns) << ",\"dur\":" << dur_us(it.begin_ns, it.end_ns)
        << ",\"args\":{\"iteration\":" << i << "}}";
  }
  for (const RecordedStep& e : events) {
    const std::string op = op_label(e.op);
    const std::string debug = e.debug_name ? e.debug_name : "";
    const std::string name = debug.empty() ? op : op + " / " + debug;
    out << ",\n{\"name\":\"" << json_escape(name) << "\",\"cat\":\"step\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":"
        << us(e.begin_ns) << ",\"dur\":" << dur_us(e.begin_ns, e.end_ns) << ",\"args\":{\"op\":\""
        << json_escape(op) << "\",\"debug_name\":\"" << json_escape(debug) << "\",\"step\":" << e.step
        << ",\"iteration\":" << e.iteration << "}}";
  }
  for (const RecordedPart& p : parts) {
    const std::string label = p.label ? p.label : "?";
    out << ",\n{\"name\":\"" << json_escape(label)
        << "\",\"cat\":\"part\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":" << us(p.begin_ns)
        << ",\"dur\":" << dur_us(p.begin_ns, p.end_ns) << ",\"args\":{\"step\":" << p.step
        << ",\"iteration\":" << p.iteration << "}}";
  }
  out << "\n]}\n";
}

}  // namespace tern::cli
