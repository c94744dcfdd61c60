// The harness of the cpu backend's conformance tests (cpu_conformance_test.cpp,
// cpu_conformance_se_test.cpp): a case builds a graph whose every node the backend takes; the
// whole graph runs as one delegate and as its portable fallback on the same random inputs, and
// the outputs compare by NMSE under the case's threshold, are finite, and (driving the backend
// interface directly) nothing is written past an output or into an input (guard bytes).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {

struct OpCase {
  std::string name;
  /// Adds inputs, nodes and outputs; every node must be supported by the cpu backend.
  std::function<void(GraphBuilder&)> build;
  double threshold = 1e-10;
  /// The region must lower to a blob holding a PackedBottleneck node (op 21).
  bool bottleneck = false;
  /// Optional: more checks of the region's blob.
  std::function<void(const std::vector<uint8_t>& blob)> check_blob = nullptr;
  /// int64 / int32 inputs (run-time indices) hold integers in [0, index_bound) (repeats
  /// included).
  int64_t index_bound = 1;
  /// Integer inputs sorted ascending (a grouped product's running ends).
  bool sorted_ints = false;
  /// The cpu backend's compile options (the text after "cpu:"; empty: the defaults).
  std::string cpu_options = "";
};

inline std::vector<float> ramp(size_t n, uint32_t seed, float scale = 0.5f) {
  return random_floats(n, seed, -scale, scale);
}

/// A constant int64 tensor of `sizes` holding `values` (an index for gather / index_select).
inline int int64_constant(GraphBuilder& b, std::vector<int64_t> sizes,
                          const std::vector<int64_t>& values) {
  compiler::Value v;
  v.kind = compiler::Value::Kind::Tensor;
  v.dtype = DType::I64;
  v.sizes = std::move(sizes);
  v.is_constant = true;
  std::vector<uint8_t> bytes(values.size() * 8);
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  v.data = bytes;
  b.graph().values.push_back(v);
  return static_cast<int>(b.graph().values.size()) - 1;
}

inline int constant(GraphBuilder& b, const std::string& name, std::vector<int64_t> sizes,
                    uint32_t seed, float scale = 0.5f) {
  const size_t n = numel(sizes);
  return b.constant_f32(name, std::move(sizes), ramp(n, seed, scale));
}

/// A tensor-list value of `ids` (GraphBuilder has no helper for one).
inline int tensor_list(GraphBuilder& b, std::vector<int> ids) {
  compiler::Value v;
  v.kind = compiler::Value::Kind::TensorList;
  v.tensors = std::move(ids);
  b.graph().values.push_back(v);
  return static_cast<int>(b.graph().values.size()) - 1;
}

/// conv2d node over x (shape xs) with weight [o, c/groups, kh, kw].
inline int conv(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t o, int64_t kh,
                int64_t kw, std::vector<int64_t> stride, std::vector<int64_t> pad,
                std::vector<int64_t> dil, int64_t groups, bool bias, uint32_t seed) {
  const int w = constant(b, "w" + std::to_string(seed), {o, xs[1] / groups, kh, kw}, seed);
  const int bv = bias ? constant(b, "b" + std::to_string(seed), {o}, seed + 1) : b.none();
  const int64_t oh = (xs[2] + 2 * pad[0] - dil[0] * (kh - 1) - 1) / stride[0] + 1;
  const int64_t ow = (xs[3] + 2 * pad[1] - dil[1] * (kw - 1) - 1) / stride[1] + 1;
  return b.op("tern::conv2d",
              {x, w, bv, b.int_list(stride), b.int_list(pad), b.int_list(dil), b.int_value(groups)},
              DType::F32, {xs[0], o, oh, ow}, "conv" + std::to_string(seed));
}

/// A bottleneck stage activation on x (shape s): "relu", "relu6" (hardtanh 0..6) or
/// "hardswish".
inline int stage_act(GraphBuilder& b, const std::string& kind, int x,
                     const std::vector<int64_t>& s) {
  if (kind == "relu") return b.op("tern::relu", {x}, DType::F32, s);
  if (kind == "relu6") {
    return b.op("tern::hardtanh", {x, b.double_value(0.0), b.double_value(6.0)}, DType::F32, s);
  }
  return b.op("tern::hardswish", {x}, DType::F32, s);
}

