// graph.json reader: the MLP example of docs/graph-format.md parses (read from the doc itself),
// and each malformed document gives a message naming the file, the JSON path and the thing.
#include "tools/compiler/graph_json.h"

#include <gtest/gtest.h>

#include "tests/support/temp_path.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/compiler/memory_planner.h"
#include "tools/compiler/safetensors.h"

namespace tern::compiler {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The ```json block following "<!-- example: mlp -->" in docs/graph-format.md.
std::string doc_example() {
  const std::string root = TERN_SOURCE_DIR;
  const std::string doc = read_text(root + "/docs/graph-format.md");
  const size_t marker = doc.find("<!-- example: mlp -->");
  if (marker == std::string::npos) return "";
  const size_t begin = doc.find("```json\n", marker);
  const size_t end = doc.find("```", begin + 8);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return doc.substr(begin + 8, end - begin - 8);
}

SafeTensor f32_tensor(std::vector<int64_t> shape, float base) {
  SafeTensor t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t s : t.shape) n *= s;
  for (int64_t i = 0; i < n; ++i) {
    const float v = base + static_cast<float>(i);
    uint8_t b[4];
    std::memcpy(b, &v, 4);
    t.data.mutable_vector().insert(t.data.mutable_vector().end(), b, b + 4);
  }
  return t;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// Replaces the single occurrence of `from` in `text` (the test fails if it is not there).
std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "test bug: '" << from << "' not in the document";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

class GraphJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tern::testing_support::unique_temp_path("tern_graph_json_test");
    std::string cmd = "mkdir -p '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    weights_ = {{"fc1.weight", f32_tensor({8, 4}, 0.0f)},
                {"fc1.bias", f32_tensor({8}, 100.0f)},
                {"fc2.weight", f32_tensor({2, 8}, 200.0f)},
                {"fc2.bias", f32_tensor({2}, 300.0f)}};
    save_weights();
    example_ = doc_example();
    ASSERT_FALSE(example_.empty()) << "docs/graph-format.md has no MLP example";
  }

  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    (void)std::system(cmd.c_str());
  }

  void save_weights() { write_bytes(dir_ + "/mlp.safetensors", write_safetensors(weights_)); }

  // Writes `json` as graph.json in the test folder and reads it.
  ProgramGraph read(const std::string& json) {
    write_text(path(), json);
    return read_graph_json(path());
  }

  std::string path() const { return dir_ + "/graph.json"; }

  // Expects reading `json` to fail with a message containing every fragment.
  void expect_error(const std::string& json, std::initializer_list<std::string> fragments) {
    try {
      read(json);
      ADD_FAILURE() << "accepted:\n" << json;
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      for (const std::string& f : fragments) {
        EXPECT_NE(msg.find(f), std::string::npos) << "message: " << msg << "\nmissing: " << f;
      }
    }
  }

  std::string dir_;
  std::map<std::string, SafeTensor> weights_;
  std::string example_;
};

TEST_F(GraphJsonTest, DocExampleParses) {
  const ProgramGraph p = read(example_);
  EXPECT_EQ(p.producer, "hand-written");
  EXPECT_EQ(p.source_model, "MLP(4, 8, 2)");
  EXPECT_EQ(p.metadata.at("task"), "example");
  ASSERT_EQ(p.methods.size(), 1u);
  const Graph& g = p.methods[0];
  EXPECT_EQ(g.name, "forward");
  ASSERT_EQ(g.values.size(), 8u);
  EXPECT_EQ(g.inputs, std::vector<int>({0}));
  EXPECT_EQ(g.outputs, std::vector<int>({7}));
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].op, "tern::linear");
  EXPECT_EQ(g.nodes[0].args, std::vector<int>({0, 1, 2}));
  EXPECT_EQ(g.nodes[0].debug_name, "fc1 (mlp.py:9)");
  EXPECT_EQ(g.nodes[1].op, "tern::relu");
  EXPECT_EQ(g.nodes[2].args, std::vector<int>({4, 5, 6}));  // given by name
  EXPECT_EQ(g.nodes[2].outputs, std::vector<int>({7}));
  EXPECT_EQ(g.values[0].name, "x");
  EXPECT_FALSE(g.values[0].is_constant);
  EXPECT_EQ(g.values[0].sizes, std::vector<int64_t>({1, 4}));
  EXPECT_TRUE(g.values[1].is_constant);
  EXPECT_EQ(g.values[1].data, weights_["fc1.weight"].data);
  EXPECT_EQ(g.values[6].data, weights_["fc2.bias"].data);
  // The doc's claim about the plan: h and y share; the input x keeps its own bytes (3 x 64).
  const MemoryPlan plan = plan_memory(g);
  EXPECT_EQ(plan.arena_size, 192u);
  EXPECT_EQ(plan.offsets[3], plan.offsets[7]);
  for (int v : {3, 4, 7}) EXPECT_NE(plan.offsets[0], plan.offsets[v]) << v;
}

