// Registration of every backend compiler this build has (generated at configure time).
#pragma once

namespace tern::compiler {

/// Registers the compile half of every backend this build compiled (the names in the CMake
/// global property TERN_BACKEND_COMPILERS, each through its
/// register_<name>_backend_compiler() from
/// backends/<name>/compile/register_<name>_backend_compiler.h), in the order the backends
/// were configured. Does nothing when there are none. Calling it again re-registers (a
/// registration replaces an earlier one of the same name). The tools call it at startup.
/// Defined in a file CMake generates (tern::backend_compilers).
void register_all_backend_compilers();

}  // namespace tern::compiler