constexpr uint32_t kBottleneckOp = static_cast<uint32_t>(cpu::NodeOp::PackedBottleneck);

inline OpCase unary(const std::string& name, const std::string& op, std::vector<int64_t> shape,
             std::function<std::vector<int>(GraphBuilder&)> attrs = nullptr) {
  return {name, [=](GraphBuilder& b) {
            const int x = b.input("x", DType::F32, shape);
            std::vector<int> args{x};
            if (attrs) {
              for (int a : attrs(b)) args.push_back(a);
            }
            b.output(b.op(op, args, DType::F32, shape));
          }};
}

/// One buffer per delegate call argument, with guard bytes after the data.
struct GuardedArg {
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kPattern = 0xA5;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> bytes;  ///< data + kGuard guard bytes
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

/// Drives the backend interface directly on `graph`'s region 0 with guarded buffers; returns
/// the region outputs (by value id) after checking guards and that inputs are untouched.
inline std::map<int, std::vector<float>> run_guarded(const compiler::Graph& graph,
                                              const std::map<int, std::vector<float>>& inputs) {
  const compiler::DelegateRegion& region = graph.delegates.at(0);
  const BackendInterface& be = cpu_backend_interface();
  BackendInitContext ictx;
  ictx.num_threads = 2;
  AlignedBlob blob(region.blob);  // as a 64-byte-aligned program segment would be
  auto handle = be.init(ictx, blob.buffer(), {});
  EXPECT_TRUE(handle.ok()) << last_error_message();
  std::map<int, std::vector<float>> outputs;
  if (!handle.ok()) return outputs;

  std::vector<int> ids = region.inputs;
  ids.insert(ids.end(), region.outputs.begin(), region.outputs.end());
  std::vector<GuardedArg> args(ids.size());
  std::vector<EValue*> arg_ptrs;
  for (size_t i = 0; i < ids.size(); ++i) {
    const compiler::Value& v = graph.values[static_cast<size_t>(ids[i])];
    GuardedArg& a = args[i];
    if (!v.is_tensor()) {
      a.value = EValue();
      arg_ptrs.push_back(&a.value);
      continue;
    }
    a.sizes = v.sizes;
    // Region inputs may be constants of other dtypes (a bool attention mask).
    uint64_t nbytes = 0;
    if (!dtype_nbytes(v.dtype, static_cast<uint64_t>(numel(v.sizes)), &nbytes)) {
      ADD_FAILURE() << "value " << ids[i] << " has no byte size";
      return outputs;
    }
    a.data_bytes = static_cast<size_t>(nbytes);
    a.bytes.assign(a.data_bytes + GuardedArg::kGuard, GuardedArg::kPattern);
    const bool is_output = i >= region.inputs.size();
    if (v.is_constant) {
      std::memcpy(a.bytes.data(), v.data.data(), a.data_bytes);
    } else if (!is_output && v.dtype == DType::Bool) {  // as run_program: true where > 0
      const std::vector<float>& in = inputs.at(ids[i]);
      for (size_t k = 0; k < a.data_bytes; ++k) a.bytes[k] = in[k] > 0.0f ? 1 : 0;
    } else if (!is_output && v.dtype == DType::I64) {  // as run_program: the floats' integers
      const std::vector<float>& in = inputs.at(ids[i]);
      for (size_t k = 0; k < in.size(); ++k) {
        const int64_t x = static_cast<int64_t>(in[k]);
        std::memcpy(a.bytes.data() + 8 * k, &x, 8);
      }
    } else if (!is_output && v.dtype == DType::I32) {
      const std::vector<float>& in = inputs.at(ids[i]);
      for (size_t k = 0; k < in.size(); ++k) {
        const int32_t x = static_cast<int32_t>(in[k]);
        std::memcpy(a.bytes.data() + 4 * k, &x, 4);
      }
    } else if (!is_output) {
      const std::vector<float>& in = inputs.at(ids[i]);
      std::memcpy(a.bytes.data(), in.data(), a.data_bytes);
    }
    a.view.dtype = v.dtype;
    a.view.rank = static_cast<uint32_t>(a.sizes.size());
    a.view.sizes = a.sizes.data();
    a.view.data = a.bytes.data();
    a.view.nbytes = a.data_bytes;
    a.value = EValue::from_tensor(&a.view);
    arg_ptrs.push_back(&a.value);
  }
  // Snapshot the inputs to check the delegate never writes them.
  std::vector<std::vector<uint8_t>> before;
  for (const GuardedArg& a : args) before.push_back(a.bytes);
  Span<EValue*> span(arg_ptrs.data(), arg_ptrs.size());
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

/// Runs `tc` as a delegate (through a program and driving the backend interface directly with
/// guarded buffers) and as its portable fallback: the outputs match within tc.threshold (NMSE).
inline void check_matches_portable(const OpCase& tc) {
  GraphBuilder b;
  tc.build(b);
  for (size_t n = 0; n < b.num_nodes(); ++n) {
    ASSERT_EQ(compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[n]), "")
        << "node " << n;
  }
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1, tc.cpu_options);
  const compiler::Graph graph = b.build();
  if (tc.bottleneck) {
    const std::vector<uint32_t> ops = blob_ops(graph.delegates.at(0).blob);
    EXPECT_NE(std::find(ops.begin(), ops.end(), kBottleneckOp), ops.end())
        << "no PackedBottleneck node in the blob";
  }
  if (tc.check_blob) tc.check_blob(graph.delegates.at(0).blob);
  const std::vector<uint8_t> pte = testing::compile_graph(graph);

