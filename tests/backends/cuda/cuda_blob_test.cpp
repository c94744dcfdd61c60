// The cuda backend's compile half (what it claims, what it refuses, the blob it writes) and
// the runtime half's blob reader (host code: runs without a GPU): a round trip of real blobs,
// and every corruption a clean error naming the field, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/compile/node_lowering.h"
#include "backends/cuda/compile/region_lowering.h"
#include "backends/cuda/runtime/blob_reader.h"
#include "tests/backends/cuda/cuda_test_util.h"

namespace tern::cuda_test {
namespace {

using cuda::BlobHeader;
using cuda::BlobNode;
using cuda::BlobValue;

/// The blob of `b` with all its nodes handed to cuda (the graph it was lowered from in *g).
std::vector<uint8_t> whole_blob(GraphBuilder b, compiler::Graph* g = nullptr) {
  delegate_cuda(b, 0, static_cast<int>(b.num_nodes()) - 1);
  if (g != nullptr) *g = b.graph();
  return b.graph().delegates[0].blob;
}

BlobHeader header_of(const std::vector<uint8_t>& blob) {
  BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  return h;
}
size_t value_at(const std::vector<uint8_t>&, uint32_t i) {
  return sizeof(BlobHeader) + i * sizeof(BlobValue);
}
size_t node_at(const std::vector<uint8_t>& blob, uint32_t i) {
  return sizeof(BlobHeader) + header_of(blob).num_values * sizeof(BlobValue) + i * sizeof(BlobNode);
}
template <typename T>
T read(const std::vector<uint8_t>& blob, size_t at) {
  T t;
  std::memcpy(&t, blob.data() + at, sizeof(T));
  return t;
}
template <typename T>
void write(std::vector<uint8_t>* blob, size_t at, const T& t) {
  std::memcpy(blob->data() + at, &t, sizeof(T));
}

Error parse(const std::vector<uint8_t>& blob, std::string* message = nullptr) {
  cuda::BlobPlan plan;
  clear_error_message();
  const Error e = cuda::parse_blob(Span<const uint8_t>(blob.data(), blob.size()), &plan);
  if (message != nullptr) *message = last_error_message();
  cuda::free_blob_plan(&plan);
  return e;
}

class CudaBlobTest : public ::testing::Test {
 protected:
  void SetUp() override { register_all(); }
};

TEST_F(CudaBlobTest, MlpBlobDescribesTheRegion) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = whole_blob(mlp_model(), &g);
  const BlobHeader h = header_of(blob);
  EXPECT_EQ(std::memcmp(h.magic, "TCUD", 4), 0);
  EXPECT_EQ(h.version, cuda::kBlobVersion);
  EXPECT_EQ(h.header_size, sizeof(BlobHeader));
  EXPECT_EQ(h.blob_bytes, blob.size());
  const compiler::DelegateRegion& region = g.delegates[0];
  EXPECT_EQ(h.num_args, region.inputs.size() + region.outputs.size());
  EXPECT_EQ(h.num_nodes, 5u);  // 3 GEMMs, 2 relus
  EXPECT_EQ(h.compute_dtype, 0u);
  EXPECT_EQ(h.arena_bytes % cuda::kDeviceAlignment, 0u);
  // x, 6 constants (arguments 1..6), the output, 4 internal values.
  uint64_t weights = 0;
  uint32_t constants = 0, inputs = 0, outputs = 0;
  for (uint32_t i = 0; i < h.num_values; ++i) {
    const BlobValue v = read<BlobValue>(blob, value_at(blob, i));
    if (v.kind == static_cast<uint32_t>(cuda::ValueKind::Constant)) {
      ++constants;
      weights += (v.bytes + 255) / 256 * 256;
    }
    inputs += v.kind == static_cast<uint32_t>(cuda::ValueKind::ExternalInput);
    outputs += v.kind == static_cast<uint32_t>(cuda::ValueKind::ExternalOutput);
  }
  EXPECT_EQ(constants, 6u);
  EXPECT_EQ(inputs, 1u);
  EXPECT_EQ(outputs, 1u);
  EXPECT_EQ(h.weights_bytes, weights);
  const BlobNode n0 = read<BlobNode>(blob, node_at(blob, 0));
  EXPECT_EQ(n0.op, static_cast<uint32_t>(cuda::NodeOp::Gemm));
  EXPECT_EQ(n0.params[0], 4);    // M
  EXPECT_EQ(n0.params[1], 256);  // N
  EXPECT_EQ(n0.params[2], 64);   // K
  EXPECT_EQ(n0.params[4], 1);    // weight [N, K]
  EXPECT_NE(n0.inputs[2], cuda::kNoValue);
  EXPECT_EQ(parse(blob), Error::Ok) << last_error_message();
}

TEST_F(CudaBlobTest, ModelBlobsRoundTrip) {
  for (auto make : {mlp_model, gpt_block_model, resnet_block_model}) {
    const std::vector<uint8_t> blob = whole_blob(make());
    cuda::BlobPlan plan;
    ASSERT_EQ(cuda::parse_blob(Span<const uint8_t>(blob.data(), blob.size()), &plan), Error::Ok)
        << last_error_message();
    const BlobHeader h = header_of(blob);
    EXPECT_EQ(std::memcmp(&plan.header, &h, sizeof(h)), 0);
    EXPECT_EQ(std::memcmp(plan.values, blob.data() + sizeof(h), h.num_values * sizeof(BlobValue)), 0);
    EXPECT_EQ(std::memcmp(plan.nodes, blob.data() + node_at(blob, 0), h.num_nodes * sizeof(BlobNode)),
              0);
    cuda::free_blob_plan(&plan);
    cuda::free_blob_plan(&plan);  // twice is safe
  }
}

TEST_F(CudaBlobTest, ViewsAliasTheirInputAndLiveValuesDoNotOverlap) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = whole_blob(gpt_block_model(), &g);
  const BlobHeader h = header_of(blob);
  std::vector<BlobValue> values(h.num_values);
  std::memcpy(values.data(), blob.data() + sizeof(h), h.num_values * sizeof(BlobValue));
  uint32_t aliases = 0;
  for (const BlobValue& v : values) {
    if (v.alias_of == cuda::kNoValue) continue;
    ++aliases;
    EXPECT_EQ(v.offset, values[v.alias_of].offset);
    EXPECT_EQ(v.bytes, values[v.alias_of].bytes);
  }
  EXPECT_GE(aliases, 6u);  // the model's views
  // Simulate the plan: at each node, every value live then (made, read later or an output)
  // occupies disjoint arena bytes.
  std::vector<BlobNode> nodes(h.num_nodes);
  std::memcpy(nodes.data(), blob.data() + node_at(blob, 0), h.num_nodes * sizeof(BlobNode));
  auto root = [&](uint32_t v) { return values[v].alias_of == cuda::kNoValue ? v : values[v].alias_of; };
  std::vector<int64_t> first(values.size(), 1 << 30), last(values.size(), -1);
  for (uint32_t v = 0; v < values.size(); ++v) {
    if (values[v].kind == 1) first[v] = -1;
    if (values[v].kind == 2) last[root(v)] = h.num_nodes;
  }
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    for (uint32_t i = 0; i < nodes[n].num_inputs; ++i) {
      if (nodes[n].inputs[i] != cuda::kNoValue) {
        last[root(nodes[n].inputs[i])] = std::max<int64_t>(last[root(nodes[n].inputs[i])], n);
      }
    }
    first[nodes[n].output] = std::min<int64_t>(first[nodes[n].output], n);
    last[nodes[n].output] = std::max<int64_t>(last[nodes[n].output], n);
  }
  for (uint32_t a = 0; a < values.size(); ++a) {
    for (uint32_t b2 = a + 1; b2 < values.size(); ++b2) {
      const BlobValue &va = values[a], &vb = values[b2];
      if (va.kind == 3 || vb.kind == 3 || va.alias_of != cuda::kNoValue ||
          vb.alias_of != cuda::kNoValue) {
        continue;
      }
      const bool live_together = !(last[a] < first[b2] || last[b2] < first[a]);
      const bool overlap = va.offset < vb.offset + vb.bytes && vb.offset < va.offset + va.bytes;
      EXPECT_FALSE(live_together && overlap) << "values " << a << " and " << b2;
    }
  }
}

