// Counting replacements of malloc & co. and operator new/delete for the zero-allocation tests.
//
// Include this header in exactly ONE source file of a test binary: it defines the global
// allocation functions, forwarding to glibc's __libc_* allocator. Under ASan/TSan (which own
// malloc) TERN_ZERO_ALLOC_HOOKS is 0 and the tests skip themselves.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

// Sanitizers own malloc; the tests skip themselves. GCC names them by macros, clang by
// __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TERN_ZERO_ALLOC_HOOKS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TERN_ZERO_ALLOC_HOOKS 0
#endif
#endif
#ifndef TERN_ZERO_ALLOC_HOOKS
#define TERN_ZERO_ALLOC_HOOKS 1
#endif

namespace {
std::atomic<bool> g_armed{false};
std::atomic<long> g_allocations{0};

inline void note_allocation() {
  if (g_armed.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
}
}  // namespace

#if TERN_ZERO_ALLOC_HOOKS
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);

void* malloc(size_t size) {
  note_allocation();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  note_allocation();
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) {
  note_allocation();
  return __libc_realloc(p, size);
}
void* memalign(size_t alignment, size_t size) {
  note_allocation();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  note_allocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  note_allocation();
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }
}  // extern "C"

void* operator new(size_t size) {
  void* p = malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  return malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return malloc(size == 0 ? 1 : size);
}
void* operator new(size_t size, std::align_val_t alignment) {
  void* p = nullptr;
  if (posix_memalign(&p, static_cast<size_t>(alignment), size == 0 ? 1 : size) != 0) {
    throw std::bad_alloc();
  }
  return p;
}
void* operator new[](size_t size, std::align_val_t alignment) {
  return operator new(size, alignment);
}
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { free(p); }
#endif  // TERN_ZERO_ALLOC_HOOKS

namespace tern::testing_support {

/// Counts heap allocations (of any thread) while alive.
class ArmedCounter {
 public:
  ArmedCounter() {
    g_allocations.store(0);
    g_armed.store(true);
  }
  ~ArmedCounter() { g_armed.store(false); }
  ArmedCounter(const ArmedCounter&) = delete;
  ArmedCounter& operator=(const ArmedCounter&) = delete;
  long count() const { return g_allocations.load(); }
};

}  // namespace tern::testing_support