TEST_F(GraphJsonTest, ParseGraphJsonUsesBaseDir) {
  const ProgramGraph p = parse_graph_json(example_, dir_);
  EXPECT_EQ(p.methods[0].values[2].data, weights_["fc1.bias"].data);
  try {
    parse_graph_json(replace(example_, R"("args": [3],)", R"("args": [8],)"), dir_);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "graph.json: methods[0].nodes[1].args[0]: value 8 out of range (method has 8 "
              "values)");
  }
}

TEST_F(GraphJsonTest, BadValueId) {
  expect_error(
      replace(example_, R"("args": [0, 1, 2])", R"("args": [0, 42, 2])"),
      {path() + ": methods[0].nodes[0].args[1]: value 42 out of range (method has 8 values)"});
  expect_error(replace(example_, R"("outputs": [7])", R"("outputs": [-1])"),
               {"methods[0].outputs[0]", "value -1 out of range"});
}

TEST_F(GraphJsonTest, UnknownValueName) {
  expect_error(replace(example_, R"("args": ["h_relu",)", R"("args": ["h_rleu",)"),
               {"methods[0].nodes[2].args[0]", "no value named 'h_rleu'"});
}

TEST_F(GraphJsonTest, AmbiguousValueName) {
  expect_error(replace(example_, R"("name": "h_relu")", R"("name": "h")"),
               {"methods[0].nodes[2].args[0]", "no value named 'h_relu'"});
  std::string doc = replace(example_, R"("name": "h_relu")", R"("name": "h")");
  doc = replace(doc, R"("args": ["h_relu",)", R"("args": ["h",)");
  expect_error(doc, {"methods[0].nodes[2].args[0]", "'h' is ambiguous"});
}

TEST_F(GraphJsonTest, MissingWeight) {
  weights_.erase("fc1.bias");
  save_weights();
  expect_error(example_, {path() + ": methods[0].values[2].weight",
                          "weight 'fc1.bias' not found in " + dir_ + "/mlp.safetensors"});
}

TEST_F(GraphJsonTest, MissingWeightsFile) {
  expect_error(
      replace(example_, R"("weights": "mlp.safetensors")", R"("weights": "nope.safetensors")"),
      {dir_ + "/nope.safetensors", "cannot open"});
  expect_error(replace(example_, R"("weights": "mlp.safetensors",)", ""),
               {"methods[0].values[1]", "no \"weights\" file"});
}

TEST_F(GraphJsonTest, BadDType) {
  expect_error(replace(example_, R"("name": "x",          "dtype": "f32")",
                       R"("name": "x",          "dtype": "f33")"),
               {path() + ": methods[0].values[0].dtype", "unknown dtype \"f33\""});
}

TEST_F(GraphJsonTest, WrongWeightShape) {
  expect_error(replace(example_, R"("shape": [8, 4], "weight": "fc1.weight")",
                       R"("shape": [4, 8], "weight": "fc1.weight")"),
               {"methods[0].values[1].weight", "weight 'fc1.weight'", "mlp.safetensors",
                "has shape [8, 4], value declares [4, 8]"});
}

TEST_F(GraphJsonTest, WrongWeightDType) {
  weights_["fc2.bias"] = f32_tensor({2}, 0.0f);
  weights_["fc2.bias"].dtype = DType::I32;
  save_weights();
  expect_error(example_, {"methods[0].values[6].weight", "weight 'fc2.bias'",
                          "has dtype i32, value declares f32"});
}

TEST_F(GraphJsonTest, NegativeShape) {
  expect_error(replace(example_, R"("shape": [1, 4])", R"("shape": [1, -4])"),
               {"methods[0].values[0].shape[1]", "negative size -4"});
}

