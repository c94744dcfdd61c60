// Helpers for the method tests (h3): compile a graph, load it from memory, give a method its
// memory, make input views, and a configurable test backend.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/backend/backend.h"
#include "runtime/core/platform.h"
#include "runtime/core/tensor_view.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/extension/method_memory.h"
#include "runtime/loader/buffer_data_loader.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_builder.h"

namespace tern::testing {

using AlignedBytes = HeapBlock;

/// `size` bytes (at least 1) aligned to `alignment` (>= 64), rounded up to the alignment.
inline AlignedBytes aligned_bytes(size_t size, size_t alignment = 64) {
  AlignedBytes bytes = allocate_heap_block(size, alignment < 64 ? 64 : alignment, /*exact=*/false);
  if (bytes == nullptr) throw std::bad_alloc();
  return bytes;
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

/// The memory a method runs in (tern::MethodMemory, 64-byte aligned rounded blocks), sized
/// from its MethodMeta (or smaller, for failure tests). Never moves once made (hold it in a
/// unique_ptr if needed). Throws std::runtime_error when it cannot be allocated.
class MethodMemory : public ::tern::MethodMemory {
 public:
  /// `method_bytes` < 0: meta.method_allocator_bytes(). `arena_shrink`: bytes taken off
  /// every arena. `temp_bytes`: the temp allocator's size (whatever meta plans).
  explicit MethodMemory(const MethodMeta& meta, int64_t method_bytes = -1,
                        uint64_t arena_shrink = 0, size_t temp_bytes = 64 * 1024) {
    Result<MethodMemorySizes> sizes = MethodMemorySizes::planned(meta);
    if (!sizes.ok()) throw std::runtime_error(std::string("MethodMeta: ") + last_error_message());
    if (method_bytes >= 0) sizes->method_bytes = static_cast<uint64_t>(method_bytes);
    for (uint64_t& size : sizes->arenas) size = size > arena_shrink ? size - arena_shrink : 0;
    sizes->temp_bytes = temp_bytes;
    if (allocate(*sizes) != Error::Ok) {
      throw std::runtime_error(std::string("MethodMemory: ") + last_error_message());
    }
  }
};

/// An input view of `dtype` over caller data (elements of T: float, int64_t, uint8_t for
/// bool); `sizes` and `data` must outlive the view.
template <typename T>
inline TensorView input_view(DType dtype, const std::vector<int64_t>& sizes, std::vector<T>& data) {
  TensorView v;
  v.dtype = dtype;
  v.rank = static_cast<uint32_t>(sizes.size());
  v.sizes = sizes.data();
  v.data = data.data();
  v.nbytes = data.size() * sizeof(T);
  return v;
}

/// An f32 input view over caller data; `sizes` and `data` must outlive the view.
inline TensorView f32_view(const std::vector<int64_t>& sizes, std::vector<float>& data) {
  return input_view(DType::F32, sizes, data);
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
