// Registration of the cpu backend's compile half with the compiler's backend registry.
#pragma once

namespace tern::compiler {

/// Registers a CpuBackendCompiler under "cpu" (register_backend_compiler: a second call
/// replaces the first). Not thread-safe: call at startup.
void register_cpu_backend_compiler();

}  // namespace tern::compiler
