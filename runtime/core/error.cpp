#include "runtime/core/error.h"

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "runtime/core/log.h"

namespace tern {
namespace {
constexpr size_t kMessageCapacity = 1024;
thread_local char g_last_message[kMessageCapacity] = {0};
}  // namespace

const char* to_string(Error error) {
  switch (error) {
    case Error::Ok: return "Ok";
    case Error::Internal: return "Internal";
    case Error::NotSupported: return "NotSupported";
    case Error::InvalidArgument: return "InvalidArgument";
    case Error::InvalidState: return "InvalidState";
    case Error::NotFound: return "NotFound";
    case Error::MemoryAllocationFailed: return "MemoryAllocationFailed";
    case Error::AccessFailed: return "AccessFailed";
    case Error::InvalidProgram: return "InvalidProgram";
    case Error::ChecksumMismatch: return "ChecksumMismatch";
    case Error::VersionMismatch: return "VersionMismatch";
    case Error::NotATernProgram: return "NotATernProgram";
    case Error::DelegateInvalidCompatibility: return "DelegateInvalidCompatibility";
    case Error::DelegateMemoryAllocationFailed: return "DelegateMemoryAllocationFailed";
    case Error::DelegateInvalidHandle: return "DelegateInvalidHandle";
    case Error::DelegateExecutionFailed: return "DelegateExecutionFailed";
    case Error::BackendUnavailable: return "BackendUnavailable";
  }
  return "UnknownError";
}

const char* last_error_message() { return g_last_message; }

namespace {
/// Copies this thread's message (or "(no message)") into `cause`, before a chained message is
/// written over it.
void save_cause(char (&cause)[kMessageCapacity]) {
  const char* previous = g_last_message[0] != '\0' ? g_last_message : "(no message)";
  const size_t cause_length = strnlen(previous, kMessageCapacity - 1);
  memcpy(cause, previous, cause_length);
  cause[cause_length] = '\0';
}

/// Appends ": <cause>" after the `written` bytes (snprintf's count) of the new message,
/// truncated to what is left of the buffer.
void append_cause(int written, const char* cause) {
  size_t at = written < 0 ? 0 : static_cast<size_t>(written);
  if (at >= kMessageCapacity) at = kMessageCapacity - 1;  // already truncated
  const char* parts[2] = {": ", cause};
  for (const char* part : parts) {
    for (; *part != '\0' && at + 1 < kMessageCapacity; ++part) g_last_message[at++] = *part;
  }
  if (at < kMessageCapacity) g_last_message[at] = '\0';
}
}  // namespace

#if defined(TERN_ERROR_MESSAGES) && !TERN_ERROR_MESSAGES
Error set_error_site(Error error, const char* file, int line) {
  snprintf(g_last_message, kMessageCapacity, "%s at %s:%d", to_string(error), file, line);
  return error;
}

Error chain_error_site(Error error, const char* file, int line) {
  char cause[kMessageCapacity];
  save_cause(cause);
  append_cause(snprintf(g_last_message, kMessageCapacity, "%s at %s:%d", to_string(error), file, line),
               cause);
  return error;
}
#else
namespace {
/// Formats the message from byte `at` of the buffer on (what is before it stays) and logs it.
Error record_message(Error error, size_t at, const char* format, va_list args) {
  vsnprintf(g_last_message + at, kMessageCapacity - at, format, args);
  TERN_LOG(Debug, "%s: %s", to_string(error), g_last_message);
  return error;
}
}  // namespace

Error set_error_message(Error error, const char* format, ...) {
  va_list args;
  va_start(args, format);
  record_message(error, 0, format, args);
  va_end(args);
  return error;
}

Error set_method_error_message(Error error, const char* method, const char* format, ...) {
  const int written = snprintf(g_last_message, kMessageCapacity, "method '%s'", method);
  size_t at = written < 0 ? 0 : static_cast<size_t>(written);
  if (at >= kMessageCapacity) at = kMessageCapacity - 1;  // already truncated
  va_list args;
  va_start(args, format);
  record_message(error, at, format, args);
  va_end(args);
  return error;
}

Error chain_error_message(Error error, const char* format, ...) {
  char cause[kMessageCapacity];
  save_cause(cause);
  va_list args;
  va_start(args, format);
  const int written = vsnprintf(g_last_message, kMessageCapacity, format, args);
  va_end(args);
  append_cause(written, cause);
  TERN_LOG(Debug, "%s: %s", to_string(error), g_last_message);
  return error;
}
#endif

void clear_error_message() { g_last_message[0] = '\0'; }

}  // namespace tern
