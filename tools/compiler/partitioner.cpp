// The partitioner: cluster each backend's nodes, cut maximal runs, lower them to delegates.
#include "tools/compiler/partitioner.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "tools/compiler/backend_compiler.h"
#include "tools/compiler/region_boundary.h"

namespace tern::compiler {

namespace {

std::string registered_list() {
  std::string s;
  for (const std::string& name : registered_backend_compilers()) {
    s += (s.empty() ? "" : ", ") + name;
  }
  return s.empty() ? "none" : s;
}

// The tensor ids a node touches through `id`: the id, or a tensor list's elements.
void expand(const Graph& g, int id, std::vector<int>* out) {
  out->clear();
  const Value& v = g.values[static_cast<size_t>(id)];
  if (v.kind == Value::Kind::TensorList) {
    out->insert(out->end(), v.tensors.begin(), v.tensors.end());
  } else {
    out->push_back(id);
  }
}

// Ordering constraints between nodes in the current order: producer before reader, and for
// state tensors (written any number of times) every read and write stays in order with the
// writes around it. Returns, per node, the nodes that must come before it.
std::vector<std::set<int>> node_dependencies(const Graph& g) {
  const size_t n = g.nodes.size();
  std::vector<std::set<int>> deps(n);
  std::vector<int> producer(g.values.size(), -1);
  std::map<int, int> last_writer;                 // state id -> node
  std::map<int, std::vector<int>> readers_since;  // state id -> nodes since its last write
  std::vector<int> ids;
  for (size_t i = 0; i < n; ++i) {
    const int node = static_cast<int>(i);
    const Node& nd = g.nodes[i];
    auto depend = [&](int before) {
      if (before >= 0 && before != node) deps[i].insert(before);
    };
    for (int a : nd.args) {
      expand(g, a, &ids);
      for (int t : ids) {
        if (g.values[static_cast<size_t>(t)].is_state) {
          auto w = last_writer.find(t);
          if (w != last_writer.end()) depend(w->second);
          readers_since[t].push_back(node);
        } else {
          depend(producer[static_cast<size_t>(t)]);
        }
      }
    }
    for (int o : nd.outputs) {
      expand(g, o, &ids);
      for (int t : ids) {
        if (g.values[static_cast<size_t>(t)].is_state) {
          auto w = last_writer.find(t);
          if (w != last_writer.end()) depend(w->second);
          for (int r : readers_since[t]) depend(r);
          readers_since[t].clear();
          last_writer[t] = node;
        } else {
          producer[static_cast<size_t>(t)] = node;
        }
      }
    }
  }
  return deps;
}

// Number of maximal runs of candidate nodes in `order` (node indices).
int count_runs(const std::vector<int>& order, const std::vector<bool>& candidate) {
  int runs = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    if (candidate[order[k]] && (k == 0 || !candidate[order[k - 1]])) ++runs;
  }
  return runs;
}

// A topological order of the nodes that clusters candidates: nodes move in units (a node, or
// a whole existing region), and the schedule keeps taking ready units of the kind it took
// last (lowest current index first), switching only when none is ready.
std::vector<int> clustered_order(const Graph& g, const std::vector<bool>& candidate) {
  const size_t n = g.nodes.size();
  std::vector<int> unit_of(n, -1);
  std::vector<std::vector<int>> units;  // unit -> its nodes in current order
  std::vector<int> region_unit(g.delegates.size(), -1);
  std::vector<int> region_of(n, -1);
  for (size_t r = 0; r < g.delegates.size(); ++r) {
    for (int node : g.delegates[r].nodes)
      region_of[static_cast<size_t>(node)] = static_cast<int>(r);
  }
  for (size_t i = 0; i < n; ++i) {
    const int r = region_of[i];
    if (r >= 0 && region_unit[r] >= 0) {
      unit_of[i] = region_unit[r];
    } else {
      unit_of[i] = static_cast<int>(units.size());
      units.emplace_back();
      if (r >= 0) region_unit[r] = unit_of[i];
    }
    units[unit_of[i]].push_back(static_cast<int>(i));
  }
  const std::vector<std::set<int>> node_deps = node_dependencies(g);
  std::vector<std::set<int>> successors(units.size());
  std::vector<int> indegree(units.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    for (int before : node_deps[i]) {
      const int from = unit_of[before], to = unit_of[i];
      if (from != to && successors[from].insert(to).second) ++indegree[to];
    }
  }
  // Units are numbered in order of their first node, so the lowest id is the earliest.
  auto is_candidate = [&](int unit) { return candidate[units[unit].front()]; };
  std::set<int> ready[2];
  for (size_t u = 0; u < units.size(); ++u) {
    if (indegree[u] == 0)
      ready[is_candidate(static_cast<int>(u)) ? 1 : 0].insert(static_cast<int>(u));
  }
  std::vector<int> order;
  order.reserve(n);
  int mode = -1;
  while (!ready[0].empty() || !ready[1].empty()) {
    if (mode < 0) {
      // The other nodes first: what they can run before any candidate (constant slices, an
      // input's int work) then never cuts a run of candidates that starts with the method.
      mode = ready[0].empty() ? 1 : 0;
    } else if (ready[mode].empty()) {
      mode = 1 - mode;
    }
    const int u = *ready[mode].begin();
    ready[mode].erase(ready[mode].begin());
    order.insert(order.end(), units[u].begin(), units[u].end());
    for (int next : successors[u]) {
      if (--indegree[next] == 0) ready[is_candidate(next) ? 1 : 0].insert(next);
    }
  }
  if (order.size() != n) {
    throw std::logic_error("partition: method '" + g.name +
                           "': node dependencies form a cycle (an existing delegate region is not "
                           "convex)");
  }
  return order;
}

// Puts the nodes of `g` in `order` (old indices in their new order), remapping the regions.
void apply_order(Graph& g, const std::vector<int>& order, std::vector<bool>* candidate) {
  std::vector<int> new_index(order.size());
  std::vector<Node> nodes;
  nodes.reserve(order.size());
  std::vector<bool> cand(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    new_index[order[k]] = static_cast<int>(k);
    nodes.push_back(std::move(g.nodes[order[k]]));
    cand[k] = (*candidate)[order[k]];
  }
  g.nodes = std::move(nodes);
  *candidate = std::move(cand);
  for (DelegateRegion& region : g.delegates) {
    for (int& node : region.nodes) node = new_index[node];
    std::sort(region.nodes.begin(), region.nodes.end());
  }
}

void partition_for(Graph& g, const BackendCompiler& backend) {
  const size_t n = g.nodes.size();
  std::vector<bool> taken(n, false);
  for (const DelegateRegion& region : g.delegates) {
    for (int node : region.nodes) taken[static_cast<size_t>(node)] = true;
  }
  std::vector<bool> candidate(n, false);
  bool any = false;
  const std::vector<std::string> why = backend.why_unsupported_each(g);
  for (size_t i = 0; i < n; ++i) {
    // A node on a dynamic-shaped value stays portable unless the backend says it takes it.
    candidate[i] =
        !taken[i] && why[i].empty() &&
        (!node_touches_dynamic(g, g.nodes[i]) || backend.supports_dynamic_shapes(g, g.nodes[i]));
    any = any || candidate[i];
  }
  if (!any) return;

  std::vector<int> current(n);
  for (size_t i = 0; i < n; ++i) current[i] = static_cast<int>(i);
  const std::vector<int> clustered = clustered_order(g, candidate);
  if (count_runs(clustered, candidate) < count_runs(current, candidate)) {
    apply_order(g, clustered, &candidate);
  }

  for (size_t i = 0; i < n;) {
    if (!candidate[i]) {
      ++i;
      continue;
    }
    std::vector<int> run;
    while (i < n && candidate[i]) run.push_back(static_cast<int>(i++));
    if (!backend.accepts_region(g, run)) continue;
    DelegateRegion region;
    region.backend = backend.name();
    region.nodes = run;
    BoundarySets boundary = region_boundary(g, run.front(), run.back());
    region.inputs = std::move(boundary.inputs);
    region.outputs = std::move(boundary.outputs);
    LoweredRegion lowered;
    try {
      lowered = backend.lower(g, region);
    } catch (const std::exception& e) {
      throw std::invalid_argument("partition: method '" + g.name + "': backend '" + backend.name() +
                                  "' cannot lower nodes " + std::to_string(run.front()) + ".." +
                                  std::to_string(run.back()) + ": " + e.what());
    }
    region.blob = std::move(lowered.blob);
    region.compile_specs = std::move(lowered.compile_specs);
    g.delegates.push_back(std::move(region));
  }
}

}  // namespace

