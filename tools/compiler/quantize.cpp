#include "tools/compiler/quantize.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "runtime/core/span.h"
#include "tools/compiler/fp8.h"
#include "tools/compiler/nf4.h"
#include "tools/compiler/value_bytes.h"

namespace tern::compiler {

namespace {

[[noreturn]] void bad_scheme(const std::string& text, const std::string& why) {
  throw std::invalid_argument(
      "quantization scheme '" + text + "': " + why +
      " (expected none, nf4[:block=N][:double] with N a power of two in [32, 4096], or "
      "fp8_e4m3 / fp8_e5m2 [:per_channel | :per_tensor | :block=R or RxC])");
}

uint32_t parse_positive(const std::string& text, const std::string& number) {
  if (number.empty() || number.size() > 9 ||
      number.find_first_not_of("0123456789") != std::string::npos) {
    bad_scheme(text, "'" + number + "' is not a positive integer");
  }
  const unsigned long v = std::stoul(number);
  if (v == 0) bad_scheme(text, "a block size of 0");
  return static_cast<uint32_t>(v);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return parts;
}

}  // namespace

QuantScheme parse_quant_scheme(const std::string& text) {
  const std::vector<std::string> parts = split(text, ':');
  QuantScheme q;
  const std::string& kind = parts[0];
  if (kind == "none") {
    if (parts.size() > 1) bad_scheme(text, "'none' takes no options");
    return q;
  }
  if (kind == "nf4") {
    q.kind = QuantScheme::Kind::NF4;
    for (size_t i = 1; i < parts.size(); ++i) {
      const std::string& opt = parts[i];
      if (opt == "double") {
        q.double_quant = true;
      } else if (opt.rfind("block=", 0) == 0) {
        q.block_size = parse_positive(text, opt.substr(6));
        if ((q.block_size & (q.block_size - 1)) != 0 || q.block_size < 32 ||
            q.block_size > 4096) {
          bad_scheme(text, "NF4 block size " + std::to_string(q.block_size) +
                               " is not a power of two in [32, 4096]");
        }
      } else {
        bad_scheme(text, "unknown nf4 option '" + opt + "'");
      }
    }
    return q;
  }
  if (kind == "fp8_e4m3" || kind == "fp8_e5m2") {
    q.kind = kind == "fp8_e4m3" ? QuantScheme::Kind::FP8E4M3 : QuantScheme::Kind::FP8E5M2;
    if (parts.size() > 2) bad_scheme(text, "at most one granularity option");
    if (parts.size() == 2) {
      const std::string& opt = parts[1];
      if (opt == "per_channel") {
        q.granularity = QuantSpec::Granularity::PerChannel;
      } else if (opt == "per_tensor") {
        q.granularity = QuantSpec::Granularity::PerTensor;
      } else if (opt.rfind("block=", 0) == 0) {
        q.granularity = QuantSpec::Granularity::Block2D;
        const std::string dims = opt.substr(6);
        const size_t x = dims.find('x');
        q.block_rows = parse_positive(text, dims.substr(0, x));
        q.block_cols = x == std::string::npos ? q.block_rows : parse_positive(text, dims.substr(x + 1));
      } else {
        bad_scheme(text, "unknown fp8 option '" + opt + "'");
      }
    }
    return q;
  }
  bad_scheme(text, "unknown scheme '" + kind + "'");
}

std::string quant_scheme_string(const QuantScheme& q) {
  switch (q.kind) {
    case QuantScheme::Kind::None:
      return "none";
    case QuantScheme::Kind::NF4:
      return "nf4:block=" + std::to_string(q.block_size) + (q.double_quant ? ":double" : "");
    case QuantScheme::Kind::FP8E4M3:
    case QuantScheme::Kind::FP8E5M2: {
      std::string s = q.kind == QuantScheme::Kind::FP8E4M3 ? "fp8_e4m3" : "fp8_e5m2";
      switch (q.granularity) {
        case QuantSpec::Granularity::PerTensor:
          return s + ":per_tensor";
        case QuantSpec::Granularity::PerChannel:
          return s + ":per_channel";
        case QuantSpec::Granularity::Block2D:
          return s + ":block=" + std::to_string(q.block_rows) + "x" + std::to_string(q.block_cols);
      }
    }
  }
  return "?";
}

QuantRule parse_quant_rule(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw std::invalid_argument("quantization rule '" + text +
                                "': expected PATTERN=SCHEME, e.g. 'lm_head.weight=none' or "
                                "'layers.*.weight=nf4:block=128'");
  }
  QuantRule rule;
  rule.pattern = text.substr(0, eq);
  rule.scheme = parse_quant_scheme(text.substr(eq + 1));
  return rule;
}

