// tern_model_hardening: the byte-flip check and the allocation-failure stress of issue 5 for
// one exported model (a .pte file), without GoogleTest, so that tests/hardening/
// run_model_hardening.py can run it on every model of tests/models/model_zoo.py.
//
//   tern_model_hardening MODEL.pte [--name NAME] [--threads N] [--no-fallback]
//                        [--no-flips] [--no-alloc] [--verbose]
//
// Both checks run twice over: with the backends this build has, and with every backend
// disabled (the delegates' portable fallback instructions); --no-fallback keeps the first
// only. --threads: the backends' worker threads (default 1: one core, and outputs that
// cannot depend on how the work was split).
//
// Byte flips: byte_flip_check.cpp; allocation stress: alloc_stress_check.cpp. Kernels are the
// portable ones and the backends every one this build has (as `tern run`). Prints one line
// per figure and a closing "[model hardening] NAME: PASS|FAIL" line. Exit status: 0 when both
// checks pass, 1 on a failure (each one printed), 2 on a usage error or a file that does not
// load or run.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/backend/register_all_backends.h"
#include "runtime/core/log.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/hardening/alloc_stress_check.h"
#include "tests/hardening/byte_flip_check.h"

namespace {

struct Args {
  std::string path;
  std::string name;
  uint32_t threads = 1;
  bool fallback = true;
  bool flips = true;
  bool alloc = true;
  bool verbose = false;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "tern_model_hardening: %s\n"
               "usage: tern_model_hardening MODEL.pte [--name NAME] [--threads N] "
               "[--no-fallback] [--no-flips] [--no-alloc] [--verbose]\n",
               why);
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
      return argv[++i];
    };
    if (arg == "--name") {
      a.name = value();
    } else if (arg == "--threads") {
      a.threads = static_cast<uint32_t>(std::stoul(value()));
    } else if (arg == "--no-fallback") {
      a.fallback = false;
    } else if (arg == "--no-flips") {
      a.flips = false;
    } else if (arg == "--no-alloc") {
      a.alloc = false;
    } else if (arg == "--verbose") {
      a.verbose = true;
    } else if (!arg.empty() && arg[0] == '-') {
      usage(("unknown option " + arg).c_str());
    } else if (a.path.empty()) {
      a.path = arg;
    } else {
      usage("more than one file given");
    }
  }
  if (a.path.empty()) usage("no file given");
  if (a.name.empty()) a.name = a.path;
  return a;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tern::model_hardening;
  const Args args = parse_args(argc, argv);
  // Refused loads are the expected outcome of most flips; only errors are worth a line.
  tern::set_log_level(tern::LogLevel::Error);
  if (tern::register_portable_kernels() != tern::Error::Ok ||
      tern::register_all_backends() != tern::Error::Ok) {
    std::fprintf(stderr, "tern_model_hardening: registration failed: %s\n",
                 tern::last_error_message());
    return 2;
  }
  size_t failures = 0;
  std::string summary;
  try {
    const std::vector<uint8_t> file = read_file(args.path);
    if (args.alloc) {
      AllocStressOptions options;
      options.threads = args.threads;
      options.fallback_too = args.fallback;
      const AllocStressReport report = check_alloc_stress(file, options);
      print_alloc_stress_report(args.name, report);
      failures += report.failures.size();
      size_t tried = 0;
      for (const auto& m : report.methods) tried += m.too_small_tried;
      summary += "alloc stress: " + std::to_string(report.methods.size()) +
                 " method x path combinations stressed, " + std::to_string(tried) +
                 " too-small sizes tried, " + std::to_string(report.failures.size()) +
                 " failures; ";
      std::fflush(stdout);
    }
    if (args.flips) {
      ByteFlipOptions options;
      options.threads = args.threads;
      options.fallback_too = args.fallback;
      options.verbose = args.verbose;
      const ByteFlipReport report = check_byte_flips(file, options);
      print_byte_flip_report(args.name, report);
      failures += report.failures.size();
      summary += "byte flips: " + std::to_string(report.flips) + " flips of " +
                 std::to_string(report.bytes_flipped) + " bytes, " +
                 std::to_string(report.rejected) + " rejected, " + std::to_string(report.harmless) +
                 " harmless, " + std::to_string(report.failures.size()) + " failures; ";
    }
  } catch (const std::exception& e) {
    std::printf("[model hardening] %s: ERROR: %s\n", args.name.c_str(), e.what());
    return 2;
  }
  std::printf("[model hardening] %s: %s (%s)\n", args.name.c_str(), failures == 0 ? "PASS" : "FAIL",
              summary.empty() ? "nothing checked" : summary.substr(0, summary.size() - 2).c_str());
  return failures == 0 ? 0 : 1;
}
