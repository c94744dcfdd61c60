// tern::grid_sample2d in the cpu delegate: tern's grid-sample node (op 43, since blob version
// 20) reading x as NHWC and the grid as row-major (x, y) pairs (internal to
// backends/cpu/compile).
#pragma once

#include <cstdint>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {

struct GridSampleAttrs {
  int64_t mode = 0;     ///< 0 bilinear, 1 nearest
  int64_t padding = 0;  ///< 0 zeros, 1 border, 2 reflection
  bool align_corners = false;
};

/// Checks tern::grid_sample2d(x [N, C, H, W] (an f32 activation), grid [N, HO, WO, 2] (an f32
/// activation or constant), mode, padding_mode, align_corners) -> [N, C, HO, WO] and reads its
/// attributes. Unsupported for anything else (bicubic never reaches here: the exporter refuses
/// it).
GridSampleAttrs grid_sample_attrs(const Graph& g, const Node& node);

}  // namespace tern::compiler::cpu_compile
