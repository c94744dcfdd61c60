// Registration of every runtime backend this build has (generated at configure time).
#pragma once

#include "runtime/core/error.h"

namespace tern {

/// Registers the runtime half of every backend this build compiled (the names in the CMake
/// global property TERN_BACKENDS, each through its register_<name>_backend() from
/// backends/<name>/runtime/register_<name>_backend.h), in the order the backends were
/// configured. A backend already registered under its name is skipped, so calling this twice
/// is harmless. Returns Ok when there are none; otherwise the first registration error (with
/// last_error_message() naming the backend). Not thread-safe: call at startup. Defined in a
/// file CMake generates (tern::all_backends).
Error register_all_backends();

}  // namespace tern
