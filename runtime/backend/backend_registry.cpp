// The backend registry: a fixed-capacity, zero-initialized table filled by explicit calls.
#include <cstring>

#include "runtime/backend/backend.h"

namespace tern {
namespace {

// Zero-initialized (no static constructor runs: Backend's members are constant-initialized).
Backend g_backends[kMaxBackends];
size_t g_num_backends = 0;

}  // namespace

Error register_backend(const Backend& backend) {
  TERN_CHECK_OR_RETURN_ERROR(backend.name != nullptr && backend.name[0] != '\0', InvalidArgument,
                             "register_backend: backend name is null or empty");
  TERN_CHECK_OR_RETURN_ERROR(backend.backend != nullptr, InvalidArgument,
                             "register_backend: backend '%s' has a null interface", backend.name);
  TERN_CHECK_OR_RETURN_ERROR(backend.interface_version == kBackendInterfaceVersion, InvalidArgument,
                             "register_backend: backend '%s' was built against interface "
                             "version %u, this runtime has version %u",
                             backend.name, backend.interface_version, kBackendInterfaceVersion);
  TERN_CHECK_OR_RETURN_ERROR(g_num_backends < kMaxBackends, MemoryAllocationFailed,
                             "register_backend: cannot register '%s': the registry is full "
                             "(kMaxBackends = %zu)",
                             backend.name, kMaxBackends);
  for (size_t i = 0; i < g_num_backends; ++i) {
    if (std::strcmp(g_backends[i].name, backend.name) == 0) {
      g_backends[i] = backend;  // the registration rule: the last one wins, in place
      return Error::Ok;
    }
  }
  g_backends[g_num_backends++] = backend;
  return Error::Ok;
}

const Backend* find_backend(const char* name) {
  if (name == nullptr) return nullptr;
  for (size_t i = 0; i < g_num_backends; ++i) {
    if (std::strcmp(g_backends[i].name, name) == 0) {
      return &g_backends[i];
    }
  }
  return nullptr;
}

size_t num_registered_backends() { return g_num_backends; }

const Backend& registered_backend(size_t i) {
  TERN_DCHECK(i < g_num_backends);
  return g_backends[i];
}

void clear_backend_registry_for_testing() {
  for (size_t i = 0; i < g_num_backends; ++i) {
    g_backends[i] = Backend();
  }
  g_num_backends = 0;
}

}  // namespace tern