TEST_F(CudaBlobTest, EveryTruncationIsRefused) {
  const std::vector<uint8_t> blob = whole_blob(resnet_block_model());
  for (size_t size = 0; size < blob.size(); ++size) {
    std::vector<uint8_t> cut(blob.begin(), blob.begin() + static_cast<long>(size));
    std::string message;
    EXPECT_EQ(parse(cut, &message), Error::InvalidProgram) << size;
    EXPECT_NE(message.find("cuda blob"), std::string::npos) << message;
  }
}

TEST_F(CudaBlobTest, EveryByteFlipIsHandledCleanly) {
  // Under ASan/UBSan (CI's sanitizer build) this proves no flip reads out of bounds.
  for (auto make : {mlp_model, gpt_block_model, resnet_block_model}) {
    const std::vector<uint8_t> blob = whole_blob(make());
    size_t refused = 0;
    for (size_t at = 0; at < blob.size(); ++at) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
        std::vector<uint8_t> bad = blob;
        bad[at] ^= mask;
        const Error e = parse(bad);
        EXPECT_TRUE(e == Error::Ok || e == Error::InvalidProgram ||
                    e == Error::DelegateInvalidCompatibility)
            << at;
        refused += e != Error::Ok;
      }
    }
    EXPECT_GT(refused, blob.size());  // most flips are caught
  }
}

