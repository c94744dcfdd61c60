// Seed corpus of the fuzz targets (see fuzz_corpus.h).
#include "tests/fuzz/fuzz_corpus.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tests/fuzz/sample_programs.h"
#if TERN_FUZZ_CPU_BLOB
#include "tests/fuzz/cpu_blob_seeds.h"
#endif
#if TERN_FUZZ_VULKAN_BLOB
#include "tests/fuzz/vulkan_blob_seeds.h"
#endif
#if TERN_FUZZ_CUDA_BLOB
#include "tests/fuzz/cuda_blob_seeds.h"
#endif
#include "tools/cli/npy.h"
#include "tools/compiler/safetensors.h"

namespace tern::fuzz {
namespace {

using nlohmann::json;

std::vector<uint8_t> to_bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

// The "quant" object of docs/graph-format.md for a quantized weight.
json quant_json(const compiler::QuantSpec& q) {
  using Scheme = compiler::QuantSpec::Scheme;
  using Granularity = compiler::QuantSpec::Granularity;
  json j;
  j["scheme"] = q.scheme == Scheme::NF4              ? "nf4"
                : q.scheme == Scheme::NF4DoubleQuant ? "nf4_double_quant"
                                                     : "fp8";
  j["block_size"] = q.block_size;
  const std::pair<const char*, int> refs[] = {{"absmax", q.absmax},
                                              {"dq_codes", q.dq_codes},
                                              {"dq_absmax2", q.dq_absmax2},
                                              {"dq_table", q.dq_table},
                                              {"scale", q.scale}};
  for (const auto& [key, ref] : refs) {
    if (ref >= 0) j[key] = ref;
  }
  j["dq_offset"] = static_cast<double>(q.dq_offset);
  j["dq_block_size"] = q.dq_block_size;
  j["granularity"] = q.granularity == Granularity::PerTensor    ? "per_tensor"
                     : q.granularity == Granularity::PerChannel ? "per_channel"
                                                                : "block_2d";
  j["block_rows"] = q.block_rows;
  j["block_cols"] = q.block_cols;
  return j;
}

json value_json(const std::string& method, const compiler::Value& v, int id,
                std::map<std::string, compiler::SafeTensor>* weights) {
  using Kind = compiler::Value::Kind;
  json j;
  if (!v.name.empty()) j["name"] = v.name;
  switch (v.kind) {
    case Kind::Tensor: {
      j["type"] = "tensor";
      j["dtype"] = to_string(v.dtype);
      j["shape"] = v.sizes;
      const std::string weight = method + ".v" + std::to_string(id);
      if (v.is_constant) {
        j["weight"] = weight;
        // Quantized data goes to safetensors as raw U8 bytes (it has no 4-bit dtype).
        const bool quantized =
            v.dtype == DType::NF4 || v.dtype == DType::FP8E4M3 || v.dtype == DType::FP8E5M2;
        (*weights)[weight] =
            quantized ? compiler::SafeTensor{DType::U8, {static_cast<int64_t>(v.data.size())},
                                             v.data}
                      : compiler::SafeTensor{v.dtype, v.sizes, v.data};
      } else if (v.is_state) {
        j["state"] = true;
        if (!v.shared_state.empty()) j["shared"] = v.shared_state;
        if (!v.data.empty()) {
          j["init"] = weight;
          (*weights)[weight] = compiler::SafeTensor{v.dtype, v.sizes, v.data};
        }
      } else if (v.caller_bound) {
        j["caller_bound"] = true;
      }
      if (v.quant.scheme != compiler::QuantSpec::Scheme::None) j["quant"] = quant_json(v.quant);
      break;
    }
    case Kind::Int:
      j["type"] = "int";
      j["value"] = v.int_value;
      break;
    case Kind::Double:
      j["type"] = "double";
      j["value"] = v.double_value;
      break;
    case Kind::Bool:
      j["type"] = "bool";
      j["value"] = v.bool_value;
      break;
    case Kind::IntList:
      j["type"] = "int_list";
      j["value"] = v.ints;
      break;
    case Kind::DoubleList:
      j["type"] = "double_list";
      j["value"] = v.doubles;
      break;
    case Kind::String:
      j["type"] = "string";
      j["value"] = v.string_value;
      break;
    case Kind::None:
      j["type"] = "none";
      break;
    case Kind::TensorList:
      j["type"] = "tensor_list";
      j["value"] = v.tensors;
      break;
  }
  return j;
}

std::vector<uint8_t> pattern_bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> out(n);
  uint32_t state = seed;
  for (size_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    out[i] = static_cast<uint8_t>(state >> 24);
  }
  return out;
}

/// f32 values in [-2, 2) as bytes (fuzz_execute inputs that are ordinary numbers).
std::vector<uint8_t> float_bytes(size_t count, uint32_t seed) {
  std::vector<uint8_t> out(count * 4);
  uint32_t state = seed;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    const float f = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 4.0f - 2.0f;
    std::memcpy(out.data() + 4 * i, &f, 4);
  }
  return out;
}