namespace {

std::vector<PortableNode> portable_nodes(const Graph& g,
                                         const std::vector<const BackendCompiler*>& compilers) {
  std::vector<bool> delegated(g.nodes.size(), false);
  for (const DelegateRegion& region : g.delegates) {
    for (int node : region.nodes) delegated[static_cast<size_t>(node)] = true;
  }
  std::vector<PortableNode> left;
  std::vector<std::vector<std::string>> reasons;  // per compiler, per node
  for (const BackendCompiler* c : compilers) reasons.push_back(c->why_unsupported_each(g));
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (delegated[i]) continue;
    const Node& node = g.nodes[i];
    PortableNode p;
    p.node = static_cast<int>(i);
    p.op = node.op;
    p.debug_name = node.debug_name;
    for (size_t k = 0; k < compilers.size(); ++k) {
      const BackendCompiler* c = compilers[k];
      std::string why = std::move(reasons[k][i]);
      if (why.empty() && node_touches_dynamic(g, node) && !c->supports_dynamic_shapes(g, node)) {
        why = node.op + ": reads or writes a bounded-dynamic tensor, which this backend does "
                        "not run this op on";
      } else if (why.empty()) {
        why = node.op + ": taken, but its run of nodes was declined (accepts_region: nothing "
                        "worth a delegate in it, e.g. only views or elementwise ops)";
      }
      p.reasons.emplace_back(c->name(), std::move(why));
    }
    left.push_back(std::move(p));
  }
  return left;
}

}  // namespace

