// The backend (delegate) interface and its explicit, fixed-capacity registry.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/backend/backend_option.h"
#include "runtime/core/evalue.h"
#include "runtime/core/data_loader.h"
#include "runtime/core/freeable_buffer.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace tern {

/// Version of this interface; a backend built against another version is refused at
/// registration.
constexpr uint32_t kBackendInterfaceVersion = 2;  // 2: device_memory_bytes()
constexpr size_t kMaxBackends = 16;

/// One compile spec of a delegate, pointing into the program (valid while the Program lives).
struct CompileSpecView {
  const char* key;
  Span<const uint8_t> value;
};

/// A backend's per-delegate state, defined by the backend.
struct DelegateHandle;

struct BackendInitContext {
  /// The method allocator, for small per-delegate host state (may be used instead of the
  /// heap). Backends may also use the heap and device memory at init.
  MemoryAllocator* method_allocator = nullptr;
  const char* method_name = nullptr;
  /// Number of worker threads the caller asked for (0: backend default).
  uint32_t num_threads = 0;
  /// Every backend option the caller gave (MethodLoadOptions::backend_options), for any
  /// backend: a backend reads its own (find_backend_option) and refuses, as InvalidArgument
  /// naming the keys it knows, a key of its own it does not know. Valid during init only.
  Span<const BackendOption> options;
  /// Null, or a hint a backend may give once it has copied a program constant it receives as
  /// a delegate call argument and will not read it again (weights packed at prepare): the
  /// `size` bytes at `data` need not stay in this process's memory (an mmapped program drops
  /// the pages; they stay readable and are read back from the file if touched). Call it with
  /// `release_cookie`, only on a constant's own bytes, at prepare or later. Advice only: it is
  /// best used on constants no portable kernel of the method reads (they would fault back).
  void (*release_constant)(void* cookie, const void* data, size_t size) = nullptr;
  void* release_cookie = nullptr;
};

/// Where a backend reports the parts of one execute() call it timed (its stages, its edge
/// copies), for profilers: report(sink, label, begin_ns, end_ns) with monotonic_ns() times
/// inside the call and a label that stays valid while the delegate lives. Must not allocate.
using DelegatePartReporter = void (*)(void* sink, const char* label, uint64_t begin_ns,
                                      uint64_t end_ns);

struct BackendExecuteContext {
  /// Scratch memory for this call, or null.
  MemoryAllocator* temp_allocator = nullptr;
  /// Null unless a profiler listens (ExecutionObserver): then a backend may time its parts
  /// and report them; it should not read the clock otherwise.
  DelegatePartReporter report_part = nullptr;
  void* part_sink = nullptr;
};

/// What every backend implements. execute() must not allocate on the heap.
class BackendInterface {
 public:
  virtual ~BackendInterface() = default;
  /// Whether the backend can run here (device present, driver loaded). Cheap; called at load.
  virtual bool is_available() const = 0;
  /// Why is_available() is false (no driver, no device, ...), for the one log line the
  /// executor writes when a delegate takes its portable fallback; "" when it has no more to
  /// say. Static storage.
  virtual const char* unavailable_reason() const { return ""; }
  /// Builds a delegate from its blob. The backend owns `blob` from here on: its bytes are
  /// aligned to kLoaderAlignment (64; the loader's promise, data_loader.h) and stay readable
  /// while the backend holds the buffer. A backend that reads them in place keeps the buffer in
  /// its handle until destroy(); one that copies what it needs (weights uploaded to a device)
  /// frees it, which releases the host pages of an mmapped program. `specs` point into the
  /// Program and stay valid while it lives. DelegateInvalidCompatibility makes the runtime take
  /// the portable fallback; any other error fails the method load.
  virtual Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer blob,
                                       Span<const CompileSpecView> specs) const = 0;
  /// Called once per delegate call at the end of method load, with the call's values bound
  /// to their final memory (inputs, then outputs; the same EValues execute() receives). A
  /// backend binds its plan to these addresses here (it may allocate), so that execute()
  /// does not have to. An error fails the method load. Default: nothing to do.
  virtual Error prepare(DelegateHandle* handle, Span<EValue*> args) const {
    (void)handle;
    (void)args;
    return Error::Ok;
  }
  /// Whether delegate `handle` takes bounded-dynamic tensors (docs/dynamic-shapes.md). When
  /// it does, its arguments' views carry each execution's actual sizes (within the bounds its
  /// blob was compiled for: the executor sets every dynamic view before the first step) at the
  /// addresses prepare() saw, and execute() checks the sizes it is given. Default: false — a
  /// method whose delegate step would receive a dynamic tensor then fails to load, naming it.
  virtual bool takes_dynamic_shapes(DelegateHandle* handle) const {
    (void)handle;
    return false;
  }
  /// Runs the delegate on `args` (the delegate call's values: inputs, then outputs).
  virtual Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                        Span<EValue*> args) const = 0;
  /// Frees everything init() made. Called once per successful init().
  virtual void destroy(DelegateHandle* handle) const = 0;
  /// Bytes delegate `handle` holds in device allocations (cudaMalloc, vkAllocateMemory: its
  /// arena, weights and workspaces), as of now (after prepare: what execute runs with), for
  /// reports such as `tern bench`. Default: 0 (a backend without device memory).
  virtual uint64_t device_memory_bytes(DelegateHandle* handle) const {
    (void)handle;
    return 0;
  }
};

/// A registry entry. `name` and `backend` must outlive the registry (static storage).
struct Backend {
  const char* name = nullptr;
  const BackendInterface* backend = nullptr;
  uint32_t interface_version = kBackendInterfaceVersion;
};

/// Registers a backend. The registration rule shared with kernels and backend compilers:
/// registering a name again replaces the earlier entry in place (the last registration wins).
/// InvalidArgument for a null name/interface or a wrong interface version;
/// MemoryAllocationFailed when kMaxBackends are registered. Not thread-safe: register at
/// startup.
Error register_backend(const Backend& backend);

/// The backend registered under `name`, or null.
const Backend* find_backend(const char* name);

size_t num_registered_backends();
/// The i-th registered backend (i < num_registered_backends()).
const Backend& registered_backend(size_t i);

/// Removes every registered backend (tests only).
void clear_backend_registry_for_testing();

}  // namespace tern
