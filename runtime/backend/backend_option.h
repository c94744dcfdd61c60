// A load-time option a caller gives one backend (MethodLoadOptions::backend_options), e.g.
// {"vulkan", "device", "1"} to run the vulkan delegates on device 1.
#pragma once

#include <cstring>
#include <initializer_list>

#include "runtime/core/error.h"
#include "runtime/core/span.h"

namespace tern {

struct BackendOption {
  const char* backend;  ///< the backend's registered name
  const char* key;
  const char* value;
};

/// The value of the last option for (`backend`, `key`) among `options`, or null.
inline const char* find_backend_option(Span<const BackendOption> options, const char* backend,
                                       const char* key) {
  const char* value = nullptr;
  for (const BackendOption& o : options) {
    if (o.backend != nullptr && o.key != nullptr && std::strcmp(o.backend, backend) == 0 &&
        std::strcmp(o.key, key) == 0) {
      value = o.value;
    }
  }
  return value;
}

/// Ok, or InvalidArgument ("<backend> backend: unknown load option '<key>' (the <backend>
/// backend takes <takes>)") for the first option of `backend` whose key is not one of `known`:
/// each backend's init calls it first, so a misspelt key is a load error, never ignored.
inline Error check_backend_option_keys(Span<const BackendOption> options, const char* backend,
                                       std::initializer_list<const char*> known,
                                       const char* takes) {
  for (const BackendOption& o : options) {
    if (o.backend == nullptr || std::strcmp(o.backend, backend) != 0) continue;
    bool found = false;
    for (const char* k : known) found = found || (o.key != nullptr && std::strcmp(o.key, k) == 0);
    if (!found) {
      return set_error_message(Error::InvalidArgument,
                               "%s backend: unknown load option '%s' (the %s backend takes %s)",
                               backend, o.key != nullptr ? o.key : "(null)", backend, takes);
    }
  }
  return Error::Ok;
}

}  // namespace tern
