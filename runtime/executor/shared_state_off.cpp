// Program shared state left out of the runtime (TERN_SHARED_STATE=OFF, minimal cores only,
// docs/size.md): the verifier refuses any program that declares it — naming the first entry
// and the build option — so that nothing else here is reached. Replaces shared_state.cpp.
#include "runtime/executor/program.h"
#include "runtime/executor/shared_state.h"
#include "schema/program_generated.h"

namespace tern {
namespace internal {

Error verify_shared_state(const fb::Program* program, uint32_t) {
  const auto* shared = program->shared_state();
  TERN_CHECK_OR_RETURN_ERROR(shared == nullptr || shared->size() == 0, NotSupported,
                             "the program declares %u shared state tensors (format 1.2); this "
                             "runtime was built with TERN_SHARED_STATE=OFF",
                             shared == nullptr ? 0 : shared->size());
  return Error::Ok;
}

// Unreachable: verify_shared_state refused any program declaring shared state, and the first
// SharedState view check below refuses the rest; one message serves them all.
Error check_shared_state_view(const fb::Program*, const char* method, uint32_t index,
                              const fb::Tensor*, bool) {
  TERN_RETURN_METHOD_ERROR(NotSupported, method,
                           " value %u is shared state; this runtime was built with "
                           "TERN_SHARED_STATE=OFF",
                           index);
}

Error check_shared_state_listed(const fb::Method*, const char*, const uint8_t*) {
  return Error::Ok;
}

Error check_shared_state_init(const char*, uint32_t, uint32_t, int32_t) { return Error::Ok; }

Result<uint8_t*> bind_shared_state(const fb::Program*, Span<uint8_t>, const char*, uint32_t,
                                   uint32_t) {
  return Error::NotSupported;
}

}  // namespace internal

size_t Program::shared_state_bytes() const { return 0; }

Error Program::init_shared_state(Span<uint8_t>) const { return Error::Ok; }

}  // namespace tern