std::vector<Seed> program_seeds() {
  std::vector<Seed> seeds;
  for (size_t i = 0; i < sample_programs().size(); ++i) {
    seeds.emplace_back(sample_programs()[i].name + ".pte", sample_program_bytes(i));
  }
  return seeds;
}

std::vector<Seed> execute_seeds() {
  std::vector<Seed> seeds;
  for (size_t i = 0; i < sample_programs().size(); ++i) {
    for (uint8_t flags = 0; flags < 2; ++flags) {
      std::vector<uint8_t> bytes = {static_cast<uint8_t>(i), flags};
      const std::vector<uint8_t> data =
          flags == 0 ? float_bytes(64, static_cast<uint32_t>(i)) : pattern_bytes(256, 7 + i);
      bytes.insert(bytes.end(), data.begin(), data.end());
      seeds.emplace_back(sample_programs()[i].name + "_" + std::to_string(flags), bytes);
    }
  }
  return seeds;
}

std::vector<Seed> graph_json_seeds() {
  std::vector<Seed> seeds;
  for (const SampleProgram& p : sample_programs()) {
    auto [text, weights] = graph_json_document(p.graph);
    std::vector<uint8_t> bytes = to_bytes(text + kGraphJsonSeparator);
    bytes.insert(bytes.end(), weights.begin(), weights.end());
    seeds.emplace_back(p.name + ".graph", bytes);
  }
  return seeds;
}

std::vector<Seed> npy_seeds() {
  std::vector<Seed> seeds;
  const DType dtypes[] = {DType::F32, DType::F16, DType::I64, DType::I32,
                          DType::I16, DType::I8,  DType::U8,  DType::Bool};
  const std::vector<std::vector<int64_t>> shapes = {{}, {3}, {2, 3}, {1, 2, 0}, {2, 1, 2, 1}};
  uint32_t seed = 1;
  for (DType dtype : dtypes) {
    for (size_t s = 0; s < shapes.size(); ++s) {
      NpyArray a;
      a.dtype = dtype;
      a.shape = shapes[s];
      uint64_t nbytes = 0;
      dtype_nbytes(dtype, a.numel(), &nbytes);
      a.data = pattern_bytes(static_cast<size_t>(nbytes), seed++);
      if (dtype == DType::Bool) {
        for (uint8_t& b : a.data) b &= 1;
      }
      seeds.emplace_back(std::string(to_string(dtype)) + "_" + std::to_string(s) + ".npy",
                         encode_npy(a));
    }
  }
  // A version 2.0 header (a long shape) and hand-written headers.
  NpyArray wide;
  wide.dtype = DType::U8;
  wide.shape.assign(40, 1);
  wide.data = {42};
  seeds.emplace_back("v2_long_header.npy", encode_npy(wide));
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  header += std::string((64 - (11 + header.size()) % 64) % 64, ' ') + "\n";
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  file += header + std::string(8, '\0');
  seeds.emplace_back("handwritten_v1.npy", to_bytes(file));
  return seeds;
}

}  // namespace

