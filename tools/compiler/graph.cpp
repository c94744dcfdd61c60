// Graph IR helpers: view-op classification and structural validation.
#include "tools/compiler/graph.h"

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/compiler/backend_compiler.h"
#include "tools/compiler/region_boundary.h"
#include "tools/compiler/value_bytes.h"

namespace tern::compiler {

bool is_view_op(const std::string& op) {
  return op == "tern::reshape" || op == "tern::view" || op == "tern::squeeze" ||
         op == "tern::unsqueeze" || op == "tern::flatten" || op == "tern::alias";
}

namespace {

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::Tensor:
      return "tensor";
    case Value::Kind::Int:
      return "int";
    case Value::Kind::Double:
      return "double";
    case Value::Kind::Bool:
      return "bool";
    case Value::Kind::IntList:
      return "int_list";
    case Value::Kind::DoubleList:
      return "double_list";
    case Value::Kind::String:
      return "string";
    case Value::Kind::None:
      return "none";
    case Value::Kind::TensorList:
      return "tensor_list";
  }
  return "invalid";
}

// Checks one method; every error message starts with "method '<name>': ".
class Validator {
 public:
  explicit Validator(const Graph& g) : g_(g), n_(g.values.size()) {}

  void run() {
    check_values();
    check_dynamic();
    check_inputs();
    check_nodes();
    check_outputs();
    check_delegates();
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw std::invalid_argument("method '" + g_.name + "': " + msg);
  }

  std::string describe(int id) const {
    std::string s = "value " + std::to_string(id);
    if (id >= 0 && static_cast<size_t>(id) < n_ && !g_.values[id].name.empty()) {
      s += " '" + g_.values[id].name + "'";
    }
    return s;
  }

  void check_id(int id, const std::string& where) const {
    if (id < 0 || static_cast<size_t>(id) >= n_) {
      fail(where + ": value " + std::to_string(id) + " out of range (method has " +
           std::to_string(n_) + " values)");
    }
  }

  static std::string node_where(size_t i, const Node& node) {
    return "node " + std::to_string(i) + " (" + node.op + ")";
  }

  void check_values() {
    for (size_t i = 0; i < n_; ++i) {
      const Value& v = g_.values[i];
      const std::string where = describe(static_cast<int>(i));
      if (v.kind == Value::Kind::TensorList) {
        for (size_t k = 0; k < v.tensors.size(); ++k) {
          const int t = v.tensors[k];
          check_id(t, where + ": element " + std::to_string(k));
          if (!g_.values[t].is_tensor()) {
            fail(where + ": element " + std::to_string(k) + ": " + describe(t) + " is a " +
                 kind_name(g_.values[t].kind) + ", expected a tensor");
          }
        }
      }
      if (!v.shared_state.empty() && !(v.is_tensor() && v.is_state)) {
        fail(where + ": only a state tensor can be shared state ('" + v.shared_state + "')");
      }
      if (!v.is_tensor()) {
        if (v.is_constant || v.is_state || v.caller_bound) {
          fail(where + ": a " + std::string(kind_name(v.kind)) +
               " cannot be constant, state or caller-bound");
        }
        continue;
      }
      if (!is_valid_dtype(static_cast<uint8_t>(v.dtype))) {
        fail(where + ": invalid dtype " + std::to_string(static_cast<int>(v.dtype)));
      }
      uint64_t nbytes = 0;
      if (!shape_nbytes(v.dtype, v.sizes, &nbytes)) {
        fail(where + ": shape " + shape_string(v.sizes) +
             " has a negative size or its byte size overflows");
      }
      const int flags = int(v.is_constant) + int(v.is_state) + int(v.caller_bound);
      if (flags > 1) fail(where + ": at most one of constant, state, caller-bound may be set");
      if (v.is_constant && v.data.size() != nbytes) {
        fail(where + ": constant " + to_string(v.dtype) + " " + shape_string(v.sizes) + " needs " +
             std::to_string(nbytes) + " bytes, has " + std::to_string(v.data.size()));
      }
      if (v.is_state && !v.data.empty() && v.data.size() != nbytes) {
        fail(where + ": state initial value of " + to_string(v.dtype) + " " +
             shape_string(v.sizes) + " needs " + std::to_string(nbytes) + " bytes, has " +
             std::to_string(v.data.size()));
      }
      if (!v.is_constant && !v.is_state && !v.data.empty()) {
        fail(where + ": has data but is neither constant nor state");
      }
      check_quant(static_cast<int>(i), v.quant);
    }
  }

