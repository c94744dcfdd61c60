// Helpers shared by the CLI tests: run the `tern` binary with its output captured, and small
// file helpers.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace tern::cli_test {

/// What a command printed and how it ended.
struct CommandResult {
  int exit_code = -1;  ///< -1 when the process did not exit normally (a signal)
  std::string out;
  std::string err;
};

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// `path` in single quotes, for a shell command line.
inline std::string quote(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

/// Runs the build's `tern` with `args` (already quoted), its stdout and stderr captured in
/// numbered files under `dir`.
inline CommandResult run_tern(const std::string& args, const std::filesystem::path& dir) {
  static int counter = 0;
  const std::filesystem::path out = dir / ("stdout_" + std::to_string(counter));
  const std::filesystem::path err = dir / ("stderr_" + std::to_string(counter++));
  const std::string cmd = quote(std::string(TERN_BINARY_DIR) + "/tern") + " " + args + " >" +
                          quote(out) + " 2>" + quote(err);
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

}  // namespace tern::cli_test