std::pair<std::string, std::vector<uint8_t>> graph_json_document(
    const compiler::ProgramGraph& program) {
  std::map<std::string, compiler::SafeTensor> weights;
  json doc;
  doc["format"] = "tern-graph";
  doc["version"] = 1;  // 2 when a method has dynamic shapes (below)
  doc["producer"] = program.producer;
  doc["source_model"] = program.source_model;
  doc["metadata"] = program.metadata;
  doc["weights"] = "weights.safetensors";
  doc["methods"] = json::array();
  for (const compiler::Graph& g : program.methods) {
    json m;
    m["name"] = g.name;
    m["values"] = json::array();
    for (size_t i = 0; i < g.values.size(); ++i) {
      m["values"].push_back(value_json(g.name, g.values[i], static_cast<int>(i), &weights));
    }
    if (!g.symbols.empty()) {
      // Bounded-dynamic shapes: graph.json version 2 (docs/graph-format.md).
      doc["version"] = 2;
      auto names = [&](const std::vector<int>& symbols) {
        json list = json::array();
        for (int s : symbols) {
          list.push_back(s < 0 ? json(nullptr) : json(g.symbols[static_cast<size_t>(s)].name));
        }
        return list;
      };
      m["symbols"] = json::array();
      for (const compiler::DimSymbol& s : g.symbols) {
        m["symbols"].push_back({{"name", s.name}, {"min", s.min}, {"max", s.max}});
      }
      for (size_t i = 0; i < g.values.size(); ++i) {
        const compiler::Value& v = g.values[i];
        if (!v.dim_symbols.empty()) m["values"][i]["dim_symbols"] = names(v.dim_symbols);
        if (v.int_symbols.empty()) continue;
        if (v.kind == compiler::Value::Kind::Int) {
          m["values"][i]["symbol"] = names(v.int_symbols)[0];
        } else {
          m["values"][i]["symbols"] = names(v.int_symbols);
        }
      }
    }
    m["inputs"] = g.inputs;
    m["outputs"] = g.outputs;
    m["nodes"] = json::array();
    for (const compiler::Node& n : g.nodes) {
      json node;
      node["op"] = n.op;
      node["args"] = n.args;
      node["outputs"] = n.outputs;
      if (!n.debug_name.empty()) node["name"] = n.debug_name;
      m["nodes"].push_back(node);
    }
    if (!g.delegates.empty()) {
      m["delegates"] = json::array();
      for (size_t d = 0; d < g.delegates.size(); ++d) {
        const compiler::DelegateRegion& r = g.delegates[d];
        json region;
        region["backend"] = r.backend;
        region["nodes"] = r.nodes;
        if (!r.blob.empty()) {
          const std::string blob = g.name + ".blob" + std::to_string(d);
          region["blob"] = blob;
          weights[blob] =
              compiler::SafeTensor{DType::U8, {static_cast<int64_t>(r.blob.size())}, r.blob};
        }
        m["delegates"].push_back(region);
      }
    }
    doc["methods"].push_back(m);
  }
  return {doc.dump(1), compiler::write_safetensors(weights)};
}

std::vector<Seed> seed_inputs(Target target) {
  switch (target) {
    case Target::ProgramLoad:
    case Target::MethodLoad:
      return program_seeds();
    case Target::Execute:
      return execute_seeds();
    case Target::GraphJson:
      return graph_json_seeds();
    case Target::Npy:
      return npy_seeds();
    case Target::CpuBlob:
#if TERN_FUZZ_CPU_BLOB
      return cpu_blob_seeds();
#else
      return {};
#endif
    case Target::VulkanBlob:
#if TERN_FUZZ_VULKAN_BLOB
      return vulkan_blob_seeds();
#else
      return {};
#endif
    case Target::CudaBlob:
#if TERN_FUZZ_CUDA_BLOB
      return cuda_blob_seeds();
#else
      return {};
#endif
  }
  return {};
}

void write_seed_corpus(const std::string& dir) {
  for (Target t : kAllTargets) {
    const std::filesystem::path folder = std::filesystem::path(dir) / target_name(t);
    std::filesystem::create_directories(folder);
    for (const Seed& seed : seed_inputs(t)) {
      const std::filesystem::path path = folder / seed.first;
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(seed.second.data()),
                static_cast<std::streamsize>(seed.second.size()));
      if (!out) throw std::runtime_error("cannot write " + path.string());
    }
  }
}

}  // namespace tern::fuzz
