#include "runtime/core/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace tern {
namespace {
std::atomic<uint8_t> g_level{static_cast<uint8_t>(LogLevel::Info)};
}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<uint8_t>(level)); }

LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }

void log_message(LogLevel level, const char* file, int line, const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  log_sink()(level, file, line, buf);
}

}  // namespace tern
