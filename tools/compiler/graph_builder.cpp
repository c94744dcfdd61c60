// GraphBuilder: appends values and nodes to a Graph.
#include "tools/compiler/graph_builder.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "tools/compiler/region_boundary.h"

namespace tern::compiler {

GraphBuilder::GraphBuilder(std::string method_name) { graph_.name = std::move(method_name); }

int GraphBuilder::add_value(Value v) {
  graph_.values.push_back(std::move(v));
  return static_cast<int>(graph_.values.size() - 1);
}

namespace {

Value tensor_value(const std::string& name, DType dtype, std::vector<int64_t> sizes) {
  Value v;
  v.kind = Value::Kind::Tensor;
  v.name = name;
  v.dtype = dtype;
  v.sizes = std::move(sizes);
  return v;
}

// A value read after existing delegate regions (by a later node or as a method output) becomes
// an output of the region that produced it.
void note_use_after_regions(Graph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) return;
  if (g.values[id].kind == Value::Kind::TensorList) {
    for (int t : g.values[id].tensors) note_use_after_regions(g, t);
  }
  for (DelegateRegion& r : g.delegates) {
    for (int n : r.nodes) {
      if (n < 0 || static_cast<size_t>(n) >= g.nodes.size()) continue;
      const std::vector<int>& outs = g.nodes[n].outputs;
      if (std::find(outs.begin(), outs.end(), id) != outs.end() &&
          std::find(r.outputs.begin(), r.outputs.end(), id) == r.outputs.end()) {
        r.outputs.push_back(id);
      }
    }
  }
}

}  // namespace

int GraphBuilder::input(const std::string& name, DType dtype, std::vector<int64_t> sizes) {
  const int id = add_value(tensor_value(name, dtype, std::move(sizes)));
  graph_.inputs.push_back(id);
  return id;
}

int GraphBuilder::constant(const std::string& name, DType dtype, std::vector<int64_t> sizes,
                           std::vector<uint8_t> bytes) {
  Value v = tensor_value(name, dtype, std::move(sizes));
  v.is_constant = true;
  v.data = std::move(bytes);
  return add_value(std::move(v));
}

int GraphBuilder::constant_f32(const std::string& name, std::vector<int64_t> sizes,
                               const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return constant(name, DType::F32, std::move(sizes), std::move(bytes));
}

int GraphBuilder::state(const std::string& name, DType dtype, std::vector<int64_t> sizes,
                        std::vector<uint8_t> init) {
  Value v = tensor_value(name, dtype, std::move(sizes));
  v.is_state = true;
  v.data = std::move(init);
  return add_value(std::move(v));
}

int GraphBuilder::shared_state(const std::string& shared_name, DType dtype,
                               std::vector<int64_t> sizes, std::vector<uint8_t> init) {
  const int id = state(shared_name, dtype, std::move(sizes), std::move(init));
  graph_.values[static_cast<size_t>(id)].shared_state = shared_name;
  return id;
}

int GraphBuilder::tensor(const std::string& name, DType dtype, std::vector<int64_t> sizes) {
  return add_value(tensor_value(name, dtype, std::move(sizes)));
}

int GraphBuilder::int_value(int64_t v) {
  Value val;
  val.kind = Value::Kind::Int;
  val.int_value = v;
  return add_value(std::move(val));
}

int GraphBuilder::double_value(double v) {
  Value val;
  val.kind = Value::Kind::Double;
  val.double_value = v;
  return add_value(std::move(val));
}

int GraphBuilder::bool_value(bool v) {
  Value val;
  val.kind = Value::Kind::Bool;
  val.bool_value = v;
  return add_value(std::move(val));
}

int GraphBuilder::int_list(std::vector<int64_t> v) {
  Value val;
  val.kind = Value::Kind::IntList;
  val.ints = std::move(v);
  return add_value(std::move(val));
}

