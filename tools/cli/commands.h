// The `tern` command's subcommands. Each returns the process exit code (0 on success) and
// reports failures by throwing std::runtime_error with a one-line message, which main()
// prints as "tern: error: <message>".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/error.h"
#include "runtime/core/span.h"
#include "runtime/extension/module.h"
#include "runtime/extension/token_generator.h"
#include "runtime/loader/mmap_data_loader.h"
#include "runtime/executor/program.h"

namespace tern::cli {

/// `tern run MODEL.pte ...`
struct RunOptions {
  std::string model;
  std::string method;  ///< empty: "forward" if present, else the program's first method
  std::vector<std::string> inputs;  ///< .npy files, one per method input, in order
  bool random = false;
  uint64_t seed = 0;
  bool ones = false;
  std::string output_dir;  ///< empty: no files written
  /// Executes this many times on the same inputs, in one process: state tensors (a KV cache, a
  /// counter) carry over. With more than one, output_dir gets run_<k>/output_<i>.npy per run.
  uint32_t repeat = 1;
};
int cmd_run(const RunOptions& options);

/// `tern generate MODEL.pte --prompt ...`: the decoding loop of a language model's step
/// method (runtime/extension/token_generator.h).
struct GenerateOptions {
  std::string model;
  std::string method;  ///< empty: "decode" if present, else "forward", else the first
  /// The method that takes the prompt in chunks; empty: "prefill" when the program has it
  /// (else the prompt goes token by token through the step method).
  std::string prefill_method;
  bool no_prefill = false;  ///< feed the prompt token by token even with a prefill method
  std::string logits_dir;   ///< when set, logits_<k>.npy of every chosen token go there
  std::string prompt;       ///< token ids, separated by commas or spaces
  std::string prompt_file;  ///< a file of token ids, separated by whitespace or commas
  GenerationOptions generation;  ///< the loop's options, set by the flags directly
};
int cmd_generate(const GenerateOptions& options);

/// `tern inspect MODEL.pte`
int cmd_inspect(const std::string& model);

/// `tern verify MODEL.pte`
int cmd_verify(const std::string& model);

/// `tern compile GRAPH.json -o OUT.pte [--backend NAME ...]`
struct CompileCommandOptions {
  std::string graph;
  std::string output;
  uint32_t segment_alignment = 64;
  /// Backend compilers to partition for, highest priority first; "portable" entries are
  /// ignored (the portable kernels are always the fallback).
  std::vector<std::string> backends;
  /// --quantize SCHEME: the scheme of every eligible weight (empty: none).
  std::string quantize;
  /// --quantize-weight PATTERN=SCHEME rules, first match wins (docs/quantization.md).
  std::vector<std::string> quantize_weights;
  /// --explain: list the nodes left on the portable kernels and each backend's reason.
  bool explain = false;
};
int cmd_compile(const CompileCommandOptions& options);

/// "<ErrorName>: <last error message>" for a runtime error (the message part left out when
/// empty).
std::string describe_error(Error error);

/// Throws std::runtime_error("<what>: " + describe_error(error)) unless error is Ok.
void throw_if_error(Error error, const std::string& what);

/// A program file opened with mmap and loaded with the given verification. The loader lives
/// as long as the Program that points into it.
struct LoadedProgram {
  std::unique_ptr<MmapDataLoader> loader;
  std::optional<Program> program;
};

/// Opens and loads `path`; throws std::runtime_error "cannot load <path>: <Error>: <message>".
LoadedProgram load_program(const std::string& path, Program::Verification verification);

/// "[2, 3]".
std::string shape_string(Span<const int64_t> sizes);

/// The method to run: `requested` when not empty, else `preferred` if the program has it, else
/// "forward" if it has that, else its first method. Throws when the program has no readable
/// method.
std::string choose_method(const Program& program, const std::string& requested,
                          const char* preferred = "forward");

/// The --backend-option values ("BACKEND.KEY=VALUE", e.g. "vulkan.device=1"), given to every
/// method load_chosen_method loads (MethodLoadOptions::backend_options). Throws, naming the
/// form expected, on a malformed one.
void set_backend_options(const std::vector<std::string>& specs);

/// Loads `model` into `module` and the method choose_method() picks; its name goes to `chosen`.
/// The options get the --backend-option values (set_backend_options).
/// Throws "cannot load <model>: ..." or "cannot load method '<m>' of <model>: ...".
Method& load_chosen_method(Module& module, const std::string& model, const std::string& requested,
                           std::string* chosen, const Module::Options& options = Module::Options(),
                           const char* preferred = "forward");

/// Peak resident set size of this process in MiB (VmHWM, else ru_maxrss).
double peak_rss_mib();

/// `numel` generated elements of `dtype` for an input labelled `label`: all ones, or seeded
/// uniform [-1, 1) floats / small integers [0, 9] (bools: k & 1). Throws for a dtype it cannot
/// generate (the message asks for an .npy file with --input) or a size that overflows.
std::vector<uint8_t> generated_input(DType dtype, uint64_t numel, bool ones, std::mt19937_64& rng,
                                     const std::string& label);

/// Element `i` of the `dtype` array at `data` as text ("1.5", "-3", "true"), with
/// f16/bf16 converted to float; "?" for packed dtypes.
std::string element_string(DType dtype, const uint8_t* data, uint64_t i);

}  // namespace tern::cli
