// DESIGN.md's promise with the cpu backend: Method::execute() (set_input, the XNNPACK
// delegate with its edge transposes, output) never allocates on the heap. This binary
// replaces malloc & co. and operator new/delete with counting versions that forward to
// glibc's __libc_* allocator (as tests/executor/zero_alloc_test.cpp does).
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>
#include <vector>

#include "tests/backends/cpu/cpu_test_util.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TERN_ZERO_ALLOC_HOOKS 0  // sanitizers own malloc; the test skips itself
#else
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

namespace tern::cpu_test {
namespace {

/// Counts heap allocations while alive.
class ArmedCounter {
 public:
  ArmedCounter() {
    g_allocations.store(0);
    g_armed.store(true);
  }
  ~ArmedCounter() { g_armed.store(false); }
  long count() const { return g_allocations.load(); }
};

/// conv -> relu -> max_pool -> conv (+ residual) -> relu -> global pool -> flatten -> linear,
/// delegated to "cpu", with a portable sigmoid after it.
std::vector<uint8_t> model(compiler::Graph* graph) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 3, 32, 32});
  auto conv = [&](int in, int64_t c_in, int64_t c_out, int64_t hw, int64_t stride, uint32_t seed) {
    const int w =
        b.constant_f32("w" + std::to_string(seed), {c_out, c_in, 3, 3},
                       random_floats(static_cast<size_t>(c_out * c_in * 9), seed, -0.2f, 0.2f));
    const int64_t o = (hw + 2 - 3) / stride + 1;
    return b.op(
        "tern::conv2d",
        {in, w, b.none(), b.int_list({stride}), b.int_list({1}), b.int_list({1}), b.int_value(1)},
        DType::F32, {1, c_out, o, o});
  };
  const int c1 = conv(x, 3, 16, 32, 2, 1);
  const int r1 = b.op("tern::relu", {c1}, DType::F32, {1, 16, 16, 16});
  const int p = b.op(
      "tern::max_pool2d",
      {r1, b.int_list({3}), b.int_list({2}), b.int_list({1}), b.int_list({1}), b.bool_value(false)},
      DType::F32, {1, 16, 8, 8});
  const int c2 = conv(p, 16, 16, 8, 1, 2);
  const int s = b.op("tern::add", {c2, p}, DType::F32, {1, 16, 8, 8});
  const int r2 = b.op("tern::relu", {s}, DType::F32, {1, 16, 8, 8});
  const int g =
      b.op("tern::adaptive_avg_pool2d", {r2, b.int_list({1, 1})}, DType::F32, {1, 16, 1, 1});
  const int f = b.op("tern::flatten", {g, b.int_value(1), b.int_value(-1)}, DType::F32, {1, 16});
  const int w = b.constant_f32("fc", {10, 16}, random_floats(160, 3, -0.3f, 0.3f));
  const int l = b.op("tern::linear", {f, w, b.none()}, DType::F32, {1, 10});
  const int last_delegated = static_cast<int>(b.num_nodes()) - 1;
  b.output(b.op("tern::sigmoid", {l}, DType::F32, {1, 10}));
  b.output(r1);  // a 4-D delegate output (transposed back at the edge)
  delegate_cpu(b, 0, last_delegated);
  *graph = b.build();
  return testing::compile_graph(*graph);
}

TEST(CpuZeroAlloc, CounterSeesTheBackendsInitAllocations) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  register_all();
  compiler::Graph graph;
  const std::vector<uint8_t> pte = model(&graph);
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  long allocations;
  {
    ArmedCounter counter;
    auto method = lp.program().load_method("forward", memory.manager());
    ASSERT_TRUE(method.ok()) << last_error_message();
    allocations = counter.count();
  }
  // XNNPACK's runtime, packed weights and the edge buffers are made at load: the hooks see
  // allocations made inside libXNNPACK, so a zero during execute means something.
  EXPECT_GT(allocations, 3);
}

TEST(CpuZeroAlloc, ExecuteNeverAllocates) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  register_all();
  compiler::Graph graph;
  const std::vector<uint8_t> pte = model(&graph);
  for (uint32_t threads : {1u, 0u}) {
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    MethodLoadOptions options;
    options.num_threads = threads;
    auto method = lp.program().load_method("forward", memory.manager(), options);
    ASSERT_TRUE(method.ok()) << last_error_message();
    ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
    std::vector<int64_t> sizes{1, 3, 32, 32};
    std::vector<float> inputs[2] = {random_floats(3072, 1), random_floats(3072, 2)};
    const TensorView views[2] = {testing::f32_view(sizes, inputs[0]),
                                 testing::f32_view(sizes, inputs[1])};
    // One warm-up execution outside the counter (XNNPACK's first run is allowed nothing
    // special either, but a failure is easier to read when isolated).
    ASSERT_EQ(method->set_input(0, views[0]), Error::Ok);
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    long allocations;
    int ok_runs = 0;
    {
      ArmedCounter counter;
      for (int i = 0; i < 100; ++i) {
        if (method->set_input(0, views[i % 2]) != Error::Ok) break;
        if (method->execute() != Error::Ok) break;
        if (!method->output(0).ok() || !method->output(1).ok()) break;
        ++ok_runs;
      }
      allocations = counter.count();
    }
    EXPECT_EQ(ok_runs, 100) << last_error_message();
    EXPECT_EQ(allocations, 0) << "heap allocations in 100 executions, " << threads << " threads";
  }
}

}  // namespace
}  // namespace tern::cpu_test
