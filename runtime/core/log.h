// Levelled logging with a compile-time strip switch.
//
// TERN_LOG(Info, "loaded %s", name). Lines below TERN_MIN_LOG_LEVEL (0 Debug .. 3 Error,
// 4 = strip everything) are removed at compile time; lines below the runtime level set with
// set_log_level() are skipped at run time. Formatting uses a stack buffer: never allocates.
#pragma once

#include "runtime/core/platform.h"

#ifndef TERN_MIN_LOG_LEVEL
#define TERN_MIN_LOG_LEVEL 0
#endif

namespace tern {

/// Whether lines of `level` survive the compile-time switch.
constexpr bool log_compiled_in(LogLevel level) {
  const int min_level = TERN_MIN_LOG_LEVEL;
  return static_cast<int>(level) >= min_level;
}

/// Lines below `level` are not emitted. Default: Info.
void set_log_level(LogLevel level);
LogLevel log_level();

/// Formats and emits one line through the platform log sink.
void log_message(LogLevel level, const char* file, int line, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

}  // namespace tern

#define TERN_LOG(level, ...)                                                          \
  do {                                                                                \
    if (::tern::log_compiled_in(::tern::LogLevel::level) &&                           \
        static_cast<int>(::tern::LogLevel::level) >=                                  \
            static_cast<int>(::tern::log_level())) {                                  \
      ::tern::log_message(::tern::LogLevel::level, __FILE__, __LINE__, __VA_ARGS__);  \
    }                                                                                 \
  } while (0)
