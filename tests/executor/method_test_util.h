// Helpers for the method tests (h3): compile a graph, load it from memory, give a method its
// memory, make input views, and a configurable test backend.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend/backend.h"
#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/platform.h"
#include "runtime/core/tensor_view.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_builder.h"

namespace tern::testing {

/// Frees with std::free.
struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t, FreeDeleter>;

/// `size` bytes (at least 1) aligned to `alignment` (>= 64).
inline AlignedBytes aligned_bytes(size_t size, size_t alignment = 64) {
  if (alignment < 64) alignment = 64;
  size_t rounded = (size == 0 ? 1 : size);
  rounded = (rounded + alignment - 1) / alignment * alignment;
  void* p = nullptr;
  if (posix_memalign(&p, alignment, rounded) != 0) throw std::bad_alloc();
  return AlignedBytes(static_cast<uint8_t*>(p));
}

/// Compiles one method graph into .pte bytes.
inline std::vector<uint8_t> compile_graph(const compiler::Graph& graph) {
  compiler::ProgramGraph program;
  program.source_model = "method_test";
  program.methods.push_back(graph);
  return compiler::compile_program(program).bytes;
}

/// A program loaded from an aligned in-memory copy of its bytes.
class LoadedProgram {
 public:
  explicit LoadedProgram(const std::vector<uint8_t>& bytes)
      : bytes_(aligned_bytes(bytes.size())),
        size_(bytes.size()),
        loader_(bytes_.get(), bytes.size()) {
    std::memcpy(bytes_.get(), bytes.data(), bytes.size());
    Result<Program> program = Program::load(&loader_);
    if (!program.ok()) {
      throw std::runtime_error(std::string("Program::load failed: ") + to_string(program.error()) +
                               ": " + last_error_message());
    }
    program_.reset(new Program(std::move(program.get())));
  }
  const Program& program() const { return *program_; }

 private:
  AlignedBytes bytes_;
  size_t size_;
  BufferDataLoader loader_;
  std::unique_ptr<Program> program_;
};

/// The memory a method runs in, sized from its MethodMeta (or smaller, for failure tests).
/// Never moves once made (hold it in a unique_ptr if needed).
class MethodMemory {
 public:
  /// `method_bytes` < 0: meta.method_allocator_bytes(). `arena_shrink`: bytes taken off
  /// every arena.
  explicit MethodMemory(const MethodMeta& meta, int64_t method_bytes = -1,
                        uint64_t arena_shrink = 0, size_t temp_bytes = 64 * 1024) {
    const size_t mbytes = method_bytes < 0 ? static_cast<size_t>(meta.method_allocator_bytes())
                                           : static_cast<size_t>(method_bytes);
    method_buffer_ = aligned_bytes(mbytes);
    method_allocator_ = MemoryAllocator(method_buffer_.get(), mbytes);
    for (size_t a = 0; a < meta.num_arenas(); ++a) {
      uint64_t size = meta.arena_size(a).get();
      size = size > arena_shrink ? size - arena_shrink : 0;
      arena_buffers_.push_back(aligned_bytes(size, meta.arena_alignment(a).get()));
      arenas_.emplace_back(arena_buffers_.back().get(), static_cast<size_t>(size));
    }
    planned_ = HierarchicalAllocator(Span<Span<uint8_t>>(arenas_.data(), arenas_.size()));
    temp_buffer_ = aligned_bytes(temp_bytes);
    temp_allocator_ = MemoryAllocator(temp_buffer_.get(), temp_bytes);
    manager_.method_allocator = &method_allocator_;
    manager_.planned_memory = &planned_;
    manager_.temp_allocator = &temp_allocator_;
  }
  MemoryManager* manager() { return &manager_; }
  MemoryAllocator& method_allocator() { return method_allocator_; }

