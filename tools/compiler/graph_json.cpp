// Reader of the graph.json interchange (docs/graph-format.md) and the safetensors file it names.
#include "tools/compiler/graph_json.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tools/compiler/region_boundary.h"
#include "tools/compiler/safetensors.h"
#include "tools/compiler/value_bytes.h"

namespace tern::compiler {

namespace {

using nlohmann::json;

constexpr int64_t kFormatVersion = 2;
// Version 1 is version 2 without dynamic shapes (method "symbols", tensor "dim_symbols",
// int "symbol", int_list "symbols"); both are read.
constexpr int64_t kOldestFormatVersion = 1;

// Parses one document; every error is "<file>: <json path>: <what>".
class Reader {
 public:
  Reader(std::string file, std::string base_dir)
      : file_(std::move(file)), base_dir_(std::move(base_dir)) {}

  ProgramGraph read(const std::string& text) {
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) {
      throw std::runtime_error(file_ + ": not valid JSON: " + e.what());
    }
    const std::string root = "(root)";
    expect_object(doc, root);
    check_keys(doc, root,
               {"format", "version", "producer", "source_model", "metadata", "weights", "methods"});
    if (doc.contains("format") && get_string(doc["format"], "format") != "tern-graph") {
      fail("format", "expected \"tern-graph\", found " + doc["format"].dump());
    }
    if (!doc.contains("version")) fail(root, "missing \"version\" (this reader reads 1 and 2)");
    const int64_t version = get_int(doc["version"], "version");
    if (version < kOldestFormatVersion || version > kFormatVersion) {
      fail("version", "graph format version " + std::to_string(version) +
                          " is not supported (this reader supports versions " +
                          std::to_string(kOldestFormatVersion) + " and " +
                          std::to_string(kFormatVersion) + ")");
    }
    version_ = version;
    ProgramGraph program;
    if (doc.contains("producer")) program.producer = get_string(doc["producer"], "producer");
    if (doc.contains("source_model")) {
      program.source_model = get_string(doc["source_model"], "source_model");
    }
    if (doc.contains("metadata")) {
      const json& m = doc["metadata"];
      expect_object(m, "metadata");
      for (auto it = m.begin(); it != m.end(); ++it) {
        program.metadata[it.key()] = get_string(it.value(), "metadata." + it.key());
      }
    }
    if (doc.contains("weights")) {
      weights_name_ = get_string(doc["weights"], "weights");
      if (weights_name_.empty()) fail("weights", "empty path");
    }
    if (!doc.contains("methods")) fail(root, "missing \"methods\"");
    const json& methods = doc["methods"];
    expect_array(methods, "methods");
    if (methods.empty()) fail("methods", "a program needs at least one method");
    std::set<std::string> names;
    for (size_t i = 0; i < methods.size(); ++i) {
      const std::string path = "methods[" + std::to_string(i) + "]";
      program.methods.push_back(read_method(methods[i], path));
      if (!names.insert(program.methods.back().name).second) {
        fail(path + ".name", "method name \"" + program.methods.back().name + "\" used twice");
      }
      try {
        validate_graph(program.methods.back());
      } catch (const std::invalid_argument& e) {
        fail(path, e.what());
      }
    }
    return program;
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    throw std::runtime_error(file_ + ": " + path + ": " + msg);
  }

