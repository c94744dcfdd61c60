// Running a method of a loaded program for the model hardening checker (no GoogleTest):
// deterministic inputs from its MethodMeta, set_input, execute, and the output bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "tests/support/exact_memory.h"

namespace tern::model_hardening {

using testing_support::Bytes;
using testing_support::CountingAllocator;
using testing_support::exact_bytes;
using testing_support::ExactMemory;
using testing_support::MemorySizes;

/// How methods are loaded: backend worker threads, and whether every registered backend is
/// disabled (their delegate calls then run the portable fallback instructions).
struct LoadConfig {
  uint32_t threads = 1;
  bool fallback = false;

  MethodLoadOptions options() const {
    static const std::vector<const char*> every_backend = [] {
      std::vector<const char*> names;
      for (size_t i = 0; i < num_registered_backends(); ++i) {
        names.push_back(registered_backend(i).name);
      }
      return names;
    }();
    MethodLoadOptions o;
    o.num_threads = threads;
    if (fallback) {
      o.disabled_backends = Span<const char* const>(every_backend.data(), every_backend.size());
    }
    return o;
  }
  const char* path() const { return fallback ? "portable fallback" : "backends"; }
};

/// Tensor inputs of one method: dtype, sizes and bytes of each.
struct MethodInputs {
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> sizes;
  std::vector<std::vector<uint8_t>> bytes;
};

/// Deterministic bytes for every input of `meta` (f32 in [-2, 2); integers in [0, 10), so
/// that index inputs stay in range; other dtypes: pseudo-random bytes), varied by `seed`.
/// Throws std::runtime_error for a scalar (non-tensor) input.
inline MethodInputs make_inputs(const MethodMeta& meta, uint32_t seed) {
  MethodInputs in;
  uint32_t state = seed * 2654435761u + 1;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state;
  };
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    auto info = meta.input_tensor_info(i);
    if (!info.ok()) {
      throw std::runtime_error("input " + std::to_string(i) +
                               " is not a tensor (scalar inputs are not supported here)");
    }
    std::vector<uint8_t> bytes(static_cast<size_t>(info->nbytes));
    auto fill = [&](size_t width, auto value_of) {
      for (size_t k = 0; k + width <= bytes.size(); k += width) {
        const auto v = value_of(next());
        std::memcpy(&bytes[k], &v, width);
      }
    };
    switch (info->dtype) {
      case DType::F32:
        fill(4, [](uint32_t r) {
          return static_cast<float>(r >> 8) / static_cast<float>(1u << 24) * 4 - 2;
        });
        break;
      case DType::I64:
        fill(8, [](uint32_t r) { return static_cast<int64_t>((r >> 24) % 10); });
        break;
      case DType::I32:
        fill(4, [](uint32_t r) { return static_cast<int32_t>((r >> 24) % 10); });
        break;
      case DType::Bool:
        fill(1, [](uint32_t r) { return static_cast<uint8_t>((r >> 24) & 1); });
        break;
      default:
        fill(1, [](uint32_t r) { return static_cast<uint8_t>(r >> 24); });
        break;
    }
    in.dtypes.push_back(info->dtype);
    in.sizes.emplace_back(info->sizes.begin(), info->sizes.end());
    in.bytes.push_back(std::move(bytes));
  }
  return in;
}

/// Sets every input of `method`; returns the first error.
inline Error set_inputs(Method& method, MethodInputs& in) {
  for (size_t i = 0; i < in.bytes.size(); ++i) {
    TensorView view;
    view.dtype = in.dtypes[i];
    view.rank = static_cast<uint32_t>(in.sizes[i].size());
    view.sizes = in.sizes[i].data();
    view.data = in.bytes[i].data();
    view.nbytes = in.bytes[i].size();
    const Error err = method.set_input(i, view);
    if (err != Error::Ok) return err;
  }
  return Error::Ok;
}

/// Appends every output tensor's bytes to `out`; returns the first error.
inline Error append_outputs(const Method& method, std::vector<uint8_t>* out) {
  for (size_t i = 0; i < method.num_outputs(); ++i) {
    auto view = method.output(i);
    if (!view.ok()) return view.error();
    const uint8_t* p = static_cast<const uint8_t*>((*view)->data);
    out->insert(out->end(), p, p + (*view)->nbytes);
  }
  return Error::Ok;
}

/// Outcome of running every method of a program.
struct RunOutcome {
  std::string error;             ///< empty on success, else what failed and its message
  std::vector<uint8_t> outputs;  ///< every method's outputs of every run, concatenated
};

/// Loads every method of `program` into memory sized by its own MethodMeta, runs it `runs`
/// times on make_inputs(meta, seed) and collects the outputs.
inline RunOutcome run_all_methods(const Program& program, const LoadConfig& config, int runs,
                                  uint32_t seed = 7) {
  RunOutcome r;
  for (size_t m = 0; m < program.num_methods(); ++m) {
    auto name = program.method_name(m);
    if (!name.ok()) return {std::string("method_name: ") + last_error_message(), {}};
    auto meta = program.method_meta(*name);
    if (!meta.ok()) return {std::string("method_meta: ") + last_error_message(), {}};
    ExactMemory memory(MemorySizes::planned(*meta));
    auto method = program.load_method(*name, memory.manager(), config.options());
    if (!method.ok()) {
      return {std::string("load_method '") + *name + "': " + to_string(method.error()) + ": " +
                  last_error_message(),
              {}};
    }
    MethodInputs inputs = make_inputs(*meta, seed);
    for (int run = 0; run < runs; ++run) {
      Error err = set_inputs(*method, inputs);
      if (err == Error::Ok) err = method->execute();
      if (err == Error::Ok) err = append_outputs(*method, &r.outputs);
      if (err != Error::Ok) {
        return {
            std::string("execute '") + *name + "': " + to_string(err) + ": " + last_error_message(),
            {}};
      }
    }
  }
  return r;
}

}  // namespace tern::model_hardening