 private:
  AlignedBytes method_buffer_;
  MemoryAllocator method_allocator_;
  std::vector<AlignedBytes> arena_buffers_;
  std::vector<Span<uint8_t>> arenas_;
  HierarchicalAllocator planned_;
  AlignedBytes temp_buffer_;
  MemoryAllocator temp_allocator_;
  MemoryManager manager_;
};

/// An f32 input view over caller data; `sizes` and `data` must outlive the view.
inline TensorView f32_view(const std::vector<int64_t>& sizes, std::vector<float>& data) {
  TensorView v;
  v.dtype = DType::F32;
  v.rank = static_cast<uint32_t>(sizes.size());
  v.sizes = sizes.data();
  v.data = data.data();
  v.nbytes = data.size() * sizeof(float);
  return v;
}

/// The elements of an f32 output.
inline std::vector<float> to_vector(const TensorView& t) {
  const float* p = static_cast<const float*>(t.data);
  return std::vector<float>(p, p + t.numel());
}

inline std::vector<uint8_t> ascii(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

/// A backend whose blob is an ASCII op name ("add": out = a + b, "relu", "add_relu":
/// out = relu(a + b), "mul"), computing exactly what the portable kernels compute on
/// contiguous f32 tensors of equal shape. Its behaviour at load is configurable.
class TestBackend final : public BackendInterface {
 public:
  enum class Op : uint8_t { Add, Relu, AddRelu, Mul };
  struct Handle {
    Op op;
  };

  bool available = true;
  Error init_error = Error::Ok;  ///< returned by init when not Ok
  mutable int init_calls = 0;
  mutable int execute_calls = 0;
  mutable int destroy_calls = 0;
  mutable int reported_calls = 0;  ///< execute calls that had a part reporter

  bool is_available() const override { return available; }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer blob_buffer,
                               Span<const CompileSpecView> /*specs*/) const override {
    ++init_calls;
    const Span<const uint8_t> blob = blob_buffer.bytes();
    if (init_error != Error::Ok) {
      return set_error_message(init_error, "test backend: configured to fail init");
    }
    const std::string op(reinterpret_cast<const char*>(blob.data()), blob.size());
    Op parsed;
    if (op == "add")
      parsed = Op::Add;
    else if (op == "relu")
      parsed = Op::Relu;
    else if (op == "add_relu")
      parsed = Op::AddRelu;
    else if (op == "mul")
      parsed = Op::Mul;
    else
      return set_error_message(Error::DelegateInvalidCompatibility, "test backend: unknown op '%s'",
                               op.c_str());
    // Heap state (allowed at init), so method_allocator_bytes() stays exact for tests.
    (void)context;
    Handle* h = new Handle{parsed};
    return reinterpret_cast<DelegateHandle*>(h);
  }

  Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                Span<EValue*> args) const override {
    ++execute_calls;
    // Profilers: one part for the whole call, its begin and end taken around the loop below.
    if (context.report_part != nullptr) ++reported_calls;
    const uint64_t part_begin = context.report_part != nullptr ? monotonic_ns() : 0;
    const Handle* h = reinterpret_cast<const Handle*>(handle);
    const size_t num_in = (h->op == Op::Relu) ? 1 : 2;
    if (args.size() != num_in + 1) {
      return set_error_message(Error::DelegateExecutionFailed, "test backend: %zu args",
                               args.size());
    }
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i]->is_tensor())
        return set_error_message(Error::DelegateExecutionFailed,
                                 "test backend: arg %zu not a tensor", i);
    }
    const TensorView& out = args[num_in]->to_tensor();
    const uint64_t n = out.numel();
    const float* a = static_cast<const float*>(args[0]->to_tensor().data);
    const float* b = num_in > 1 ? static_cast<const float*>(args[1]->to_tensor().data) : nullptr;
    float* o = static_cast<float*>(out.data);
    for (uint64_t i = 0; i < n; ++i) {
      float r = 0;
      switch (h->op) {
        case Op::Add:
          r = a[i] + b[i];
          break;
        case Op::Relu:
          r = a[i] > 0 ? a[i] : 0.0f;
          break;
        case Op::AddRelu:
          r = a[i] + b[i];
          r = r > 0 ? r : 0.0f;
          break;
        case Op::Mul:
          r = a[i] * b[i];
          break;
      }
      o[i] = r;
    }
    if (context.report_part != nullptr) {
      context.report_part(context.part_sink, "test backend: elementwise loop", part_begin,
                          monotonic_ns());
    }
    return Error::Ok;
  }

  void destroy(DelegateHandle* handle) const override {
    ++destroy_calls;
    delete reinterpret_cast<Handle*>(handle);
  }
};

}  // namespace tern::testing
