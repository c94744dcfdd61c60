#include "runtime/core/platform.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace tern {
namespace {

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Debug: return "D";
    case LogLevel::Info: return "I";
    case LogLevel::Warning: return "W";
    case LogLevel::Error: return "E";
  }
  return "?";
}

void default_sink(LogLevel level, const char* file, int line, const char* message) {
  // Base name only: full build paths make lines long and leak the build machine's layout.
  const char* base = file;
  for (const char* p = file; p && *p; ++p) {
    if (*p == '/') base = p + 1;
  }
  fprintf(stderr, "[tern %s %s:%d] %s\n", level_name(level), base ? base : "?", line, message);
}

LogSink g_sink = default_sink;

}  // namespace

void set_log_sink(LogSink sink) { g_sink = sink ? sink : default_sink; }

LogSink log_sink() { return g_sink; }

void platform_abort(const char* file, int line, const char* message) {
  fprintf(stderr, "tern: internal error at %s:%d: %s\n", file, line, message);
  abort();
}

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace tern
