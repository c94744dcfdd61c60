// The compile half of a backend: which nodes it takes and how a region becomes its blob.
// Each backend's folder implements one (backends/<name>/compile/); the partitioner uses them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler {

/// What lowering a region produces: the delegate blob and its compile specs.
struct LoweredRegion {
  std::vector<uint8_t> blob;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> compile_specs;
};

class BackendCompiler {
 public:
  virtual ~BackendCompiler() = default;
  /// The backend's name, equal to the runtime backend's registry name ("cpu", "cuda", ...).
  virtual std::string name() const = 0;
  /// Whether the backend can run `node` of `graph` (op, dtypes, attributes, shapes), on its own.
  virtual bool supports(const Graph& graph, const Node& node) const = 0;
  /// Why supports() refuses `node`, in words that name the op's condition it fails (empty when
  /// it takes it); what `tern compile --explain` prints. Default: a generic sentence.
  virtual std::string why_unsupported(const Graph& graph, const Node& node) const {
    return supports(graph, node) ? std::string() : node.op + ": not taken by this backend";
  }
  /// why_unsupported() of every node of `graph`, in node order: what the partitioner and
  /// `tern compile --explain` ask, once per graph. A backend whose answer for one node needs a
  /// whole-graph analysis (the cpu backend's layout plan) overrides it to run that analysis
  /// once rather than once per node. Default: why_unsupported() node by node.
  virtual std::vector<std::string> why_unsupported_each(const Graph& graph) const;
  /// Whether the backend can run `node` (which supports() took) when it reads or writes a
  /// bounded-dynamic tensor (docs/dynamic-shapes.md), computing on the actual sizes at
  /// execute. Default: false, so the partitioner keeps such nodes on the portable kernels.
  virtual bool supports_dynamic_shapes(const Graph& graph, const Node& node) const {
    (void)graph;
    (void)node;
    return false;
  }
  /// Whether a region of `nodes` (node indices in order, all supported) is worth delegating;
  /// e.g. a lone reshape is not. Default: true.
  virtual bool accepts_region(const Graph& graph, const std::vector<int>& nodes) const {
    (void)graph;
    (void)nodes;
    return true;
  }
  /// Lowers a region (nodes, boundary inputs and outputs already set) to a blob. Throws
  /// std::invalid_argument naming the node when it cannot.
  virtual LoweredRegion lower(const Graph& graph, const DelegateRegion& region) const = 0;
  /// The compiler for a backend spec with options, `name:options` (`options` is the text after
  /// the first ':', e.g. "f32" of "cuda:f32"); the partitioner calls it only when a spec has a
  /// ':'. Returns the compiler to use (owned by the caller), or null for this one unchanged.
  /// Throws std::invalid_argument naming the backend and the option when an option is unknown
  /// or not implemented. Default: the backend takes no options (it throws).
  virtual std::unique_ptr<BackendCompiler> with_options(const std::string& options) const;
};

/// The options of a backend spec's text after its name ("f16:x" of "cuda:f16:x"), split at every
/// ':' in order, empty ones kept (each backend's with_options() refuses what it does not know).
std::vector<std::string> split_backend_options(const std::string& options);

/// Registers a backend compiler (explicitly, by the tools that link it). The registration rule
/// shared with kernels and runtime backends: a second registration under the same name replaces
/// the first in place (the last registration wins). Throws std::invalid_argument for a null
/// compiler or an empty name.
void register_backend_compiler(std::unique_ptr<BackendCompiler> backend);

/// The backend compiler registered under `name`, or null.
const BackendCompiler* find_backend_compiler(const std::string& name);

/// Names of the registered backend compilers, in registration order.
std::vector<std::string> registered_backend_compilers();

}  // namespace tern::compiler