  // Bounded-dynamic shapes (docs/dynamic-shapes.md).
  void check_dynamic() {
    const size_t num_symbols = g_.symbols.size();
    for (size_t s = 0; s < num_symbols; ++s) {
      const DimSymbol& sym = g_.symbols[s];
      const std::string where = "symbol " + std::to_string(s) + " '" + sym.name + "'";
      if (sym.name.empty()) fail("symbol " + std::to_string(s) + ": empty name");
      if (sym.min < 0 || sym.min > sym.max || sym.max < 1) {
        fail(where + ": bounds [" + std::to_string(sym.min) + ", " + std::to_string(sym.max) +
             "] are invalid (need 0 <= min <= max and max >= 1)");
      }
      for (size_t t = 0; t < s; ++t) {
        if (g_.symbols[t].name == sym.name) fail(where + ": name used twice");
      }
    }
    if (num_symbols > 64) fail(std::to_string(num_symbols) + " symbols exceed the limit of 64");
    std::vector<bool> bound(num_symbols, false);
    for (int in : g_.inputs) {
      if (in < 0 || static_cast<size_t>(in) >= n_) continue;  // check_inputs names it
      for (int s : g_.values[in].dim_symbols) {
        if (s >= 0 && static_cast<size_t>(s) < num_symbols) bound[s] = true;
      }
    }
    for (size_t i = 0; i < n_; ++i) {
      const Value& v = g_.values[i];
      const std::string where = describe(static_cast<int>(i));
      for (int s : v.int_symbols) {
        if (s >= static_cast<int>(num_symbols) || s < -1) {
          fail(where + ": symbol " + std::to_string(s) + " out of range (" +
               std::to_string(num_symbols) + " symbols)");
        }
      }
      if (!v.int_symbols.empty()) {
        const size_t items = v.kind == Value::Kind::Int       ? 1
                             : v.kind == Value::Kind::IntList ? v.ints.size()
                                                              : 0;
        if (v.int_symbols.size() != items) {
          fail(where + ": " + std::to_string(v.int_symbols.size()) + " int symbols for a " +
               kind_name(v.kind) + " of " + std::to_string(items) + " items");
        }
      }
      if (v.dim_symbols.empty()) continue;
      if (!v.is_tensor()) fail(where + ": only tensors have dynamic dims");
      if (v.dim_symbols.size() != v.sizes.size()) {
        fail(where + ": " + std::to_string(v.dim_symbols.size()) + " dim symbols for rank " +
             std::to_string(v.sizes.size()));
      }
      for (size_t d = 0; d < v.sizes.size(); ++d) {
        const int s = v.dim_symbols[d];
        if (s == -1) continue;
        if (s < 0 || static_cast<size_t>(s) >= num_symbols) {
          fail(where + ": dim " + std::to_string(d) + " names symbol " + std::to_string(s) +
               ", out of range (" + std::to_string(num_symbols) + " symbols)");
        }
        if (v.sizes[d] != g_.symbols[s].max) {
          fail(where + ": dim " + std::to_string(d) + " is '" + g_.symbols[s].name +
               "' whose bound is " + std::to_string(g_.symbols[s].max) + ", but its size is " +
               std::to_string(v.sizes[d]) + " (dynamic dims are given at their bound)");
        }
      }
      if (v.is_dynamic() && (v.is_constant || v.is_state ||
                             v.quant.scheme != QuantSpec::Scheme::None || v.dtype == DType::NF4)) {
        fail(where + ": a constant, state or quantized tensor cannot have dynamic dims");
      }
    }
    for (size_t s = 0; s < num_symbols; ++s) {
      if (!bound[s]) {
        fail("symbol " + std::to_string(s) + " '" + g_.symbols[s].name +
             "': no method input has a dim with this symbol");
      }
    }
  }

