#include "backends/cpu/compile/register_cpu_backend_compiler.h"

#include <memory>

#include "backends/cpu/compile/cpu_backend_compiler.h"

namespace tern::compiler {

void register_cpu_backend_compiler() {
  register_backend_compiler(std::make_unique<CpuBackendCompiler>());
}

}  // namespace tern::compiler