struct Corruption {
  const char* what;
  std::function<void(std::vector<uint8_t>*)> apply;
  Error error;
  const char* message;  ///< a part of the expected message
};

TEST_F(CudaBlobTest, EachVerifiedFieldIsRefusedWithItsName) {
  const std::vector<uint8_t> mlp = whole_blob(mlp_model());
  const std::vector<uint8_t> resnet = whole_blob(resnet_block_model());
  const std::vector<uint8_t> gpt = whole_blob(gpt_block_model());
  auto header = [](std::function<void(BlobHeader&)> f) {
    return [f](std::vector<uint8_t>* b) {
      BlobHeader h = header_of(*b);
      f(h);
      write(b, 0, h);
    };
  };
  auto value = [](uint32_t i, std::function<void(BlobValue&)> f) {
    return [i, f](std::vector<uint8_t>* b) {
      BlobValue v = read<BlobValue>(*b, value_at(*b, i));
      f(v);
      write(b, value_at(*b, i), v);
    };
  };
  auto node = [](uint32_t i, std::function<void(BlobNode&)> f) {
    return [i, f](std::vector<uint8_t>* b) {
      BlobNode n = read<BlobNode>(*b, node_at(*b, i));
      f(n);
      write(b, node_at(*b, i), n);
    };
  };
  const Error bad = Error::InvalidProgram;
  const Error compat = Error::DelegateInvalidCompatibility;
  // The mlp's value 0 is x (argument 0), value 1 the first weight (a constant); node 0 the first
  // GEMM, node 1 a relu.
  const std::vector<Corruption> cases = {
      {"magic", header([](BlobHeader& h) { h.magic[0] = 'X'; }), bad, "magic"},
      {"version 1 (before f16/bf16)", header([](BlobHeader& h) { h.version = 1; }), compat,
       "version 1, this runtime reads version 5"},
      {"version 3 (before negative copy strides)", header([](BlobHeader& h) { h.version = 3; }),
       compat, "version 3, this runtime reads version 5"},
      {"version 4 (before grouped products)", header([](BlobHeader& h) { h.version = 4; }),
       compat, "version 4, this runtime reads version 5"},
      {"header_size", header([](BlobHeader& h) { h.header_size = 64; }), bad, "header_size"},
      {"value_record_size", header([](BlobHeader& h) { h.value_record_size = 80; }), bad, "value_record_size"},
      {"node_record_size", header([](BlobHeader& h) { h.node_record_size = 1; }), bad, "node_record_size"},
      {"num_values", header([](BlobHeader& h) { h.num_values = 0; }), bad, "num_values"},
      {"num_nodes", header([](BlobHeader& h) { h.num_nodes = 0; }), bad, "num_nodes"},
      {"num_args", header([](BlobHeader& h) { h.num_args = (1u << 20) + 1; }), bad, "num_args"},
      // An f32 blob relabelled f16: its f32 values are then of the wrong dtype.
      {"f16 compute over f32 values", header([](BlobHeader& h) { h.compute_dtype = 1; }), bad,
       "must be f16"},
      {"compute dtype", header([](BlobHeader& h) { h.compute_dtype = 7; }), bad, "compute_dtype"},
      {"min cc", header([](BlobHeader& h) { h.min_compute_capability = 5; }), bad, "min_compute_capability"},
      {"arena size", header([](BlobHeader& h) { h.arena_bytes += 1; }), bad, "arena_bytes"},
      {"weights size", header([](BlobHeader& h) { h.weights_bytes = 1ull << 50; }), bad, "weights_bytes"},
      {"workspace size", header([](BlobHeader& h) { h.workspace_bytes = 3; }), bad, "workspace_bytes"},
      {"blob size", header([](BlobHeader& h) { h.blob_bytes += 8; }), bad, "blob_bytes"},
      {"value kind", value(0, [](BlobValue& v) { v.kind = 9; }), bad, "kind 9"},
      {"value dtype", value(0, [](BlobValue& v) { v.dtype = 5; }), bad, "dtype 5"},
      {"bf16 value in an f32 blob", value(0, [](BlobValue& v) {
         v.dtype = 2;
         v.bytes /= 2;
       }), bad, "dtype bf16 in a blob of compute dtype f32"},
      {"value rank", value(0, [](BlobValue& v) { v.rank = 7; }), bad, "rank 7"},
      {"zero dim", value(0, [](BlobValue& v) { v.dims[0] = 0; }), bad, "dim 0 is 0"},
      {"unused dim", value(0, [](BlobValue& v) { v.dims[4] = 3; }), bad, "unused dim 4"},
      {"value bytes", value(0, [](BlobValue& v) { v.bytes += 4; }), bad, "bytes"},
      {"reserved", value(0, [](BlobValue& v) { v.reserved = 1; }), bad, "reserved"},
      {"arg range", value(0, [](BlobValue& v) { v.arg = 1000; }), bad, "arg 1000"},
      {"arg twice", value(1, [](BlobValue& v) { v.arg = 0; }), bad, "bound twice"},
      {"offset alignment", value(0, [](BlobValue& v) { v.offset = 4; }), bad, "not a multiple"},
      {"offset past the arena", value(0, [](BlobValue& v) { v.offset = 1ull << 39; }), bad, "past the arena"},
      {"constant past the weights", value(1, [](BlobValue& v) { v.offset = 1ull << 30; }), bad, "weights buffer"},
      {"alias of itself", value(0, [](BlobValue& v) { v.alias_of = 0; }), bad, "alias_of 0"},
      {"alias of a constant", value(0, [](BlobValue& v) { v.alias_of = 1; }), bad, "is an alias"},
      {"node op", node(0, [](BlobNode& n) { n.op = 99; }), bad, "op 99"},
      {"node op 0", node(0, [](BlobNode& n) { n.op = 0; }), bad, "op 0"},
      {"node reserved", node(0, [](BlobNode& n) { n.reserved = 5; }), bad, "inputs"},
      {"input count", node(1, [](BlobNode& n) { n.num_inputs = 3; }), bad, "3 inputs"},
      {"required input", node(0, [](BlobNode& n) { n.inputs[1] = cuda::kNoValue; }), bad, "required"},
      {"input range", node(0, [](BlobNode& n) { n.inputs[0] = 5000; }), bad, "value 5000"},
      {"input past its slots", node(1, [](BlobNode& n) { n.inputs[3] = 0; }), bad, "slot 3"},
      {"read before made", node(0, [](BlobNode& n) { n.inputs[0] = 8; }), bad, "before it is made"},
      {"output made twice", node(1, [](BlobNode& n) { n.output = 0; }), bad, "output value 0"},
      {"unused param", node(1, [](BlobNode& n) { n.params[9] = 1; }), bad, "params[9]"},
      {"unused fparam", node(1, [](BlobNode& n) { n.fparams[3] = 1.0f; }), bad, "fparams[3]"},
      {"unary op", node(1, [](BlobNode& n) { n.params[0] = 99; }), bad, "unary op 99"},
      {"gemm M", node(0, [](BlobNode& n) { n.params[0] = 5; }), bad, "elements"},
      {"gemm K", node(0, [](BlobNode& n) { n.params[2] = 0; }), bad, "params[2] = 0"},
      {"gemm batch stride", node(0, [](BlobNode& n) { n.params[5] = 7; }), bad, "batch stride"},
      {"gemm activation", node(0, [](BlobNode& n) { n.params[7] = 9; }), bad, "activation 9"},
      {"gemm alpha", node(0, [](BlobNode& n) { n.fparams[0] = std::numeric_limits<float>::infinity(); }),
       bad, "alpha"},
  };
  for (const Corruption& c : cases) {
    std::vector<uint8_t> blob = mlp;
    c.apply(&blob);
    std::string message;
    EXPECT_EQ(parse(blob, &message), c.error) << c.what << ": " << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": " << message;
  }
  // Convolution, pooling, reduction and data movement fields, on the resnet block: node 0 is
  // the stem conv, node 2 the max pool.
  const std::vector<Corruption> resnet_cases = {
      {"conv stride", node(0, [](BlobNode& n) { n.params[0] = 3; }), bad, "output dims"},
      {"conv groups", node(0, [](BlobNode& n) { n.params[6] = 2; }), bad, "channels"},
      {"conv padding", node(0, [](BlobNode& n) { n.params[2] = -1; }), bad, "params[2]"},
      {"conv activation", node(0, [](BlobNode& n) { n.params[7] = 2; }), bad, "activation 2"},
      {"conv workspace", header([](BlobHeader& h) { h.workspace_bytes = 256; }), bad, "workspace bytes"},
      {"pool window", node(2, [](BlobNode& n) { n.params[0] = 7; }), bad, "output dim"},
      {"pool padding", node(2, [](BlobNode& n) { n.params[4] = 2; }), bad, "padding 2"},
  };
  for (const Corruption& c : resnet_cases) {
    std::vector<uint8_t> blob = resnet;
    c.apply(&blob);
    std::string message;
    EXPECT_EQ(parse(blob, &message), c.error) << c.what << ": " << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": " << message;
  }
  // The GPT block: find its strided copies and attention node.
  const BlobHeader gh = header_of(gpt);
  uint32_t copy = cuda::kNoValue, attention = cuda::kNoValue;
  for (uint32_t i = 0; i < gh.num_nodes; ++i) {
    const BlobNode n = read<BlobNode>(gpt, node_at(gpt, i));
    if (n.op == static_cast<uint32_t>(cuda::NodeOp::StridedCopy) && copy == cuda::kNoValue) copy = i;
    if (n.op == static_cast<uint32_t>(cuda::NodeOp::Attention)) attention = i;
  }
  ASSERT_NE(copy, cuda::kNoValue);
  ASSERT_NE(attention, cuda::kNoValue);
  const std::vector<Corruption> gpt_cases = {
      {"copy past its input", node(copy, [](BlobNode& n) { n.params[0] = 1 << 20; }), bad, "reads element"},
      {"copy strides backwards past x's start",
       node(copy,
            [](BlobNode& n) {
              n.params[0] = 0;
              for (int d = 1; d < 7; ++d) n.params[d] = -n.params[d];
            }),
       bad, "reads before x's first element"},
      {"copy stride beyond 2^40",
       node(copy, [](BlobNode& n) { n.params[1] = -(int64_t{1} << 40) - 1; }), bad,
       "stride 0 = -1099511627777 out of range"},
      {"attention length", node(attention, [](BlobNode& n) { n.params[1] = 17; }), bad, "element counts"},
      {"attention mask kind", node(attention, [](BlobNode& n) { n.params[6] = 2; }), bad, "mask input absent"},
      {"attention scale", node(attention, [](BlobNode& n) { n.fparams[0] = std::numeric_limits<float>::quiet_NaN(); }),
       bad, "scale"},
      {"attention workspace", header([](BlobHeader& h) { h.workspace_bytes = 0; }), bad, "workspace bytes"},
  };
  for (const Corruption& c : gpt_cases) {
    std::vector<uint8_t> blob = gpt;
    c.apply(&blob);
    std::string message;
    EXPECT_EQ(parse(blob, &message), c.error) << c.what << ": " << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": " << message;
  }
}