  // A quantized tensor's scheme and parameters, by the rules the runtime's loader applies
  // (runtime/executor/method_load_values.cpp load_quant): a program the compiler writes loads.
  void check_quant(int id, const QuantSpec& q) {
    const Value& v = g_.values[id];
    const std::string where = describe(id);
    const bool nf4 = v.dtype == DType::NF4;
    const bool fp8 = v.dtype == DType::FP8E4M3 || v.dtype == DType::FP8E5M2;
    if (q.scheme == QuantSpec::Scheme::None) {
      if (nf4 || fp8) {
        fail(where + ": " + std::string(to_string(v.dtype)) +
             " tensor without quantization parameters (quant)");
      }
      return;
    }
    const bool nf4_scheme =
        q.scheme == QuantSpec::Scheme::NF4 || q.scheme == QuantSpec::Scheme::NF4DoubleQuant;
    if (!(nf4_scheme && nf4) && !(q.scheme == QuantSpec::Scheme::FP8 && fp8)) {
      fail(where + ": " + (nf4_scheme ? "NF4" : "FP8") + " quantization on a " +
           to_string(v.dtype) + " tensor");
    }
    uint64_t numel = 0;
    if (!shape_numel(v.sizes, &numel)) {
      fail(where + ": shape " + shape_string(v.sizes) + " overflows");
    }
    auto ceil_div = [](uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); };
    if (nf4_scheme) {
      const uint32_t b = q.block_size;
      if (b < 32 || b > 4096 || (b & (b - 1)) != 0) {
        fail(where + ": NF4 block size " + std::to_string(b) +
             " is not a power of two in [32, 4096]");
      }
      const uint64_t blocks = ceil_div(numel, b);
      if (q.scheme == QuantSpec::Scheme::NF4) {
        check_quant_param(id, "absmax", q.absmax, DType::F32, blocks);
      } else {
        if (q.dq_block_size == 0) fail(where + ": double-quant block size is 0");
        if (!std::isfinite(q.dq_offset)) fail(where + ": double-quant offset is not finite");
        check_quant_param(id, "dq_codes", q.dq_codes, DType::U8, blocks);
        check_quant_param(id, "dq_absmax2", q.dq_absmax2, DType::F32,
                          ceil_div(blocks, q.dq_block_size));
        check_quant_param(id, "dq_table", q.dq_table, DType::F32, 256);
      }
      return;
    }
    uint64_t scales = 1;
    if (q.granularity == QuantSpec::Granularity::PerChannel) {
      scales = v.sizes.empty() ? 1 : static_cast<uint64_t>(v.sizes[0]);
    } else if (q.granularity == QuantSpec::Granularity::Block2D) {
      if (v.sizes.size() != 2 || q.block_rows == 0 || q.block_cols == 0) {
        fail(where + ": block_2d FP8 scales need a 2-D tensor and non-zero block sizes, found " +
             "rank " + std::to_string(v.sizes.size()) + ", blocks " +
             std::to_string(q.block_rows) + "x" + std::to_string(q.block_cols));
      }
      scales = ceil_div(static_cast<uint64_t>(v.sizes[0]), q.block_rows) *
               ceil_div(static_cast<uint64_t>(v.sizes[1]), q.block_cols);
    }
    check_quant_param(id, "scale", q.scale, DType::F32, scales);
  }

  // Quant parameter `field` of tensor `id`: value `ref`, a constant `dtype` tensor of `count`
  // elements.
  void check_quant_param(int id, const char* field, int ref, DType dtype, uint64_t count) {
    const std::string where = describe(id) + ": quant." + field;
    if (ref == -1) fail(where + ": missing (the scheme needs it)");
    check_id(ref, where);
    const Value& p = g_.values[ref];
    if (!p.is_tensor() || !p.is_constant) {
      fail(where + ": " + describe(ref) + " must be a constant tensor");
    }
    const std::string param = describe(id) + ": quant " + field + " (" + describe(ref) + ")";
    if (p.dtype != dtype) {
      fail(param + " has dtype " + to_string(p.dtype) + ", expected " + to_string(dtype));
    }
    uint64_t n = 0;
    if (!shape_numel(p.sizes, &n) || n != count) {
      fail(param + " has " + std::to_string(n) + " elements, expected " + std::to_string(count));
    }
  }

  void check_inputs() {
    std::set<int> seen;
    for (size_t k = 0; k < g_.inputs.size(); ++k) {
      const int id = g_.inputs[k];
      const std::string where = "input " + std::to_string(k);
      check_id(id, where);
      const Value& v = g_.values[id];
      const bool scalar = v.kind == Value::Kind::Int || v.kind == Value::Kind::Double ||
                          v.kind == Value::Kind::Bool;
      if (!v.is_tensor() && !scalar) {
        fail(where + ": " + describe(id) + " is a " + kind_name(v.kind) +
             ", expected a tensor or an int/double/bool scalar");
      }
      if (v.is_constant || v.is_state) {
        fail(where + ": " + describe(id) + " is a constant or state tensor");
      }
      if (!seen.insert(id).second) fail(where + ": " + describe(id) + " listed twice");
    }
    for (size_t i = 0; i < n_; ++i) {
      if (g_.values[i].caller_bound && !seen.count(static_cast<int>(i))) {
        fail(describe(static_cast<int>(i)) + " is caller-bound but not a method input");
      }
    }
  }

  // Values available before the first node: inputs, constants, state, and non-tensors.
  bool initially_defined(int id) const {
    const Value& v = g_.values[id];
    if (v.kind == Value::Kind::TensorList) return false;
    return !v.is_tensor() || v.is_constant || v.is_state;
  }

  void check_nodes() {
    defined_.assign(n_, false);
    for (size_t i = 0; i < n_; ++i) defined_[i] = initially_defined(static_cast<int>(i));
    for (int id : g_.inputs) defined_[id] = true;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& node = g_.nodes[i];
      const std::string where = node_where(i, node);
      if (node.op.empty()) fail("node " + std::to_string(i) + ": empty op name");
      for (size_t a = 0; a < node.args.size(); ++a) {
        const std::string aw = where + ": arg " + std::to_string(a);
        const int id = node.args[a];
        check_id(id, aw);
        require_defined(id, aw);
      }
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        const std::string ow = where + ": output " + std::to_string(o);
        const int id = node.outputs[o];
        check_id(id, ow);
        const Value& v = g_.values[id];
        if (v.kind == Value::Kind::TensorList) {
          for (int t : v.tensors) produce(t, ow + ": element");
          defined_[id] = true;
        } else if (v.is_tensor()) {
          produce(id, ow);
        } else {
          fail(ow + ": " + describe(id) + " is a " + kind_name(v.kind) +
               ", expected a tensor or tensor list");
        }
      }
    }
  }

  void require_defined(int id, const std::string& where) {
    const Value& v = g_.values[id];
    if (v.kind == Value::Kind::TensorList) {
      for (int t : v.tensors) {
        if (!defined_[t]) {
          fail(where + ": " + describe(id) + ": element " + describe(t) +
               " is used before it is produced");
        }
      }
      return;
    }
    if (!defined_[id]) fail(where + ": " + describe(id) + " is used before it is produced");
  }

  void produce(int id, const std::string& where) {
    const Value& v = g_.values[id];
    if (v.is_state) return;  // state may be updated any number of times
    if (v.is_constant) fail(where + ": " + describe(id) + " is a constant and cannot be written");
    if (defined_[id]) {
      bool is_input = false;
      for (int in : g_.inputs) is_input |= in == id;
      fail(where + ": " + describe(id) +
           (is_input ? " is a method input and cannot be written" : " is produced twice"));
    }
    defined_[id] = true;
  }

  void check_outputs() {
    for (size_t k = 0; k < g_.outputs.size(); ++k) {
      const int id = g_.outputs[k];
      const std::string where = "output " + std::to_string(k);
      check_id(id, where);
      require_defined(id, where);
    }
    // Every tensor must come from somewhere: an unproduced tensor has no bytes to plan.
    for (size_t i = 0; i < n_; ++i) {
      if (g_.values[i].is_tensor() && !defined_[i]) {
        fail(describe(static_cast<int>(i)) + " is never produced");
      }
    }
  }

  void check_delegates() {
    std::vector<int> owner(g_.nodes.size(), -1);
    for (size_t r = 0; r < g_.delegates.size(); ++r) {
      const DelegateRegion& d = g_.delegates[r];
      const std::string where = "delegate " + std::to_string(r) + " (" + d.backend + ")";
      if (d.backend.empty()) fail(where + ": empty backend name");
      if (d.nodes.empty()) fail(where + ": has no nodes");
      for (size_t k = 0; k < d.nodes.size(); ++k) {
        const int n = d.nodes[k];
        if (n < 0 || static_cast<size_t>(n) >= g_.nodes.size()) {
          fail(where + ": node " + std::to_string(n) + " out of range (method has " +
               std::to_string(g_.nodes.size()) + " nodes)");
        }
        if (k > 0 && n != d.nodes[k - 1] + 1) {
          fail(where + ": nodes must be ascending and contiguous, found " +
               std::to_string(d.nodes[k - 1]) + " then " + std::to_string(n));
        }
        if (owner[n] >= 0) {
          fail(where + ": node " + std::to_string(n) + " already belongs to delegate " +
               std::to_string(owner[n]));
        }
        owner[n] = static_cast<int>(r);
        const Node& node = g_.nodes[static_cast<size_t>(n)];
        if (node_touches_dynamic(g_, node)) {
          const BackendCompiler* backend = find_backend_compiler(d.backend);
          if (backend == nullptr || !backend->supports_dynamic_shapes(g_, node)) {
            fail(where + ": " + node_where(static_cast<size_t>(n), node) +
                 " touches a dynamic-shaped value, which backend '" + d.backend +
                 "' does not take (docs/partitioning.md)");
          }
        }
      }
      BoundarySets b = region_boundary(g_, d.nodes.front(), d.nodes.back());
      check_boundary(where, "input", d.inputs, b.inputs);
      check_boundary(where, "output", d.outputs, b.outputs);
    }
  }

  void check_boundary(const std::string& where, const char* what, const std::vector<int>& declared,
                      const std::vector<int>& derived) {
    std::set<int> decl;
    for (size_t k = 0; k < declared.size(); ++k) {
      check_id(declared[k], where + ": " + what + " " + std::to_string(k));
      if (!decl.insert(declared[k]).second) {
        fail(where + ": " + what + " " + std::to_string(k) + ": " + describe(declared[k]) +
             " listed twice");
      }
    }
    const std::set<int> need(derived.begin(), derived.end());
    for (int id : derived) {
      if (!decl.count(id)) {
        fail(where + ": " + describe(id) + " crosses the region boundary but is not a declared " +
             what);
      }
    }
    for (int id : declared) {
      if (!need.count(id)) {
        fail(where + ": declared " + what + " " + describe(id) + " does not cross the region " +
             "boundary as an " + what);
      }
    }
  }

  const Graph& g_;
  const size_t n_;
  std::vector<bool> defined_;
};

}  // namespace

