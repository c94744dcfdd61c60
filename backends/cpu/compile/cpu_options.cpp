#include "backends/cpu/compile/cpu_options.h"

#include <stdexcept>

#include "tools/compiler/backend_compiler.h"

namespace tern::compiler::cpu_compile {
namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& text) {
  throw std::invalid_argument("cpu: " + what + " in 'cpu:" + text +
                              "' (options: winograd=f2|f4|off, the Winograd convolutions a "
                              "3x3 stride-1 conv may use)");
}

}  // namespace

CpuOptions parse_cpu_options(const std::string& text) {
  CpuOptions options;
  for (const std::string& option : split_backend_options(text)) {
    const size_t eq = option.find('=');
    const std::string key = option.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : option.substr(eq + 1);
    if (key != "winograd") refuse("unknown option '" + option + "'", text);
    if (value == "f2") {
      options.winograd = WinogradMode::F2x2;
    } else if (value == "f4") {
      options.winograd = WinogradMode::F4x4;
    } else if (value == "off") {
      options.winograd = WinogradMode::Off;
    } else {
      refuse("unknown value '" + value + "' of option 'winograd'", text);
    }
  }
  return options;
}

}  // namespace tern::compiler::cpu_compile
