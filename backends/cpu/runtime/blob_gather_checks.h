// parse_blob's checks of the nodes that pick or place elements (internal to
// backends/cpu/runtime): Concat's parts and rows, the gather map (every offset inside its
// input), grid sampling, select (where) and IndexRows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Op 22 with params[0] = R: each input and the output seen as [R, numel / R].
Error check_concat_rows(uint32_t n, const BlobNode& node, const BlobValue* v);

/// Op 42: x an f32 data value; the map a Constant of B int32 offsets (its bytes in the blob),
/// O * B * R output elements (R = params[2], 0 meaning 1), and every run of R elements read
/// from o * step + map[t] inside x.
Error check_gather_map(uint32_t n, const BlobNode& node, const BlobValue* v,
                       const uint8_t* data);

/// Op 43: x [N, H, W, C] a data value (channels last, as every NHWC reader's), grid [N, HO,
/// WO, 2] f32 row-major pairs (not an NHWC edge value), the output [N, HO, WO, C], mode 0..1,
/// padding 0..2, align_corners 0..1.
Error check_grid_sample(uint32_t n, const BlobNode& node, const BlobValue* v);

/// Op 44: a and b f32, every input's dims (right-aligned) the output's or 1, the output no
/// NHWC edge value. cond's layout (BoolPlain) is checked with every node's inputs.
Error check_select(uint32_t n, const BlobNode& node, const BlobValue* v);

/// Op 45: the dim, the layouts, and the output's dims (x's with dim d the index's count).
Error check_index_rows(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
