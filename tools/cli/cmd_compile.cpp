// `tern compile`: graph.json (+ safetensors) -> .pte, partitioned for the --backend list.
#include <cinttypes>
#include <algorithm>
#include <cstdio>
#include <map>

#include "runtime/core/checked_math.h"
#include "tools/cli/commands.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_json.h"
#include "tools/compiler/quantize.h"

namespace tern::cli {
namespace {

std::string shape_text(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// Which weights were quantized, which were left f32 and why, and the weight bytes before/after.
void print_quantization(const compiler::QuantizeReport& q) {
  std::printf("quantized %zu weight%s:\n", q.weights.size(), q.weights.size() == 1 ? "" : "s");
  uint64_t before = 0, after = 0;
  for (const compiler::QuantizedWeight& w : q.weights) {
    std::string ops;
    for (const std::string& op : w.ops) {
      const std::string name = op.rfind("tern::", 0) == 0 ? op.substr(6) : op;
      if (ops.find(name) == std::string::npos) ops += (ops.empty() ? "" : ",") + name;
    }
    const uint64_t numel = w.bytes_before / 4;
    std::printf("  %s%s %s %s (%s%s): %" PRIu64 " -> %" PRIu64 " bytes (%.4f bytes/param)\n",
                w.method != "forward" ? (w.method + ": ").c_str() : "",
                w.name.c_str(), shape_text(w.shape).c_str(), w.scheme.c_str(), ops.c_str(),
                !w.transposed                 ? ""
                : ops.find("grouped_mm") != std::string::npos
                    ? ", grouped_mm experts stored transposed"
                    : ", matmul b stored transposed as a linear weight",
                w.bytes_before, w.bytes_after,
                numel ? static_cast<double>(w.bytes_after) / static_cast<double>(numel) : 0.0);
    before += w.bytes_before;
    after += w.bytes_after;
  }
  for (const std::string& s : q.skipped) std::printf("  left f32: %s\n", s.c_str());
  const auto ratio = [](uint64_t a, uint64_t b) {
    return b ? static_cast<double>(a) / static_cast<double>(b) : 1.0;
  };
  std::printf("  quantized weights: %" PRIu64 " -> %" PRIu64 " bytes (%.2fx smaller)\n", before,
              after, ratio(before, after));
  std::printf("  all weights: %" PRIu64 " -> %" PRIu64 " bytes (%.2fx smaller)\n",
              q.constant_bytes_before, q.constant_bytes_after,
              ratio(q.constant_bytes_before, q.constant_bytes_after));
}

// --explain: the nodes left on the portable kernels, grouped by op and reasons, most first.
void print_portable_nodes(const compiler::MethodReport& m) {
  if (m.portable_nodes.empty()) {
    std::printf("    every node is in a delegate\n");
    return;
  }
  struct Group {
    const compiler::PortableNode* first;
    std::vector<std::string> names;
  };
  std::map<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>, Group> groups;
  for (const compiler::PortableNode& p : m.portable_nodes) {
    Group& g = groups.try_emplace({p.op, p.reasons}, Group{&p, {}}).first->second;
    g.names.push_back(p.debug_name.empty() ? "#" + std::to_string(p.node) : p.debug_name);
  }
  std::vector<const Group*> order;
  for (const auto& kv : groups) order.push_back(&kv.second);
  std::stable_sort(order.begin(), order.end(), [](const Group* a, const Group* b) {
    return a->names.size() > b->names.size();
  });
  std::printf("    %zu node%s on the portable kernels:\n", m.portable_nodes.size(),
              m.portable_nodes.size() == 1 ? "" : "s");
  for (const Group* g : order) {
    std::string names;
    for (size_t i = 0; i < g->names.size() && i < 3; ++i) names += (i ? ", " : "") + g->names[i];
    if (g->names.size() > 3) names += ", ...";
    std::printf("      %zu x %s (%s)\n", g->names.size(), g->first->op.c_str(), names.c_str());
    for (const auto& [backend, why] : g->first->reasons) {
      std::printf("          %s: %s\n", backend.c_str(), why.c_str());
    }
  }
}

}  // namespace

int cmd_compile(const CompileCommandOptions& options) {
  if (!is_power_of_two(options.segment_alignment)) {
    throw std::runtime_error("--segment-alignment must be a power of two, found " +
                             std::to_string(options.segment_alignment));
  }
  const compiler::ProgramGraph graph = compiler::read_graph_json(options.graph);
  compiler::CompileOptions compile_options;
  compile_options.serializer.segment_alignment = options.segment_alignment;
  for (const std::string& backend : options.backends) {
    if (backend != "portable") compile_options.backends.push_back(backend);
  }
  if (!options.quantize.empty()) {
    compile_options.quantize.scheme = compiler::parse_quant_scheme(options.quantize);
  }
  for (const std::string& rule : options.quantize_weights) {
    compile_options.quantize.rules.push_back(compiler::parse_quant_rule(rule));
  }
  const compiler::CompileResult result =
      compiler::compile_program_to_file(graph, options.output, compile_options);
  std::printf("wrote %s (%" PRIu64 " bytes)\n", options.output.c_str(), result.file_size);
  if (compile_options.quantize.enabled()) print_quantization(result.quantization);
  for (const compiler::MethodReport& m : result.methods) {
    const double ratio = m.lower_bound ? static_cast<double>(m.arena_size) / m.lower_bound : 1.0;
    std::printf("  method '%s': %zu nodes, arena %" PRIu64 " bytes, lower bound %" PRIu64
                " (%.3fx), temp %" PRIu64 " bytes, %zu delegates\n",
                m.name.c_str(), m.num_nodes, m.arena_size, m.lower_bound, ratio, m.temp_size,
                m.num_delegates);
    if (options.explain && !compile_options.backends.empty()) print_portable_nodes(m);
  }
  return 0;
}

}  // namespace tern::cli
