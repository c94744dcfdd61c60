// Helpers for the vulkan backend tests: delegate a node range to "vulkan" with a blob from
// VulkanBackendCompiler::lower, run a program on the backend or its portable fallback, drive
// the backend interface directly with guard bytes, random inputs and NMSE.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/vulkan/compile/vulkan_backend_compiler.h"
#include "backends/vulkan/runtime/blob_reader.h"
#include "backends/vulkan/runtime/register_vulkan_backend.h"
#include "backends/vulkan/vulkan_blob_format.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"
#include "tests/support/backend_test_values.h"

namespace tern::vulkan_test {

using test_support::AlignedBlob;
using test_support::all_finite;
using test_support::max_rel;
using test_support::nmse;
using test_support::numel;
using test_support::random_floats;

using compiler::GraphBuilder;

/// Hands nodes [first, last] of `b` to "vulkan" with the blob (and compile specs)
/// VulkanBackendCompiler lowers for `storage` (vulkan::kStorageF32 or kStorageF16).
inline int delegate_vulkan(GraphBuilder& b, int first, int last,
                           uint32_t storage = vulkan::kStorageF32) {
  const int index = b.delegate("vulkan", first, last);
  compiler::DelegateRegion& region = b.graph().delegates[static_cast<size_t>(index)];
  compiler::LoweredRegion lowered = compiler::VulkanBackendCompiler(storage).lower(b.graph(), region);
  region.blob = std::move(lowered.blob);
  region.compile_specs = std::move(lowered.compile_specs);
  return index;
}

struct RunResult {
  std::vector<std::vector<float>> outputs;
  std::vector<DelegatePath> paths;
};

/// Loads `pte` (vulkan registered; disabled for this load when `disable`), sets the f32
/// inputs, executes `runs` times and returns the outputs and delegate paths.
/// `backend_options`: MethodLoadOptions::backend_options (e.g. {"vulkan", "device", "0"}).
inline RunResult run_program(const std::vector<uint8_t>& pte, const compiler::Graph& graph,
                             const std::vector<std::vector<float>>& inputs, bool disable,
                             int runs = 1, std::vector<BackendOption> backend_options = {}) {
  RunResult result;
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 8 * 1024 * 1024);
  const char* disabled[] = {"vulkan"};
  MethodLoadOptions options;
  if (disable) options.disabled_backends = Span<const char* const>(disabled, 1);
  options.backend_options =
      Span<const BackendOption>(backend_options.data(), backend_options.size());
  auto method = lp.program().load_method("forward", memory.manager(), options);
  EXPECT_TRUE(method.ok()) << last_error_message();
  if (!method.ok()) return result;
  std::vector<std::vector<int64_t>> sizes;
  std::vector<std::vector<float>> data = inputs;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    sizes.push_back(graph.values[static_cast<size_t>(graph.inputs[i])].sizes);
  }
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const TensorView view = testing::f32_view(sizes[i], data[i]);
    EXPECT_EQ(method->set_input(i, view), Error::Ok) << last_error_message();
  }
  for (int r = 0; r < runs; ++r) {
    EXPECT_EQ(method->execute(), Error::Ok) << last_error_message();
  }
  for (size_t i = 0; i < method->num_outputs(); ++i) {
    auto out = method->output(i);
    EXPECT_TRUE(out.ok()) << last_error_message();
    if (out.ok()) result.outputs.push_back(testing::to_vector(*out.get()));
  }
  for (size_t i = 0; i < method->num_delegate_calls(); ++i) {
    result.paths.push_back(method->delegate_path(i).get());
  }
  return result;
}

/// linear [4, 24] x [12, 24]ᵀ -> gelu, delegated to vulkan whole: the small program the
/// fallback and device-option tests load.
inline compiler::Graph linear_gelu_graph() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {4, 24});
  const int w = b.constant_f32("w", {12, 24}, random_floats(288, 1));
  const int h = b.op("tern::linear", {x, w, b.none()}, DType::F32, {4, 12});
  b.output(b.op("tern::gelu", {h, b.string_value("none")}, DType::F32, {4, 12}));
  delegate_vulkan(b, 0, 1);
  return b.build();
}

/// parse_blob's verdict on `bytes` (copied to an aligned buffer; the plan freed).
inline Error parse(const std::vector<uint8_t>& bytes) {
  AlignedBlob a(bytes);
  vulkan::BlobPlan plan;
  const Error e = vulkan::parse_blob(Span<const uint8_t>(a.data(), bytes.size()), &plan);
  vulkan::free_blob_plan(&plan);
  return e;
}

/// The node ops of a vulkan blob (which must parse).
inline std::vector<uint32_t> blob_ops(const std::vector<uint8_t>& blob) {
  AlignedBlob aligned(blob);
  vulkan::BlobPlan plan;
  std::vector<uint32_t> ops;
  const Error err = vulkan::parse_blob(Span<const uint8_t>(aligned.data(), blob.size()), &plan);
  EXPECT_EQ(err, Error::Ok) << last_error_message();
  if (err != Error::Ok) return ops;
  for (uint32_t n = 0; n < plan.header.num_nodes; ++n) ops.push_back(plan.nodes[n].op);
  vulkan::free_blob_plan(&plan);
  return ops;
}

/// `blob` with the bytes of `value` at `offset`.
template <typename T>
std::vector<uint8_t> patched(std::vector<uint8_t> blob, size_t offset, T value) {
  std::memcpy(blob.data() + offset, &value, sizeof(T));
  return blob;
}