  // ---- JSON type helpers ----
  void expect_object(const json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, "expected an object, found " + type_of(j));
  }
  void expect_array(const json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, "expected an array, found " + type_of(j));
  }
  static std::string type_of(const json& j) {
    std::string t = j.type_name();
    if (j.is_primitive()) {
      std::string d = j.dump();
      if (d.size() > 40) d = d.substr(0, 40) + "...";
      t += " " + d;
    }
    return t;
  }
  void check_keys(const json& j, const std::string& path,
                  std::initializer_list<const char*> allowed) const {
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool ok = false;
      for (const char* a : allowed) ok |= it.key() == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
        fail(path, "unknown key \"" + it.key() + "\" (allowed: " + list + ")");
      }
    }
  }
  std::string get_string(const json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, "expected a string, found " + type_of(j));
    return j.get<std::string>();
  }
  int64_t get_int(const json& j, const std::string& path) const {
    if (j.is_number_unsigned()) {
      if (j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail(path, "integer " + j.dump() + " does not fit in 64 bits");
      }
      return static_cast<int64_t>(j.get<uint64_t>());
    }
    if (!j.is_number_integer()) fail(path, "expected an integer, found " + type_of(j));
    return j.get<int64_t>();
  }
  uint32_t get_u32(const json& j, const std::string& path) const {
    const int64_t v = get_int(j, path);
    if (v < 0 || v > static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
      fail(path, "expected an integer in [0, 4294967295], found " + j.dump());
    }
    return static_cast<uint32_t>(v);
  }
  double get_double(const json& j, const std::string& path) const {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
      const std::string s = j.get<std::string>();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    fail(path, "expected a number (or \"inf\", \"-inf\", \"nan\"), found " + type_of(j));
  }
  bool get_bool(const json& j, const std::string& path) const {
    if (!j.is_boolean()) fail(path, "expected true or false, found " + type_of(j));
    return j.get<bool>();
  }
  const json& require(const json& obj, const char* key, const std::string& path) const {
    if (!obj.contains(key)) fail(path, std::string("missing \"") + key + "\"");
    return obj[key];
  }

  // ---- weights ----
  const std::map<std::string, SafeTensor>& weights(const std::string& path) {
    if (!weights_) {
      if (weights_name_.empty()) {
        fail(path, "refers to a weight but the document has no \"weights\" file");
      }
      weights_path_ = base_dir_.empty() || weights_name_[0] == '/'
                          ? weights_name_
                          : base_dir_ + "/" + weights_name_;
      try {
        weights_ =
            std::make_unique<std::map<std::string, SafeTensor>>(read_safetensors(weights_path_));
      } catch (const std::runtime_error& e) {
        fail("weights", e.what());
      }
    }
    return *weights_;
  }
  // The bytes of weight `name` (already checked), shared by every value that names it (another
  // method reading the same parameter holds the same buffer), so a program's weights are in
  // memory once — and not at all in anonymous memory when they are borrowed from the mapped
  // file (safetensors.h).
  ConstantBytes shared_bytes(const std::string& name) { return weights_->at(name).data; }
  const SafeTensor& weight(const std::string& name, const std::string& path) {
    const auto& w = weights(path);
    auto it = w.find(name);
    if (it == w.end()) {
      fail(path, "weight '" + name + "' not found in " + weights_path_ + " (" +
                     std::to_string(w.size()) + " tensors)");
    }
    return it->second;
  }
  // Checks that weight `name` holds a `dtype` tensor of `sizes` and returns its bytes.
  ConstantBytes weight_bytes(const std::string& name, DType dtype,
                             const std::vector<int64_t>& sizes, const std::string& path) {
    const SafeTensor& t = weight(name, path);
    uint64_t nbytes = 0;
    shape_nbytes(dtype, sizes, &nbytes);  // sizes were checked by the caller
    const bool packed = dtype == DType::NF4 || dtype == DType::FP8E4M3 || dtype == DType::FP8E5M2;
    if (packed && t.dtype == DType::U8) {
      // Quantized data stored as raw bytes: only the byte count can be checked.
      const size_t have = t.data.size();
      if (have != nbytes) {
        fail(path, "weight '" + name + "' in " + weights_path_ + " has " +
                       std::to_string(have) + " bytes (u8 " + shape_string(t.shape) +
                       "), value declares " + to_string(dtype) + " " + shape_string(sizes) + " = " +
                       std::to_string(nbytes) + " bytes");
      }
      return shared_bytes(name);
    }
    if (t.dtype != dtype) {
      fail(path, "weight '" + name + "' in " + weights_path_ + " has dtype " + to_string(t.dtype) +
                     ", value declares " + to_string(dtype));
    }
    if (t.shape != sizes) {
      fail(path, "weight '" + name + "' in " + weights_path_ + " has shape " +
                     shape_string(t.shape) + ", value declares " + shape_string(sizes));
    }
    return shared_bytes(name);
  }

  // ---- values ----
  int ref(const json& j, const std::string& path) const {
    const size_t n = current_names_ ? current_values_ : 0;
    if (j.is_string()) {
      const std::string name = j.get<std::string>();
      auto it = current_names_->find(name);
      if (it == current_names_->end()) fail(path, "no value named '" + name + "'");
      if (it->second < 0) fail(path, "value name '" + name + "' is ambiguous (used twice)");
      return it->second;
    }
    if (!j.is_number_integer()) {
      fail(path, "expected a value id (integer) or value name (string), found " + type_of(j));
    }
    const int64_t id = get_int(j, path);
    if (id < 0 || static_cast<uint64_t>(id) >= n) {
      fail(path, "value " + std::to_string(id) + " out of range (method has " + std::to_string(n) +
                     " values)");
    }
    return static_cast<int>(id);
  }
  std::vector<int> refs(const json& j, const std::string& path) const {
    expect_array(j, path);
    std::vector<int> out;
    for (size_t i = 0; i < j.size(); ++i) {
      out.push_back(ref(j[i], path + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  DType parse_dtype(const json& j, const std::string& path) const {
    const std::string s = get_string(j, path);
    for (uint8_t raw = 0; raw < kNumDTypes; ++raw) {
      if (s == to_string(static_cast<DType>(raw))) return static_cast<DType>(raw);
    }
    fail(path, "unknown dtype \"" + s +
                   "\" (expected f32, f16, bf16, i64, i32, i16, i8, u8, bool, nf4, fp8_e4m3 "
                   "or fp8_e5m2)");
  }

  QuantSpec parse_quant(const json& q, const std::string& path) const {
    expect_object(q, path);
    check_keys(q, path,
               {"scheme", "block_size", "absmax", "dq_codes", "dq_absmax2", "dq_table", "dq_offset",
                "dq_block_size", "scale", "granularity", "block_rows", "block_cols"});
    QuantSpec s;
    const std::string scheme = get_string(require(q, "scheme", path), path + ".scheme");
    if (scheme == "none") {
      s.scheme = QuantSpec::Scheme::None;
    } else if (scheme == "nf4") {
      s.scheme = QuantSpec::Scheme::NF4;
    } else if (scheme == "nf4_double_quant") {
      s.scheme = QuantSpec::Scheme::NF4DoubleQuant;
    } else if (scheme == "fp8") {
      s.scheme = QuantSpec::Scheme::FP8;
    } else {
      fail(path + ".scheme",
           "unknown scheme \"" + scheme + "\" (expected none, nf4, nf4_double_quant or fp8)");
    }
    auto opt_ref = [&](const char* key, int* out) {
      if (q.contains(key)) *out = ref(q[key], path + "." + key);
    };
    auto opt_u32 = [&](const char* key, uint32_t* out) {
      if (q.contains(key)) *out = get_u32(q[key], path + "." + key);
    };
    opt_u32("block_size", &s.block_size);
    opt_ref("absmax", &s.absmax);
    opt_ref("dq_codes", &s.dq_codes);
    opt_ref("dq_absmax2", &s.dq_absmax2);
    opt_ref("dq_table", &s.dq_table);
    if (q.contains("dq_offset")) {
      s.dq_offset = static_cast<float>(get_double(q["dq_offset"], path + ".dq_offset"));
    }
    opt_u32("dq_block_size", &s.dq_block_size);
    opt_ref("scale", &s.scale);
    if (q.contains("granularity")) {
      const std::string g = get_string(q["granularity"], path + ".granularity");
      if (g == "per_tensor") {
        s.granularity = QuantSpec::Granularity::PerTensor;
      } else if (g == "per_channel") {
        s.granularity = QuantSpec::Granularity::PerChannel;
      } else if (g == "block_2d") {
        s.granularity = QuantSpec::Granularity::Block2D;
      } else {
        fail(path + ".granularity",
             "unknown granularity \"" + g + "\" (expected per_tensor, per_channel or block_2d)");
      }
    }
    opt_u32("block_rows", &s.block_rows);
    opt_u32("block_cols", &s.block_cols);
    return s;
  }

  Value read_value(const json& j, const std::string& path) {
    expect_object(j, path);
    Value v;
    if (j.contains("name")) v.name = get_string(j["name"], path + ".name");
    const std::string type = get_string(require(j, "type", path), path + ".type");
    const std::string vpath = path + ".value";
    if (type == "tensor") {
      check_keys(j, path,
                 {"type", "name", "dtype", "shape", "weight", "state", "init", "caller_bound",
                  "quant", "dim_symbols", "shared"});
      v.kind = Value::Kind::Tensor;
      v.dtype = parse_dtype(require(j, "dtype", path), path + ".dtype");
      const json& shape = require(j, "shape", path);
      expect_array(shape, path + ".shape");
      for (size_t i = 0; i < shape.size(); ++i) {
        const std::string sp = path + ".shape[" + std::to_string(i) + "]";
        const int64_t s = get_int(shape[i], sp);
        if (s < 0) fail(sp, "negative size " + std::to_string(s));
        v.sizes.push_back(s);
      }
      uint64_t nbytes = 0;
      if (!shape_nbytes(v.dtype, v.sizes, &nbytes)) {
        fail(path + ".shape", "byte size of " + shape_string(v.sizes) + " overflows");
      }
      if (j.contains("state")) v.is_state = get_bool(j["state"], path + ".state");
      if (j.contains("caller_bound")) {
        v.caller_bound = get_bool(j["caller_bound"], path + ".caller_bound");
      }
      if (j.contains("weight")) {
        if (v.is_state || v.caller_bound) {
          fail(path, "a tensor is one of constant (\"weight\"), \"state\" or \"caller_bound\"");
        }
        v.is_constant = true;
        v.data = weight_bytes(get_string(j["weight"], path + ".weight"), v.dtype, v.sizes,
                              path + ".weight");
      }
      if (v.is_state && v.caller_bound) {
        fail(path, "a tensor is one of constant (\"weight\"), \"state\" or \"caller_bound\"");
      }
      if (j.contains("init")) {
        if (!v.is_state) fail(path + ".init", "\"init\" is only allowed with \"state\": true");
        v.data =
            weight_bytes(get_string(j["init"], path + ".init"), v.dtype, v.sizes, path + ".init");
      }
      if (j.contains("shared")) {
        if (!v.is_state) fail(path + ".shared", "\"shared\" is only allowed with \"state\": true");
        v.shared_state = get_string(j["shared"], path + ".shared");
        if (v.shared_state.empty()) fail(path + ".shared", "the shared state's name is empty");
      }
      if (j.contains("quant")) v.quant = parse_quant(j["quant"], path + ".quant");
      if (j.contains("dim_symbols")) {
        v.dim_symbols = symbol_refs(j["dim_symbols"], path + ".dim_symbols");
      }
      return v;
    }
    if (type == "none") {
      check_keys(j, path, {"type", "name"});
      v.kind = Value::Kind::None;
      return v;
    }
    check_keys(j, path, {"type", "name", "value", "symbol", "symbols"});
    if ((j.contains("symbol") && type != "int") || (j.contains("symbols") && type != "int_list")) {
      fail(path, "\"symbol\" belongs to an int, \"symbols\" to an int_list");
    }
    const json& val = require(j, "value", path);
    if (j.contains("symbol")) {
      v.int_symbols = symbol_refs(json::array({j["symbol"]}), path + ".symbol");
    }
    if (j.contains("symbols")) v.int_symbols = symbol_refs(j["symbols"], path + ".symbols");
    if (type == "int") {
      v.kind = Value::Kind::Int;
      v.int_value = get_int(val, vpath);
    } else if (type == "double") {
      v.kind = Value::Kind::Double;
      v.double_value = get_double(val, vpath);
    } else if (type == "bool") {
      v.kind = Value::Kind::Bool;
      v.bool_value = get_bool(val, vpath);
    } else if (type == "int_list") {
      v.kind = Value::Kind::IntList;
      expect_array(val, vpath);
      for (size_t i = 0; i < val.size(); ++i) {
        v.ints.push_back(get_int(val[i], vpath + "[" + std::to_string(i) + "]"));
      }
    } else if (type == "double_list") {
      v.kind = Value::Kind::DoubleList;
      expect_array(val, vpath);
      for (size_t i = 0; i < val.size(); ++i) {
        v.doubles.push_back(get_double(val[i], vpath + "[" + std::to_string(i) + "]"));
      }
    } else if (type == "string") {
      v.kind = Value::Kind::String;
      v.string_value = get_string(val, vpath);
    } else if (type == "tensor_list") {
      v.kind = Value::Kind::TensorList;
      v.tensors = refs(val, vpath);
    } else {
      fail(path + ".type", "unknown value type \"" + type +
                               "\" (expected tensor, int, double, bool, int_list, double_list, "
                               "string, none or tensor_list)");
    }
    return v;
  }

  // ---- dynamic shapes (version 2, docs/dynamic-shapes.md) ----
  void require_version_2(const std::string& path) const {
    if (version_ < 2) {
      fail(path, "dynamic shapes need graph format version 2 (this file says version " +
                     std::to_string(version_) + ")");
    }
  }

  std::vector<DimSymbol> read_symbols(const json& j, const std::string& path) {
    require_version_2(path);
    expect_array(j, path);
    std::vector<DimSymbol> out;
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string sp = path + "[" + std::to_string(i) + "]";
      expect_object(j[i], sp);
      check_keys(j[i], sp, {"name", "min", "max"});
      DimSymbol sym;
      sym.name = get_string(require(j[i], "name", sp), sp + ".name");
      if (j[i].contains("min")) sym.min = get_int(j[i]["min"], sp + ".min");
      sym.max = get_int(require(j[i], "max", sp), sp + ".max");
      if (!symbol_index_.emplace(sym.name, static_cast<int>(i)).second) {
        fail(sp + ".name", "symbol \"" + sym.name + "\" declared twice");
      }
      out.push_back(sym);
    }
    return out;
  }

  // An array of symbol names or nulls (static) -> symbol indices or -1.
  std::vector<int> symbol_refs(const json& j, const std::string& path) const {
    require_version_2(path);
    expect_array(j, path);
    std::vector<int> out;
    for (size_t i = 0; i < j.size(); ++i) {
      if (j[i].is_null()) {
        out.push_back(-1);
        continue;
      }
      const std::string name = get_string(j[i], path + "[" + std::to_string(i) + "]");
      auto it = symbol_index_.find(name);
      if (it == symbol_index_.end()) {
        fail(path + "[" + std::to_string(i) + "]",
             "unknown symbol \"" + name + "\" (declare it in the method's \"symbols\")");
      }
      out.push_back(it->second);
    }
    return out;
  }

  Node read_node(const json& j, const std::string& path) const {
    expect_object(j, path);
    check_keys(j, path, {"op", "args", "outputs", "name", "source"});
    Node node;
    node.op = get_string(require(j, "op", path), path + ".op");
    if (node.op.empty()) fail(path + ".op", "empty op name");
    if (j.contains("args")) node.args = refs(j["args"], path + ".args");
    node.outputs = refs(require(j, "outputs", path), path + ".outputs");
    if (j.contains("name")) node.debug_name = get_string(j["name"], path + ".name");
    if (j.contains("source")) {
      const std::string source = get_string(j["source"], path + ".source");
      node.debug_name = node.debug_name.empty() ? source : node.debug_name + " (" + source + ")";
    }
    return node;
  }

  DelegateRegion read_delegate(const json& j, const std::string& path, const Graph& g) {
    expect_object(j, path);
    check_keys(j, path, {"backend", "nodes", "inputs", "outputs", "blob", "compile_specs"});
    DelegateRegion d;
    d.backend = get_string(require(j, "backend", path), path + ".backend");
    const json& nodes = require(j, "nodes", path);
    expect_array(nodes, path + ".nodes");
    if (nodes.empty()) fail(path + ".nodes", "a delegate region needs at least one node");
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string np = path + ".nodes[" + std::to_string(i) + "]";
      const int64_t n = get_int(nodes[i], np);
      if (n < 0 || static_cast<uint64_t>(n) >= g.nodes.size()) {
        fail(np, "node " + std::to_string(n) + " out of range (method has " +
                     std::to_string(g.nodes.size()) + " nodes)");
      }
      if (i > 0 && n != d.nodes.back() + 1) {
        fail(np, "region nodes must be ascending and contiguous, found " +
                     std::to_string(d.nodes.back()) + " then " + std::to_string(n));
      }
      d.nodes.push_back(static_cast<int>(n));
    }
    if (j.contains("inputs") && j.contains("outputs")) {
      d.inputs = refs(j["inputs"], path + ".inputs");
      d.outputs = refs(j["outputs"], path + ".outputs");
    } else {
      if (j.contains("inputs") || j.contains("outputs")) {
        fail(path, "give both \"inputs\" and \"outputs\", or neither to derive them");
      }
      BoundarySets b = region_boundary(g, d.nodes.front(), d.nodes.back());
      d.inputs = std::move(b.inputs);
      d.outputs = std::move(b.outputs);
    }
    if (j.contains("blob")) {
      const std::string name = get_string(j["blob"], path + ".blob");
      weight(name, path + ".blob");
      d.blob = shared_bytes(name).to_vector();
    }
    if (j.contains("compile_specs")) {
      const json& specs = j["compile_specs"];
      expect_object(specs, path + ".compile_specs");
      for (auto it = specs.begin(); it != specs.end(); ++it) {
        const std::string s = get_string(it.value(), path + ".compile_specs." + it.key());
        d.compile_specs.emplace_back(it.key(), std::vector<uint8_t>(s.begin(), s.end()));
      }
    }
    return d;
  }

  Graph read_method(const json& j, const std::string& path) {
    expect_object(j, path);
    check_keys(j, path, {"name", "values", "inputs", "outputs", "nodes", "delegates", "symbols"});
    Graph g;
    g.name = get_string(require(j, "name", path), path + ".name");
    if (g.name.empty()) fail(path + ".name", "empty method name");
    symbol_index_.clear();
    if (j.contains("symbols")) g.symbols = read_symbols(j["symbols"], path + ".symbols");
    const json& values = require(j, "values", path);
    expect_array(values, path + ".values");
    // Names first, so that any reference may use a name (ambiguous names map to -1).
    std::map<std::string, int> names;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].is_object() && values[i].contains("name") && values[i]["name"].is_string()) {
        const std::string name = values[i]["name"].get<std::string>();
        auto ins = names.emplace(name, static_cast<int>(i));
        if (!ins.second) ins.first->second = -1;
      }
    }
    current_names_ = &names;
    current_values_ = values.size();
    for (size_t i = 0; i < values.size(); ++i) {
      g.values.push_back(read_value(values[i], path + ".values[" + std::to_string(i) + "]"));
    }
    g.inputs = refs(require(j, "inputs", path), path + ".inputs");
    g.outputs = refs(require(j, "outputs", path), path + ".outputs");
    const json& nodes = require(j, "nodes", path);
    expect_array(nodes, path + ".nodes");
    for (size_t i = 0; i < nodes.size(); ++i) {
      g.nodes.push_back(read_node(nodes[i], path + ".nodes[" + std::to_string(i) + "]"));
    }
    if (j.contains("delegates")) {
      const json& ds = j["delegates"];
      expect_array(ds, path + ".delegates");
      for (size_t i = 0; i < ds.size(); ++i) {
        g.delegates.push_back(
            read_delegate(ds[i], path + ".delegates[" + std::to_string(i) + "]", g));
      }
    }
    current_names_ = nullptr;
    current_values_ = 0;
    return g;
  }

  std::string file_;
  std::string base_dir_;
  std::string weights_name_;
  std::string weights_path_;
  std::unique_ptr<std::map<std::string, SafeTensor>> weights_;
  const std::map<std::string, int>* current_names_ = nullptr;
  size_t current_values_ = 0;
  int64_t version_ = 1;
  std::map<std::string, int> symbol_index_;  ///< the current method's symbols
};

}  // namespace

ProgramGraph read_graph_json(const std::string& graph_json_path) {
  std::ifstream in(graph_json_path, std::ios::binary);
  if (!in) throw std::runtime_error(graph_json_path + ": cannot open graph JSON file");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(graph_json_path + ": read error");
  const size_t slash = graph_json_path.find_last_of('/');
  const std::string base_dir = slash == std::string::npos ? "" : graph_json_path.substr(0, slash);
  return Reader(graph_json_path, slash == 0 ? "/" : base_dir).read(text);
}

ProgramGraph parse_graph_json(const std::string& json_text, const std::string& base_dir) {
  return Reader("graph.json", base_dir).read(json_text);
}

}  // namespace tern::compiler
