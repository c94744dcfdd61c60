// GraphBuilder: make method graphs in C++ (tests, examples, front ends).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler {

/// Appends values and nodes to a Graph. Every function returns the new value's id.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string method_name = "forward");

  /// A method input (planned in the arena; set_input copies into it).
  int input(const std::string& name, DType dtype, std::vector<int64_t> sizes);
  /// A constant tensor; `bytes` must be dtype_nbytes(dtype, numel) long.
  int constant(const std::string& name, DType dtype, std::vector<int64_t> sizes,
               std::vector<uint8_t> bytes);
  int constant_f32(const std::string& name, std::vector<int64_t> sizes,
                   const std::vector<float>& values);
  /// A state tensor, persistent across executions; zero-initialized when `init` is empty.
  int state(const std::string& name, DType dtype, std::vector<int64_t> sizes,
            std::vector<uint8_t> init = {});
  /// A state tensor the program's methods share under `shared_name` (format 1.2): every method
  /// declaring it with the same dtype, sizes and initial value sees the same bytes.
  int shared_state(const std::string& shared_name, DType dtype, std::vector<int64_t> sizes,
                   std::vector<uint8_t> init = {});
  /// A tensor value with no producer yet (for op_into).
  int tensor(const std::string& name, DType dtype, std::vector<int64_t> sizes);

  int int_value(int64_t v);
  int double_value(double v);
  int bool_value(bool v);
  int int_list(std::vector<int64_t> v);
  int double_list(std::vector<double> v);
  int string_value(std::string v);
  int none();

  /// Appends node `op` over `args` producing one new tensor of `dtype`/`sizes`; returns it.
  int op(const std::string& op, std::vector<int> args, DType dtype,
         std::vector<int64_t> sizes, const std::string& debug_name = "");
  /// Appends node `op` over `args` writing existing values `outputs`.
  void op_into(const std::string& op, std::vector<int> args, std::vector<int> outputs,
               const std::string& debug_name = "");
  /// Marks value `id` as a method output (in call order).
  void output(int id);

  /// Declares a dynamic dimension `name` in [min, max]; returns its symbol index
  /// (docs/dynamic-shapes.md). Tensors that carry it give `max` as that dim's size.
  int symbol(const std::string& name, int64_t min, int64_t max);
  /// Tags the dims of tensor `id`: one entry per dim, -1 static or a symbol index.
  void dynamic_dims(int id, std::vector<int> symbols);
  /// Makes int (one entry) or int-list (one per item) value `id` follow symbols (-1: fixed).
  void int_symbols(int id, std::vector<int> symbols);

  /// Hands nodes [first_node, last_node] to `backend` as one delegate region; the region's
  /// inputs and outputs are derived from the nodes. Returns the region's index.
  int delegate(const std::string& backend, int first_node, int last_node,
               std::vector<uint8_t> blob = {},
               std::vector<std::pair<std::string, std::vector<uint8_t>>> specs = {});

  size_t num_nodes() const { return graph_.nodes.size(); }
  Graph& graph() { return graph_; }
  /// A validated copy of the graph (throws std::invalid_argument as validate_graph).
  Graph build() const;

 private:
  int add_value(Value v);
  Graph graph_;
};

}  // namespace tern::compiler