/// Byte offset of node record `i` in `blob`.
inline size_t node_offset(const std::vector<uint8_t>& blob, uint32_t i) {
  vulkan::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  return sizeof(h) + h.num_values * sizeof(vulkan::BlobValue) + i * sizeof(vulkan::BlobNode);
}

/// Registers the portable kernels and the vulkan backend; fails (never skips) when no Vulkan
/// device is there: CI runs these tests on lavapipe (docs: backends/vulkan/README.md).
inline void register_all() {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_EQ(register_vulkan_backend(), Error::Ok) << last_error_message();
  ASSERT_TRUE(vulkan_backend_interface().is_available())
      << "no Vulkan device: " << vulkan_unavailable_reason()
      << " (install mesa-vulkan-drivers: scripts/install-deps.sh)";
}

/// One buffer per delegate call argument, with guard bytes after the data.
struct GuardedArg {
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kPattern = 0xA5;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> bytes;
  TensorView view;
  EValue value;
  size_t data_bytes = 0;
  bool guard_intact() const {
    for (size_t i = data_bytes; i < bytes.size(); ++i) {
      if (bytes[i] != kPattern) return false;
    }
    return true;
  }
};

/// Drives the backend interface on region 0 of `graph` with guarded buffers (two executions);
/// returns the region outputs by value id after checking the guards and that inputs are
/// untouched.
inline std::map<int, std::vector<float>> run_guarded(const compiler::Graph& graph,
                                                     const std::map<int, std::vector<float>>& inputs) {
  const compiler::DelegateRegion& region = graph.delegates.at(0);
  const BackendInterface& be = vulkan_backend_interface();
  BackendInitContext ictx;
  AlignedBlob blob(region.blob);
  auto handle = be.init(ictx, blob.buffer(), {});
  EXPECT_TRUE(handle.ok()) << last_error_message();
  std::map<int, std::vector<float>> outputs;
  if (!handle.ok()) return outputs;
  std::vector<int> ids = region.inputs;
  ids.insert(ids.end(), region.outputs.begin(), region.outputs.end());
  std::vector<GuardedArg> args(ids.size());
  std::vector<EValue*> ptrs;
  for (size_t i = 0; i < ids.size(); ++i) {
    const compiler::Value& v = graph.values[static_cast<size_t>(ids[i])];
    GuardedArg& a = args[i];
    if (!v.is_tensor()) {
      ptrs.push_back(&a.value);
      continue;
    }
    a.sizes = v.sizes;
    a.data_bytes = v.is_constant ? v.data.size() : numel(v.sizes) * sizeof(float);
    a.bytes.assign(a.data_bytes + GuardedArg::kGuard, GuardedArg::kPattern);
    const bool is_output = i >= region.inputs.size();
    if (v.is_constant) {
      std::memcpy(a.bytes.data(), v.data.data(), a.data_bytes);
    } else if (!is_output) {
      std::memcpy(a.bytes.data(), inputs.at(ids[i]).data(), a.data_bytes);
    }
    a.view.dtype = v.dtype;
    a.view.rank = static_cast<uint32_t>(a.sizes.size());
    a.view.sizes = a.sizes.data();
    a.view.data = a.bytes.data();
    a.view.nbytes = a.data_bytes;
    a.value = EValue::from_tensor(&a.view);
    ptrs.push_back(&a.value);
  }
  std::vector<std::vector<uint8_t>> before;
  for (const GuardedArg& a : args) before.push_back(a.bytes);
  Span<EValue*> span(ptrs.data(), ptrs.size());
  EXPECT_EQ(be.prepare(handle.get(), span), Error::Ok) << last_error_message();
  BackendExecuteContext ectx;
  for (int run = 0; run < 2; ++run) {
    EXPECT_EQ(be.execute(ectx, handle.get(), span), Error::Ok) << last_error_message();
  }
  be.destroy(handle.get());
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].bytes.empty()) continue;
    EXPECT_TRUE(args[i].guard_intact()) << "bytes written past argument " << i;
    if (i < region.inputs.size()) {
      EXPECT_EQ(args[i].bytes, before[i]) << "input argument " << i << " was written";
    } else {
      std::vector<float> out(args[i].data_bytes / sizeof(float));
      std::memcpy(out.data(), args[i].bytes.data(), args[i].data_bytes);
      outputs[ids[i]] = out;
    }
  }
  return outputs;
}

/// A constant f32 tensor of `sizes` with random values in [-scale, scale) from `seed`.
inline int constant(GraphBuilder& b, const std::string& name, std::vector<int64_t> sizes,
                    uint32_t seed, float scale = 0.5f) {
  const size_t n = numel(sizes);
  return b.constant_f32(name, std::move(sizes), random_floats(n, seed, -scale, scale));
}

/// The program of `b` with every node in one vulkan delegate of `storage` (empty, with a test
/// failure, when a node is not taken).
inline std::vector<uint8_t> whole_delegate_program(GraphBuilder& b, uint32_t storage) {
  for (size_t k = 0; k < b.num_nodes(); ++k) {
    const std::string why =
        compiler::VulkanBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[k]);
    if (!why.empty()) {
      ADD_FAILURE() << "node " << k << " (" << b.graph().nodes[k].op << "): " << why;
      return {};
    }
  }
  delegate_vulkan(b, 0, static_cast<int>(b.num_nodes()) - 1, storage);
  return testing::compile_graph(b.build());
}

}  // namespace tern::vulkan_test
