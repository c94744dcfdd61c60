#include "tools/compiler/shared_state_list.h"

#include <stdexcept>

namespace tern::compiler {
namespace {

/// "f32 [2, 4] zero-initialised".
std::string describe(const Value& v) {
  std::string s = std::string(to_string(v.dtype)) + " [";
  for (size_t d = 0; d < v.sizes.size(); ++d) s += (d ? ", " : "") + std::to_string(v.sizes[d]);
  return s + "]" + (v.data.empty() ? " zero-initialised" : " with an initial value");
}

}  // namespace

SharedStateList::SharedStateList(const ProgramGraph& program) {
  for (const Graph& g : program.methods) {
    for (size_t i = 0; i < g.values.size(); ++i) {
      const Value& v = g.values[i];
      if (!v.is_tensor() || !v.is_state || v.shared_state.empty()) continue;
      const auto found = index_.find(v.shared_state);
      if (found == index_.end()) {
        index_.emplace(v.shared_state, static_cast<uint32_t>(entries_.size()));
        entries_.push_back(Entry{&g, static_cast<int>(i)});
        continue;
      }
      const Entry& first = entries_[found->second];
      const Value& w = first.tensor();
      const bool same_layout = w.dtype == v.dtype && w.sizes == v.sizes;
      if (!same_layout || w.data != v.data) {
        throw std::invalid_argument(
            "serialize: methods disagree about shared state '" + v.shared_state + "': method '" +
            first.graph->name + "' value " + std::to_string(first.value) + " is " + describe(w) +
            ", method '" + g.name + "' value " + std::to_string(i) + " is " + describe(v) +
            (same_layout ? " (the same layout, different initial values)" : ""));
      }
    }
  }
}

}  // namespace tern::compiler
