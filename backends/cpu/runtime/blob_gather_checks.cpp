#include "backends/cpu/runtime/blob_gather_checks.h"

#include <cstring>

#include "backends/cpu/runtime/blob_check_util.h"
#include "backends/cpu/runtime/blob_copy_checks.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/checked_math.h"

namespace tern::cpu {

/// Op 22 with params[0] = R: each input and the output seen as [R, numel / R].
Error check_concat_rows(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 1, 0, 1));
  const uint64_t rows = node.params[0];
  uint64_t total = 0;
  for (uint32_t i = 0; i < node.num_inputs; ++i) {
    const uint64_t count = value_numel(v[node.inputs[i]]);
    TERN_CHECK_OR_RETURN_ERROR(count % rows == 0, InvalidProgram,
                               "cpu blob: node %u (concat): input %u (value %u) has %llu "
                               "elements, not a multiple of the %llu rows",
                               n, i, node.inputs[i], static_cast<unsigned long long>(count),
                               static_cast<unsigned long long>(rows));
    total += count;
  }
  const uint64_t out = value_numel(v[node.output]);
  TERN_CHECK_OR_RETURN_ERROR(out == total, InvalidProgram,
                             "cpu blob: node %u (concat): output value %u has %llu elements, the "
                             "inputs %llu",
                             n, node.output, static_cast<unsigned long long>(out),
                             static_cast<unsigned long long>(total));
  return Error::Ok;
}

/// Op 42: x an f32 data value; the map a Constant of B int32 offsets (its bytes in the blob),
/// O * B * R output elements (R = params[2], 0 meaning 1), and every run of R elements read
/// from o * step + map[t] inside x.
Error check_gather_map(uint32_t n, const BlobNode& node, const BlobValue* v,
                       const uint8_t* data) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 3, 0, 1));
  TERN_RETURN_IF_ERROR(check_f32_data_inputs(n, node, v, 1));
  const uint64_t outer = node.params[0], step = node.params[1];
  const uint64_t run = node.params[2] == 0 ? 1 : node.params[2];  // 0: blobs before runs
  const BlobValue& m = v[node.inputs[1]];
  TERN_CHECK_OR_RETURN_ERROR(m.kind == static_cast<uint32_t>(ValueKind::Constant) &&
                                 m.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
                             InvalidProgram,
                             "cpu blob: node %u (gather_map): the map (value %u) must be a "
                             "constant of int32 offsets in the blob",
                             n, node.inputs[1]);
  const uint64_t block = value_numel(m), xs = value_numel(v[node.inputs[0]]);
  const uint64_t ys = value_numel(v[node.output]);
  // ys == outer · block · run, by divisions (no product overflows).
  const bool sizes_agree = block == 0 ? ys == 0
                                      : ys % block == 0 && (ys / block) % outer == 0 &&
                                            ys / block / outer == run;
  TERN_CHECK_OR_RETURN_ERROR(sizes_agree,
                             InvalidProgram,
                             "cpu blob: node %u (gather_map): %llu rows of the %llu-entry map "
                             "copying runs of %llu, expected the output's %llu elements",
                             n, static_cast<unsigned long long>(outer),
                             static_cast<unsigned long long>(block),
                             static_cast<unsigned long long>(run),
                             static_cast<unsigned long long>(ys));
  TERN_CHECK_OR_RETURN_ERROR(outer > 1 || step == 0, InvalidProgram,
                             "cpu blob: node %u (gather_map): step %llu with one row, expected 0",
                             n, static_cast<unsigned long long>(step));
  // Both at most 2^30: the last row's start fits in 64 bits.
  const uint64_t last_row = (outer - 1) * step;
  TERN_CHECK_OR_RETURN_ERROR(last_row + run <= xs, InvalidProgram,
                             "cpu blob: node %u (gather_map): the last row starts at %llu, and "
                             "with a run of %llu passes x's %llu elements",
                             n, static_cast<unsigned long long>(last_row),
                             static_cast<unsigned long long>(run),
                             static_cast<unsigned long long>(xs));
  const uint64_t limit = xs - last_row - run;  // the largest offset an entry may have
  const uint8_t* map = data + m.data_offset;
  for (uint64_t t = 0; t < block; ++t) {
    int32_t offset;
    std::memcpy(&offset, map + 4 * t, 4);
    TERN_CHECK_OR_RETURN_ERROR(offset >= 0 && static_cast<uint64_t>(offset) <= limit,
                               InvalidProgram,
                               "cpu blob: node %u (gather_map): map entry %llu is %d, expected "
                               "0..%llu (x's %llu elements less the last row's start %llu "
                               "and the run of %llu)",
                               n, static_cast<unsigned long long>(t), offset,
                               static_cast<unsigned long long>(limit),
                               static_cast<unsigned long long>(xs),
                               static_cast<unsigned long long>(last_row),
                               static_cast<unsigned long long>(run));
  }
  return Error::Ok;
}

