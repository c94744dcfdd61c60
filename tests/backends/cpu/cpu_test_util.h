// Helpers for the cpu backend tests: delegate a node range to "cpu" with a blob from
// CpuBackendCompiler::lower, run a program with the backend or its portable fallback, random
// inputs and NMSE.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/compile/cpu_backend_compiler.h"
#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "backends/cpu/runtime/register_cpu_backend.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"
#include "tests/support/backend_test_values.h"

namespace tern::cpu_test {

using test_support::AlignedBlob;
using test_support::all_finite;
using test_support::max_rel;
using test_support::nmse;
using test_support::numel;
using test_support::random_floats;

using compiler::GraphBuilder;

/// Byte offset of node i in `blob` (whose header and tables the compile half wrote).
inline size_t node_offset(const std::vector<uint8_t>& blob, uint32_t i) {
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  return sizeof(h) + h.num_values * sizeof(cpu::BlobValue) + i * sizeof(cpu::BlobNode);
}

/// Node i of `blob`.
inline cpu::BlobNode blob_node(const std::vector<uint8_t>& blob, uint32_t i) {
  cpu::BlobNode node;
  std::memcpy(&node, blob.data() + node_offset(blob, i), sizeof(node));
  return node;
}

/// The ops of `blob`'s nodes, in order.
inline std::vector<uint32_t> blob_ops(const std::vector<uint8_t>& blob) {
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  std::vector<uint32_t> ops;
  for (uint32_t i = 0; i < h.num_nodes; ++i) ops.push_back(blob_node(blob, i).op);
  return ops;
}

/// How many of `blob`'s nodes are `op`.
inline size_t count_op(const std::vector<uint8_t>& blob, cpu::NodeOp op) {
  const std::vector<uint32_t> ops = blob_ops(blob);
  return static_cast<size_t>(std::count(ops.begin(), ops.end(), static_cast<uint32_t>(op)));
}

/// The index of `blob`'s last node of `op` (the node count when none is).
inline uint32_t last_node_of(const std::vector<uint8_t>& blob, cpu::NodeOp op) {
  const std::vector<uint32_t> ops = blob_ops(blob);
  uint32_t at = static_cast<uint32_t>(ops.size());
  for (uint32_t k = 0; k < ops.size(); ++k) {
    if (ops[k] == static_cast<uint32_t>(op)) at = k;
  }
  return at;
}

/// parse_blob on a 64-byte-aligned copy of `blob`; *message: the error text, or "" when Ok.
inline Error parse(const std::vector<uint8_t>& blob, std::string* message) {
  AlignedBlob aligned(blob);
  cpu::BlobPlan plan;
  const Error e = cpu::parse_blob(Span<const uint8_t>(aligned.data(), blob.size()), &plan);
  *message = e == Error::Ok ? "" : last_error_message();
  cpu::free_blob_plan(&plan);
  return e;
}

/// A mutation of one blob node and what the reader's refusal must name.
struct NodeCase {
  const char* what;
  std::function<void(cpu::BlobNode&)> mutate;
  const char* expect;
};

/// Each mutation of node `index` of `blob` is refused as InvalidProgram naming `expect`.
inline void expect_refused(const std::vector<uint8_t>& blob, uint32_t index,
                           const std::vector<NodeCase>& cases) {
  std::string message;
  ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
  const cpu::BlobNode good = blob_node(blob, index);
  for (const NodeCase& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<uint8_t> bad = blob;
    cpu::BlobNode n = good;
    c.mutate(n);
    std::memcpy(bad.data() + node_offset(bad, index), &n, sizeof(n));
    EXPECT_EQ(parse(bad, &message), Error::InvalidProgram) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
}

/// Hands nodes [first, last] of `b` to "cpu" with the blob lowered by CpuBackendCompiler, with
/// `options` (the text after "cpu:", e.g. "winograd=f2") when not empty. Returns the region
/// index.
inline int delegate_cpu(GraphBuilder& b, int first, int last, const std::string& options = "") {
  const int index = b.delegate("cpu", first, last);
  compiler::DelegateRegion& region = b.graph().delegates[static_cast<size_t>(index)];
  const compiler::CpuBackendCompiler defaults;
  const std::unique_ptr<compiler::BackendCompiler> configured =
      options.empty() ? nullptr : defaults.with_options(options);
  const compiler::BackendCompiler& compiler =
      configured ? *configured : static_cast<const compiler::BackendCompiler&>(defaults);
  region.blob = compiler.lower(b.graph(), region).blob;
  return index;
}

/// The outputs of one run of method "forward" and how its delegate calls ran.
struct RunResult {
  std::vector<std::vector<float>> outputs;
  std::vector<DelegatePath> paths;
};

/// Loads `pte` (cpu backend registered; disabled for this load when `disable_cpu`), sets the
/// f32 inputs of `graph` from `inputs`, executes `runs` times and returns the outputs (and,
/// when `ms_per_run` is given, the mean wall time of one execute()).
inline RunResult run_program(const std::vector<uint8_t>& pte, const compiler::Graph& graph,
                             const std::vector<std::vector<float>>& inputs, bool disable_cpu,
                             int runs = 1, uint32_t num_threads = 0, double* ms_per_run = nullptr) {
  RunResult result;
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 8 * 1024 * 1024);
  const char* disabled[] = {"cpu"};
  MethodLoadOptions options;
  if (disable_cpu) options.disabled_backends = Span<const char* const>(disabled, 1);
  options.num_threads = num_threads;
  auto method = lp.program().load_method("forward", memory.manager(), options);
  EXPECT_TRUE(method.ok()) << last_error_message();
  if (!method.ok()) return result;
  std::vector<std::vector<int64_t>> sizes;
  std::vector<std::vector<float>> data = inputs;
  std::vector<std::vector<uint8_t>> bools(graph.inputs.size());
  std::vector<std::vector<int64_t>> ints(graph.inputs.size());
  std::vector<std::vector<int32_t>> ints32(graph.inputs.size());
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    sizes.push_back(graph.values[static_cast<size_t>(graph.inputs[i])].sizes);
  }
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    TensorView view = testing::f32_view(sizes[i], data[i]);
    if (graph.values[static_cast<size_t>(graph.inputs[i])].dtype == DType::Bool) {
      // A bool input (a where's condition): true where the random float is positive.
      for (float f : data[i]) bools[i].push_back(f > 0.0f ? 1 : 0);
      view.dtype = DType::Bool;
      view.data = bools[i].data();
      view.nbytes = bools[i].size();
    } else if (graph.values[static_cast<size_t>(graph.inputs[i])].dtype == DType::I64) {
      // An int64 input (a run-time index): the floats' integer values.
      for (float f : data[i]) ints[i].push_back(static_cast<int64_t>(f));
      view.dtype = DType::I64;
      view.data = ints[i].data();
      view.nbytes = ints[i].size() * sizeof(int64_t);
    } else if (graph.values[static_cast<size_t>(graph.inputs[i])].dtype == DType::I32) {
      // An int32 input (a grouped product's ends): the floats' integer values.
      for (float f : data[i]) ints32[i].push_back(static_cast<int32_t>(f));
      view.dtype = DType::I32;
      view.data = ints32[i].data();
      view.nbytes = ints32[i].size() * sizeof(int32_t);
    }
    EXPECT_EQ(method->set_input(i, view), Error::Ok) << last_error_message();
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < runs; ++r) {
    EXPECT_EQ(method->execute(), Error::Ok) << last_error_message();
  }
  const auto t1 = std::chrono::steady_clock::now();
  if (ms_per_run != nullptr) {
    *ms_per_run = std::chrono::duration<double, std::milli>(t1 - t0).count() / runs;
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

/// The delegate call's arguments for region 0 of `g`: constants bound to a copy of their graph
/// bytes (as a program binds its constants), inputs random, outputs zeros.
struct RegionArgs {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<std::vector<int64_t>> sizes;
  std::vector<TensorView> views;
  std::vector<EValue> values;
  std::vector<EValue*> ptrs;
  explicit RegionArgs(const compiler::Graph& g) {
    const compiler::DelegateRegion& r = g.delegates.at(0);
    std::vector<int> ids = r.inputs;
    ids.insert(ids.end(), r.outputs.begin(), r.outputs.end());
    bytes.resize(ids.size());
    sizes.resize(ids.size());
    views.resize(ids.size());
    values.resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      const compiler::Value& v = g.values[static_cast<size_t>(ids[i])];
      if (!v.is_tensor()) continue;
      sizes[i] = v.sizes;
      if (v.is_constant) {
        bytes[i] = v.data.to_vector();
      } else {
        const std::vector<float> f = random_floats(numel(v.sizes), 40 + static_cast<uint32_t>(i));
        bytes[i].assign(reinterpret_cast<const uint8_t*>(f.data()),
                        reinterpret_cast<const uint8_t*>(f.data() + f.size()));
        if (i >= r.inputs.size()) std::fill(bytes[i].begin(), bytes[i].end(), 0);
      }
      TensorView& t = views[i];
      t.dtype = v.dtype;
      t.rank = static_cast<uint32_t>(sizes[i].size());
      t.sizes = sizes[i].data();
      t.data = bytes[i].data();
      t.nbytes = bytes[i].size();
      t.name = v.name.c_str();
      values[i] = EValue::from_tensor(&t);
    }
    for (EValue& v : values) ptrs.push_back(&v);
  }
  Span<EValue*> span() { return Span<EValue*>(ptrs.data(), ptrs.size()); }
};

/// Registers the portable kernels and the cpu backend (idempotent).
inline void register_all() {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_EQ(register_cpu_backend(), Error::Ok) << last_error_message();
  ASSERT_TRUE(cpu_backend_interface().is_available());
}

}  // namespace tern::cpu_test
