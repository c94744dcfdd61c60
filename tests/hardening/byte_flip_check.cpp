// The byte-flip check (see byte_flip_check.h).
//
// Which bytes are flipped (one at a time, xor 0xFF and then xor 0x01, restored after each):
// every byte of the file's structure outside segment data (the 64-byte header, the
// FlatBuffer), the first and last byte of every run of padding (between the FlatBuffer and
// the segment area, between segments, after the segment area), plus the first, middle and last
// byte of every non-empty segment. Flipping every weight byte of a 93 MB model would only show, 93 million
// times, that XXH3 notices one changed byte; three per segment show that every segment's
// checksum is checked.
//
// What must happen: Program::load with Full verification (what `tern verify` does) refuses
// the file with an Error and a non-empty message, or the file loads, every method loads into
// memory sized by its own MethodMeta, executes on fixed inputs, and every output bit equals
// the original file's. Anything else (a refusal without a message, a method that then fails
// to load or run, a changed output) is a failure; a crash is caught by a signal handler that
// prints the offset being tried before the process dies.
//
// Every flip that loads is run: a loaded flip costs one Full load, one method load (the cpu
// backend packs its weights there) and one inference per path, 0.1-0.3 s on resnet18, and
// only padding bytes load — which is why padding runs are flipped at their two ends only (a
// few dozen per model instead of a few hundred; tests/executor/byte_flip_test.cpp flips every
// byte of its small programs). With ByteFlipOptions::fallback_too each
// loaded flip is also run with every backend disabled, so that a portable kernel reading a
// constant in place (zero-copy from its segment) past its end would show up too. Last, every
// padding byte is flipped at once and that file is run and compared (a reader of any
// combination of padding bytes would show up there).
#include "tests/hardening/byte_flip_check.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "runtime/loader/buffer_data_loader.h"
#include "runtime/executor/program.h"
#include "schema/program_generated.h"
#include "tests/support/exact_memory.h"
#include "tests/hardening/method_runner.h"

namespace tern::model_hardening {
namespace {

/// Executions of each method per run (the models have no state: one is enough).
constexpr int kRunsPerFlip = 1;

/// Where the header, FlatBuffer and segments lie in the file (absolute offsets).
struct FileLayout {
  uint64_t file_size = 0;
  uint64_t flatbuffer_begin = 0, flatbuffer_end = 0;
  uint64_t area_begin = 0, area_end = 0;
  struct Range {
    uint64_t begin, end;
    uint32_t index;
  };
  std::vector<Range> segments;  ///< non-empty segments, sorted by begin

  static FileLayout of(const Program& program, uint64_t file_size) {
    FileLayout l;
    const FileHeader& h = program.header();
    l.file_size = file_size;
    l.flatbuffer_begin = h.flatbuffer_offset;
    l.flatbuffer_end = h.flatbuffer_offset + h.flatbuffer_size;
    l.area_begin = h.segment_area_offset;
    l.area_end = h.segment_area_offset + h.segment_area_size;
    const auto* segments = program.flatbuffer()->segments();
    for (uint32_t i = 0; segments != nullptr && i < segments->size(); ++i) {
      const fb::Segment* s = segments->Get(i);
      if (s->size() == 0) continue;
      l.segments.push_back({l.area_begin + s->offset(), l.area_begin + s->offset() + s->size(), i});
    }
    std::sort(l.segments.begin(), l.segments.end(),
              [](const Range& a, const Range& b) { return a.begin < b.begin; });
    return l;
  }

  /// The segment holding `offset`, or null.
  const Range* segment_at(uint64_t offset) const {
    auto it = std::upper_bound(segments.begin(), segments.end(), offset,
                               [](uint64_t o, const Range& r) { return o < r.begin; });
    if (it == segments.begin()) return nullptr;
    --it;
    return offset < it->end ? &*it : nullptr;
  }

  /// Covered by a checksum: the header, the FlatBuffer, a segment.
  bool covered(uint64_t offset) const {
    return offset < kFileHeaderSize || (offset >= flatbuffer_begin && offset < flatbuffer_end) ||
           segment_at(offset) != nullptr;
  }

  /// A region name for counting (all segments are one region).
  std::string region(uint64_t offset) const {
    if (offset < kFileHeaderSize) return "header";
    if (offset >= flatbuffer_begin && offset < flatbuffer_end) return "flatbuffer";
    if (segment_at(offset) != nullptr) return "segment data";
    if (offset < flatbuffer_begin) return "padding between the header and the FlatBuffer";
    if (offset >= area_begin && offset < area_end) return "alignment padding between segments";
    if (offset >= area_end) return "bytes after the segment area";
    return "padding between the FlatBuffer and the segment area";
  }

