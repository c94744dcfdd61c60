// A mixture of experts' products on the cuda backend (blob version 5): x -> grouped_mm(w1
// [4, 40, 24]) -> relu -> grouped_mm(w2 [4, 24, n]) with the group ends an int32 / int64 input
// of the region (the routing runs outside it).
//
// Host-only (run everywhere, CI included): the partition is one cuda region of GroupedMatmul
// nodes (f32 and f16 compute) or, after the quantization pass, QuantGroupedLinear nodes (f32
// blobs; a 16-bit blob leaves quantized experts to the portable kernels, saying why); the blobs
// parse; the reader refuses ends of the wrong type or count and inconsistent shapes, naming
// them; the host's check of the ends (check_group_ends_args) names a bad end as the portable
// kernels do.
// With a CUDA device (else skipped with the reason): the delegate equals the program's portable
// fallback (f32 and quantized within 1e-5 relative, f16 by NMSE) for several routings in a row
// (the captured CUDA graph replays for any ends), rows after the last end are zeros, and bad
// ends fail the execute with InvalidArgument naming the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/runtime/blob_reader.h"
#include "backends/cuda/runtime/group_ends_check.h"
#include "tests/backends/cuda/cuda_test_util.h"
#include "tests/support/moe_mlp.h"
#include "tools/compiler/partitioner.h"
#include "tools/compiler/quantize.h"

