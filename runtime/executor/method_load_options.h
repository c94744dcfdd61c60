// What a caller chooses when loading a method, and which way each delegate call then runs.
#pragma once

#include <cstdint>

#include "runtime/backend/backend_option.h"
#include "runtime/core/span.h"

namespace tern {

struct MethodLoadOptions {
  /// Backend names the method must not use; their delegates run their portable fallback.
  /// The strings and the array must live until load_method returns.
  Span<const char* const> disabled_backends;
  /// Worker threads for backends (0: backend default).
  uint32_t num_threads = 0;
  /// Options for backends, e.g. {"vulkan", "device", "1"} (backends/vulkan/README.md); each
  /// backend's delegates see them at init. The strings and the array must live until
  /// load_method returns.
  Span<const BackendOption> backend_options;
};

/// Which way a delegate call of a loaded method runs.
enum class DelegatePath : uint8_t { Backend = 0, Fallback = 1 };

}  // namespace tern
