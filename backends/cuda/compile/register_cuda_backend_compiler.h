// Registration of the cuda backend's compile half with the compiler's backend registry.
#pragma once

namespace tern::compiler {

/// Registers a CudaBackendCompiler under "cuda" (register_backend_compiler: a second call
/// replaces the first). Not thread-safe: call at startup.
void register_cuda_backend_compiler();

}  // namespace tern::compiler
