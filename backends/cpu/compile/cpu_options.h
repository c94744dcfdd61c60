// The cpu backend's compile options: `tern compile --backend cpu:OPTIONS` (and the exporter's
// backends=("cpu:OPTIONS",)), OPTIONS being ':'-separated `key=value`s.
#pragma once

#include <string>

namespace tern::compiler::cpu_compile {

/// Which Winograd convolutions a 3x3 stride-1 conv may become (backends/cpu/README.md
/// "Winograd"): `winograd=auto` (the default) takes F(4x4, 3x3) where it pays (many 4x4 tiles,
/// little padding waste) and F(2x2, 3x3) elsewhere; `winograd=f2` only F(2x2, 3x3), whose
/// rounding error is about that of the direct convolution (F(4x4)'s is 2-3x it); `winograd=off`
/// none (every conv direct).
enum class WinogradMode { Auto, F2x2Only, Off };

struct CpuOptions {
  WinogradMode winograd = WinogradMode::Auto;
  bool operator==(const CpuOptions& o) const { return winograd == o.winograd; }
};

/// Parses the text after "cpu:" (e.g. "winograd=f2"). Throws std::invalid_argument naming the
/// option and listing the accepted ones when an option or value is unknown.
CpuOptions parse_cpu_options(const std::string& text);

}  // namespace tern::compiler::cpu_compile
