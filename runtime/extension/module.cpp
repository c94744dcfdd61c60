// Module: owns the loader, the Program and, per loaded method, every buffer it needs.
// Allocates on the heap at load only; Method::execute() never comes through here.
#include "runtime/extension/module.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/core/log.h"
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

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t, FreeDeleter>;

/// A heap buffer of at least `size` bytes aligned to `alignment` (a power of two), or null.
AlignedBuffer allocate_aligned(uint64_t size, size_t alignment) {
  if (alignment < kMinBufferAlignment) alignment = kMinBufferAlignment;
  uint64_t rounded;
  if (!checked_align_up(size == 0 ? 1 : size, alignment, &rounded) || rounded > SIZE_MAX) {
    return AlignedBuffer();
  }
  void* p = nullptr;
  if (posix_memalign(&p, alignment, static_cast<size_t>(rounded)) != 0) {
    return AlignedBuffer();
  }
  return AlignedBuffer(static_cast<uint8_t*>(p));
}

}  // namespace

struct Module::Impl {
  /// One loaded method and the memory it runs in. Never moves once made (the Method points at
  /// the allocators inside it).
  struct LoadedMethod {
    std::string name;
    AlignedBuffer method_buffer;
    MemoryAllocator method_allocator;
    std::vector<AlignedBuffer> arena_buffers;
    std::vector<Span<uint8_t>> arena_spans;
    HierarchicalAllocator planned_memory;
    AlignedBuffer temp_buffer;
    MemoryAllocator temp_allocator;
    MemoryManager memory;
    std::unique_ptr<Method> method;
  };

  Options options;
  // Deep copy of options.method.disabled_backends (the caller's array need not outlive load).
  std::vector<std::string> disabled_names;
  std::vector<const char*> disabled;
  std::unique_ptr<DataLoader> loader;
  std::unique_ptr<Program> program;
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
  impl_ = std::move(impl);
  return Error::Ok;
}

const Program* Module::program() const { return impl_ ? impl_->program.get() : nullptr; }

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
  uint64_t method_bytes = meta.method_allocator_bytes();
  uint64_t backend_bytes;
  TERN_CHECK_OR_RETURN_ERROR(
      checked_mul(meta.num_delegates(), kBackendBytesPerDelegate, &backend_bytes) &&
          checked_add(method_bytes, backend_bytes, &method_bytes),
      MemoryAllocationFailed, "Module::method('%s'): method memory size overflows", name);
  loaded->method_buffer = allocate_aligned(method_bytes, kMinBufferAlignment);
  TERN_CHECK_OR_RETURN_ERROR(loaded->method_buffer != nullptr, MemoryAllocationFailed,
                             "Module::method('%s'): cannot allocate %llu bytes of method memory",
                             name, static_cast<unsigned long long>(method_bytes));
  loaded->method_allocator =
      MemoryAllocator(loaded->method_buffer.get(), static_cast<size_t>(method_bytes));

  for (size_t a = 0; a < meta.num_arenas(); ++a) {
    TERN_ASSIGN_OR_RETURN(uint64_t size, meta.arena_size(a));
    TERN_ASSIGN_OR_RETURN(uint32_t alignment, meta.arena_alignment(a));
    TERN_CHECK_OR_RETURN_ERROR(is_power_of_two(alignment), InvalidProgram,
                               "Module::method('%s'): arena %zu alignment %u is not a power of "
                               "two",
                               name, a, alignment);
    AlignedBuffer buffer = allocate_aligned(size, alignment);
    TERN_CHECK_OR_RETURN_ERROR(buffer != nullptr, MemoryAllocationFailed,
                               "Module::method('%s'): cannot allocate arena %zu of %llu bytes",
                               name, a, static_cast<unsigned long long>(size));
    loaded->arena_spans.emplace_back(buffer.get(), static_cast<size_t>(size));
    loaded->arena_buffers.push_back(std::move(buffer));
  }
  loaded->planned_memory = HierarchicalAllocator(
      Span<Span<uint8_t>>(loaded->arena_spans.data(), loaded->arena_spans.size()));

  // The compiler plans the kernels' scratch (MethodMeta::temp_allocator_bytes); keep a small
  // floor so that kernels with tiny, unplanned needs still find room.
  uint64_t temp_bytes = meta.temp_allocator_bytes();
  if (temp_bytes < kMinTempAllocatorBytes) temp_bytes = kMinTempAllocatorBytes;
  TERN_CHECK_OR_RETURN_ERROR(temp_bytes <= SIZE_MAX, MemoryAllocationFailed,
                             "Module::method('%s'): %llu bytes of scratch do not fit in memory",
                             name, static_cast<unsigned long long>(temp_bytes));
  loaded->temp_buffer = allocate_aligned(static_cast<size_t>(temp_bytes), kMinBufferAlignment);
  TERN_CHECK_OR_RETURN_ERROR(loaded->temp_buffer != nullptr, MemoryAllocationFailed,
                             "Module::method('%s'): cannot allocate %llu bytes of scratch memory",
                             name, static_cast<unsigned long long>(temp_bytes));
  loaded->temp_allocator = MemoryAllocator(loaded->temp_buffer.get(), static_cast<size_t>(temp_bytes));

  loaded->memory.method_allocator = &loaded->method_allocator;
  loaded->memory.planned_memory = &loaded->planned_memory;
  loaded->memory.temp_allocator = &loaded->temp_allocator;

  auto method = impl_->program->load_method(name, &loaded->memory, impl_->options.method);
  if (!method.ok()) return method.error();
  loaded->method.reset(new Method(std::move(method.get())));
  Method* result = loaded->method.get();
  impl_->methods.push_back(std::move(loaded));
  return result;
}

}  // namespace tern