  std::vector<std::vector<float>> inputs;
  std::map<int, std::vector<float>> inputs_by_id;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const auto& v = graph.values[static_cast<size_t>(graph.inputs[i])];
    inputs.push_back(random_floats(numel(v.sizes), 1000 + static_cast<uint32_t>(i)));
    if (v.dtype == DType::I64 || v.dtype == DType::I32) {  // integers in [0, index_bound)
      for (float& f : inputs.back()) {
        f = static_cast<float>(static_cast<int64_t>(std::fabs(f) * 7919.0f) % tc.index_bound);
      }
      if (tc.sorted_ints) std::sort(inputs.back().begin(), inputs.back().end());
    }
    inputs_by_id[graph.inputs[i]] = inputs.back();
  }
  const RunResult delegated = run_program(pte, graph, inputs, /*disable_cpu=*/false);
  const RunResult portable = run_program(pte, graph, inputs, /*disable_cpu=*/true);
  ASSERT_EQ(delegated.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(portable.paths, std::vector<DelegatePath>{DelegatePath::Fallback});
  ASSERT_EQ(delegated.outputs.size(), graph.outputs.size());
  ASSERT_EQ(portable.outputs.size(), graph.outputs.size());
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    EXPECT_TRUE(all_finite(delegated.outputs[i])) << "output " << i;
    const double e = nmse(delegated.outputs[i], portable.outputs[i]);
    EXPECT_LE(e, tc.threshold) << "output " << i << " NMSE " << e;
  }

  const std::map<int, std::vector<float>> guarded = run_guarded(graph, inputs_by_id);
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    auto it = guarded.find(graph.outputs[i]);
    ASSERT_NE(it, guarded.end());
    const double e = nmse(it->second, portable.outputs[i]);
    EXPECT_LE(e, tc.threshold) << "guarded run, output " << i << " NMSE " << e;
  }
}

/// A parameterised suite `Suite` over the OpCases `cases_expr` gives: each case, run through the
/// cpu backend, must match the portable kernels (check_matches_portable); tests are named after
/// the cases.
#define TERN_CPU_CONFORMANCE_SUITE(Suite, cases_expr)                                      \
  class Suite : public ::testing::TestWithParam<OpCase> {                                  \
   protected:                                                                              \
    void SetUp() override { register_all(); }                                              \
  };                                                                                       \
  TEST_P(Suite, MatchesPortable) { check_matches_portable(GetParam()); }                   \
  INSTANTIATE_TEST_SUITE_P(Ops, Suite, ::testing::ValuesIn(cases_expr),                    \
                           [](const ::testing::TestParamInfo<OpCase>& info) {              \
                             return info.param.name;                                       \
                           })

}  // namespace tern::cpu_test
