// The registry of backend compilers (the compile halves of the backends).
#include "tools/compiler/backend_compiler.h"

#include <stdexcept>

namespace tern::compiler {

namespace {

// Registration order is kept: registered_backend_compilers() lists names in it.
std::vector<std::unique_ptr<BackendCompiler>>& registry() {
  static std::vector<std::unique_ptr<BackendCompiler>> backends;
  return backends;
}

}  // namespace

std::vector<std::string> BackendCompiler::why_unsupported_each(const Graph& graph) const {
  std::vector<std::string> why;
  why.reserve(graph.nodes.size());
  for (const Node& node : graph.nodes) why.push_back(why_unsupported(graph, node));
  return why;
}

std::unique_ptr<BackendCompiler> BackendCompiler::with_options(const std::string& options) const {
  throw std::invalid_argument("backend '" + name() + "' takes no options (found '" + name() + ":" +
                              options + "')");
}

std::vector<std::string> split_backend_options(const std::string& options) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = options.find(':', begin);
    parts.push_back(options.substr(begin, end == std::string::npos ? end : end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

void register_backend_compiler(std::unique_ptr<BackendCompiler> backend) {
  if (backend == nullptr) {
    throw std::invalid_argument("register_backend_compiler: null backend compiler");
  }
  const std::string name = backend->name();
  if (name.empty()) {
    throw std::invalid_argument("register_backend_compiler: a backend compiler has an empty name");
  }
  for (std::unique_ptr<BackendCompiler>& existing : registry()) {
    if (existing->name() == name) {
      existing = std::move(backend);  // replaces, keeping its place in the order
      return;
    }
  }
  registry().push_back(std::move(backend));
}

const BackendCompiler* find_backend_compiler(const std::string& name) {
  for (const std::unique_ptr<BackendCompiler>& b : registry()) {
    if (b->name() == name) return b.get();
  }
  return nullptr;
}

std::vector<std::string> registered_backend_compilers() {
  std::vector<std::string> names;
  for (const std::unique_ptr<BackendCompiler>& b : registry()) names.push_back(b->name());
  return names;
}

}  // namespace tern::compiler