namespace tern::cuda_test {
namespace {

using cuda::NodeOp;

constexpr int64_t kRows = 21, kExperts = 4, kDim = 40, kHidden = 24;

compiler::Graph moe(DType ends, int64_t n2) {
  return test_support::moe_mlp({kRows, kExperts, kDim, kHidden, n2}, ends, 1.5f);
}

compiler::Graph quantized(compiler::Graph g, const char* scheme) {
  compiler::ProgramGraph program;
  program.methods.push_back(std::move(g));
  compiler::QuantizeOptions options;
  options.scheme = compiler::parse_quant_scheme(scheme);
  EXPECT_EQ(compiler::quantize_program(program, options).weights.size(), 2u) << scheme;
  return program.methods[0];
}

/// The blob of the single cuda region of `g` (partitioned for `backend`).
std::vector<uint8_t> region_blob(compiler::Graph g, const std::string& backend,
                                 cuda::ComputeDType compute) {
  compiler::partition(g, {backend});
  EXPECT_EQ(g.delegates.size(), 1u);
  if (g.delegates.size() != 1) return {};
  EXPECT_EQ(g.delegates[0].nodes.size(), g.nodes.size()) << "one region of every node";
  return compiler::CudaBackendCompiler(compute).lower(g, g.delegates[0]).blob;
}

struct Plan {
  cuda::BlobPlan plan;
  Error error = Error::Ok;
  explicit Plan(const std::vector<uint8_t>& blob) {
    AlignedBlob a(blob);
    error = cuda::parse_blob(
        Span<const uint8_t>(static_cast<const uint8_t*>(a.buffer().data()), blob.size()), &plan);
  }
  ~Plan() { cuda::free_blob_plan(&plan); }
  size_t count(NodeOp op) const {
    size_t c = 0;
    for (uint32_t i = 0; error == Error::Ok && i < plan.header.num_nodes; ++i) {
      c += plan.nodes[i].op == static_cast<uint32_t>(op);
    }
    return c;
  }
};

template <typename T>
std::vector<uint8_t> patched(std::vector<uint8_t> blob, size_t offset, T value) {
  std::memcpy(blob.data() + offset, &value, sizeof(T));
  return blob;
}

size_t node_offset(const std::vector<uint8_t>& blob, uint32_t i) {
  cuda::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  return sizeof(h) + h.num_values * sizeof(cuda::BlobValue) + i * sizeof(cuda::BlobNode);
}

TEST(CudaGroupedHost, F32ExpertsAreOneRegionOfGroupedMatmul) {
  register_all();
  for (DType ends : {DType::I32, DType::I64}) {
    for (cuda::ComputeDType compute : {cuda::ComputeDType::F32, cuda::ComputeDType::F16}) {
      const std::string backend = compute == cuda::ComputeDType::F32 ? "cuda" : "cuda:f16";
      const Plan p(region_blob(moe(ends, 33), backend, compute));
      ASSERT_EQ(p.error, Error::Ok) << last_error_message();
      EXPECT_EQ(p.count(NodeOp::GroupedMatmul), 2u) << backend;
      uint32_t first = 0;
      while (p.plan.nodes[first].op != static_cast<uint32_t>(NodeOp::GroupedMatmul)) ++first;
      const cuda::BlobValue& e = p.plan.values[p.plan.nodes[first].inputs[2]];
      EXPECT_EQ(e.kind, static_cast<uint32_t>(cuda::ValueKind::ExternalInput));
      EXPECT_EQ(e.dtype, static_cast<uint32_t>(ends == DType::I32 ? cuda::ValueDType::I32
                                                                  : cuda::ValueDType::I64));
    }
  }
}

TEST(CudaGroupedHost, QuantizedExpertsAreQuantGroupedLinearInF32BlobsOnly) {
  register_all();
  for (const char* scheme : {"nf4", "nf4:block=32:double", "fp8_e4m3", "fp8_e5m2:block=8x8"}) {
    const compiler::Graph g = quantized(moe(DType::I32, 32), scheme);
    const Plan p(region_blob(g, "cuda", cuda::ComputeDType::F32));
    ASSERT_EQ(p.error, Error::Ok) << scheme << ": " << last_error_message();
    EXPECT_EQ(p.count(NodeOp::QuantGroupedLinear), 2u) << scheme;
    const std::string why =
        compiler::CudaBackendCompiler::unsupported_reason(g, g.nodes[0], cuda::ComputeDType::F16);
    EXPECT_NE(why.find("a quantized (nf4/fp8) weight in a 16-bit blob"), std::string::npos) << why;
  }
}

TEST(CudaGroupedHost, ReaderRefusesInconsistentGroupedNodes) {
  register_all();
  const std::vector<uint8_t> f32 = region_blob(moe(DType::I64, 32), "cuda", cuda::ComputeDType::F32);
  const std::vector<uint8_t> q =
      region_blob(quantized(moe(DType::I64, 32), "nf4"), "cuda", cuda::ComputeDType::F32);
  uint32_t x_f32 = 0, x_q = 0, node_f32 = 0, node_q = 0;
  {
    const Plan a(f32), b(q);
    ASSERT_EQ(a.error, Error::Ok);
    ASSERT_EQ(b.error, Error::Ok);
    for (uint32_t i = 0; i < a.plan.header.num_nodes; ++i) {
      if (a.plan.nodes[i].op == static_cast<uint32_t>(NodeOp::GroupedMatmul)) node_f32 = i;
    }
    for (uint32_t i = 0; i < b.plan.header.num_nodes; ++i) {
      if (b.plan.nodes[i].op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear)) node_q = i;
    }
    x_f32 = a.plan.nodes[node_f32].inputs[0];
    x_q = b.plan.nodes[node_q].inputs[0];
  }
  const size_t inputs_f32 = node_offset(f32, node_f32) + offsetof(cuda::BlobNode, inputs);
  const size_t params_f32 = node_offset(f32, node_f32) + offsetof(cuda::BlobNode, params);
  const size_t inputs_q = node_offset(q, node_q) + offsetof(cuda::BlobNode, inputs);
  const size_t params_q = node_offset(q, node_q) + offsetof(cuda::BlobNode, params);
  struct Bad {
    std::vector<uint8_t> bytes;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {patched<uint32_t>(f32, inputs_f32 + 8, x_f32), "the group ends must be a 1-D i64 or i32"},
      {patched<uint32_t>(f32, inputs_f32 + 4, x_f32), "x must be [S, K], w [E, K, N]"},
      {patched<int64_t>(f32, params_f32, 1), "params[0] = 1, expected 0"},
      {patched<uint32_t>(q, inputs_q + 8, x_q), "the group ends must be a 1-D i64 or i32"},
      {patched<int64_t>(q, params_q + 8, 31), "expected a quantized weight [124, "},
      {patched<int64_t>(q, params_q, 20), "x is not [S, K]"},
      {patched<int64_t>(q, params_q + 16, 41), "expected a quantized weight"},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    clear_error_message();
    AlignedBlob a(bad[i].bytes);
    cuda::BlobPlan plan;
    EXPECT_EQ(cuda::parse_blob(Span<const uint8_t>(static_cast<const uint8_t*>(a.buffer().data()),
                                                   bad[i].bytes.size()),
                               &plan),
              Error::InvalidProgram)
        << "case " << i;
    cuda::free_blob_plan(&plan);
    EXPECT_NE(std::string(last_error_message()).find(bad[i].message), std::string::npos)
        << "case " << i << ": " << last_error_message();
  }
}

/// The delegate call's arguments for a plan: x and ends where the blob reads them.
struct Args {
  std::vector<float> x = random_floats(kRows * kDim, 7);
  std::vector<int64_t> xsizes{kRows, kDim}, esizes{kExperts};
  std::vector<int32_t> ends;
  std::vector<TensorView> views;
  std::vector<EValue> values;
  std::vector<EValue*> ptrs;
  Args(const cuda::BlobPlan& plan, std::vector<int32_t> e) : ends(std::move(e)) {
    views.resize(plan.header.num_args);
    values.resize(plan.header.num_args);
    for (uint32_t i = 0; i < plan.header.num_values; ++i) {
      const cuda::BlobValue& v = plan.values[i];
      if (v.kind != static_cast<uint32_t>(cuda::ValueKind::ExternalInput)) continue;
      TensorView& t = views[v.arg];
      const bool is_ends = v.dtype == static_cast<uint32_t>(cuda::ValueDType::I32);
      t.dtype = is_ends ? DType::I32 : DType::F32;
      t.rank = v.rank;
      t.sizes = is_ends ? esizes.data() : xsizes.data();
      t.data = is_ends ? static_cast<void*>(ends.data()) : x.data();
      t.nbytes = is_ends ? ends.size() * 4 : x.size() * 4;
      values[v.arg] = EValue::from_tensor(&t);
    }
    for (EValue& v : values) ptrs.push_back(&v);
  }
  Span<EValue*> span() { return Span<EValue*>(ptrs.data(), ptrs.size()); }
};

TEST(CudaGroupedHost, TheHostCheckNamesABadEnd) {
  register_all();
  const Plan p(region_blob(moe(DType::I32, 32), "cuda", cuda::ComputeDType::F32));
  ASSERT_EQ(p.error, Error::Ok);
  for (const std::vector<int32_t>& good : {std::vector<int32_t>{0, 5, 5, 11},
                                           std::vector<int32_t>{0, 0, 0, 21}}) {
    Args a(p.plan, good);
    EXPECT_EQ(cuda::check_group_ends_args(p.plan, a.span()), Error::Ok) << last_error_message();
  }
  struct Bad {
    std::vector<int32_t> ends;
    const char* message;
  };
  for (const Bad& b : {Bad{{3, 2, 5, 21}, "ends[1] is 2, expected 3..21"},
                       Bad{{0, 5, 9, 22}, "ends[3] is 22, expected 9..21"},
                       Bad{{-1, 5, 9, 21}, "ends[0] is -1, expected 0..21"}}) {
    Args a(p.plan, b.ends);
    EXPECT_EQ(cuda::check_group_ends_args(p.plan, a.span()), Error::InvalidArgument);
    EXPECT_NE(std::string(last_error_message()).find(b.message), std::string::npos)
        << last_error_message();
  }
}

// ---- on a device ----

using Outputs = test_support::MoeRun;

/// Loads `bytes` once and runs forward for each routing in `routings` (the same loaded method:
/// the first execute captures the CUDA graph, the others replay it).
std::vector<Outputs> run(const std::vector<uint8_t>& bytes, DType ends_dtype,
                         const std::vector<std::vector<int64_t>>& routings, bool disable) {
  return test_support::run_moe(bytes, {kRows, kExperts, kDim, kHidden, 0}, ends_dtype, routings,
                               disable ? "cuda" : nullptr);
}

void check_on_device(const compiler::Graph& graph, const std::string& backend, DType ends_dtype,
                     int64_t n, double rel, double nmse_max, const std::string& what) {
  compiler::ProgramGraph program;
  program.methods.push_back(graph);
  compiler::CompileOptions options;
  options.backends = {backend};
  const compiler::CompileResult pte = compiler::compile_program(program, options);
  ASSERT_EQ(pte.methods[0].num_delegates, 1u) << what;
  const std::vector<std::vector<int64_t>> routings = {
      {0, 5, 5, 11}, {2, 4, 19, 21}, {0, 0, 0, 21}, {3, 2, 5, 21}, {21, 21, 21, 21}};
  const std::vector<Outputs> gpu = run(pte.bytes, ends_dtype, routings, false);
  const std::vector<Outputs> portable = run(pte.bytes, ends_dtype, routings, true);
  ASSERT_EQ(gpu.size(), routings.size());
  ASSERT_EQ(portable.size(), routings.size());
  for (size_t r = 0; r < routings.size(); ++r) {
    if (routings[r][0] == 3) {  // backwards ends
      EXPECT_EQ(gpu[r].error, Error::InvalidArgument) << what;
      EXPECT_NE(gpu[r].message.find("ends[1] is 2, expected 3..21"), std::string::npos)
          << what << ": " << gpu[r].message;
      continue;
    }
    ASSERT_EQ(gpu[r].error, Error::Ok) << what << ": " << gpu[r].message;
    ASSERT_EQ(portable[r].error, Error::Ok) << portable[r].message;
    ASSERT_EQ(gpu[r].paths, std::vector<DelegatePath>{DelegatePath::Backend}) << what;
    if (rel > 0) {
      EXPECT_LE(max_rel(gpu[r].y, portable[r].y), rel) << what << " routing " << r;
    } else {
      EXPECT_LE(nmse(gpu[r].y, portable[r].y), nmse_max) << what << " routing " << r;
    }
    for (int64_t i = routings[r].back() * n; i < kRows * n; ++i) {
      ASSERT_EQ(gpu[r].y[static_cast<size_t>(i)], 0.0f) << what << ": a row after the last end";
    }
  }
}

TEST(CudaGroupedDevice, F32ExpertsMatchPortable) {
  TERN_SKIP_WITHOUT_CUDA_DEVICE();
  register_all();
  check_on_device(moe(DType::I32, 33), "cuda", DType::I32, 33, 1e-5, 0, "f32, i32 ends");
  check_on_device(moe(DType::I64, 33), "cuda", DType::I64, 33, 1e-5, 0, "f32, i64 ends");
  check_on_device(moe(DType::I64, 33), "cuda:f16", DType::I64, 33, 0, 1e-5, "f16, i64 ends");
}

TEST(CudaGroupedDevice, QuantizedExpertsMatchPortable) {
  TERN_SKIP_WITHOUT_CUDA_DEVICE();
  register_all();
  for (const char* scheme : {"nf4:block=32", "nf4", "nf4:block=32:double", "fp8_e4m3",
                             "fp8_e4m3:per_tensor", "fp8_e4m3:block=16x8", "fp8_e5m2"}) {
    // 20-row experts where the scheme allows (blocks / scales straddle experts), else 32.
    const int64_t n2 = std::string(scheme) == "nf4:block=32" ? 20 : 32;
    check_on_device(quantized(moe(DType::I32, n2), scheme), "cuda", DType::I32, n2, 1e-5, 0,
                    scheme);
  }
}

}  // namespace
}  // namespace tern::cuda_test
