// The C API's statuses and messages: tern::Error -> tern_status, status and dtype names, the
// thread's and a method's last error message, the version, and the one-time registration.
#include <cstdio>
#include <cstring>

#include "c_handles.h"
#include "runtime/backend/register_all_backends.h"
#include "runtime/core/dtype.h"
#include "runtime/kernels/portable/register_portable_kernels.h"

#ifndef TERN_VERSION_STRING
#error "TERN_VERSION_STRING is defined by runtime/c/CMakeLists.txt"
#endif

namespace tern {
namespace c_api {
namespace {

// The runtime's codes and the C statuses share their numbers.
#define TERN_C_SAME(error, status) \
  static_assert(static_cast<uint32_t>(Error::error) == static_cast<uint32_t>(status), #error)
TERN_C_SAME(Ok, TERN_STATUS_OK);
TERN_C_SAME(Internal, TERN_STATUS_INTERNAL);
TERN_C_SAME(NotSupported, TERN_STATUS_NOT_SUPPORTED);
TERN_C_SAME(InvalidArgument, TERN_STATUS_INVALID_ARGUMENT);
TERN_C_SAME(InvalidState, TERN_STATUS_INVALID_STATE);
TERN_C_SAME(NotFound, TERN_STATUS_NOT_FOUND);
TERN_C_SAME(MemoryAllocationFailed, TERN_STATUS_MEMORY_ALLOCATION_FAILED);
TERN_C_SAME(AccessFailed, TERN_STATUS_ACCESS_FAILED);
TERN_C_SAME(InvalidProgram, TERN_STATUS_INVALID_PROGRAM);
TERN_C_SAME(ChecksumMismatch, TERN_STATUS_CHECKSUM_MISMATCH);
TERN_C_SAME(VersionMismatch, TERN_STATUS_VERSION_MISMATCH);
TERN_C_SAME(NotATernProgram, TERN_STATUS_NOT_A_TERN_PROGRAM);
TERN_C_SAME(DelegateInvalidCompatibility, TERN_STATUS_DELEGATE_INVALID_COMPATIBILITY);
TERN_C_SAME(DelegateMemoryAllocationFailed, TERN_STATUS_DELEGATE_MEMORY_ALLOCATION_FAILED);
TERN_C_SAME(DelegateInvalidHandle, TERN_STATUS_DELEGATE_INVALID_HANDLE);
TERN_C_SAME(DelegateExecutionFailed, TERN_STATUS_DELEGATE_EXECUTION_FAILED);
TERN_C_SAME(BackendUnavailable, TERN_STATUS_BACKEND_UNAVAILABLE);
#undef TERN_C_SAME

// The same numbers in tern_dtype and tern::DType.
static_assert(static_cast<int>(DType::F32) == TERN_DTYPE_F32 &&
                  static_cast<int>(DType::BF16) == TERN_DTYPE_BF16 &&
                  static_cast<int>(DType::Bool) == TERN_DTYPE_BOOL &&
                  static_cast<int>(DType::NF4) == TERN_DTYPE_NF4 &&
                  static_cast<int>(DType::FP8E5M2) == TERN_DTYPE_FP8_E5M2 &&
                  kNumDTypes == TERN_DTYPE_FP8_E5M2 + 1,
              "tern_dtype mirrors tern::DType");

void copy_message(const tern_method* method, const char* message) {
  if (method == nullptr) return;
  std::snprintf(method->last_error, sizeof(method->last_error), "%s", message);
}

Error register_everything() {
  // The runtime's messages are thread-local: keep the first failure's for later threads.
  Error e = register_portable_kernels();
  if (e == Error::Ok) e = register_all_backends();
  return e;
}

}  // namespace

tern_status to_status(Error error) {
  switch (error) {
    case Error::Ok:
    case Error::Internal:
    case Error::NotSupported:
    case Error::InvalidArgument:
    case Error::InvalidState:
    case Error::NotFound:
    case Error::MemoryAllocationFailed:
    case Error::AccessFailed:
    case Error::InvalidProgram:
    case Error::ChecksumMismatch:
    case Error::VersionMismatch:
    case Error::NotATernProgram:
    case Error::DelegateInvalidCompatibility:
    case Error::DelegateMemoryAllocationFailed:
    case Error::DelegateInvalidHandle:
    case Error::DelegateExecutionFailed:
    case Error::BackendUnavailable:
      return static_cast<tern_status>(error);
  }
  return TERN_STATUS_INTERNAL;
}

tern_status fail(const tern_method* method, tern_status status, const char* format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  // The runtime's thread-local slot is the thread's last error for the C API too.
  (void)set_error_message(Error::InvalidArgument, "%s", message);
  copy_message(method, message);
  return status;
}

tern_status from_runtime(const tern_method* method, Error error) {
  if (error != Error::Ok) copy_message(method, last_error_message());
  return to_status(error);
}

tern_status ensure_registered() {
  static char first_message[1024] = {0};
  static const Error result = [] {
    const Error e = register_everything();
    if (e != Error::Ok)
      std::snprintf(first_message, sizeof(first_message), "%s", last_error_message());
    return e;
  }();
  if (result == Error::Ok) return TERN_STATUS_OK;
  return fail(nullptr, to_status(result),
              "tern: registering the portable kernels and backends failed: %s", first_message);
}

tern_status find_method_meta(const tern_program* program, const char* name, MethodMeta* out) {
  TERN_C_CHECK(program != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT, "program is NULL");
  TERN_C_CHECK(name != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT, "method name is NULL");
  Result<MethodMeta> meta = program->program->method_meta(name);
  if (!meta.ok()) return to_status(meta.error());
  *out = meta.get();
  return TERN_STATUS_OK;
}

}  // namespace c_api
}  // namespace tern

extern "C" {

const char* tern_status_name(tern_status status) {
  switch (tern::c_api::enum_field(status)) {  // an int: the caller may pass any value
    case TERN_STATUS_OK:
      return "TERN_STATUS_OK";
    case TERN_STATUS_INTERNAL:
      return "TERN_STATUS_INTERNAL";
    case TERN_STATUS_NOT_SUPPORTED:
      return "TERN_STATUS_NOT_SUPPORTED";
    case TERN_STATUS_INVALID_ARGUMENT:
      return "TERN_STATUS_INVALID_ARGUMENT";
    case TERN_STATUS_INVALID_STATE:
      return "TERN_STATUS_INVALID_STATE";
    case TERN_STATUS_NOT_FOUND:
      return "TERN_STATUS_NOT_FOUND";
    case TERN_STATUS_MEMORY_ALLOCATION_FAILED:
      return "TERN_STATUS_MEMORY_ALLOCATION_FAILED";
    case TERN_STATUS_ACCESS_FAILED:
      return "TERN_STATUS_ACCESS_FAILED";
    case TERN_STATUS_INVALID_PROGRAM:
      return "TERN_STATUS_INVALID_PROGRAM";
    case TERN_STATUS_CHECKSUM_MISMATCH:
      return "TERN_STATUS_CHECKSUM_MISMATCH";
    case TERN_STATUS_VERSION_MISMATCH:
      return "TERN_STATUS_VERSION_MISMATCH";
    case TERN_STATUS_NOT_A_TERN_PROGRAM:
      return "TERN_STATUS_NOT_A_TERN_PROGRAM";
    case TERN_STATUS_DELEGATE_INVALID_COMPATIBILITY:
      return "TERN_STATUS_DELEGATE_INVALID_COMPATIBILITY";
    case TERN_STATUS_DELEGATE_MEMORY_ALLOCATION_FAILED:
      return "TERN_STATUS_DELEGATE_MEMORY_ALLOCATION_FAILED";
    case TERN_STATUS_DELEGATE_INVALID_HANDLE:
      return "TERN_STATUS_DELEGATE_INVALID_HANDLE";
    case TERN_STATUS_DELEGATE_EXECUTION_FAILED:
      return "TERN_STATUS_DELEGATE_EXECUTION_FAILED";
    case TERN_STATUS_BACKEND_UNAVAILABLE:
      return "TERN_STATUS_BACKEND_UNAVAILABLE";
    case TERN_STATUS_NULL_ARGUMENT:
      return "TERN_STATUS_NULL_ARGUMENT";
    case TERN_STATUS_INDEX_OUT_OF_RANGE:
      return "TERN_STATUS_INDEX_OUT_OF_RANGE";
    case TERN_STATUS_SIZE_MISMATCH:
      return "TERN_STATUS_SIZE_MISMATCH";
    case TERN_STATUS_TYPE_MISMATCH:
      return "TERN_STATUS_TYPE_MISMATCH";
  }
  return "TERN_STATUS_UNKNOWN";
}

const char* tern_last_error_message(void) { return tern::last_error_message(); }

const char* tern_version(void) { return TERN_VERSION_STRING; }

const char* tern_dtype_name(tern_dtype dtype) {
  const int raw = tern::c_api::enum_field(dtype);
  if (raw < 0 || raw >= tern::kNumDTypes) return "invalid";
  return tern::to_string(static_cast<tern::DType>(raw));
}

const char* tern_method_last_error(const tern_method* method) {
  return method != nullptr ? method->last_error : "tern_method_last_error: method is NULL";
}

}  // extern "C"