TEST_F(GraphJsonTest, UnsupportedVersion) {
  expect_error(replace(example_, R"("version": 1)", R"("version": 3)"),
               {path() + ": version", "version 3 is not supported", "supports versions 1 and 2"});
  expect_error(replace(example_, R"("version": 1,)", ""), {"missing \"version\""});
}

// Version 2: a dynamic "seq" dim (docs/dynamic-shapes.md).
const char* kDynamicGraph = R"({
  "version": 2,
  "methods": [{
    "name": "forward",
    "symbols": [{"name": "seq", "min": 1, "max": 16}],
    "values": [
      {"type": "tensor", "name": "x", "dtype": "f32", "shape": [16, 4], "dim_symbols": ["seq", null]},
      {"type": "tensor", "name": "y", "dtype": "f32", "shape": [16, 4], "dim_symbols": ["seq", null]},
      {"type": "int_list", "name": "shape", "value": [1, 16, 4], "symbols": [null, "seq", null]},
      {"type": "tensor", "name": "z", "dtype": "f32", "shape": [1, 16, 4], "dim_symbols": [null, "seq", null]},
      {"type": "int", "name": "end", "value": 16, "symbol": "seq"}
    ],
    "inputs": ["x"],
    "outputs": ["z"],
    "nodes": [
      {"op": "tern::relu", "args": ["x"], "outputs": ["y"]},
      {"op": "tern::view", "args": ["y", "shape"], "outputs": ["z"]}
    ]
  }]
})";

TEST_F(GraphJsonTest, DynamicDimsAndSymbolicInts) {
  const ProgramGraph p = read(kDynamicGraph);
  const Graph& g = p.methods[0];
  ASSERT_EQ(g.symbols.size(), 1u);
  EXPECT_EQ(g.symbols[0].name, "seq");
  EXPECT_EQ(g.symbols[0].min, 1);
  EXPECT_EQ(g.symbols[0].max, 16);
  EXPECT_EQ(g.values[0].dim_symbols, std::vector<int>({0, -1}));
  EXPECT_TRUE(g.values[0].is_dynamic());
  EXPECT_EQ(g.values[2].int_symbols, std::vector<int>({-1, 0, -1}));
  EXPECT_EQ(g.values[4].int_symbols, std::vector<int>({0}));
  EXPECT_TRUE(node_touches_dynamic(g, g.nodes[1]));
  // Planned at the bound: x, y and z (a view of y) each 16 x 4 floats.
  const MemoryPlan plan = plan_memory(g);
  EXPECT_GE(plan.arena_size, 2u * 16 * 4 * 4);
  EXPECT_EQ(plan.alias_of[3], 1);
}

TEST_F(GraphJsonTest, DynamicDimErrors) {
  const std::string doc = kDynamicGraph;
  expect_error(replace(doc, R"("version": 2)", R"("version": 1)"),
               {"methods[0].symbols", "dynamic shapes need graph format version 2"});
  expect_error(replace(doc, R"("dim_symbols": ["seq", null]},
      {"type": "tensor", "name": "y")",
                       R"("dim_symbols": ["sq", null]},
      {"type": "tensor", "name": "y")"),
               {"values[0].dim_symbols[0]", "unknown symbol \"sq\""});
  expect_error(replace(doc, R"("shape": [16, 4], "dim_symbols": ["seq", null]},
      {"type": "tensor", "name": "y")",
                       R"("shape": [12, 4], "dim_symbols": ["seq", null]},
      {"type": "tensor", "name": "y")"),
               {"value 0 'x': dim 0 is 'seq' whose bound is 16, but its size is 12"});
  expect_error(replace(doc, R"("max": 16})", R"("max": 16}, {"name": "pos", "max": 4})"),
               {"symbol 1 'pos': no method input has a dim with this symbol"});
  expect_error(replace(doc, R"("min": 1, "max": 16)", R"("min": 17, "max": 16)"),
               {"symbol 0 'seq': bounds [17, 16] are invalid"});
  expect_error(replace(doc, R"("value": 16, "symbol": "seq")", R"("value": [16], "symbol": "seq")"),
               {"expected an integer"});
}

// "shared" (format 1.2): a state tensor's program-level name; only on state, never empty.
TEST_F(GraphJsonTest, SharedStateKey) {
  const char* good = R"({"version": 1, "methods": [{"name": "m",
    "values": [{"type": "tensor", "name": "kv", "dtype": "f32", "shape": [2], "state": true,
                "shared": "cache"}], "inputs": [], "outputs": ["kv"], "nodes": []}]})";
  const ProgramGraph g = read(good);
  ASSERT_EQ(g.methods.size(), 1u);
  EXPECT_TRUE(g.methods[0].values[0].is_state);
  EXPECT_EQ(g.methods[0].values[0].shared_state, "cache");
  expect_error(R"({"version": 1, "methods": [{"name": "m",
    "values": [{"type": "tensor", "name": "x", "dtype": "f32", "shape": [2], "shared": "c"}],
    "inputs": ["x"], "outputs": ["x"], "nodes": []}]})",
               {"methods[0].values[0].shared", "only allowed with \"state\": true"});
  expect_error(R"({"version": 1, "methods": [{"name": "m",
    "values": [{"type": "tensor", "name": "kv", "dtype": "f32", "shape": [2], "state": true,
                "shared": ""}], "inputs": [], "outputs": ["kv"], "nodes": []}]})",
               {"shared state's name is empty"});
}

