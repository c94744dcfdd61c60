// Shared by the cpu blob tests (cpu_blob_test.cpp: the blob format and its defence against bad
// blobs and arguments; cpu_blob_lowering_test.cpp: which nodes the compile half writes): small
// delegated models and their blobs, the arguments of their delegate calls, and a run of a blob
// that returns its first error.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "backends/cpu/runtime/stage_plan.h"
#include "backends/cpu/weights/weight_recipe.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {

using compiler::CpuBackendCompiler;

/// x [1, 4, 6, 6] -> conv3x3 (pad 1) -> relu -> add x; region = all three nodes.
inline GraphBuilder small_model() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 4, 6, 6});
  const int w = b.constant_f32("w", {4, 4, 3, 3}, random_floats(144, 3, -0.3f, 0.3f));
  const int bias = b.constant_f32("b", {4}, {0.1f, -0.2f, 0.3f, -0.4f});
  const int c =
      b.op("tern::conv2d",
           {x, w, bias, b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(1)},
           DType::F32, {1, 4, 6, 6}, "conv");
  const int r = b.op("tern::relu", {c}, DType::F32, {1, 4, 6, 6}, "relu");
  b.output(b.op("tern::add", {r, x}, DType::F32, {1, 4, 6, 6}, "residual"));
  return b;
}

inline std::vector<uint8_t> small_blob(compiler::Graph* graph_out = nullptr) {
  GraphBuilder b = small_model();
  delegate_cpu(b, 0, 2);
  if (graph_out) *graph_out = b.build();
  return b.graph().delegates[0].blob;
}

/// Arguments for the small model's delegate call: x, w, b, 3 lists, groups (inputs), out.
/// The constants (w, b) are bound by bind_constants, from the graph (the weights the delegate
/// packs at prepare); without them the arguments are empty.
struct SmallArgs {
  std::vector<int64_t> sizes{1, 4, 6, 6};
  std::vector<float> x = random_floats(144, 9);
  std::vector<float> out = std::vector<float>(144);
  TensorView xv, ov;
  std::vector<EValue> values;
  std::vector<EValue*> ptrs;
  std::vector<TensorView> constant_views;
  explicit SmallArgs(size_t num_args) {
    xv = testing::f32_view(sizes, x);
    ov = testing::f32_view(sizes, out);
    values.resize(num_args);
    values[0] = EValue::from_tensor(&xv);
    values[num_args - 1] = EValue::from_tensor(&ov);
    for (EValue& v : values) ptrs.push_back(&v);
  }
  /// Binds every constant tensor input of `g`'s region 0 to its graph bytes, as a program binds
  /// its constants.
  void bind_constants(const compiler::Graph& g) {
    const compiler::DelegateRegion& r = g.delegates.at(0);
    constant_views.resize(r.inputs.size());
    for (size_t i = 0; i < r.inputs.size() && i < values.size(); ++i) {
      const compiler::Value& v = g.values[static_cast<size_t>(r.inputs[i])];
      if (!v.is_tensor() || !v.is_constant) continue;
      TensorView& t = constant_views[i];
      t.dtype = v.dtype;
      t.rank = static_cast<uint32_t>(v.sizes.size());
      t.sizes = v.sizes.data();
      t.data = const_cast<uint8_t*>(v.data.data());
      t.nbytes = v.data.size();
      t.name = v.name.c_str();
      values[i] = EValue::from_tensor(&t);
    }
  }
  Span<EValue*> span() { return Span<EValue*>(ptrs.data(), ptrs.size()); }
};

/// Arguments for bottleneck_blob()'s delegate call: x [1, 16, 12, 12] first, out (same dims)
/// last, the others (constants and lists the backend does not read) empty.
struct BottleneckArgs : SmallArgs {
  explicit BottleneckArgs(size_t num_args) : SmallArgs(num_args) {
    sizes = {1, 16, 12, 12};
    x = random_floats(2304, 9);
    out.assign(2304, 0.0f);
    xv = testing::f32_view(sizes, x);
    ov = testing::f32_view(sizes, out);
    values[0] = EValue::from_tensor(&xv);
    values[num_args - 1] = EValue::from_tensor(&ov);
  }
};

