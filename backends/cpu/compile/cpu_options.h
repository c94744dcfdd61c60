// The cpu backend's compile options: `tern compile --backend cpu:OPTIONS` (and the exporter's
// backends=("cpu:OPTIONS",)), OPTIONS being ':'-separated `key=value`s.
#pragma once

#include <string>

namespace tern::compiler::cpu_compile {

/// Which Winograd convolutions a 3x3 stride-1 conv may become (backends/cpu/README.md
/// "Winograd"): `winograd=f2` (the default) F(2x2, 3x3) where it pays, whose rounding error is
/// no larger than the direct convolution's; `winograd=f4` also F(4x4, 3x3) where that pays more
/// (many 4x4 tiles, little padding waste): 1.1-1.4x faster on those layers, its rounding error
/// about twice the direct convolution's (Inception-v3 ends 1.1e-4 of max |ref| from PyTorch,
/// past docs/models.md's 1e-4; 6.3e-5 with direct convs), so opt-in, like the peers' "fast
/// math"; `winograd=off` none (every conv direct).
enum class WinogradMode { F2x2, F4x4, Off };

struct CpuOptions {
  WinogradMode winograd = WinogradMode::F2x2;
  bool operator==(const CpuOptions& o) const { return winograd == o.winograd; }
};

/// Parses the text after "cpu:" (e.g. "winograd=f2"). Throws std::invalid_argument naming the
/// option and listing the accepted ones when an option or value is unknown.
CpuOptions parse_cpu_options(const std::string& text);

}  // namespace tern::compiler::cpu_compile