// flip (version 4): one StridedCopy reading the flipped dims backwards from their last
// element; the reader takes the negative strides and refuses a copy that would then read
// before x's first element.
TEST_F(CudaBlobTest, FlipIsACopyReadingBackwards) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 5, 3});
  const int r = b.op("tern::relu", {x}, DType::F32, {2, 5, 3});
  b.output(b.op("tern::flip", {r, b.int_list({1, -1})}, DType::F32, {2, 5, 3}));
  const std::vector<uint8_t> blob = whole_blob(b);
  std::string message;
  ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
  ASSERT_EQ(header_of(blob).num_nodes, 2u);
  const BlobNode n = read<BlobNode>(blob, node_at(blob, 1));
  ASSERT_EQ(n.op, static_cast<uint32_t>(cuda::NodeOp::StridedCopy));
  EXPECT_EQ(n.params[0], 4 * 3 + 2);  // element [0, 4, 2]
  EXPECT_EQ(n.params[1], 15);
  EXPECT_EQ(n.params[2], -3);
  EXPECT_EQ(n.params[3], -1);
  std::vector<uint8_t> bad = blob;
  BlobNode m = n;
  m.params[0] = 13;  // one element too early: [0, 4, 2] - 1 reaches element -1
  write(&bad, node_at(bad, 1), m);
  EXPECT_EQ(parse(bad, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("reads before x's first element"), std::string::npos) << message;
}

