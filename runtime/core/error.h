// Error codes of the tern runtime, grouped in ranges, and the thread's last error message.
#pragma once

#include <cstdint>

namespace tern {

/// Every fallible runtime call returns an Error (or a Result<T> holding one).
/// Ranges: 0x00 ok/system, 0x10 logical, 0x20 resource, 0x30 program, 0x40 delegate.
enum class Error : uint32_t {
  Ok = 0x00,
  Internal = 0x01,          ///< A bug in tern itself.
  NotSupported = 0x02,      ///< A valid request this build cannot serve.
  InvalidArgument = 0x10,   ///< A caller passed a bad value (wrong shape, dtype, index, null).
  InvalidState = 0x11,      ///< A call made at the wrong time (output read before execute).
  NotFound = 0x12,          ///< A name that does not exist (method, operator, backend).
  MemoryAllocationFailed = 0x20,  ///< An allocator or arena is too small.
  AccessFailed = 0x21,      ///< A file or device could not be read.
  InvalidProgram = 0x30,    ///< The program file is malformed or inconsistent.
  ChecksumMismatch = 0x31,  ///< A header or segment checksum does not match its bytes.
  VersionMismatch = 0x32,   ///< The file's format version is newer than this runtime.
  NotATernProgram = 0x33,   ///< The file is not a tern program (e.g. an ExecuTorch .pte).
  DelegateInvalidCompatibility = 0x40,  ///< A delegate blob this backend cannot run.
  DelegateMemoryAllocationFailed = 0x41,
  DelegateInvalidHandle = 0x42,
  DelegateExecutionFailed = 0x43,
  BackendUnavailable = 0x44,  ///< The backend is not registered, not available or disabled.
};

/// Short name of an error code, e.g. "InvalidProgram". Never null.
const char* to_string(Error error);

/// The message of the last error raised on this thread with TERN_CHECK_OR_RETURN_ERROR or
/// set_error_message(): what was expected, what was found, and where. Valid until the next
/// error on this thread. Never null (empty when no message was set).
const char* last_error_message();

/// Records a printf-style message as this thread's last error message and returns `error`.
/// Truncates at 1023 bytes. Never allocates.
Error set_error_message(Error error, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/// set_error_message for an error in a method: records "method '<method>'" followed by the
/// formatted rest (": ..." or " value 3: ..."), the same text as set_error_message with
/// "method '%s'" in front of `format`, with one copy of that prefix in the binary instead of one
/// per message (docs/size.md).
Error set_method_error_message(Error error, const char* method, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/// Wraps the error a callee just raised: records "<formatted message>: <the previous last
/// message>" ("(no message)" when there was none) and returns `error`. The one way tern chains
/// an error's cause into the message of the layer above. Never allocates.
Error chain_error_message(Error error, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/// Clears this thread's last error message.
void clear_error_message();

}  // namespace tern

#if defined(TERN_ERROR_MESSAGES) && !TERN_ERROR_MESSAGES
// TERN_ERROR_MESSAGES=OFF (a TERN_MINIMAL core only; docs/size.md): every check runs and
// returns the same Error as with messages, but the message text and its arguments are not
// compiled in. The message names the error and the check's source line instead,
// "InvalidProgram at runtime/executor/method_checker.cpp:212"; `tern inspect` on a host build
// reports the same file's fault in words.
namespace tern {
/// Records "<error> at <file>:<line>" and returns `error`.
Error set_error_site(Error error, const char* file, int line);
/// Records "<error> at <file>:<line>: <the previous last message>" and returns `error`.
Error chain_error_site(Error error, const char* file, int line);
/// Never defined: named in an unevaluated sizeof, it keeps the message's arguments "used"
/// (no unused-variable warnings) without computing them.
template <typename... Args>
int error_message_arguments(Args&&...);
}  // namespace tern
#define set_error_message(error, ...) \
  set_error_site((static_cast<void>(sizeof(::tern::error_message_arguments(__VA_ARGS__))), error), \
                 __FILE__, __LINE__)
#define set_method_error_message(error, ...) set_error_message(error, __VA_ARGS__)
#define chain_error_message(error, ...) \
  chain_error_site((static_cast<void>(sizeof(::tern::error_message_arguments(__VA_ARGS__))), error), \
                   __FILE__, __LINE__)
#endif

/// Returns `error` from the enclosing function with a formatted message when `cond` is false.
#define TERN_CHECK_OR_RETURN_ERROR(cond, error, ...)                    \
  do {                                                                  \
    if (!(cond)) {                                                      \
      return ::tern::set_error_message(::tern::Error::error, __VA_ARGS__); \
    }                                                                   \
  } while (0)

/// TERN_CHECK_OR_RETURN_ERROR for a message about method `method` (set_method_error_message):
/// the format continues after "method '<method>'".
#define TERN_CHECK_METHOD_OR_RETURN_ERROR(cond, error, method, ...)                       \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      return ::tern::set_method_error_message(::tern::Error::error, method, __VA_ARGS__); \
    }                                                                                     \
  } while (0)

/// TERN_RETURN_ERROR for a message about method `method` (set_method_error_message).
#define TERN_RETURN_METHOD_ERROR(error, method, ...) \
  return ::tern::set_method_error_message(::tern::Error::error, method, __VA_ARGS__)

/// Returns `error` with a formatted message, unconditionally.
#define TERN_RETURN_ERROR(error, ...) \
  return ::tern::set_error_message(::tern::Error::error, __VA_ARGS__)

/// Returns `error` with a formatted message followed by the cause already recorded
/// (chain_error_message), unconditionally.
#define TERN_RETURN_CHAINED_ERROR(error, ...) \
  return ::tern::chain_error_message(::tern::Error::error, __VA_ARGS__)

/// Evaluates an expression yielding Error and returns it from the enclosing function if not Ok.
#define TERN_RETURN_IF_ERROR(expr)              \
  do {                                          \
    const ::tern::Error tern_err__ = (expr);    \
    if (tern_err__ != ::tern::Error::Ok) {      \
      return tern_err__;                        \
    }                                           \
  } while (0)
