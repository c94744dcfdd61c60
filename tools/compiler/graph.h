// The compiler's graph IR: what the JSON reader and the C++ builder produce, and what the
// planner and serializer consume. Full C++ (STL, exceptions) is allowed in tools/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "tools/compiler/constant_bytes.h"

namespace tern::compiler {

/// Quantization parameters of a tensor value; other values are referenced by id (-1 absent).
/// Mirrors tern.fb.QuantParams (QUANT.md).
struct QuantSpec {
  enum class Scheme : uint8_t { None = 0, NF4 = 1, NF4DoubleQuant = 2, FP8 = 3 };
  enum class Granularity : uint8_t { PerTensor = 0, PerChannel = 1, Block2D = 2 };
  Scheme scheme = Scheme::None;
  uint32_t block_size = 64;
  int absmax = -1;
  int dq_codes = -1;
  int dq_absmax2 = -1;
  int dq_table = -1;
  float dq_offset = 0.0f;
  uint32_t dq_block_size = 256;
  int scale = -1;
  Granularity granularity = Granularity::PerChannel;
  uint32_t block_rows = 128;
  uint32_t block_cols = 128;
};

/// One value of a method graph.
struct Value {
  enum class Kind : uint8_t {
    Tensor, Int, Double, Bool, IntList, DoubleList, String, None, TensorList
  };
  Kind kind = Kind::None;
  std::string name;

  // Kind::Tensor
  DType dtype = DType::F32;
  std::vector<int64_t> sizes;
  /// Constant tensors carry their bytes (row-major, dtype_nbytes(dtype, numel) long), shared
  /// with the other values holding the same weight (constant_bytes.h).
  bool is_constant = false;
  ConstantBytes data;
  /// State tensors persist across executions; `data` (if non-empty) is the initial value,
  /// otherwise they start zeroed.
  bool is_state = false;
  /// State shared by the program's methods (format 1.2, docs/format.md "Shared state"): the
  /// program-level name under which every method's state tensor of that name is the same bytes
  /// (the caller's shared state buffer, not the method's arena); empty for a method's own state.
  std::string shared_state;
  /// Inputs bound by the caller without a copy (storage Caller) instead of planned memory.
  bool caller_bound = false;
  QuantSpec quant;
  /// Bounded-dynamic dims (docs/dynamic-shapes.md): empty for a static tensor, else one entry
  /// per dim, -1 for a static dim or the index of a Graph::symbols entry; `sizes` then hold
  /// the symbol's max (the planner plans every tensor at its upper bound).
  std::vector<int> dim_symbols;

  // Scalars and lists
  int64_t int_value = 0;
  double double_value = 0.0;
  bool bool_value = false;
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::string string_value;
  std::vector<int> tensors;  ///< Kind::TensorList: value ids
  /// Kind::Int (one entry) or Kind::IntList (one per item): -1, or the index of the symbol
  /// whose current size the runtime writes there (a reshape target or slice end following
  /// "seq"); empty when none. The stored value is the symbol's max.
  std::vector<int> int_symbols;

  bool is_tensor() const { return kind == Kind::Tensor; }
  /// Whether the tensor has a bounded-dynamic dim.
  bool is_dynamic() const {
    for (int s : dim_symbols) {
      if (s >= 0) return true;
    }
    return false;
  }
};

/// One operator application. `args` are value ids (inputs, including scalar attributes as
/// values), `outputs` the value ids it writes. Kernel args are args followed by outputs.
struct Node {
  std::string op;  ///< "tern::linear"
  std::vector<int> args;
  std::vector<int> outputs;
  std::string debug_name;  ///< source op, e.g. "fc1"
};

/// A region of nodes handed to a backend. The serializer emits one DelegateCall in place of
/// the region (at the position of its first node), with the region's nodes as its portable
/// fallback. `inputs`/`outputs` are the value ids crossing the region boundary.
struct DelegateRegion {
  std::string backend;
  std::vector<uint8_t> blob;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> compile_specs;
  std::vector<int> nodes;  ///< node indices, ascending and contiguous in execution order
  std::vector<int> inputs;
  std::vector<int> outputs;
};

/// A named dynamic dimension: sizes in [min, max], one size per execution.
struct DimSymbol {
  std::string name;
  int64_t min = 1;
  int64_t max = 0;
};

/// One method: values, nodes in execution order, inputs and outputs.
struct Graph {
  std::string name = "forward";
  std::vector<DimSymbol> symbols;  ///< dynamic dimensions (docs/dynamic-shapes.md)
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<DelegateRegion> delegates;
};

/// A whole program: one or more methods plus metadata.
struct ProgramGraph {
  std::string producer = "tern";
  std::string source_model;
  std::map<std::string, std::string> metadata;
  std::vector<Graph> methods;
};

/// Ops whose output is a view of their first argument (same bytes, no copy) when that
/// argument is contiguous: the planner aliases them.
bool is_view_op(const std::string& op);

/// Whether `node` reads or writes a tensor with a bounded-dynamic dim (tensor lists included).
bool node_touches_dynamic(const Graph& graph, const Node& node);

/// Checks a graph's internal consistency (ids in range, tensor args where needed, every
/// non-input non-constant tensor produced exactly once before use, constant byte sizes, delegate
/// regions well formed); throws std::invalid_argument naming the problem.
void validate_graph(const Graph& graph);

}  // namespace tern::compiler