TEST_F(CudaBlobTest, CompileHalfRefusesWhatItCannotRun) {
  struct Refused {
    const char* what;
    std::function<void(GraphBuilder&)> build;
    const char* reason;
  };
  const std::vector<Refused> refused = {
      {"softmax over dim 0",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {3, 5});
         b.op("tern::softmax", {x, b.int_value(0)}, DType::F32, {3, 5});
       },
       "not the last dim"},
      {"integer add",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::I64, {4});
         b.op("tern::add", {x, x}, DType::I64, {4});
       },
       "is i64"},
      {"matmul with broadcast batches",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {2, 1, 3, 4});
         const int y = b.input("y", DType::F32, {1, 5, 4, 2});
         b.op("tern::matmul", {x, y}, DType::F32, {2, 5, 3, 2});
       },
       "batch dims differ"},
      {"div with a rounding mode",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {4});
         b.op("tern::div", {x, x, b.string_value("floor")}, DType::F32, {4});
       },
       "rounding mode"},
      {"gelu of an unknown form",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {4});
         b.op("tern::gelu", {x, b.string_value("fast")}, DType::F32, {4});
       },
       "approximate"},
      {"an op without a kernel",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {4});
         b.op("tern::cumsum", {x, b.int_value(0)}, DType::F32, {4});
       },
       "not taken"},
      {"a quantized linear without its absmax tensor",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {2, 64});
         const int w = b.constant("w", DType::NF4, {8, 64}, std::vector<uint8_t>(256));
         b.graph().values[static_cast<size_t>(w)].quant.scheme = compiler::QuantSpec::Scheme::NF4;
         b.op("tern::linear", {x, w, b.none()}, DType::F32, {2, 8});
       },
       "quantized weight 'w': no absmax tensor"},
      {"attention with a mask and causal",
       [](GraphBuilder& b) {
         const int q = b.input("q", DType::F32, {1, 2, 4, 8});
         const int m = b.input("m", DType::F32, {4, 4});
         b.op("tern::scaled_dot_product_attention",
              {q, q, q, m, b.bool_value(true), b.none()}, DType::F32, {1, 2, 4, 8});
       },
       "is_causal"},
      {"a view of a constant",
       [](GraphBuilder& b) {
         const int c = b.constant_f32("c", {4}, {1, 2, 3, 4});
         b.op("tern::view", {c, b.int_list({2, 2})}, DType::F32, {2, 2});
       },
       "of a constant"},
  };
  for (const Refused& r : refused) {
    GraphBuilder b;
    r.build(b);
    const compiler::Graph& g = b.graph();
    const std::string why = compiler::CudaBackendCompiler::unsupported_reason(g, g.nodes.back());
    EXPECT_NE(why.find(r.reason), std::string::npos) << r.what << ": '" << why << "'";
    EXPECT_FALSE(compiler::CudaBackendCompiler().supports(g, g.nodes.back())) << r.what;
  }
}