TEST_F(GraphJsonTest, UnknownKey) {
  expect_error(replace(example_, R"("weight": "fc1.bias")", R"("wieght": "fc1.bias")"),
               {"methods[0].values[2]", "unknown key \"wieght\""});
}

TEST_F(GraphJsonTest, NotJson) { expect_error("{\"version\": 1,", {path(), "not valid JSON"}); }

TEST_F(GraphJsonTest, MissingRequiredKeys) {
  expect_error(replace(example_, R"("op": "tern::relu",)", ""),
               {"methods[0].nodes[1]", "missing \"op\""});
  expect_error(replace(example_, R"({"type": "tensor", "name": "y")", R"({"name": "y")"),
               {"methods[0].values[7]", "missing \"type\""});
}

TEST_F(GraphJsonTest, ValidationErrorsCarryThePath) {
  // relu reads h_relu, which it is itself producing: used before produced.
  expect_error(replace(example_, R"("args": [3],)", R"("args": [4],)"),
               {path() + ": methods[0]: method 'forward': node 1 (tern::relu): arg 0",
                "value 4 'h_relu' is used before it is produced"});
}

constexpr const char* kAllKinds = R"({
  "version": 1,
  "weights": "mlp.safetensors",
  "methods": [{
    "name": "decode",
    "values": [
      {"type": "tensor", "name": "tok", "dtype": "i64", "shape": [1], "caller_bound": true},
      {"type": "tensor", "name": "kv", "dtype": "f32", "shape": [2], "state": true, "init": "fc2.bias"},
      {"type": "tensor", "name": "kv2", "dtype": "f32", "shape": [2], "state": true},
      {"type": "int", "value": -7},
      {"type": "double", "value": "-inf"},
      {"type": "bool", "value": true},
      {"type": "int_list", "value": [1, -1]},
      {"type": "double_list", "value": [0.5, "nan"]},
      {"type": "string", "value": "tanh"},
      {"type": "none"},
      {"type": "tensor_list", "value": ["kv", 2]},
      {"type": "tensor", "name": "w", "dtype": "nf4", "shape": [4, 4], "weight": "packed",
       "quant": {"scheme": "nf4", "block_size": 32, "absmax": "absmax"}},
      {"type": "tensor", "name": "absmax", "dtype": "f32", "shape": [1], "weight": "absmax"},
      {"type": "tensor", "name": "out", "dtype": "f32", "shape": [2]},
      {"type": "double", "value": 2.5}
    ],
    "inputs": ["tok", 14],
    "outputs": ["out", "kv"],
    "nodes": [
      {"op": "tern::update_", "args": ["kv", "tok", 3, 4, 5, 6, 7, 8, 9], "outputs": ["kv"]},
      {"op": "tern::cat", "args": [10, "w"], "outputs": ["out"], "source": "model.py:3"}
    ],
    "delegates": [{"backend": "cpu", "nodes": [1], "compile_specs": {"threads": "4"}}]
  }]
})";