void partition(Graph& graph, const std::vector<std::string>& backends,
               std::vector<PortableNode>* left) {
  std::vector<const BackendCompiler*> compilers;
  std::vector<std::unique_ptr<BackendCompiler>> configured;  // specs with options
  std::set<std::string> seen;
  for (const std::string& spec : backends) {
    // "name" or "name:options" (BackendCompiler::with_options).
    const size_t colon = spec.find(':');
    const std::string name = spec.substr(0, colon);
    const BackendCompiler* c = find_backend_compiler(name);
    if (c == nullptr) {
      throw std::invalid_argument(
          "backend '" + name +
          "' is not a registered backend compiler (registered: " + registered_list() + ")");
    }
    if (!seen.insert(name).second) {
      throw std::invalid_argument("backend '" + name + "' is listed twice");
    }
    if (colon != std::string::npos) {
      std::unique_ptr<BackendCompiler> with = c->with_options(spec.substr(colon + 1));
      if (with != nullptr) {
        configured.push_back(std::move(with));
        c = configured.back().get();
      }
    }
    compilers.push_back(c);
  }
  if (compilers.empty()) return;
  validate_graph(graph);
  for (const BackendCompiler* c : compilers) partition_for(graph, *c);
  std::stable_sort(graph.delegates.begin(), graph.delegates.end(),
                   [](const DelegateRegion& a, const DelegateRegion& b) {
                     return a.nodes.front() < b.nodes.front();
                   });
  validate_graph(graph);
  if (left != nullptr) *left = portable_nodes(graph, compilers);
}

}  // namespace tern::compiler
