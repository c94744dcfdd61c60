// The byte-flip check of the model hardening checker: flips bytes of a program file one at a
// time (xor 0xFF, then xor 0x01) and demands that each flipped file is rejected by Program::load
// (Full verification) with a message, or loads, runs and gives outputs bit-identical to the
// original's. (Which bytes are flipped and which loaded flips are run: byte_flip_check.cpp.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/error.h"

namespace tern::model_hardening {

struct ByteFlipOptions {
  uint32_t threads = 1;       ///< MethodLoadOptions::num_threads for every run
  bool fallback_too = false;  ///< also run every loaded flip with the backends disabled
  bool verbose = false;       ///< print each failure as it is found
};

struct ByteFlipReport {
  size_t file_bytes = 0;
  size_t segment_bytes = 0;  ///< bytes inside segments (3 bytes flipped per segment)
  size_t bytes_flipped = 0;
  size_t flips = 0;     ///< bytes_flipped x the two masks
  size_t rejected = 0;  ///< Program::load (Full) refused the file with a message
  std::map<Error, size_t> rejected_by_error;
  std::map<std::string, size_t> rejected_by_region;
  size_t harmless = 0;  ///< loaded, ran, bit-identical outputs
  std::map<std::string, size_t> harmless_by_region;
  size_t runs = 0;  ///< method loads + executions of flipped files
  /// Every uncovered byte flipped at once: "loads, runs, identical outputs", "no padding
  /// bytes" or "rejected by Program::load with <Error>" (a failure is in `failures`).
  std::string all_padding;
  std::vector<std::string> failures;  ///< anything else: offset, region, what happened
  double seconds = 0;
};

/// Runs the check on `file` (the bytes of a .pte that loads and runs). Kernels and backends
/// must be registered. Throws std::runtime_error when the original file does not load or run.
ByteFlipReport check_byte_flips(const std::vector<uint8_t>& file, const ByteFlipOptions& options);

/// Prints the report, one "[byte flips]" line per figure.
void print_byte_flip_report(const std::string& name, const ByteFlipReport& report);

}  // namespace tern::model_hardening