  /// region(), naming the segment.
  std::string where(uint64_t offset) const {
    const Range* s = segment_at(offset);
    if (s == nullptr) return region(offset);
    return "segment " + std::to_string(s->index) + " [" + std::to_string(s->begin) + ", " +
           std::to_string(s->end) + ")";
  }
};

/// The flip being tried, for the crash handler.
volatile sig_atomic_t g_flipping = 0;
volatile uint64_t g_offset = 0;
volatile uint8_t g_mask = 0;

void write_number(uint64_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  char out[24];
  for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  (void)!write(2, out, static_cast<size_t>(n));
}

void on_crash(int sig) {
  if (g_flipping) {
    const char head[] = "\n[byte flips] CRASH (signal ";
    (void)!write(2, head, sizeof(head) - 1);
    write_number(static_cast<uint64_t>(sig));
    const char mid[] = ") while trying the flip of the byte at offset ";
    (void)!write(2, mid, sizeof(mid) - 1);
    write_number(g_offset);
    const char xor_text[] = " xor (decimal) ";
    (void)!write(2, xor_text, sizeof(xor_text) - 1);
    write_number(g_mask);
    (void)!write(2, "\n", 1);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_crash_handler() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, on_crash);
}

/// Every byte outside segments and three bytes of each segment, ascending; `gaps` receives the
/// maximal runs of uncovered bytes.
std::vector<uint64_t> every_flip_offset(const FileLayout& l, std::vector<FileLayout::Range>* gaps) {
  std::vector<uint64_t> offsets;
  uint64_t o = 0;
  size_t next_segment = 0;
  while (o < l.file_size) {
    // (Overlapping segments are refused at load; skipping them keeps this loop finite.)
    while (next_segment < l.segments.size() && l.segments[next_segment].begin < o) ++next_segment;
    if (next_segment < l.segments.size() && o == l.segments[next_segment].begin) {
      const FileLayout::Range& s = l.segments[next_segment++];
      const uint64_t picks[] = {s.begin, s.begin + (s.end - s.begin) / 2, s.end - 1};
      for (uint64_t p : picks) {
        if (offsets.empty() || offsets.back() != p) offsets.push_back(p);
      }
      o = s.end;
      continue;
    }
    const uint64_t stop =
        next_segment < l.segments.size() ? l.segments[next_segment].begin : l.file_size;
    for (; o < stop; ++o) {
      offsets.push_back(o);
      if (!l.covered(o)) {
        if (!gaps->empty() && gaps->back().end == o) {
          gaps->back().end = o + 1;
        } else {
          gaps->push_back({o, o + 1, 0});
        }
      }
    }
  }
  return offsets;
}

/// The offsets to flip, ascending: every byte outside segments that the file's structure covers
/// (header, FlatBuffer), the first, middle and last byte of each segment, and the first and last
/// byte of each run of uncovered bytes (padding; every flip there loads, so it costs a load,
/// its weight packing and a run per path, and the bytes between are covered by flipping all
/// padding at once). `gaps` receives the maximal runs of uncovered bytes.
std::vector<uint64_t> flip_offsets(const FileLayout& l, std::vector<FileLayout::Range>* gaps) {
  std::vector<uint64_t> all = every_flip_offset(l, gaps);
  std::vector<uint64_t> offsets;
  size_t g = 0;
  for (uint64_t o : all) {
    while (g < gaps->size() && (*gaps)[g].end <= o) ++g;
    const bool in_gap = g < gaps->size() && (*gaps)[g].begin <= o;
    if (!in_gap || o == (*gaps)[g].begin || o + 1 == (*gaps)[g].end) offsets.push_back(o);
  }
  return offsets;
}

}  // namespace

ByteFlipReport check_byte_flips(const std::vector<uint8_t>& file, const ByteFlipOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  ByteFlipReport report;
  report.file_bytes = file.size();
  Bytes buffer = exact_bytes(file.size(), 64);
  uint8_t* bytes = buffer.get();
  std::memcpy(bytes, file.data(), file.size());

  std::vector<LoadConfig> paths(1);
  paths[0].threads = options.threads;
  if (options.fallback_too) {
    paths.push_back(paths[0]);
    paths[1].fallback = true;
  }
  FileLayout layout;
  std::vector<std::vector<uint8_t>> reference;  // per path
  {
    BufferDataLoader loader(bytes, file.size());
    auto program = Program::load(&loader);
    if (!program.ok()) {
      throw std::runtime_error(std::string("the original file does not load: ") +
                               last_error_message());
    }
    layout = FileLayout::of(*program, file.size());
    for (const LoadConfig& path : paths) {
      RunOutcome run = run_all_methods(*program, path, kRunsPerFlip);
      if (!run.error.empty()) {
        throw std::runtime_error(std::string("the original file does not run (") + path.path() +
                                 "): " + run.error);
      }
      reference.push_back(std::move(run.outputs));
    }
  }
  for (const auto& s : layout.segments) report.segment_bytes += s.end - s.begin;

  // Runs the loaded `program` on every path; "" or what went wrong.
  auto run_and_compare = [&](const Program& program) -> std::string {
    for (size_t p = 0; p < paths.size(); ++p) {
      const RunOutcome run = run_all_methods(program, paths[p], kRunsPerFlip);
      ++report.runs;
      if (!run.error.empty())
        return std::string("loads, then fails (") + paths[p].path() + "): " + run.error;
      if (run.outputs != reference[p]) {
        return std::string("loads and changes the outputs (") + paths[p].path() + ")";
      }
    }
    return "";
  };

  std::vector<FileLayout::Range> gaps;
  const std::vector<uint64_t> offsets = flip_offsets(layout, &gaps);
  report.bytes_flipped = offsets.size();
  install_crash_handler();
  size_t failures_shown = 0;
  for (const uint64_t offset : offsets) {
    const std::string region = layout.region(offset);
    for (const uint8_t mask : {uint8_t{0xFF}, uint8_t{0x01}}) {
      ++report.flips;
      char what[96];
      std::snprintf(what, sizeof(what), "offset %llu (xor 0x%02x, ",
                    static_cast<unsigned long long>(offset), mask);
      g_offset = offset;
      g_mask = mask;
      g_flipping = 1;
      bytes[offset] ^= mask;
      {
        BufferDataLoader loader(bytes, file.size());
        clear_error_message();
        auto program = Program::load(&loader);  // Verification::Full
        if (!program.ok()) {
          if (last_error_message()[0] == '\0') {
            report.failures.push_back(what + layout.where(offset) + "): rejected with " +
                                      to_string(program.error()) + " but no message");
          } else {
            ++report.rejected;
            ++report.rejected_by_error[program.error()];
            ++report.rejected_by_region[region];
          }
        } else {
          const std::string problem = run_and_compare(*program);
          if (!problem.empty()) {
            report.failures.push_back(what + layout.where(offset) + "): " + problem);
          } else {
            ++report.harmless;
            ++report.harmless_by_region[region];
          }
        }
      }
      bytes[offset] ^= mask;
      g_flipping = 0;
    }
    if (options.verbose && report.failures.size() > failures_shown) {
      for (; failures_shown < report.failures.size(); ++failures_shown) {
        std::printf("[byte flips] FAIL %s\n", report.failures[failures_shown].c_str());
      }
      std::fflush(stdout);
    }
  }

  // Every uncovered byte flipped at once.
  report.all_padding = "no padding bytes";
  if (!gaps.empty()) {
    for (const auto& g : gaps) {
      for (uint64_t o = g.begin; o < g.end; ++o) bytes[o] ^= 0xFF;
    }
    {
      BufferDataLoader loader(bytes, file.size());
      auto program = Program::load(&loader);
      if (!program.ok()) {
        report.all_padding =
            std::string("rejected by Program::load with ") + to_string(program.error());
      } else {
        const std::string problem = run_and_compare(*program);
        if (!problem.empty()) {
          report.failures.push_back("every padding byte flipped at once: " + problem);
          report.all_padding = "FAILS";
        } else {
          report.all_padding = "loads, runs, identical outputs";
        }
      }
    }
    for (const auto& g : gaps) {
      for (uint64_t o = g.begin; o < g.end; ++o) bytes[o] ^= 0xFF;
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

void print_byte_flip_report(const std::string& name, const ByteFlipReport& r) {
  std::printf(
      "[byte flips] %s: %zu bytes (%zu in segments), %zu bytes flipped (xor 0xFF and 0x01): "
      "%zu flips, %zu rejected by Program::load (Full), %zu harmless (loaded, ran, identical "
      "outputs; %zu runs), %zu failures; %.1f s\n",
      name.c_str(), r.file_bytes, r.segment_bytes, r.bytes_flipped, r.flips, r.rejected, r.harmless,
      r.runs, r.failures.size(), r.seconds);
  for (const auto& [error, n] : r.rejected_by_error) {
    std::printf("[byte flips]   rejected with %s: %zu\n", to_string(error), n);
  }
  for (const auto& [region, n] : r.rejected_by_region) {
    std::printf("[byte flips]   rejected in %s: %zu\n", region.c_str(), n);
  }
  for (const auto& [region, n] : r.harmless_by_region) {
    std::printf("[byte flips]   harmless in %s: %zu\n", region.c_str(), n);
  }
  std::printf("[byte flips]   every padding byte flipped at once: %s\n", r.all_padding.c_str());
  for (size_t i = 0; i < r.failures.size() && i < 50; ++i) {
    std::printf("[byte flips]   FAIL %s\n", r.failures[i].c_str());
  }
  if (r.failures.size() > 50) {
    std::printf("[byte flips]   ... and %zu more failures\n", r.failures.size() - 50);
  }
}

}  // namespace tern::model_hardening
