#include "backends/cuda/compile/region_lowering.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "backends/cuda/compile/node_lowering.h"
#include "backends/cuda/compile/quant_lowering.h"

namespace tern::compiler::cuda_compile {

namespace {

uint64_t align_up(uint64_t v) {
  return (v + cuda::kDeviceAlignment - 1) / cuda::kDeviceAlignment * cuda::kDeviceAlignment;
}

/// The blob dtype of a value of graph dtype `d`: f32 values inside the delegate are stored in
/// `storage` (f16/bf16 in a 16-bit blob); `external` ones (arguments tern binds) stay f32.
uint32_t value_dtype(DType d, bool external, uint32_t storage) {
  switch (d) {
    case DType::F32:
      return external ? static_cast<uint32_t>(cuda::ValueDType::F32) : storage;
    case DType::I64: return static_cast<uint32_t>(cuda::ValueDType::I64);
    case DType::I32: return static_cast<uint32_t>(cuda::ValueDType::I32);
    case DType::Bool: return static_cast<uint32_t>(cuda::ValueDType::Bool);
    case DType::NF4: return static_cast<uint32_t>(cuda::ValueDType::Nf4);
    case DType::FP8E4M3: return static_cast<uint32_t>(cuda::ValueDType::Fp8E4M3);
    case DType::FP8E5M2: return static_cast<uint32_t>(cuda::ValueDType::Fp8E5M2);
    default: break;
  }
  throw std::invalid_argument(std::string("cuda backend: a value of dtype ") + to_string(d));
}

/// One root buffer of the arena plan: a non-alias, non-constant value and its live range in
/// blob node positions (inclusive; -1: from the start, num_nodes: to the end).
struct Interval {
  uint32_t value;
  uint64_t bytes;
  int64_t first;
  int64_t last;
  uint64_t offset = 0;
};

/// First-fit placement, largest buffers first; returns the arena size.
uint64_t place(std::vector<Interval>& roots) {
  std::vector<size_t> order(roots.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return roots[a].bytes > roots[b].bytes; });
  std::vector<size_t> placed;
  uint64_t total = 0;
  for (size_t i : order) {
    Interval& r = roots[i];
    // Candidate offsets: 0 and the end of each overlapping placed buffer, lowest first.
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t j : placed) {
      const Interval& o = roots[j];
      if (o.last < r.first || r.last < o.first) continue;
      busy.push_back({o.offset, o.offset + align_up(o.bytes)});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (const auto& b : busy) {
      if (at + align_up(r.bytes) <= b.first) break;
      at = std::max(at, b.second);
    }
    r.offset = at;
    total = std::max(total, at + align_up(r.bytes));
    placed.push_back(i);
  }
  return total;
}

std::string where(const Graph& g, int n) {
  const Node& node = g.nodes[static_cast<size_t>(n)];
  return "node " + std::to_string(n) + " (" + node.op +
         (node.debug_name.empty() ? "" : ", '" + node.debug_name + "'") + ")";
}

}  // namespace