/// Op 43: x [N, H, W, C] a data value (channels last, as every NHWC reader's), grid [N, HO,
/// WO, 2] f32 row-major pairs (not an NHWC edge value), the output [N, HO, WO, C], mode 0..1,
/// padding 0..2, align_corners 0..1.
Error check_grid_sample(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 3, 0, 0));
  TERN_CHECK_OR_RETURN_ERROR(node.params[0] <= 1 && node.params[1] <= 2 && node.params[2] <= 1,
                             InvalidProgram,
                             "cpu blob: node %u (grid_sample): mode %u, padding %u, "
                             "align_corners %u, expected 0..1, 0..2 and 0..1",
                             n, node.params[0], node.params[1], node.params[2]);
  TERN_RETURN_IF_ERROR(check_f32_data_inputs(n, node, v, 1));
  const BlobValue& x = v[node.inputs[0]];
  const BlobValue& g = v[node.inputs[1]];
  TERN_CHECK_OR_RETURN_ERROR(
      x.rank == 4 && g.rank == 4 && g.dims[0] == x.dims[0] && g.dims[3] == 2 &&
          g.layout != static_cast<uint32_t>(ValueLayout::Nhwc) &&
          g.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
      InvalidProgram,
      "cpu blob: node %u (grid_sample): x (value %u) must be [N, H, W, C] and the grid (value "
      "%u) f32 row-major [N, HO, WO, 2]",
      n, node.inputs[0], node.inputs[1]);
  const uint64_t expect[4] = {x.dims[0], g.dims[1], g.dims[2], x.dims[3]};
  return check_out_dims(n, node, v[node.output], expect, 4);
}

/// Op 44: a and b f32, every input's dims (right-aligned) the output's or 1, the output no
/// NHWC edge value. cond's layout (BoolPlain) is checked with every node's inputs.
Error check_select(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const uint32_t mode = node.params[0];
  TERN_CHECK_OR_RETURN_ERROR(mode <= kLastSelectMode, InvalidProgram,
                             "cpu blob: node %u (select): mode %u, expected 0 (a bool condition) "
                             "or 1..6 (a comparison with a number)",
                             n, mode);
  TERN_CHECK_OR_RETURN_ERROR(mode != 0 || node.params[1] == 0, InvalidProgram,
                             "cpu blob: node %u (select): unused parameter 1 is %u, expected 0",
                             n, node.params[1]);
  for (uint32_t i = 2; i < kNodeParams; ++i) {
    TERN_CHECK_OR_RETURN_ERROR(node.params[i] == 0, InvalidProgram,
                               "cpu blob: node %u (select): unused parameter %u is %u, "
                               "expected 0",
                               n, i, node.params[i]);
  }
  TERN_RETURN_IF_ERROR(check_unbounded(n, node));
  const BlobValue& out = v[node.output];
  TERN_CHECK_OR_RETURN_ERROR(out.layout == static_cast<uint32_t>(ValueLayout::Plain),
                             InvalidProgram,
                             "cpu blob: node %u (select): output value %u must be plain", n,
                             node.output);
  for (uint32_t i = 0; i < 3; ++i) {
    const BlobValue& x = v[node.inputs[i]];
    TERN_CHECK_OR_RETURN_ERROR(
        (i == 0 && mode == 0) || (x.layout == static_cast<uint32_t>(ValueLayout::Plain)),
        InvalidProgram, "cpu blob: node %u (select): %s (value %u) must be plain f32", n,
        i == 0 ? "x" : i == 1 ? "a" : "b", node.inputs[i]);
    bool fits = x.rank <= out.rank;
    for (uint32_t d = 0; fits && d < x.rank; ++d) {
      const uint64_t o = out.dims[out.rank - x.rank + d];
      fits = x.dims[d] == o || x.dims[d] == 1;
    }
    char have[128], want[128];
    TERN_CHECK_OR_RETURN_ERROR(fits, InvalidProgram,
                               "cpu blob: node %u (select): input %u (value %u) of dims %s does "
                               "not broadcast to the output's %s",
                               n, i, node.inputs[i], format_dims(x.dims, x.rank, have, sizeof(have)),
                               format_dims(out.dims, out.rank, want, sizeof(want)));
  }
  return Error::Ok;
}

/// Op 45: the dim, the layouts, and the output's dims (x's with dim d the index's count).
Error check_index_rows(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 1, 0, 0));
  TERN_RETURN_IF_ERROR(check_unbounded(n, node));
  const BlobValue& x = v[node.inputs[0]];
  const BlobValue& idx = v[node.inputs[1]];
  const BlobValue& out = v[node.output];
  const uint32_t d = node.params[0];
  TERN_CHECK_OR_RETURN_ERROR(d < x.rank, InvalidProgram,
                             "cpu blob: node %u (index_rows): dim %u of a rank-%u x", n, d,
                             x.rank);
  TERN_CHECK_OR_RETURN_ERROR(x.layout == static_cast<uint32_t>(ValueLayout::Plain) &&
                                 out.layout == static_cast<uint32_t>(ValueLayout::Plain),
                             InvalidProgram,
                             "cpu blob: node %u (index_rows): x (value %u) and the output (value "
                             "%u) must be plain f32",
                             n, node.inputs[0], node.output);
  TERN_CHECK_OR_RETURN_ERROR(idx.kind == static_cast<uint32_t>(ValueKind::ExternalInput),
                             InvalidProgram,
                             "cpu blob: node %u (index_rows): the index (value %u) must be an "
                             "external input",
                             n, node.inputs[1]);
  uint64_t want[kMaxDims] = {};
  for (uint32_t i = 0; i < x.rank; ++i) want[i] = x.dims[i];
  want[d] = value_numel(idx);
  return check_out_dims(n, node, out, want, x.rank);
}

}  // namespace tern::cpu
