// Quantized (nf4 / fp8) weights on the cuda backend. An MLP with an embedding (the vulkan
// quant test's model, tests/support/quant_mlp.h: odd element counts, partial NF4 blocks, double quantization over two
// absmax2 groups, FP8 per tensor / per channel / 2-D tiles with partial tiles) quantized by the
// compiler's pass for every scheme.
//
// Host-only (run everywhere, CI included):
// - the kernels' decoding (backends/cuda/kernels/quant_decode.h, compiled here by the host
//   compiler) of each weight's device buffer, element by element and eight at a time, equals
//   the portable kernels' dequantization (runtime/kernels/util/quant_formats.h) bit for bit;
// - the partition is one cuda region of QuantEmbedding + 3 QuantLinear, the blob parses, its
//   quantized constants are QuantLayout-sized; the reader refuses inconsistent schemes and sizes
//   naming expected and found; 16-bit blobs leave quantized weights to portable, saying why.
// With a CUDA device (else skipped with the reason): the delegate's outputs equal the same
// program's portable fallback within 1e-5 relative (the embedding bit for bit), and an index out
// of range is a clean InvalidArgument.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/compile/node_lowering.h"
#include "backends/cuda/compile/quant_lowering.h"
#include "backends/cuda/kernels/quant_decode.h"
#include "backends/cuda/runtime/blob_reader.h"
#include "runtime/kernels/util/quant_formats.h"
#include "tests/backends/cuda/cuda_test_util.h"
#include "tests/support/quant_mlp.h"
#include "tools/compiler/partitioner.h"
#include "tools/compiler/quant_weight_scheme.h"
#include "tools/compiler/quantize.h"

