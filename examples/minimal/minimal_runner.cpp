// The smallest useful tern program, for the size check of docs/size.md (TERN_MINIMAL=ON):
// loads a program with full verification (structure and every segment checksum), registers
// ONE kernel (tern::add), gives the method caller-owned memory sized from its MethodMeta, sets
// every input to ones, executes and prints output 0.
//
// The kernel: with TERN_MINIMAL_PORTABLE_ADD the portable library's tern::add (every dtype,
// broadcasting, alpha), else the app's own f32 same-shape add below — what an app that brings
// its own kernels links; scripts/size-report.sh measures both.
//
//   minimal_runner add.pte     ->  "2 2 2 2"   (examples/minimal/add_graph.json: y = a + b)
//
// No iostream, no exceptions, no RTTI: what an embedded app links for the core runtime.
#include <cstdio>
#include <cstdlib>

#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/loader/file_data_loader.h"
#ifdef TERN_MINIMAL_PORTABLE_ADD
#include "runtime/kernels/portable/portable_kernels.h"
#endif

namespace {

#ifndef TERN_MINIMAL_PORTABLE_ADD
/// tern::add(a, b, out) for f32 tensors of one shape (the case the size check runs).
tern::Error add_f32(tern::KernelContext&, tern::Span<tern::EValue*> args) {
  if (args.size() != 3 || !args[0]->is_tensor() || !args[1]->is_tensor() ||
      !args[2]->is_tensor()) {
    return tern::Error::InvalidArgument;
  }
  const tern::TensorView& a = args[0]->to_tensor();
  const tern::TensorView& b = args[1]->to_tensor();
  const tern::TensorView& out = args[2]->to_tensor();
  if (a.dtype != tern::DType::F32 || b.dtype != tern::DType::F32 ||
      out.dtype != tern::DType::F32 || a.numel() != out.numel() || b.numel() != out.numel()) {
    return tern::Error::InvalidArgument;
  }
  const float* x = a.data_as<const float>();
  const float* y = b.data_as<const float>();
  float* z = out.data_as<float>();
  for (uint64_t i = 0; i < out.numel(); ++i) z[i] = x[i] + y[i];
  return tern::Error::Ok;
}
#endif

int fail(const char* what) {
  std::fprintf(stderr, "minimal_runner: %s: %s\n", what, tern::last_error_message());
  return 1;
}

void* aligned_block(size_t bytes) {
  void* p = nullptr;
  return posix_memalign(&p, 64, bytes == 0 ? 1 : bytes) == 0 ? p : nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: minimal_runner PROGRAM.pte\n");
    return 2;
  }
#ifdef TERN_MINIMAL_PORTABLE_ADD
  const tern::KernelFn add = tern::portable::add;
#else
  const tern::KernelFn add = add_f32;
#endif
  if (tern::register_kernel("tern::add", add) != tern::Error::Ok) {
    return fail("register_kernel");
  }
  auto loader = tern::FileDataLoader::from(argv[1]);
  if (!loader.ok()) return fail("open");
  auto program = tern::Program::load(&loader.get());
  if (!program.ok()) return fail("load");
  auto meta = program->method_meta("forward");
  if (!meta.ok()) return fail("method_meta");

  // Caller-owned memory, sized by the program's plan (a real app would use static buffers).
  constexpr size_t kMaxArenas = 4;
  tern::Span<uint8_t> arenas[kMaxArenas];
  const size_t num_arenas = meta->num_arenas();
  if (num_arenas > kMaxArenas) {
    std::fprintf(stderr, "minimal_runner: %zu arenas, at most %zu\n", num_arenas, kMaxArenas);
    return 1;
  }
  for (size_t a = 0; a < num_arenas; ++a) {
    auto size = meta->arena_size(a);
    if (!size.ok()) return fail("arena_size");
    void* block = aligned_block(static_cast<size_t>(*size));
    if (block == nullptr) return fail("arena allocation");
    arenas[a] = tern::Span<uint8_t>(static_cast<uint8_t*>(block), static_cast<size_t>(*size));
  }
  const size_t method_bytes = meta->method_allocator_bytes();
  tern::MemoryAllocator method_allocator(aligned_block(method_bytes), method_bytes);
  tern::HierarchicalAllocator planned(tern::Span<tern::Span<uint8_t>>(arenas, num_arenas));
  const size_t temp_bytes = meta->temp_allocator_bytes();
  tern::MemoryAllocator temp_allocator(aligned_block(temp_bytes), temp_bytes);
  tern::MemoryManager memory;
  memory.method_allocator = &method_allocator;
  memory.planned_memory = &planned;
  memory.temp_allocator = &temp_allocator;

  auto method = program->load_method("forward", &memory);
  if (!method.ok()) return fail("load_method");

  // Every input: a tensor of ones with the planned shape and dtype (f32 expected).
  static float ones[1024];
  for (float& v : ones) v = 1.0f;
  for (size_t i = 0; i < method->num_inputs(); ++i) {
    auto info = meta->input_tensor_info(i);
    if (!info.ok()) return fail("input_tensor_info");
    if (info->dtype != tern::DType::F32 || info->nbytes > sizeof(ones)) {
      std::fprintf(stderr, "minimal_runner: input %zu: expected f32 of at most %zu bytes\n", i,
                   sizeof(ones));
      return 1;
    }
    tern::TensorView input;
    input.dtype = tern::DType::F32;
    input.rank = static_cast<uint32_t>(info->sizes.size());
    input.sizes = info->sizes.data();
    input.data = ones;
    input.nbytes = info->nbytes;
    if (method->set_input(i, input) != tern::Error::Ok) return fail("set_input");
  }
  if (method->execute() != tern::Error::Ok) return fail("execute");
  auto out = method->output(0);
  if (!out.ok()) return fail("output");
  const float* y = (*out)->data_as<const float>();
  for (uint64_t k = 0; k < (*out)->numel(); ++k) std::printf(k ? " %g" : "%g", y[k]);
  std::printf("\n");
  return 0;
}