TEST_F(GraphJsonTest, EveryValueKind) {
  SafeTensor packed;
  packed.dtype = DType::U8;
  packed.shape = {8};
  packed.data = {1, 2, 3, 4, 5, 6, 7, 8};
  weights_["packed"] = packed;
  weights_["absmax"] = f32_tensor({1}, 1.0f);
  save_weights();
  const ProgramGraph p = read(kAllKinds);
  const Graph& g = p.methods[0];
  EXPECT_EQ(p.producer, "tern");  // default
  EXPECT_EQ(g.name, "decode");
  EXPECT_TRUE(g.values[0].caller_bound);
  EXPECT_EQ(g.values[0].dtype, DType::I64);
  EXPECT_TRUE(g.values[1].is_state);
  EXPECT_EQ(g.values[1].data, weights_["fc2.bias"].data);
  EXPECT_TRUE(g.values[2].is_state);
  EXPECT_TRUE(g.values[2].data.empty());
  EXPECT_EQ(g.values[3].int_value, -7);
  EXPECT_TRUE(std::isinf(g.values[4].double_value) && g.values[4].double_value < 0);
  EXPECT_TRUE(g.values[5].bool_value);
  EXPECT_EQ(g.values[6].ints, std::vector<int64_t>({1, -1}));
  ASSERT_EQ(g.values[7].doubles.size(), 2u);
  EXPECT_TRUE(std::isnan(g.values[7].doubles[1]));
  EXPECT_EQ(g.values[8].string_value, "tanh");
  EXPECT_EQ(g.values[9].kind, Value::Kind::None);
  EXPECT_EQ(g.values[10].tensors, std::vector<int>({1, 2}));
  EXPECT_EQ(g.values[11].dtype, DType::NF4);
  EXPECT_EQ(g.values[11].data, packed.data);
  EXPECT_EQ(g.values[11].quant.scheme, QuantSpec::Scheme::NF4);
  EXPECT_EQ(g.values[11].quant.block_size, 32u);
  EXPECT_EQ(g.values[11].quant.absmax, 12);
  EXPECT_EQ(g.inputs, std::vector<int>({0, 14}));
  EXPECT_EQ(g.outputs, std::vector<int>({13, 1}));
  EXPECT_EQ(g.nodes[1].debug_name, "model.py:3");
  ASSERT_EQ(g.delegates.size(), 1u);
  const DelegateRegion& d = g.delegates[0];
  EXPECT_EQ(d.backend, "cpu");
  EXPECT_EQ(d.nodes, std::vector<int>({1}));
  // Derived: the tensor list (value 10) crosses element by element (values 1 and 2).
  EXPECT_EQ(d.inputs, std::vector<int>({1, 2, 11}));
  EXPECT_EQ(d.outputs, std::vector<int>({13}));
  ASSERT_EQ(d.compile_specs.size(), 1u);
  EXPECT_EQ(d.compile_specs[0].first, "threads");
  EXPECT_EQ(d.compile_specs[0].second, std::vector<uint8_t>({'4'}));

  // A packed nf4 weight of the wrong byte count names both sizes.
  weights_["packed"].data.mutable_vector().pop_back();
  weights_["packed"].shape = {7};
  save_weights();
  expect_error(kAllKinds, {"methods[0].values[11].weight", "weight 'packed'", "has 7 bytes",
                           "nf4 [4, 4] = 8 bytes"});
}

TEST_F(GraphJsonTest, DeclaredDelegateBoundaryIsChecked) {
  const std::string doc = replace(example_, R"("name": "fc2"}
      ])",
                                  R"("name": "fc2"}
      ],
      "delegates": [{"backend": "cpu", "nodes": [0, 1], "inputs": [0, 1], "outputs": [4]}])");
  expect_error(doc, {"methods[0]: method 'forward': delegate 0 (cpu)", "value 2 'fc1.bias'",
                     "not a declared input"});
  const std::string bad_nodes = replace(example_, R"("name": "fc2"}
      ])",
                                        R"("name": "fc2"}
      ],
      "delegates": [{"backend": "cpu", "nodes": [0, 2]}])");
  expect_error(bad_nodes, {"methods[0].delegates[0].nodes[1]", "ascending and contiguous"});
}

}  // namespace
}  // namespace tern::compiler