std::vector<uint8_t> lower_region(const Graph& g, const DelegateRegion& region,
                                  cuda::ComputeDType compute) {
  // Lower every node first.
  std::vector<PendingNode> pending;
  std::map<int, int> alias_of;  // graph value -> graph value (root)
  uint64_t workspace = 0;
  std::vector<int> made;  // graph values the region makes (node outputs, aliases)
  // Values that are not in the graph: temporaries of the lowerings and the 16-bit copies of
  // the float boundary values, with ids from g.values.size() up.
  std::map<int, TempValue> temps;
  int next_id = static_cast<int>(g.values.size());
  auto new_temp = [&](DType dtype, const std::vector<int64_t>& sizes) {
    TempValue t;
    t.id = next_id++;
    t.dtype = dtype;
    t.sizes = sizes;
    temps[t.id] = t;
    return t.id;
  };
  for (int n : region.nodes) {
    if (n < 0 || static_cast<size_t>(n) >= g.nodes.size()) {
      throw std::invalid_argument("cuda backend: region node " + std::to_string(n) +
                                  " out of range");
    }
    NodeLowering l;
    try {
      l = lower_node(g, g.nodes[static_cast<size_t>(n)]);
    } catch (const Unsupported& e) {
      throw std::invalid_argument("cuda backend: " + where(g, n) + ": " + e.what());
    }
    std::map<int, int> renamed;  // this lowering's temp ids -> region-wide ids
    for (const TempValue& t : l.temps) renamed[t.id] = new_temp(t.dtype, t.sizes);
    auto rename = [&](int& id) {
      const auto it = renamed.find(id);
      if (it != renamed.end()) id = it->second;
    };
    for (const auto& a : l.aliases) {
      const auto root = alias_of.find(a.second);
      alias_of[a.first] = root == alias_of.end() ? a.second : root->second;
      made.push_back(a.first);
    }
    for (PendingNode& p : l.nodes) {
      for (int& id : p.inputs) rename(id);
      rename(p.output);
      made.push_back(p.output);
      pending.push_back(std::move(p));
    }
    workspace = std::max(workspace, l.workspace_bytes);
  }
  if (pending.empty()) {
    throw std::invalid_argument("cuda backend: a region of views only (no node to run)");
  }
  auto info = [&](int id) -> std::pair<DType, const std::vector<int64_t>*> {
    if (id >= static_cast<int>(g.values.size())) {
      const TempValue& t = temps.at(id);
      return {t.dtype, &t.sizes};
    }
    const Value& v = g.values[static_cast<size_t>(id)];
    return {v.dtype, &v.sizes};
  };

  // A 16-bit blob: the float boundary values stay f32 (tern's tensors); each float input is
  // cast to a 16-bit copy before the nodes, which read the copy, and each float output is made
  // as a 16-bit value and cast after the nodes.
  const uint32_t storage = cuda::compute_storage(static_cast<uint32_t>(compute));
  if (compute != cuda::ComputeDType::F32) {
    auto substitute = [&](int from, int to) {
      for (PendingNode& p : pending) {
        for (int& id : p.inputs) {
          if (id == from) id = to;
        }
      }
      for (auto& a : alias_of) {
        if (a.second == from) a.second = to;
      }
    };
    std::vector<PendingNode> before, after;
    for (int id : region.inputs) {
      const Value& v = g.values[static_cast<size_t>(id)];
      if (!v.is_tensor() || v.is_constant || v.dtype != DType::F32) continue;
      const int copy = new_temp(DType::F32, v.sizes);
      substitute(id, copy);
      PendingNode c;
      c.op = cuda::NodeOp::Cast;
      c.inputs = {id};
      c.output = copy;
      before.push_back(c);
      made.push_back(copy);
    }
    for (int id : region.outputs) {
      const Value& v = g.values[static_cast<size_t>(id)];
      if (!v.is_tensor() || v.dtype != DType::F32) continue;
      const int copy = new_temp(DType::F32, v.sizes);
      substitute(id, copy);
      for (PendingNode& p : pending) {
        if (p.output == id) p.output = copy;
      }
      const auto alias = alias_of.find(id);
      if (alias != alias_of.end()) {
        alias_of[copy] = alias->second;
        alias_of.erase(alias);
      }
      PendingNode c;
      c.op = cuda::NodeOp::Cast;
      c.inputs = {copy};
      c.output = id;
      after.push_back(c);
      made.push_back(copy);
    }
    before.insert(before.end(), pending.begin(), pending.end());
    before.insert(before.end(), after.begin(), after.end());
    pending = std::move(before);
  }

  // The value table: boundary tensors (arguments), then what the nodes make.
  std::map<int, uint32_t> index;  // graph value -> blob value
  std::vector<cuda::BlobValue> values;
  std::vector<int> graph_id;
  auto add_value = [&](int id, cuda::ValueKind kind, uint32_t arg) {
    if (id < static_cast<int>(g.values.size())) {
      const Value& v = g.values[static_cast<size_t>(id)];
      if (!v.is_tensor() || v.sizes.size() > cuda::kMaxDims) {
        throw std::invalid_argument("cuda backend: value '" + v.name +
                                    "' is not a tensor of rank <= 6");
      }
    }
    const auto [dtype, sizes] = info(id);
    cuda::BlobValue b;
    std::memset(&b, 0, sizeof(b));
    b.kind = static_cast<uint32_t>(kind);
    const bool external = kind == cuda::ValueKind::ExternalInput ||
                          kind == cuda::ValueKind::ExternalOutput;
    b.dtype = value_dtype(dtype, external, storage);
    b.rank = static_cast<uint32_t>(sizes->size());
    b.arg = arg;
    b.alias_of = cuda::kNoValue;
    uint64_t n = 1;
    for (size_t d = 0; d < sizes->size(); ++d) {
      b.dims[d] = static_cast<uint64_t>((*sizes)[d]);
      n *= b.dims[d];
    }
    // A quantized weight (a constant of the graph): its device buffer (quant_lowering.h).
    b.bytes = cuda::is_quant_dtype(b.dtype) ? quant_weight_device_bytes(g, id)
                                            : n * cuda::value_dtype_bytes(b.dtype);
    index[id] = static_cast<uint32_t>(values.size());
    values.push_back(b);
    graph_id.push_back(id);
  };
  const uint32_t num_args = static_cast<uint32_t>(region.inputs.size() + region.outputs.size());
  for (size_t i = 0; i < region.inputs.size(); ++i) {
    const int id = region.inputs[i];
    const Value& v = g.values[static_cast<size_t>(id)];
    if (!v.is_tensor()) continue;  // scalars and lists: folded into node params
    add_value(id, v.is_constant ? cuda::ValueKind::Constant : cuda::ValueKind::ExternalInput,
              static_cast<uint32_t>(i));
  }
  for (size_t j = 0; j < region.outputs.size(); ++j) {
    add_value(region.outputs[j], cuda::ValueKind::ExternalOutput,
              static_cast<uint32_t>(region.inputs.size() + j));
  }
  for (int id : made) {
    if (index.count(id) == 0) add_value(id, cuda::ValueKind::Internal, cuda::kNoValue);
  }
  for (const auto& a : alias_of) {
    cuda::BlobValue& v = values[index.at(a.first)];
    const auto target = index.find(a.second);
    if (target == index.end()) {
      throw std::invalid_argument(
          "cuda backend: a view of value " + std::to_string(a.second) +
          ", which the region neither makes nor receives");
    }
    if (v.kind == static_cast<uint32_t>(cuda::ValueKind::ExternalInput)) {
      throw std::invalid_argument("cuda backend: an aliased region input");
    }
    v.alias_of = target->second;
  }

  // Node records; every input must be a value of the table (a list part the region neither
  // makes nor receives directly cannot be bound).
  std::vector<cuda::BlobNode> nodes;
  for (const PendingNode& p : pending) {
    cuda::BlobNode b;
    std::memset(&b, 0, sizeof(b));
    b.op = static_cast<uint32_t>(p.op);
    b.num_inputs = static_cast<uint32_t>(p.inputs.size());
    for (uint32_t i = 0; i < cuda::kMaxNodeInputs; ++i) b.inputs[i] = cuda::kNoValue;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      if (p.inputs[i] < 0) continue;
      const auto it = index.find(p.inputs[i]);
      if (it == index.end()) {
        const int id = p.inputs[i];
        throw std::invalid_argument(
            "cuda backend: tensor '" +
            (id < static_cast<int>(g.values.size()) ? g.values[static_cast<size_t>(id)].name
                                                    : std::to_string(id)) +
            "' reaches the region only inside a tensor list (not bindable)");
      }
      b.inputs[i] = it->second;
    }
    b.output = index.at(p.output);
    std::memcpy(b.params, p.params, sizeof(b.params));
    std::memcpy(b.fparams, p.fparams, sizeof(b.fparams));
    nodes.push_back(b);
  }

  // Memory plan: constants packed in the weights buffer; every other root value placed in the
  // arena by its live range (a value's aliases extend it).
  uint64_t weights = 0;
  std::vector<int64_t> first(values.size(), -2), last(values.size(), -2);
  auto root = [&](uint32_t v) { return values[v].alias_of == cuda::kNoValue ? v : values[v].alias_of; };
  for (uint32_t v = 0; v < values.size(); ++v) {
    const uint32_t kind = values[v].kind;
    if (kind == static_cast<uint32_t>(cuda::ValueKind::ExternalInput)) first[v] = -1;
    const uint32_t r = root(v);
    if (kind == static_cast<uint32_t>(cuda::ValueKind::ExternalOutput)) {
      last[r] = static_cast<int64_t>(nodes.size());
      if (r == v && first[r] == -2) first[r] = static_cast<int64_t>(nodes.size());
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    const int64_t pos = static_cast<int64_t>(n);
    for (uint32_t i = 0; i < nodes[n].num_inputs; ++i) {
      if (nodes[n].inputs[i] == cuda::kNoValue) continue;
      const uint32_t r = root(nodes[n].inputs[i]);
      last[r] = std::max(last[r], pos);
    }
    const uint32_t o = nodes[n].output;
    if (first[o] == -2 || first[o] > pos) first[o] = pos;
    last[o] = std::max(last[o], pos);
  }
  std::vector<Interval> roots;
  for (uint32_t v = 0; v < values.size(); ++v) {
    cuda::BlobValue& b = values[v];
    if (b.kind == static_cast<uint32_t>(cuda::ValueKind::Constant)) {
      b.offset = weights;
      weights += align_up(b.bytes);
    } else if (b.alias_of == cuda::kNoValue) {
      const int64_t f = first[v] == -2 ? 0 : first[v];
      roots.push_back({v, b.bytes, f, std::max(last[v], f)});
    }
  }
  const uint64_t arena = place(roots);
  for (const Interval& r : roots) values[r.value].offset = r.offset;
  for (cuda::BlobValue& b : values) {
    if (b.alias_of != cuda::kNoValue) b.offset = values[b.alias_of].offset;
  }

  cuda::BlobHeader h;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, cuda::kBlobMagic, 4);
  h.version = cuda::kBlobVersion;
  h.header_size = sizeof(cuda::BlobHeader);
  h.num_args = num_args;
  h.num_values = static_cast<uint32_t>(values.size());
  h.num_nodes = static_cast<uint32_t>(nodes.size());
  h.value_record_size = sizeof(cuda::BlobValue);
  h.node_record_size = sizeof(cuda::BlobNode);
  h.compute_dtype = static_cast<uint32_t>(compute);
  // bf16 GEMMs need Ampere (sm_80); f32 and f16 run from Volta (sm_70).
  h.min_compute_capability = compute == cuda::ComputeDType::BF16 ? 80 : 70;
  h.arena_bytes = align_up(arena);
  h.weights_bytes = align_up(weights);
  h.workspace_bytes = align_up(workspace);
  h.blob_bytes = sizeof(h) + values.size() * sizeof(cuda::BlobValue) +
                 nodes.size() * sizeof(cuda::BlobNode);
  std::vector<uint8_t> blob(h.blob_bytes);
  uint8_t* at = blob.data();
  std::memcpy(at, &h, sizeof(h));
  at += sizeof(h);
  if (!values.empty()) std::memcpy(at, values.data(), values.size() * sizeof(cuda::BlobValue));
  at += values.size() * sizeof(cuda::BlobValue);
  std::memcpy(at, nodes.data(), nodes.size() * sizeof(cuda::BlobNode));
  return blob;
}

}  // namespace tern::compiler::cuda_compile