TEST_F(CudaBlobTest, HalfPrecisionBlobs) {
  // f16/bf16: internal values and constants in 16 bits, the delegate's arguments f32, Cast nodes
  // at the edges; the reader accepts the blob.
  for (cuda::ComputeDType dt : {cuda::ComputeDType::F16, cuda::ComputeDType::BF16}) {
    GraphBuilder b = gpt_block_model();
    const int index = b.delegate("cuda", 0, static_cast<int>(b.num_nodes()) - 1);
    const compiler::DelegateRegion& region = b.graph().delegates[static_cast<size_t>(index)];
    const std::vector<uint8_t> blob = compiler::cuda_compile::lower_region(b.graph(), region, dt);
    std::string message;
    ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
    const BlobHeader h = header_of(blob);
    EXPECT_EQ(h.compute_dtype, static_cast<uint32_t>(dt));
    EXPECT_EQ(h.min_compute_capability, dt == cuda::ComputeDType::BF16 ? 80u : 70u);
    const uint32_t half = cuda::compute_storage(static_cast<uint32_t>(dt));
    uint32_t casts = 0;
    for (uint32_t i = 0; i < h.num_nodes; ++i) {
      const BlobNode n = read<BlobNode>(blob, node_at(blob, i));
      if (n.op == static_cast<uint32_t>(cuda::NodeOp::Cast)) ++casts;
    }
    EXPECT_EQ(casts, 2u);  // x in, the output out
    for (uint32_t i = 0; i < h.num_values; ++i) {
      const BlobValue v = read<BlobValue>(blob, value_at(blob, i));
      const bool external = v.kind == static_cast<uint32_t>(cuda::ValueKind::ExternalInput) ||
                            v.kind == static_cast<uint32_t>(cuda::ValueKind::ExternalOutput);
      EXPECT_EQ(v.dtype, external ? 0u : half) << "value " << i;
    }
    // The same blob with one internal value back in f32 is refused, naming the dtype.
    std::vector<uint8_t> bad = blob;
    for (uint32_t i = 0; i < h.num_values; ++i) {
      BlobValue v = read<BlobValue>(bad, value_at(bad, i));
      if (v.kind != static_cast<uint32_t>(cuda::ValueKind::Constant)) continue;
      v.dtype = 0;
      v.bytes *= 2;
      write(&bad, value_at(bad, i), v);
      break;
    }
    EXPECT_EQ(parse(bad, &message), Error::InvalidProgram);
    EXPECT_NE(message.find("must be"), std::string::npos) << message;
  }
}