bool glob_match(const std::string& pattern, const std::string& name) {
  // Iterative glob with backtracking to the last '*'.
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

struct Use {
  size_t node;
  size_t arg;
};

// Quantizes one method.
class MethodQuantizer {
 public:
  MethodQuantizer(Graph& g, const QuantizeOptions& options, QuantizeReport& report)
      : g_(g), options_(options), report_(report) {}

  void run() {
    std::set<size_t> delegated;
    for (const DelegateRegion& d : g_.delegates) {
      for (int n : d.nodes) delegated.insert(static_cast<size_t>(n));
    }
    std::map<int, std::vector<Use>> uses;
    std::set<int> pinned;  // outputs and tensor-list members: never rewritten
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& node = g_.nodes[i];
      for (size_t a = 0; a < node.args.size(); ++a) uses[node.args[a]].push_back({i, a});
    }
    for (int id : g_.outputs) pinned.insert(id);
    for (const Value& v : g_.values) {
      if (v.kind == Value::Kind::TensorList) pinned.insert(v.tensors.begin(), v.tensors.end());
    }
    const size_t num_values = g_.values.size();  // values appended below are parameters
    for (size_t id = 0; id < num_values; ++id) {
      const Value& v = g_.values[id];
      if (v.is_tensor() && v.is_constant && v.dtype == DType::F32 && v.sizes.size() == 3 &&
          v.quant.scheme == QuantSpec::Scheme::None) {
        quantize_experts(id, uses, pinned, delegated);
        continue;
      }
      if (!v.is_tensor() || !v.is_constant || v.dtype != DType::F32 || v.sizes.size() != 2 ||
          v.quant.scheme != QuantSpec::Scheme::None) {
        continue;
      }
      auto it = uses.find(static_cast<int>(id));
      if (it == uses.end()) continue;
      int eligible = 0, matmul = 0;
      std::string other;
      for (const Use& u : it->second) {
        const Node& node = g_.nodes[u.node];
        const bool slot = (node.op == "tern::linear" && u.arg == 1) ||
                          (node.op == "tern::embedding" && u.arg == 0) ||
                          (node.op == "tern::matmul" && u.arg == 1);
        if (slot && delegated.count(u.node)) {
          other = node.op + " (node " + std::to_string(u.node) + ") inside a delegate region";
        } else if (slot) {
          ++eligible;
          matmul += node.op == "tern::matmul" ? 1 : 0;
        } else if (other.empty()) {
          other = node.op + " (node " + std::to_string(u.node) + ", argument " +
                  std::to_string(u.arg) + ")";
        }
      }
      if (eligible == 0) continue;
      const QuantScheme scheme = scheme_for(v.name);
      if (scheme.kind == QuantScheme::Kind::None) continue;
      const std::string label = "'" + display_name(id) + "' " + shape_string(v.sizes);
      if (!other.empty()) {
        report_.skipped.push_back(label + ": also read by " + other);
        continue;
      }
      if (pinned.count(static_cast<int>(id))) {
        report_.skipped.push_back(label + ": a method output or tensor-list member");
        continue;
      }
      if (matmul != 0 && matmul != eligible) {
        report_.skipped.push_back(label +
                                  ": read both as a matmul b and as a linear/embedding weight");
        continue;
      }
      if (v.sizes[0] == 0 || v.sizes[1] == 0) continue;
      check_finite(id);
      std::vector<std::string> ops;
      for (const Use& u : it->second) ops.push_back(g_.nodes[u.node].op);
      if (matmul != 0) transpose_for_linear(id, it->second);
      quantize_value(id, scheme, ops, matmul != 0);
    }
  }

 private:
  QuantScheme scheme_for(const std::string& name) const {
    for (const QuantRule& r : options_.rules) {
      if (glob_match(r.pattern, name)) return r.scheme;
    }
    return options_.scheme;
  }

  std::string display_name(size_t id) const {
    return g_.values[id].name.empty() ? "value " + std::to_string(id) : g_.values[id].name;
  }

  void check_finite(size_t id) const {
    const Value& v = g_.values[id];
    const uint64_t n = v.data.size() / sizeof(float);
    for (uint64_t i = 0; i < n; ++i) {
      float x;
      std::memcpy(&x, v.data.data() + i * sizeof(float), sizeof x);
      if (!std::isfinite(x)) {
        throw std::invalid_argument("method '" + g_.name + "': cannot quantize weight '" +
                                    display_name(id) + "' " + shape_string(v.sizes) + ": element " +
                                    std::to_string(i) + " is " + (std::isnan(x) ? "nan" : "inf") +
                                    " (only finite weights can be quantized; exclude it with "
                                    "--quantize-weight '" + display_name(id) + "=none')");
      }
    }
  }

  int none_value() {
    for (size_t i = 0; i < g_.values.size(); ++i) {
      if (g_.values[i].kind == Value::Kind::None) return static_cast<int>(i);
    }
    Value none;
    none.kind = Value::Kind::None;
    g_.values.push_back(none);
    return static_cast<int>(g_.values.size() - 1);
  }

  // A grouped_mm's experts w [E, K, N], read only as grouped_mm's w: each expert's matrix
  // transposed into rows [e N, (e + 1) N) of a [E N, K] weight (blocks and rows along K, as a
  // linear weight's), the nodes rewritten to tern::grouped_linear, then quantized as a linear
  // weight is.
  void quantize_experts(size_t id, const std::map<int, std::vector<Use>>& uses,
                        const std::set<int>& pinned, const std::set<size_t>& delegated) {
    auto it = uses.find(static_cast<int>(id));
    if (it == uses.end()) return;
    std::string other;
    for (const Use& u : it->second) {
      const Node& node = g_.nodes[u.node];
      if (node.op != "tern::grouped_mm" || u.arg != 1) {
        if (other.empty()) {
          other = node.op + " (node " + std::to_string(u.node) + ", argument " +
                  std::to_string(u.arg) + ")";
        }
      } else if (delegated.count(u.node)) {
        other = node.op + " (node " + std::to_string(u.node) + ") inside a delegate region";
      }
    }
    bool grouped = false;
    for (const Use& u : it->second) grouped = grouped || g_.nodes[u.node].op == "tern::grouped_mm";
    if (!grouped) return;
    const Value& v = g_.values[id];
    const QuantScheme scheme = scheme_for(v.name);
    if (scheme.kind == QuantScheme::Kind::None) return;
    const std::string label = "'" + display_name(id) + "' " + shape_string(v.sizes);
    if (!other.empty()) {
      report_.skipped.push_back(label + ": also read by " + other);
      return;
    }
    if (pinned.count(static_cast<int>(id))) {
      report_.skipped.push_back(label + ": a method output or tensor-list member");
      return;
    }
    const int64_t e = v.sizes[0], k = v.sizes[1], n = v.sizes[2];
    if (e == 0 || k == 0 || n == 0) return;
    check_finite(id);
    std::vector<uint8_t> t(v.data.size());
    const float* src = reinterpret_cast<const float*>(v.data.data());
    float* dst = reinterpret_cast<float*>(t.data());
    for (int64_t g = 0; g < e; ++g) {
      for (int64_t r = 0; r < k; ++r) {
        for (int64_t c = 0; c < n; ++c) dst[(g * n + c) * k + r] = src[(g * k + r) * n + c];
      }
    }
    Value& w = g_.values[id];
    w.data = std::move(t);
    w.sizes = {e * n, k};
    std::vector<std::string> ops;
    for (const Use& u : it->second) {
      ops.push_back("tern::grouped_mm");
      g_.nodes[u.node].op = "tern::grouped_linear";
    }
    quantize_value(id, scheme, ops, /*transposed=*/true);
  }

  // matmul(x, W [k, n]) == linear(x, W^T [n, k], None): transpose the constant and rewrite.
  void transpose_for_linear(size_t id, const std::vector<Use>& uses) {
    Value& v = g_.values[id];
    const int64_t k = v.sizes[0], n = v.sizes[1];
    std::vector<uint8_t> t(v.data.size());
    const float* src = reinterpret_cast<const float*>(v.data.data());
    float* dst = reinterpret_cast<float*>(t.data());
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t c = 0; c < n; ++c) dst[c * k + r] = src[r * n + c];
    }
    v.data = std::move(t);
    v.sizes = {n, k};
    const int none = none_value();
    for (const Use& u : uses) {
      Node& node = g_.nodes[u.node];
      node.op = "tern::linear";
      node.args = {node.args[0], static_cast<int>(id), none};
    }
  }

  int add_constant(const std::string& name, DType dtype, std::vector<int64_t> sizes,
                   const void* bytes, size_t nbytes) {
    Value c;
    c.kind = Value::Kind::Tensor;
    c.name = name;
    c.dtype = dtype;
    c.sizes = std::move(sizes);
    c.is_constant = true;
    c.data = std::vector<uint8_t>(static_cast<const uint8_t*>(bytes),
                                  static_cast<const uint8_t*>(bytes) + nbytes);
    g_.values.push_back(std::move(c));
    return static_cast<int>(g_.values.size() - 1);
  }

  int dq_table_value(const std::array<float, 256>& table) {
    if (dq_table_ < 0) {
      dq_table_ = add_constant("nf4.dq_table", DType::F32, {256}, table.data(), sizeof(float) * 256);
    }
    return dq_table_;
  }

  void quantize_value(size_t id, const QuantScheme& scheme, const std::vector<std::string>& ops,
                      bool transposed) {
    const std::string name = display_name(id);
    // Read in place: a constant's bytes are an owned vector or borrowed from the mapped weights
    // file at a multiple of 4 (safetensors.h), so f32-aligned; `source` keeps them alive after
    // the value's data is replaced.
    const ConstantBytes source = g_.values[id].data;
    const Span<const float> x(reinterpret_cast<const float*>(source.data()),
                              source.size() / sizeof(float));
    const std::vector<int64_t> sizes = g_.values[id].sizes;
    QuantizedWeight w;
    w.method = g_.name;
    w.name = name;
    w.shape = sizes;
    w.scheme = quant_scheme_string(scheme);
    w.ops = ops;
    w.transposed = transposed;
    w.bytes_before = x.size() * sizeof(float);
    QuantSpec q;
    std::vector<uint8_t> data;
    DType dtype = DType::NF4;
    if (scheme.kind == QuantScheme::Kind::NF4) {
      Nf4Encoded enc = nf4_quantize(x.data(), x.size(), scheme.block_size);
      data = std::move(enc.packed);
      q.block_size = scheme.block_size;
      const int64_t blocks = static_cast<int64_t>(enc.absmax.size());
      w.bytes_after = data.size();
      if (!scheme.double_quant) {
        q.scheme = QuantSpec::Scheme::NF4;
        q.absmax = add_constant(name + ".absmax", DType::F32, {blocks}, enc.absmax.data(),
                                enc.absmax.size() * sizeof(float));
        w.bytes_after += enc.absmax.size() * sizeof(float);
      } else {
        const Nf4DoubleQuant dq = nf4_double_quantize(enc.absmax, 256);
        q.scheme = QuantSpec::Scheme::NF4DoubleQuant;
        q.dq_offset = dq.offset;
        q.dq_block_size = 256;
        q.dq_codes = add_constant(name + ".dq_codes", DType::U8, {blocks}, dq.codes.data(),
                                  dq.codes.size());
        q.dq_absmax2 = add_constant(name + ".dq_absmax2", DType::F32,
                                    {static_cast<int64_t>(dq.absmax2.size())}, dq.absmax2.data(),
                                    dq.absmax2.size() * sizeof(float));
        q.dq_table = dq_table_value(dq.table);
        w.bytes_after += dq.codes.size() + dq.absmax2.size() * sizeof(float);
      }
    } else {
      const Fp8Format format =
          scheme.kind == QuantScheme::Kind::FP8E4M3 ? Fp8Format::E4M3 : Fp8Format::E5M2;
      dtype = format == Fp8Format::E4M3 ? DType::FP8E4M3 : DType::FP8E5M2;
      Fp8Encoded enc =
          fp8_quantize(x.data(), static_cast<uint64_t>(sizes[0]), static_cast<uint64_t>(sizes[1]),
                       format, static_cast<Fp8Granularity>(scheme.granularity), scheme.block_rows,
                       scheme.block_cols);
      data = std::move(enc.codes);
      q.scheme = QuantSpec::Scheme::FP8;
      q.granularity = scheme.granularity;
      q.block_rows = scheme.block_rows;
      q.block_cols = scheme.block_cols;
      q.scale = add_constant(name + ".scale", DType::F32,
                             {static_cast<int64_t>(enc.scales.size())}, enc.scales.data(),
                             enc.scales.size() * sizeof(float));
      w.bytes_after = data.size() + enc.scales.size() * sizeof(float);
    }
    Value& v = g_.values[id];  // add_constant may have moved the values
    v.dtype = dtype;
    v.data = std::move(data);
    v.quant = q;
    report_.weights.push_back(std::move(w));
  }

  Graph& g_;
  const QuantizeOptions& options_;
  QuantizeReport& report_;
  int dq_table_ = -1;
};

uint64_t constant_bytes(const ProgramGraph& program) {
  uint64_t total = 0;
  for (const Graph& g : program.methods) {
    for (const Value& v : g.values) {
      if (v.is_tensor() && v.is_constant) total += v.data.size();
    }
  }
  return total;
}

}  // namespace

QuantizeReport quantize_program(ProgramGraph& program, const QuantizeOptions& options) {
  QuantizeReport report;
  report.constant_bytes_before = constant_bytes(program);
  if (options.enabled()) {
    for (Graph& g : program.methods) MethodQuantizer(g, options, report).run();
  }
  report.constant_bytes_after = constant_bytes(program);
  return report;
}

}  // namespace tern::compiler