/// init (+ prepare + execute when init succeeds) on `blob`, the constants of `g` (when given)
/// bound; returns the first error.
template <typename Args = SmallArgs>
Error try_blob(const std::vector<uint8_t>& blob, size_t num_args, std::string* message,
               const compiler::Graph* g = nullptr) {
  const BackendInterface& be = cpu_backend_interface();
  BackendInitContext ctx;
  ctx.num_threads = 1;
  AlignedBlob store(blob);
  auto h = be.init(ctx, store.buffer(), {});
  if (!h.ok()) {
    *message = last_error_message();
    return h.error();
  }
  Args args(num_args);
  if (g != nullptr) args.bind_constants(*g);
  Error e = be.prepare(h.get(), args.span());
  if (e == Error::Ok) {
    BackendExecuteContext ectx;
    e = be.execute(ectx, h.get(), args.span());
  }
  *message = e == Error::Ok ? "" : last_error_message();
  be.destroy(h.get());
  return e;
}

class CpuBlobTest : public ::testing::Test {
 protected:
  void SetUp() override { register_all(); }
};

/// Overwrites node i of `blob` with `node`.
inline void set_blob_node(std::vector<uint8_t>* blob, uint32_t i, const cpu::BlobNode& node) {
  std::memcpy(blob->data() + node_offset(*blob, i), &node, sizeof(node));
}

/// What parse_blob says of `blob`: its error, and its message in *message.
inline Error parse_result(const std::vector<uint8_t>& blob, std::string* message) {
  cpu::BlobPlan plan;
  const Error e = cpu::parse_blob(Span<const uint8_t>(blob.data(), blob.size()), &plan);
  *message = last_error_message();
  cpu::free_blob_plan(&plan);
  return e;
}


/// x [400, 20] -> linear (w [18, 20], bias) -> relu; the region is both nodes. (400 rows: a
/// product this size is not "tiny", so tern's GEMM takes it.)
inline std::vector<uint8_t> linear_blob(compiler::Graph* graph_out) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {400, 20});
  const int w = b.constant_f32("w", {18, 20}, random_floats(360, 5, -1.0f, 1.0f));
  const int bias = b.constant_f32("b", {18}, random_floats(18, 6, -1.0f, 1.0f));
  const int h = b.op("tern::linear", {x, w, bias}, DType::F32, {400, 18}, "fc");
  b.output(b.op("tern::relu", {h}, DType::F32, {400, 18}, "relu"));
  delegate_cpu(b, 0, 1);
  *graph_out = b.build();
  return graph_out->delegates[0].blob;
}

inline float f32_at(const std::vector<float>& v, size_t i) { return v[i]; }

/// The ops of the nodes of `b`'s only delegate blob.
inline std::vector<uint32_t> blob_ops(GraphBuilder& b) {
  return cpu_test::blob_ops(b.graph().delegates[0].blob);
}

/// x [1, 16, 12, 12] -> 1x1 16->64 + bias -> relu6 -> dw 3x3 pad 1 -> relu6 -> 1x1 64->16 -> +x
/// (MobileNetV2's block): one PackedBottleneck node. The graph (its constants the arguments) in
/// *graph_out when given.
inline std::vector<uint8_t> bottleneck_blob(compiler::Graph* graph_out = nullptr) {
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 16, 12, 12}, hs{1, 64, 12, 12};
  const int x = b.input("x", DType::F32, xs);
  const auto conv = [&](int in, int64_t o, int64_t i, int64_t k, int64_t groups, uint32_t seed) {
    const int w = b.constant_f32("w" + std::to_string(seed), {o, i, k, k},
                                 random_floats(size_t(o * i * k * k), seed, -0.3f, 0.3f));
    const int bias = b.constant_f32("b" + std::to_string(seed), {o},
                                    random_floats(size_t(o), seed + 1, -0.3f, 0.3f));
    return b.op("tern::conv2d",
                {in, w, bias, b.int_list({1, 1}), b.int_list({k / 2, k / 2}), b.int_list({1, 1}),
                 b.int_value(groups)},
                DType::F32, {1, o, 12, 12});
  };
  const auto relu6 = [&](int in, const std::vector<int64_t>& s) {
    return b.op("tern::hardtanh", {in, b.double_value(0.0), b.double_value(6.0)}, DType::F32, s);
  };
  const int e = relu6(conv(x, 64, 16, 1, 1, 31), hs);
  const int d = relu6(conv(e, 64, 1, 3, 64, 33), hs);
  const int p = conv(d, 16, 64, 1, 1, 35);
  b.output(b.op("tern::add", {p, x}, DType::F32, xs));
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  if (graph_out != nullptr) *graph_out = b.graph();
  return b.graph().delegates[0].blob;
}

}  // namespace tern::cpu_test
