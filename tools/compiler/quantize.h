// The weight quantization pass of `tern compile --quantize` (docs/quantization.md): linear
// weights, matmul-with-constant weights, embedding tables and a mixture of experts' grouped_mm
// weights become nf4 or fp8 with their parameters (QUANT.md); everything else stays f32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler {

/// One quantization scheme, as written on the command line:
///   none
///   nf4[:block=N][:double]                        (N a power of two in [32, 4096]; default 64)
///   fp8_e4m3[:per_channel|:per_tensor|:block=R[xC]]  (default per_channel; block=128: 128x128)
///   fp8_e5m2[...]                                 (same options)
struct QuantScheme {
  enum class Kind : uint8_t { None, NF4, FP8E4M3, FP8E5M2 };
  Kind kind = Kind::None;
  uint32_t block_size = 64;     ///< NF4 elements per block
  bool double_quant = false;    ///< NF4: quantize the absmax values too
  QuantSpec::Granularity granularity = QuantSpec::Granularity::PerChannel;  ///< FP8
  uint32_t block_rows = 128;    ///< FP8 Block2D tile
  uint32_t block_cols = 128;
};

/// Parses a scheme; throws std::invalid_argument saying what is wrong and what is accepted.
QuantScheme parse_quant_scheme(const std::string& text);

/// The canonical text of a scheme ("nf4:block=64:double", "fp8_e4m3:per_channel", ...).
std::string quant_scheme_string(const QuantScheme& scheme);

/// A per-weight choice: weights whose value name matches `pattern` (a glob: '*' any run of
/// characters, '?' one character, everything else literal) use `scheme` (Kind::None keeps
/// them f32).
struct QuantRule {
  std::string pattern;
  QuantScheme scheme;
};

/// Parses "PATTERN=SCHEME"; throws std::invalid_argument.
QuantRule parse_quant_rule(const std::string& text);

/// True when `name` matches the glob `pattern`.
bool glob_match(const std::string& pattern, const std::string& name);

struct QuantizeOptions {
  /// The scheme of every eligible weight no rule matches (Kind::None: only ruled weights).
  QuantScheme scheme;
  /// Checked in order before `scheme`; the first match wins.
  std::vector<QuantRule> rules;
  bool enabled() const { return scheme.kind != QuantScheme::Kind::None || !rules.empty(); }
};

/// One quantized weight.
struct QuantizedWeight {
  std::string method;
  std::string name;
  std::vector<int64_t> shape;   ///< as stored ([out, in]; a matmul b is stored transposed)
  std::string scheme;           ///< quant_scheme_string
  std::vector<std::string> ops; ///< the ops reading it ("tern::linear", ...)
  /// a matmul b [k, n] stored as a linear weight [n, k]; a grouped_mm's w [E, K, N] as
  /// tern::grouped_linear's [E N, K] (each expert's matrix transposed)
  bool transposed = false;
  uint64_t bytes_before = 0;    ///< f32 bytes
  uint64_t bytes_after = 0;     ///< packed data + its own parameters (a shared table not included)
};

struct QuantizeReport {
  std::vector<QuantizedWeight> weights;
  /// Eligible-looking weights left f32, with the reason ("'w' [16, 8]: also read by tern::add").
  std::vector<std::string> skipped;
  /// Bytes of every constant tensor of every method, before and after the pass.
  uint64_t constant_bytes_before = 0;
  uint64_t constant_bytes_after = 0;
};

/// Quantizes, in place, every eligible weight of every method of `program`: a constant f32
/// rank-2 tensor read only as the weight of tern::linear (arg 1), the table of tern::embedding
/// (arg 0) or the constant b of tern::matmul (arg 1; those matmuls become tern::linear with the
/// weight transposed, so scales follow output channels), or a constant f32 rank-3 tensor read
/// only as the experts w [E, K, N] of tern::grouped_mm (arg 1; those nodes become
/// tern::grouped_linear with w [E N, K], each expert transposed), outside any pre-made delegate
/// region.
/// Adds the parameter tensors as constants ("<name>.absmax", ".dq_codes", ".dq_absmax2",
/// ".scale", one "nf4.dq_table" per method). Throws std::invalid_argument naming the weight
/// when a weight chosen for quantization holds NaN or infinity.
QuantizeReport quantize_program(ProgramGraph& program, const QuantizeOptions& options);

}  // namespace tern::compiler