BoundarySets region_boundary(const Graph& graph, int first_node, int last_node) {
  BoundarySets b;
  auto is_list = [&](int id) {
    return id >= 0 && static_cast<size_t>(id) < graph.values.size() &&
           graph.values[static_cast<size_t>(id)].kind == Value::Kind::TensorList;
  };
  std::set<int> produced;
  std::set<int> seen_in;
  // A tensor list crosses element by element: each element made outside is an input of its
  // own (a backend binds tensors, not lists; the list may mix elements made inside and out).
  auto read = [&](int id) {
    if (!produced.count(id) && seen_in.insert(id).second) b.inputs.push_back(id);
  };
  for (int n = first_node; n <= last_node; ++n) {
    const Node& node = graph.nodes[n];
    for (int a : node.args) {
      if (is_list(a)) {
        for (int t : graph.values[a].tensors) read(t);
      } else {
        read(a);
      }
    }
    for (int o : node.outputs) {
      produced.insert(o);
      if (is_list(o)) {
        produced.insert(graph.values[o].tensors.begin(), graph.values[o].tensors.end());
      }
    }
  }
  std::set<int> used_after(graph.outputs.begin(), graph.outputs.end());
  for (int id : graph.outputs) {
    if (graph.values[id].kind == Value::Kind::TensorList) {
      used_after.insert(graph.values[id].tensors.begin(), graph.values[id].tensors.end());
    }
  }
  for (size_t n = static_cast<size_t>(last_node) + 1; n < graph.nodes.size(); ++n) {
    for (int a : graph.nodes[n].args) {
      used_after.insert(a);
      if (graph.values[a].kind == Value::Kind::TensorList) {
        used_after.insert(graph.values[a].tensors.begin(), graph.values[a].tensors.end());
      }
    }
  }
  std::set<int> seen_out;
  auto write = [&](int o) {
    const bool state =
        o >= 0 && static_cast<size_t>(o) < graph.values.size() && graph.values[o].is_state;
    if ((used_after.count(o) || state) && seen_out.insert(o).second) b.outputs.push_back(o);
  };
  for (int n = first_node; n <= last_node; ++n) {
    for (int o : graph.nodes[n].outputs) {
      if (is_list(o)) {
        for (int t : graph.values[o].tensors) write(t);  // element by element, as inputs
      } else {
        write(o);
      }
    }
  }
  return b;
}

void validate_graph(const Graph& graph) { Validator(graph).run(); }

bool node_touches_dynamic(const Graph& graph, const Node& node) {
  auto dynamic = [&](int id) {
    if (id < 0 || static_cast<size_t>(id) >= graph.values.size()) return false;
    const Value& v = graph.values[static_cast<size_t>(id)];
    if (v.is_dynamic()) return true;
    if (v.kind == Value::Kind::TensorList) {
      for (int t : v.tensors) {
        if (t >= 0 && static_cast<size_t>(t) < graph.values.size() &&
            graph.values[static_cast<size_t>(t)].is_dynamic()) {
          return true;
        }
      }
    }
    // An int that follows a symbol makes the op's output follow it too.
    for (int s : v.int_symbols) {
      if (s >= 0) return true;
    }
    return false;
  };
  for (int id : node.args) {
    if (dynamic(id)) return true;
  }
  for (int id : node.outputs) {
    if (dynamic(id)) return true;
  }
  return false;
}

}  // namespace tern::compiler
