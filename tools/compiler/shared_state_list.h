// The program's shared state (format 1.2, docs/format.md "Shared state"): the state tensors
// its methods declare under one `shared_state` name, one entry per name in the order the
// methods first declare it, checked to agree wherever it is declared.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler {

class SharedStateList {
 public:
  /// One declaration of an entry: the method and the value that first declares it.
  struct Entry {
    const Graph* graph;
    int value;
    const Value& tensor() const { return graph->values[static_cast<size_t>(value)]; }
  };

  /// Collects every shared state tensor of `program`; throws std::invalid_argument naming both
  /// methods when two declarations of a name disagree (dtype, sizes or initial value).
  explicit SharedStateList(const ProgramGraph& program);

  bool empty() const { return entries_.empty(); }
  /// The Program.shared_state index of `name` (a name the program declares).
  uint32_t index(const std::string& name) const { return index_.at(name); }
  /// The entries, in Program.shared_state order.
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::map<std::string, uint32_t> index_;
  std::vector<Entry> entries_;
};

}  // namespace tern::compiler
