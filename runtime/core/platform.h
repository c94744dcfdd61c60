// The platform layer: log sink, abort and monotonic clock. Replace the definitions in
// platform.cpp (or call set_log_sink) to port tern to a new target.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern {

enum class LogLevel : uint8_t { Debug = 0, Info = 1, Warning = 2, Error = 3 };

/// Receives one formatted log line (no trailing newline). Must not allocate when called from
/// execute(); the default sink writes to stderr.
using LogSink = void (*)(LogLevel level, const char* file, int line, const char* message);

/// Installs a log sink; null restores the default. Not thread-safe with concurrent logging.
void set_log_sink(LogSink sink);

/// The active log sink (never null).
LogSink log_sink();

/// Aborts the process after a bug in tern itself. Never returns.
[[noreturn]] void platform_abort(const char* file, int line, const char* message);

/// Monotonic time in nanoseconds since an unspecified origin.
uint64_t monotonic_ns();

}  // namespace tern

/// Checks an invariant of tern itself (never input validation); compiled out with NDEBUG.
#ifdef NDEBUG
#define TERN_DCHECK(cond) ((void)0)
#else
#define TERN_DCHECK(cond) \
  ((cond) ? (void)0 : ::tern::platform_abort(__FILE__, __LINE__, "check failed: " #cond))
#endif

/// Checks an invariant of tern itself in every build.
#define TERN_CHECK(cond) \
  ((cond) ? (void)0 : ::tern::platform_abort(__FILE__, __LINE__, "check failed: " #cond))
