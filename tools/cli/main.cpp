// The `tern` command: run, inspect, verify and compile programs.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "runtime/backend/register_all_backends.h"
#include "runtime/core/log.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tools/cli/cmd_bench.h"
#include "tools/cli/commands.h"
#include "tools/compiler/register_all_backend_compilers.h"

namespace {

// Prints the single error line: newlines in the message are folded into spaces.
void print_error(const std::string& message) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::fprintf(stderr, "tern: error: %s\n", line.c_str());
}

int run_main(int argc, char** argv) {
  CLI::App app{"tern: run, inspect, verify and compile tern programs (.pte)", "tern"};
  app.require_subcommand(1);
  // Subcommands inherit this, so `tern run m.pte -v` finds the parent's --verbose.
  app.fallthrough();
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Show runtime log lines (Info and above)");
  // run, bench and generate: options for backends at load, e.g. vulkan.device=1.
  std::vector<std::string> backend_options;
  app.add_option("--backend-option", backend_options,
                 "BACKEND.KEY=VALUE for the backends at load (repeat), e.g. vulkan.device=1 "
                 "(a device index or part of its name)");

  tern::cli::RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "Execute a method of a program");
  run_cmd->add_option("model", run.model, "Program file (.pte)")->required();
  run_cmd->add_option("--method", run.method, "Method to run (default: forward)");
  run_cmd->add_option("--input", run.inputs, "Input .npy file, one per method input, in order")
      ->expected(1, -1);
  CLI::Option* random_opt = run_cmd->add_flag("--random", run.random, "Random inputs");
  run_cmd->add_option("--seed", run.seed, "Seed for --random")->needs(random_opt);
  CLI::Option* ones_opt = run_cmd->add_flag("--ones", run.ones, "Inputs filled with ones");
  random_opt->excludes(ones_opt);
  run_cmd->add_option("--output-dir", run.output_dir, "Write output_<i>.npy files here");
  run_cmd->add_option("--repeat", run.repeat,
                      "Execute N times on the same inputs; state carries over (with "
                      "--output-dir: run_<k>/output_<i>.npy per run)")
      ->check(CLI::Range(1u, 1000000u));

  tern::cli::GenerateOptions generate;
  CLI::App* generate_cmd = app.add_subcommand(
      "generate", "Generate tokens with a language model's step method (token, position -> logits)");
  generate_cmd->add_option("model", generate.model, "Program file (.pte)")->required();
  generate_cmd->add_option("--method", generate.method,
                           "Step method (default: decode, else forward)");
  CLI::Option* prompt_opt = generate_cmd->add_option("--prompt", generate.prompt,
                                                     "Prompt token ids, e.g. 1,15043,3186");
  CLI::Option* prompt_file_opt = generate_cmd->add_option(
      "--prompt-file", generate.prompt_file, "File of prompt token ids (whitespace or commas)");
  prompt_opt->excludes(prompt_file_opt);
  generate_cmd->add_option("--max-new-tokens", generate.generation.max_new_tokens,
                           "Tokens to generate at most (default 32)")
      ->check(CLI::Range(1u, 1000000u));
  generate_cmd->add_option("--stop-token", generate.generation.stop_token,
                           "Stop after generating this token id");
  generate_cmd->add_option("--temperature", generate.generation.sampling.temperature,
                           "0 (default): greedy; else sample softmax(logits / T)")
      ->check(CLI::Range(0.0f, 100.0f));
  generate_cmd->add_option("--top-k", generate.generation.sampling.top_k,
                           "Sample among the k likeliest (0: all)");
  generate_cmd->add_option("--top-p", generate.generation.sampling.top_p,
                           "Sample among the likeliest whose probabilities reach p (1: all)")
      ->check(CLI::Range(0.000001f, 1.0f));
  generate_cmd->add_option("--seed", generate.generation.seed, "Seed for sampling (default 0)");
  CLI::Option* prefill_opt = generate_cmd->add_option(
      "--prefill-method", generate.prefill_method,
      "Method that takes the prompt in chunks (default: 'prefill' when the program has it)");
  generate_cmd
      ->add_flag("--no-prefill", generate.no_prefill,
                 "Feed the prompt token by token through the step method")
      ->excludes(prefill_opt);
  generate_cmd->add_option("--logits-dir", generate.logits_dir,
                           "Write the logits of every chosen token as logits_<k>.npy (k = 0: "
                           "after the prompt)");

  tern::cli::BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand("bench", "Time a method: latency percentiles, profile, trace");
  bench_cmd->add_option("model", bench.model, "Program file (.pte)")->required();
  bench_cmd->add_option("--method", bench.method, "Method to time (default: forward)");
  bench_cmd->add_option("--iterations", bench.iterations, "Timed executes (default 50)")
      ->check(CLI::PositiveNumber);
  bench_cmd->add_option("--warmup", bench.warmup, "Untimed executes first (default 5)");
  bench_cmd->add_option("--threads", bench.threads, "Backend worker threads (0: backend default)");
  bench_cmd->add_flag("--profile", bench.profile, "Per-step and per-op timing tables");
  bench_cmd->add_option("--trace", bench.trace, "Write a Chrome trace (JSON) for Perfetto here");
  bench_cmd->add_option("--json", bench.json, "Write a JSON summary here");
  CLI::Option* bench_input = bench_cmd->add_option(
      "--input", bench.inputs, "Input .npy file, one per method input (default: --random)")
      ->expected(1, -1);
  bool bench_random = false;
  CLI::Option* bench_random_opt = bench_cmd->add_flag("--random", bench_random, "Random inputs (default)");
  CLI::Option* bench_ones_opt = bench_cmd->add_flag("--ones", bench.ones, "Inputs filled with ones");
  bench_cmd->add_option("--seed", bench.seed, "Seed for the random inputs");
  bench_random_opt->excludes(bench_ones_opt);
  bench_input->excludes(bench_random_opt)->excludes(bench_ones_opt);

  std::string inspect_model;
  CLI::App* inspect_cmd = app.add_subcommand("inspect", "Describe a program");
  inspect_cmd->add_option("model", inspect_model, "Program file (.pte)")->required();

  std::string verify_model;
  CLI::App* verify_cmd = app.add_subcommand("verify", "Fully verify a program (structure and checksums)");
  verify_cmd->add_option("model", verify_model, "Program file (.pte)")->required();

  tern::cli::CompileCommandOptions compile;
  CLI::App* compile_cmd = app.add_subcommand("compile", "Compile graph.json into a program");
  compile_cmd->add_option("graph", compile.graph, "Graph file (graph.json)")->required();
  compile_cmd->add_option("-o,--output", compile.output, "Output program (.pte)")->required();
  compile_cmd->add_option("--segment-alignment", compile.segment_alignment,
                          "Segment alignment in bytes (power of two; 4096 for page alignment)");
  compile_cmd->add_option("--backend", compile.backends,
                          "Delegate to this backend (repeat; first has priority; 'portable': none)");
  compile_cmd->add_option("--quantize", compile.quantize,
                          "Quantize linear, matmul-with-constant and embedding weights: "
                          "nf4[:block=N][:double] | fp8_e4m3[:per_channel|:per_tensor|:block=R[xC]] "
                          "| fp8_e5m2[...] | none");
  compile_cmd->add_option("--quantize-weight", compile.quantize_weights,
                          "PATTERN=SCHEME: the scheme of the weights whose name matches the glob "
                          "PATTERN (repeat; first match wins; before --quantize; SCHEME 'none' "
                          "keeps them f32)")
      ->allow_extra_args(false);
  compile_cmd->add_flag("--explain", compile.explain,
                        "List the nodes left on the portable kernels and why each backend did not "
                        "take them");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(std::string(e.what()) + " (run 'tern --help' for usage)");
    return 2;
  }

  tern::set_log_level(verbose ? tern::LogLevel::Info : tern::LogLevel::Warning);
  tern::cli::set_backend_options(backend_options);
  tern::cli::throw_if_error(tern::register_portable_kernels(), "cannot register the portable kernels");
  // Every backend this build has: run/bench delegate to them, compile partitions for them.
  tern::cli::throw_if_error(tern::register_all_backends(), "cannot register the backends");
  tern::compiler::register_all_backend_compilers();

  if (*run_cmd) {
    if (!run.inputs.empty() && (run.random || run.ones)) {
      print_error("--input cannot be combined with --random or --ones");
      return 2;
    }
    return tern::cli::cmd_run(run);
  }
  if (*bench_cmd) return tern::cli::cmd_bench(bench);
  if (*generate_cmd) {
    if (generate.prompt.empty() && generate.prompt_file.empty()) {
      print_error("generate: give the prompt with --prompt IDS or --prompt-file FILE");
      return 2;
    }
    return tern::cli::cmd_generate(generate);
  }
  if (*inspect_cmd) return tern::cli::cmd_inspect(inspect_model);
  if (*verify_cmd) return tern::cli::cmd_verify(verify_model);
  if (*compile_cmd) return tern::cli::cmd_compile(compile);
  print_error("no subcommand");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    print_error(e.what());
  } catch (...) {
    print_error("unknown exception");
  }
  return 1;
}