/// The message of the std::invalid_argument that compiling the MLP for `backends` throws.
std::string compile_error(const std::vector<std::string>& backends) {
  try {
    (void)compile_for(mlp_model().graph(), backends);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(compiled)";
}

TEST_F(CudaBlobTest, BackendSpecOptions) {
  // `--backend cuda:f32` is "cuda"; f16 and bf16 compile to blobs of that compute dtype (the
  // last dtype given wins).
  EXPECT_EQ(compile_for(mlp_model().graph(), {"cuda:f32"}),
            compile_for(mlp_model().graph(), {"cuda"}));
  EXPECT_NE(compile_for(mlp_model().graph(), {"cuda:f16"}),
            compile_for(mlp_model().graph(), {"cuda"}));
  EXPECT_NE(compile_for(mlp_model().graph(), {"cuda:bf16"}),
            compile_for(mlp_model().graph(), {"cuda:f16"}));
  EXPECT_EQ(compile_for(mlp_model().graph(), {"cuda:f32:f16"}),
            compile_for(mlp_model().graph(), {"cuda:f16"}));
  EXPECT_EQ(compile_error({"cuda:fast"}).rfind("cuda: unknown option 'fast' in 'cuda:fast'", 0),
            0u)
      << compile_error({"cuda:fast"});
  EXPECT_EQ(compile_error({"cuda:"}).rfind("cuda: unknown option '' in 'cuda:'", 0), 0u)
      << compile_error({"cuda:"});
  EXPECT_EQ(compile_error({"cuda", "cuda:f32"}), "backend 'cuda' is listed twice");
  EXPECT_NE(compile_error({"nosuch:f16"}).find("backend 'nosuch' is not a registered backend"),
            std::string::npos)
      << compile_error({"nosuch:f16"});

  // A backend without options refuses any (BackendCompiler's default).
  class NoOptions : public compiler::BackendCompiler {
   public:
    std::string name() const override { return "cuda_test_no_options"; }
    bool supports(const compiler::Graph&, const compiler::Node&) const override { return false; }
    compiler::LoweredRegion lower(const compiler::Graph&,
                                  const compiler::DelegateRegion&) const override {
      throw std::invalid_argument("never lowered");
    }
  };
  compiler::register_backend_compiler(std::make_unique<NoOptions>());
  EXPECT_EQ(compile_error({"cuda_test_no_options:x"}),
            "backend 'cuda_test_no_options' takes no options (found 'cuda_test_no_options:x')");
}

TEST_F(CudaBlobTest, InitWithoutADeviceIsUnavailableNotACrash) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present (the GPU tests cover init)";
  const std::vector<uint8_t> blob = whole_blob(mlp_model());
  BackendInitContext ctx;
  auto h = cuda_backend_interface().init(ctx, FreeableBuffer(blob.data(), blob.size(), nullptr), {});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), Error::BackendUnavailable);
  EXPECT_NE(std::string(last_error_message()).find("cuda backend"), std::string::npos);
}

}  // namespace
}  // namespace tern::cuda_test
