// Module: owns the loader, the Program and, per loaded method, every buffer it needs.
// Allocates on the heap at load only; Method::execute() never comes through here.
#include "runtime/extension/module.h"

#include <string>
#include <vector>

#include "runtime/core/log.h"
#include "runtime/extension/method_memory.h"
#include "runtime/extension/owned_backend_options.h"
#include "runtime/loader/file_data_loader.h"
#include "runtime/loader/mmap_data_loader.h"

namespace tern {
namespace {

/// Scratch memory per method for kernels (reset after every instruction).
constexpr uint64_t kMinTempAllocatorBytes = 4096;
constexpr size_t kMinBufferAlignment = 64;
/// Method allocator bytes added per delegate for backends that keep their small host state
/// there (MethodMeta::method_allocator_bytes() does not count backends' own allocations).
constexpr uint64_t kBackendBytesPerDelegate = 4096;

}  // namespace

struct Module::Impl {
  /// One loaded method and the memory it runs in. Never moves once made (the Method points at
  /// the allocators inside it).
  struct LoadedMethod {
    std::string name;
    MethodMemory memory;
    std::unique_ptr<Method> method;
  };

  Options options;
  // Deep copies of options.method.disabled_backends and backend_options (the caller's arrays
  // need not outlive load).
  std::vector<std::string> disabled_names;
  std::vector<const char*> disabled;
  OwnedBackendOptions backend_options;
  std::unique_ptr<DataLoader> loader;
  std::unique_ptr<Program> program;
  // The program's shared state (format 1.2), one buffer for all its methods; empty when none.
  SharedStateBuffer shared_state;
  // Declared last: destroyed first, before the Program and loader they point into.
  std::vector<std::unique_ptr<LoadedMethod>> methods;
};

Module::Module() = default;
Module::~Module() = default;

Error Module::load(const char* path) { return load(path, Options()); }

Error Module::load(const char* path, const Options& options) {
  TERN_CHECK_OR_RETURN_ERROR(path != nullptr, InvalidArgument, "Module::load: path is null");
  impl_.reset();
  std::unique_ptr<Impl> impl(new Impl());
  impl->options = options;
  for (const char* name : options.method.disabled_backends) {
    if (name != nullptr) impl->disabled_names.emplace_back(name);
  }
  for (const std::string& name : impl->disabled_names) impl->disabled.push_back(name.c_str());
  impl->options.method.disabled_backends =
      Span<const char* const>(impl->disabled.data(), impl->disabled.size());
  for (const BackendOption& o : options.method.backend_options) {
    TERN_CHECK_OR_RETURN_ERROR(o.backend != nullptr && o.key != nullptr && o.value != nullptr,
                               InvalidArgument, "Module::load: a backend option has a null "
                               "backend, key or value");
    impl->backend_options.add(o.backend, o.key, o.value);
  }
  impl->options.method.backend_options = impl->backend_options.span();

  switch (options.mode) {
    case LoadMode::File: {
      auto loader = FileDataLoader::from(path);
      if (!loader.ok()) return loader.error();
      impl->loader.reset(new FileDataLoader(std::move(loader.get())));
      break;
    }
    case LoadMode::Mmap: {
      auto loader = MmapDataLoader::from(path);
      if (!loader.ok()) return loader.error();
      impl->loader.reset(new MmapDataLoader(std::move(loader.get())));
      break;
    }
    default:
      TERN_RETURN_ERROR(InvalidArgument, "Module::load('%s'): unknown load mode %u", path,
                        static_cast<unsigned>(options.mode));
  }
  auto program = Program::load(impl->loader.get(), options.program);
  if (!program.ok()) return program.error();
  impl->program.reset(new Program(std::move(program.get())));
  const Error shared = impl->shared_state.allocate(*impl->program);
  if (shared != Error::Ok) return chain_error_message(shared, "Module::load('%s')", path);
  impl_ = std::move(impl);
  return Error::Ok;
}

const Program* Module::program() const { return impl_ ? impl_->program.get() : nullptr; }

Error Module::reset_shared_state() {
  TERN_CHECK_OR_RETURN_ERROR(impl_ != nullptr && impl_->program != nullptr, InvalidState,
                             "Module::reset_shared_state: no program loaded; call load() first");
  return impl_->program->init_shared_state(impl_->shared_state.span());
}

Result<Method*> Module::method(const char* name) {
  TERN_CHECK_OR_RETURN_ERROR(impl_ != nullptr && impl_->program != nullptr, InvalidState,
                             "Module::method(%s): no program loaded; call load() first",
                             name ? name : "null");
  TERN_CHECK_OR_RETURN_ERROR(name != nullptr, InvalidArgument,
                             "Module::method: method name is null");
  for (const auto& loaded : impl_->methods) {
    if (loaded->name == name) return loaded->method.get();
  }
  TERN_ASSIGN_OR_RETURN(MethodMeta meta, impl_->program->method_meta(name));

  std::unique_ptr<Impl::LoadedMethod> loaded(new Impl::LoadedMethod());
  loaded->name = name;
  // The compiler plans the kernels' scratch (MethodMeta::temp_allocator_bytes); keep a small
  // floor so that kernels with tiny, unplanned needs still find room.
  MethodMemoryOptions memory_options;
  memory_options.min_temp_bytes = kMinTempAllocatorBytes;
  memory_options.alignment = kMinBufferAlignment;
  TERN_CHECK_OR_RETURN_ERROR(checked_mul(meta.num_delegates(), kBackendBytesPerDelegate,
                                         &memory_options.extra_method_bytes),
                             MemoryAllocationFailed,
                             "Module::method('%s'): method memory size overflows", name);
  const Error err = loaded->memory.allocate(meta, memory_options);
  if (err != Error::Ok) return chain_error_message(err, "Module::method('%s')", name);

  loaded->memory.manager()->shared_state = impl_->shared_state.span();
  auto method = impl_->program->load_method(name, loaded->memory.manager(), impl_->options.method);
  if (!method.ok()) return method.error();
  loaded->method.reset(new Method(std::move(method.get())));
  Method* result = loaded->method.get();
  impl_->methods.push_back(std::move(loaded));
  return result;
}

}  // namespace tern
