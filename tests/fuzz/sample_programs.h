// Small valid programs for the fuzzers, their seed corpus and the hardening tests (alloc
// stress, concurrency, byte flips), plus a strict test backend for delegate regions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/backend/backend.h"
#include "tools/compiler/graph.h"

namespace tern::fuzz {

/// Name under which SampleBackend is registered ("sample").
extern const char kSampleBackendName[];

/// A backend whose blob is an ASCII op name: "add" (out = a + b), "mul", "relu", "add_relu"
/// (out = relu(a + b)), computing exactly what the portable kernels compute. It trusts
/// nothing: init refuses an unknown blob (DelegateInvalidCompatibility), execute checks the
/// argument count, that every argument is a contiguous f32 tensor with data and that all have
/// the same element count (DelegateExecutionFailed otherwise). Stateless; thread-safe.
class SampleBackend final : public BackendInterface {
 public:
  bool is_available() const override { return true; }
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer blob,
                               Span<const CompileSpecView> specs) const override;
  Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                Span<EValue*> args) const override;
  void destroy(DelegateHandle* handle) const override;
};

/// Registers the portable kernels and SampleBackend (once per process; later calls are
/// no-ops). Returns false when registration failed. Not thread-safe: call before threads.
bool register_sample_kernels_and_backend();

/// One sample program: a name and its method graph(s).
struct SampleProgram {
  std::string name;
  compiler::ProgramGraph graph;
};

/// The graph twin of examples/mlp (x[1, 16] -> linear 32 -> relu -> linear 16 + x -> * gate
/// -> linear 4 -> reshape [2, 2]), with the same deterministic weights as make_mlp.py.
compiler::Graph demo_mlp_graph();
/// x[2, 3] + c[3] (broadcast) -> * x -> relu.
compiler::Graph elementwise_graph();
/// x[2, 6] -> reshape [3, 4] -> + c[3, 4] -> reshape [12] -> * itself.
compiler::Graph reshape_graph();
/// acc (state f32[1, 8]) += x; out = acc * x. Outputs out and acc.
compiler::Graph state_graph();
/// relu(x + y) as a delegate region for SampleBackend (blob "add_relu", portable fallback),
/// then * c; x, y: f32[2, 3].
compiler::Graph delegate_graph();
/// a, b: i32[4] -> a + b -> * a (wrapping integer arithmetic is the kernel's business).
compiler::Graph int32_graph();

/// Quantized weights (docs/quantization.md): x f32[2, 40] -> linear (nf4 double-quant weight
/// [24, 40] + bias) -> relu -> linear (fp8_e5m2 weight [8, 24], 2-D block scales) -> + embedding
/// rows (fp8_e4m3 per-channel table [5, 8], constant i64 indices [2]). Already quantized (the
/// compile step needs no options).
compiler::Graph quantized_graph();

/// Bounded-dynamic shapes (format 1.1, docs/dynamic-shapes.md): x f32[seq<=4, 3] -> relu ->
/// view [1, seq, 3] (a symbolic int list) -> softmax.
compiler::Graph dynamic_graph();

/// Shared state (format 1.2, docs/format.md): "forward" (x f32[1, 8]: acc += x, out = acc * x)
/// and "peek" (relu(acc)) share acc f32[1, 8], initialised to 0, 0.25, ..., 1.75.
compiler::ProgramGraph shared_state_program();

/// Every sample program, in a fixed order (index is stable: fuzz_execute picks by it).
/// Includes a two-method program ("forward" = demo MLP, "second" = elementwise).
const std::vector<SampleProgram>& sample_programs();

/// compile_program(program) bytes (cached per index of sample_programs()).
const std::vector<uint8_t>& sample_program_bytes(size_t index);

/// Compiles a one-method ProgramGraph.
std::vector<uint8_t> compile_one(const compiler::Graph& graph, const std::string& source_model);

}  // namespace tern::fuzz