namespace tern::cuda_test {
namespace {

constexpr int64_t kVocab = test_support::kQuantVocab, kDim = test_support::kQuantDim,
                  kRows = test_support::kQuantRows;
// x2 [2, 48] -> linear 33: K a multiple of 8 (the GEMV's 8-wide decode).
constexpr int64_t kWide = 48, kWideOut = 33, kWideRows = 2;

const char* const kSchemes[] = {"nf4:block=32",        "nf4",                  "nf4:block=128",
                                "nf4:block=32:double", "nf4:block=128:double", "fp8_e4m3",
                                "fp8_e4m3:per_tensor", "fp8_e4m3:block=16x8",  "fp8_e4m3:block=8x5",
                                "fp8_e5m2",            "fp8_e5m2:per_tensor",  "fp8_e5m2:block=8x16"};

/// The GPU quant tests' model (tests/support/quant_mlp.h: outputs the embedding, y, v) plus
/// x2 [2, 48] -> linear 33 (a GEMV with K % 8 == 0): output z.
compiler::Graph mlp() {
  GraphBuilder g;
  test_support::add_quant_mlp(g);
  const int x2 = g.input("x2", DType::F32, {kWideRows, kWide});
  const int w3 = g.constant_f32("fc3.weight", {kWideOut, kWide},
                                random_floats(kWideOut * kWide, 5, -0.25f, 0.25f));
  g.output(g.op("tern::linear", {x2, w3, g.none()}, DType::F32, {kWideRows, kWideOut}));
  return g.build();
}

/// The mlp with its weights quantized by `scheme`.
compiler::Graph quantized_mlp(const char* scheme) {
  compiler::ProgramGraph program;
  program.methods.push_back(mlp());
  compiler::QuantizeOptions options;
  options.scheme = compiler::parse_quant_scheme(scheme);
  EXPECT_EQ(compiler::quantize_program(program, options).weights.size(), 4u);
  return program.methods[0];
}

/// Graph value `id` (a tensor of f32 / u8 parameters, or -1) as a pointer to its bytes.
template <typename T>
const T* param_ptr(const compiler::Graph& g, int id) {
  return id < 0 ? nullptr : reinterpret_cast<const T*>(g.values[static_cast<size_t>(id)].data.data());
}

/// The portable view of quantized constant `id` (what Method loading resolves).
struct PortableWeight {
  QuantView quant;
  std::vector<int64_t> sizes;
  TensorView view;
};

PortableWeight portable_weight(const compiler::Graph& g, int id) {
  const compiler::Value& w = g.values[static_cast<size_t>(id)];
  PortableWeight p;
  const compiler::QuantSpec& q = w.quant;
  p.quant.scheme = static_cast<QuantView::Scheme>(q.scheme);
  p.quant.block_size = q.block_size;
  p.quant.absmax = param_ptr<float>(g, q.absmax);
  p.quant.dq_codes = param_ptr<uint8_t>(g, q.dq_codes);
  p.quant.dq_absmax2 = param_ptr<float>(g, q.dq_absmax2);
  p.quant.dq_table = param_ptr<float>(g, q.dq_table);
  p.quant.dq_offset = q.dq_offset;
  p.quant.dq_block_size = q.dq_block_size;
  p.quant.scale = param_ptr<float>(g, q.scale);
  p.quant.granularity = static_cast<QuantView::Granularity>(q.granularity);
  p.quant.block_rows = q.block_rows;
  p.quant.block_cols = q.block_cols;
  p.sizes = w.sizes;
  p.view.dtype = w.dtype;
  p.view.rank = static_cast<uint32_t>(p.sizes.size());
  p.view.sizes = p.sizes.data();
  p.view.data = const_cast<uint8_t*>(w.data.data());
  p.view.nbytes = w.data.size();
  p.view.quant = &p.quant;
  return p;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

class CudaQuantHost : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { register_all(); }
};

TEST_P(CudaQuantHost, KernelDecodingEqualsThePortableDequantization) {
  const compiler::Graph g = quantized_mlp(GetParam());
  int checked = 0, wide = 0;
  for (const compiler::Node& node : g.nodes) {
    if (node.op != "tern::linear" && node.op != "tern::embedding") continue;
    const int w_id = node.args[node.op == "tern::linear" ? 1 : 0];
    // The node params the compile half writes, and the buffer the runtime uploads.
    const compiler::cuda_compile::NodeLowering l = compiler::cuda_compile::lower_node(g, node);
    ASSERT_EQ(l.nodes.size(), 1u);
    const compiler::QuantWeightScheme s = compiler::quant_weight_scheme(g, w_id);
    const std::vector<uint8_t> buffer = compiler::quant_weight_buffer(s);
    cuda::QuantDecode q;
    quant::QuantLayout layout;
    ASSERT_TRUE(cuda::make_quant_decode(l.nodes[0].params, static_cast<uint64_t>(s.rows),
                                        static_cast<uint64_t>(s.cols), l.nodes[0].fparams[0], &q,
                                        &layout));
    ASSERT_EQ(buffer.size(), 4 * layout.total_words);
    const PortableWeight p = portable_weight(g, w_id);
    const uint64_t n = static_cast<uint64_t>(s.rows * s.cols);
    std::vector<float> ref(n);
    quant::dequantize(p.view, 0, n, ref.data());
    uint64_t mismatches = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const float got = cuda::quant_element(buffer.data(), q, cuda::kNf4CodeValues, i);
      mismatches += bits(got) != bits(ref[i]);
    }
    EXPECT_EQ(mismatches, 0u) << GetParam() << ": element decode, weight " << w_id;
    // Eight at a time, as the GEMV reads rows whose length is a multiple of 8.
    ++checked;
    if (s.cols % 8 != 0) continue;
    uint64_t runs = 0;
    mismatches = 0;
    for (uint64_t i = 0; i + 8 <= n; i += 8) {
      float got[8];
      cuda::quant_element8(buffer.data(), q, cuda::kNf4CodeValues, i, got);
      for (int e = 0; e < 8; ++e) mismatches += bits(got[e]) != bits(ref[i + e]);
      ++runs;
    }
    EXPECT_GT(runs, 0u);
    EXPECT_EQ(mismatches, 0u) << GetParam() << ": 8-wide decode, weight " << w_id;
    ++wide;
  }
  EXPECT_EQ(wide, 1) << "fc3 (K = 48)";
  EXPECT_EQ(checked, 5);
}

TEST_P(CudaQuantHost, OneRegionOfQuantNodesThatTheReaderAccepts) {
  compiler::Graph g = quantized_mlp(GetParam());
  compiler::partition(g, {"cuda"});
  ASSERT_EQ(g.delegates.size(), 1u);
  EXPECT_EQ(g.delegates[0].nodes.size(), g.nodes.size());
  const std::vector<uint8_t> blob = compiler::CudaBackendCompiler().lower(g, g.delegates[0]).blob;
  AlignedBlob aligned(blob);
  cuda::BlobPlan plan;
  ASSERT_EQ(cuda::parse_blob(Span<const uint8_t>(static_cast<const uint8_t*>(aligned.buffer().data()),
                                                 blob.size()),
                             &plan),
            Error::Ok)
      << last_error_message();
  int linear = 0, embedding = 0, quant_values = 0;
  for (uint32_t i = 0; i < plan.header.num_nodes; ++i) {
    linear += plan.nodes[i].op == static_cast<uint32_t>(cuda::NodeOp::QuantLinear);
    embedding += plan.nodes[i].op == static_cast<uint32_t>(cuda::NodeOp::QuantEmbedding);
  }
  for (uint32_t i = 0; i < plan.header.num_values; ++i) {
    const cuda::BlobValue& v = plan.values[i];
    if (!cuda::is_quant_dtype(v.dtype)) continue;
    ++quant_values;
    EXPECT_EQ(v.kind, static_cast<uint32_t>(cuda::ValueKind::Constant));
    EXPECT_EQ(v.rank, 2u);
  }
  cuda::free_blob_plan(&plan);
  EXPECT_EQ(linear, 4);
  EXPECT_EQ(embedding, 1);
  EXPECT_EQ(quant_values, 4) << "fc1's weight is one constant read by two nodes";
}

INSTANTIATE_TEST_SUITE_P(Schemes, CudaQuantHost, ::testing::ValuesIn(kSchemes),
                         test_support::scheme_test_name);

TEST(CudaQuantCodebook, IsThePortableOne) {
  for (int i = 0; i < 16; ++i) EXPECT_EQ(bits(cuda::kNf4CodeValues[i]), bits(quant::kNf4Code[i])) << i;
}

/// The blob of the nf4 (double) and fp8 block mlp, and the index of its first QuantLinear.
struct QuantBlob {
  std::vector<uint8_t> bytes;
  size_t node_offset = 0;   ///< byte offset of the first QuantLinear node record
  size_t weight_offset = 0; ///< byte offset of that node's weight value record
};

QuantBlob quant_blob(const char* scheme) {
  compiler::Graph g = quantized_mlp(scheme);
  compiler::partition(g, {"cuda"});
  QuantBlob b;
  b.bytes = compiler::CudaBackendCompiler().lower(g, g.delegates[0]).blob;
  cuda::BlobHeader h;
  std::memcpy(&h, b.bytes.data(), sizeof(h));
  const size_t nodes = sizeof(h) + h.num_values * sizeof(cuda::BlobValue);
  for (uint32_t n = 0; n < h.num_nodes; ++n) {
    cuda::BlobNode node;
    std::memcpy(&node, b.bytes.data() + nodes + n * sizeof(node), sizeof(node));
    if (node.op == static_cast<uint32_t>(cuda::NodeOp::QuantLinear)) {
      b.node_offset = nodes + n * sizeof(node);
      b.weight_offset = sizeof(h) + node.inputs[1] * sizeof(cuda::BlobValue);
      break;
    }
  }
  EXPECT_NE(b.node_offset, 0u);
  return b;
}

/// parse_blob's error and message for `blob`.
std::pair<Error, std::string> parse(const std::vector<uint8_t>& blob) {
  AlignedBlob aligned(blob);
  cuda::BlobPlan plan;
  const Error e = cuda::parse_blob(
      Span<const uint8_t>(static_cast<const uint8_t*>(aligned.buffer().data()), blob.size()), &plan);
  cuda::free_blob_plan(&plan);
  return {e, e == Error::Ok ? "" : last_error_message()};
}

TEST(CudaQuantBlob, ReaderRefusesInconsistentQuantizedWeights) {
  register_all();
  auto node_param = [](QuantBlob b, uint32_t param, int64_t value) {
    std::memcpy(b.bytes.data() + b.node_offset + offsetof(cuda::BlobNode, params) + 8 * param,
                &value, 8);
    return parse(b.bytes);
  };
  const QuantBlob nf4 = quant_blob("nf4:block=32:double");
  ASSERT_EQ(parse(nf4.bytes).first, Error::Ok) << parse(nf4.bytes).second;
  // A block size that is not a power of two; another block size (the buffer size then differs).
  auto r = node_param(nf4, cuda::kQBlockSize, 48);
  EXPECT_EQ(r.first, Error::InvalidProgram);
  EXPECT_NE(r.second.find("block 48"), std::string::npos) << r.second;
  r = node_param(nf4, cuda::kQBlockSize, 64);
  EXPECT_EQ(r.first, Error::InvalidProgram);
  EXPECT_NE(r.second.find("the scheme lays out"), std::string::npos) << r.second;
  // An fp8 format on an nf4 weight.
  r = node_param(nf4, cuda::kQFormat, 2);
  EXPECT_EQ(r.first, Error::InvalidProgram);
  EXPECT_NE(r.second.find("does not fit the weight's dtype nf4"), std::string::npos) << r.second;
  // M rows that are not x's.
  r = node_param(nf4, 0, kRows + 1);
  EXPECT_EQ(r.first, Error::InvalidProgram);
  EXPECT_NE(r.second.find("x is not [.., K] with M rows"), std::string::npos) << r.second;

  const QuantBlob fp8 = quant_blob("fp8_e4m3:block=16x8");
  ASSERT_EQ(parse(fp8.bytes).first, Error::Ok) << parse(fp8.bytes).second;
  r = node_param(fp8, cuda::kQBlockCols, 0);
  EXPECT_EQ(r.first, Error::InvalidProgram);
  EXPECT_NE(r.second.find("tile 16x0"), std::string::npos) << r.second;
  r = node_param(fp8, cuda::kQBlockSize, 64);
  EXPECT_EQ(r.first, Error::InvalidProgram);
  // The weight value: its bytes, its kind.
  QuantBlob bad = fp8;
  uint64_t bytes = 0;
  std::memcpy(&bytes, bad.bytes.data() + bad.weight_offset + offsetof(cuda::BlobValue, bytes), 8);
  bytes += 4;
  std::memcpy(bad.bytes.data() + bad.weight_offset + offsetof(cuda::BlobValue, bytes), &bytes, 8);
  r = parse(bad.bytes);
  EXPECT_EQ(r.first, Error::InvalidProgram);
  bad = fp8;
  const uint32_t internal = static_cast<uint32_t>(cuda::ValueKind::Internal);
  std::memcpy(bad.bytes.data() + bad.weight_offset + offsetof(cuda::BlobValue, kind), &internal, 4);
  r = parse(bad.bytes);
  EXPECT_EQ(r.first, Error::InvalidProgram);
  EXPECT_NE(r.second.find("a quantized weight must be a constant"), std::string::npos) << r.second;
}

TEST(CudaQuantBlob, SixteenBitBlobsLeaveQuantizedWeightsToPortable) {
  register_all();
  const compiler::Graph g = quantized_mlp("nf4");
  for (const compiler::Node& node : g.nodes) {
    if (node.op != "tern::linear") continue;
    EXPECT_EQ(compiler::CudaBackendCompiler::unsupported_reason(g, node), "");
    const std::string why =
        compiler::CudaBackendCompiler::unsupported_reason(g, node, cuda::ComputeDType::F16);
    EXPECT_NE(why.find("a quantized (nf4/fp8) weight in a 16-bit blob"), std::string::npos) << why;
  }
}

/// matmul(a, b [K, N] constant): the pass quantizes b as the weight of a linear, which the
/// cuda compile half takes as a QuantLinear.
TEST(CudaQuantBlob, QuantizedMatmulConstantBecomesAQuantLinear) {
  register_all();
  GraphBuilder b;
  const int a = b.input("a", DType::F32, {3, 24});
  const int w = b.constant_f32("b", {24, 12}, random_floats(288, 31, -0.4f, 0.4f));
  b.output(b.op("tern::matmul", {a, w}, DType::F32, {3, 12}));
  compiler::ProgramGraph program;
  program.methods.push_back(b.build());
  compiler::QuantizeOptions options;
  options.scheme = compiler::parse_quant_scheme("nf4:block=32");
  ASSERT_EQ(compiler::quantize_program(program, options).weights.size(), 1u);
  const compiler::Graph& g = program.methods[0];
  int taken = 0;
  for (const compiler::Node& node : g.nodes) {
    if (!compiler::cuda_compile::reads_quantized_weight(g, node)) continue;
    EXPECT_EQ(compiler::CudaBackendCompiler::unsupported_reason(g, node), "") << node.op;
    const auto l = compiler::cuda_compile::lower_node(g, node);
    ASSERT_EQ(l.nodes.size(), 1u);
    EXPECT_EQ(l.nodes[0].op, cuda::NodeOp::QuantLinear);
    EXPECT_EQ(l.nodes[0].params[1], 12);  // N
    EXPECT_EQ(l.nodes[0].params[2], 24);  // K
    ++taken;
  }
  EXPECT_EQ(taken, 1);
}

TEST_P(CudaQuantHost, DelegateMatchesPortableOnADevice) {
  TERN_SKIP_WITHOUT_CUDA_DEVICE();
  compiler::ProgramGraph program;
  program.methods.push_back(mlp());
  compiler::CompileOptions options;
  options.quantize.scheme = compiler::parse_quant_scheme(GetParam());
  options.backends = {"cuda"};
  const compiler::CompileResult pte = compiler::compile_program(program, options);
  ASSERT_EQ(pte.methods[0].num_delegates, 1u);
  // The inputs: indices [5] (i64) and x1 [1, 45].
  auto run = [&](std::vector<int64_t> idx, bool disable) {
    RunResult out;
    testing::LoadedProgram lp(pte.bytes);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 8 << 20);
    const char* disabled[] = {"cuda"};
    MethodLoadOptions load;
    if (disable) load.disabled_backends = Span<const char* const>(disabled, 1);
    auto method = lp.program().load_method("forward", memory.manager(), load);
    EXPECT_TRUE(method.ok()) << last_error_message();
    if (!method.ok()) return std::make_pair(Error::InvalidState, out);
    std::vector<int64_t> isizes = {kRows};
    TensorView in;
    in.dtype = DType::I64;
    in.rank = 1;
    in.sizes = isizes.data();
    in.data = idx.data();
    in.nbytes = idx.size() * 8;
    EXPECT_EQ(method->set_input(0, in), Error::Ok) << last_error_message();
    std::vector<int64_t> xsizes = {1, kDim};
    std::vector<float> x1 = random_floats(kDim, 9);
    EXPECT_EQ(method->set_input(1, testing::f32_view(xsizes, x1)), Error::Ok);
    std::vector<int64_t> x2sizes = {kWideRows, kWide};
    std::vector<float> x2 = random_floats(kWideRows * kWide, 10);
    EXPECT_EQ(method->set_input(2, testing::f32_view(x2sizes, x2)), Error::Ok);
    const Error e = method->execute();
    if (e != Error::Ok) return std::make_pair(e, out);
    for (size_t o = 0; o < method->num_outputs(); ++o) {
      out.outputs.push_back(testing::to_vector(*method->output(o).get()));
    }
    for (size_t i = 0; i < method->num_delegate_calls(); ++i) {
      out.paths.push_back(method->delegate_path(i).get());
    }
    return std::make_pair(Error::Ok, out);
  };
  const std::vector<int64_t> idx = {0, kVocab - 1, 7, 150, 7};
  const auto gpu = run(idx, false);
  const auto portable = run(idx, true);
  ASSERT_EQ(gpu.first, Error::Ok) << last_error_message();
  ASSERT_EQ(portable.first, Error::Ok);
  ASSERT_EQ(gpu.second.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(gpu.second.outputs.size(), 4u);
  EXPECT_EQ(gpu.second.outputs[0], portable.second.outputs[0]) << "the gather is bit-exact";
  EXPECT_LE(max_rel(gpu.second.outputs[1], portable.second.outputs[1]), 1e-5) << "GEMM path";
  EXPECT_LE(max_rel(gpu.second.outputs[2], portable.second.outputs[2]), 1e-5) << "GEMV path";
  EXPECT_LE(max_rel(gpu.second.outputs[3], portable.second.outputs[3]), 1e-5) << "8-wide GEMV";
  const auto bad = run({0, 1, kVocab, 2, 3}, false);
  EXPECT_EQ(bad.first, Error::InvalidArgument);
}

}  // namespace
}  // namespace tern::cuda_test