int GraphBuilder::double_list(std::vector<double> v) {
  Value val;
  val.kind = Value::Kind::DoubleList;
  val.doubles = std::move(v);
  return add_value(std::move(val));
}

int GraphBuilder::string_value(std::string v) {
  Value val;
  val.kind = Value::Kind::String;
  val.string_value = std::move(v);
  return add_value(std::move(val));
}

int GraphBuilder::symbol(const std::string& name, int64_t min, int64_t max) {
  graph_.symbols.push_back(DimSymbol{name, min, max});
  return static_cast<int>(graph_.symbols.size()) - 1;
}

void GraphBuilder::dynamic_dims(int id, std::vector<int> symbols) {
  graph_.values.at(static_cast<size_t>(id)).dim_symbols = std::move(symbols);
}

void GraphBuilder::int_symbols(int id, std::vector<int> symbols) {
  graph_.values.at(static_cast<size_t>(id)).int_symbols = std::move(symbols);
}

int GraphBuilder::none() {
  Value val;
  val.kind = Value::Kind::None;
  return add_value(std::move(val));
}

int GraphBuilder::op(const std::string& op, std::vector<int> args, DType dtype,
                     std::vector<int64_t> sizes, const std::string& debug_name) {
  const std::string out_name =
      (debug_name.empty() ? op : debug_name) + ".out" + std::to_string(graph_.nodes.size());
  const int out = add_value(tensor_value(out_name, dtype, std::move(sizes)));
  op_into(op, std::move(args), {out}, debug_name);
  return out;
}

void GraphBuilder::op_into(const std::string& op, std::vector<int> args, std::vector<int> outputs,
                           const std::string& debug_name) {
  Node node;
  node.op = op;
  node.args = std::move(args);
  node.outputs = std::move(outputs);
  node.debug_name = debug_name;
  for (int a : node.args) note_use_after_regions(graph_, a);
  graph_.nodes.push_back(std::move(node));
}

void GraphBuilder::output(int id) {
  note_use_after_regions(graph_, id);
  graph_.outputs.push_back(id);
}

int GraphBuilder::delegate(const std::string& backend, int first_node, int last_node,
                           std::vector<uint8_t> blob,
                           std::vector<std::pair<std::string, std::vector<uint8_t>>> specs) {
  const int num_nodes = static_cast<int>(graph_.nodes.size());
  if (first_node < 0 || last_node < first_node || last_node >= num_nodes) {
    throw std::invalid_argument("GraphBuilder::delegate(" + backend + "): node range [" +
                                std::to_string(first_node) + ", " + std::to_string(last_node) +
                                "] is not within the " + std::to_string(num_nodes) +
                                " nodes of method '" + graph_.name + "'");
  }
  const int value_count = static_cast<int>(graph_.values.size());
  for (int n = first_node; n <= last_node; ++n) {
    for (const auto* ids : {&graph_.nodes[n].args, &graph_.nodes[n].outputs}) {
      for (int id : *ids) {
        if (id < 0 || id >= value_count) {
          throw std::invalid_argument("GraphBuilder::delegate(" + backend + "): node " +
                                      std::to_string(n) + " refers to value " + std::to_string(id) +
                                      " out of range (method has " + std::to_string(value_count) +
                                      " values)");
        }
      }
    }
  }
  DelegateRegion region;
  region.backend = backend;
  region.blob = std::move(blob);
  region.compile_specs = std::move(specs);
  for (int n = first_node; n <= last_node; ++n) region.nodes.push_back(n);
  // Later nodes and outputs add to region.outputs as they are appended (op_into, output).
  BoundarySets b = region_boundary(graph_, first_node, last_node);
  region.inputs = std::move(b.inputs);
  region.outputs = std::move(b.outputs);
  graph_.delegates.push_back(std::move(region));
  return static_cast<int>(graph_.delegates.size() - 1);
}

Graph GraphBuilder::build() const {
  validate_graph(graph_);
  return graph_;
}

}  // namespace tern::compiler
