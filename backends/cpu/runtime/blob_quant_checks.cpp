#include "backends/cpu/runtime/blob_quant_checks.h"

#include <cmath>

#include "backends/cpu/runtime/blob_check_util.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/checked_math.h"
#include "backends/cpu/kernels/quant_weight.h"

namespace tern::cpu {

namespace {

/// Ops 23 and 24: the scheme parameters (QuantParam), the weight constant's size against the
/// layout they give, FP8 codes (no NaN / infinity encodings) and the double quantization's
/// offset (finite). `data` is the data section (constants' offsets are already checked).
Error check_quant_weight(uint32_t n, const BlobNode& node, const BlobValue* v,
                         const uint8_t* data, QuantWeightView* out) {
  const uint32_t* q = node.params;
  // Op 47 has one parameter more, E (checked by check_quant_grouped).
  const bool grouped = static_cast<NodeOp>(node.op) == NodeOp::QuantizedGroupedMatmul;
  TERN_RETURN_IF_ERROR(check_params_range(n, node, kQuantParamCount + (grouped ? 1 : 0),
                                          kQuantRows, kQuantFormat + 1));
  const QuantWeightDesc d = quant_weight_desc(q);
  QuantWeightLayout layout;
  TERN_CHECK_OR_RETURN_ERROR(
      q[kQuantFormat] <= kLastQuantWeightFormat && quant_weight_layout(d, &layout), InvalidProgram,
      "cpu blob: node %u (%s): illegal quantization parameters: format %u (1 nf4, 2 nf4 double "
      "quantization, 3 fp8 e4m3, 4 fp8 e5m2), block size %u (nf4: a power of two in [32, 4096], "
      "else 0), dq block size %u (>= 1 with double quantization, else 0), granularity %u (fp8: "
      "0..2, nf4: 0), tile %ux%u (fp8 block only)",
      n, node_op_name(node.op), q[kQuantFormat], q[kQuantBlockSize], q[kQuantDqBlockSize],
      q[kQuantGranularity], q[kQuantBlockRows], q[kQuantBlockCols]);
  const BlobValue& f = v[node.inputs[1]];
  const uint64_t want = layout.total_bytes / 4;
  TERN_CHECK_OR_RETURN_ERROR(f.rank == 1 && f.dims[0] == want, InvalidProgram,
                             "cpu blob: node %u (%s): quantized weight value %u is not [%llu] "
                             "floats (%llu bytes for a %u x %u weight in this scheme)",
                             n, node_op_name(node.op), node.inputs[1],
                             static_cast<unsigned long long>(want),
                             static_cast<unsigned long long>(layout.total_bytes), q[kQuantRows],
                             q[kQuantCols]);
  // A weight made at prepare (a QuantWeight recipe of the same params, checked with the
  // recipes) has its codes and offset checked there, from the program's tensors.
  out->desc = d;
  out->layout = layout;
  if (f.kind == static_cast<uint32_t>(ValueKind::Derived)) return Error::Ok;
  *out = quant_weight_view(d, layout, data + f.data_offset);
  TERN_CHECK_OR_RETURN_ERROR(d.format != QuantWeightFormat::Nf4DoubleQuant ||
                                 std::isfinite(out->dq_offset),
                             InvalidProgram,
                             "cpu blob: node %u (%s): double quantization offset %g is not finite",
                             n, node_op_name(node.op), static_cast<double>(out->dq_offset));
  TERN_CHECK_OR_RETURN_ERROR(!quant_weight_has_nonfinite_codes(*out), InvalidProgram,
                             "cpu blob: node %u (%s): the fp8 weight (value %u) holds a NaN or "
                             "infinity code, which the fused kernels do not decode",
                             n, node_op_name(node.op), node.inputs[1]);
  return Error::Ok;
}

}  // namespace

Error check_quant_fc(uint32_t n, const BlobNode& node, const BlobValue* v, const uint8_t* data) {
  QuantWeightView w;
  TERN_RETURN_IF_ERROR(check_quant_weight(n, node, v, data, &w));
  const BlobValue& x = v[node.inputs[0]];
  const uint64_t out_features = node.params[kQuantRows], in_features = node.params[kQuantCols];
  TERN_CHECK_OR_RETURN_ERROR(x.dims[x.rank - 1] == in_features &&
                                 x.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
                             InvalidProgram,
                             "cpu blob: node %u (quantized_fully_connected): x (value %u) has "
                             "last dim %llu, params give %llu in features",
                             n, node.inputs[0],
                             static_cast<unsigned long long>(x.dims[x.rank - 1]),
                             static_cast<unsigned long long>(in_features));
  if (node.num_inputs == 3) {
    TERN_CHECK_OR_RETURN_ERROR(dims_equal(v[node.inputs[2]], &out_features, 1), InvalidProgram,
                               "cpu blob: node %u (quantized_fully_connected): bias value %u is "
                               "not [%llu]",
                               n, node.inputs[2], static_cast<unsigned long long>(out_features));
  }
  uint64_t expect[kMaxDims];
  for (uint32_t i = 0; i < x.rank; ++i) expect[i] = x.dims[i];
  expect[x.rank - 1] = out_features;
  return check_out_dims(n, node, v[node.output], expect, x.rank);
}

/// Op 47: the weight as op 23's, E dividing its rows into experts quant_rows_split_ok accepts,
/// x [S, K] plain, the ends an external [E] input, the output [S, N] plain.
Error check_quant_grouped(uint32_t n, const BlobNode& node, const BlobValue* v,
                          const uint8_t* data) {
  QuantWeightView w;
  TERN_RETURN_IF_ERROR(check_quant_weight(n, node, v, data, &w));
  TERN_RETURN_IF_ERROR(check_unbounded(n, node));
  const uint64_t e = node.params[kQuantGroups], rows = w.desc.rows, k = w.desc.cols;
  TERN_CHECK_OR_RETURN_ERROR(e >= 1 && rows % e == 0 && quant_rows_split_ok(w.desc, rows / e),
                             InvalidProgram,
                             "cpu blob: node %u (quantized_grouped_matmul): %llu experts of a "
                             "%llu-row weight: expected E dividing the rows into parts of a "
                             "multiple of 8 rows that start its blocks, double quantization "
                             "groups and tiles",
                             n, static_cast<unsigned long long>(e),
                             static_cast<unsigned long long>(rows));
  const BlobValue& x = v[node.inputs[0]];
  const BlobValue& ends = v[node.inputs[2]];
  TERN_CHECK_OR_RETURN_ERROR(x.rank == 2 && x.dims[1] == k &&
                                 x.layout == static_cast<uint32_t>(ValueLayout::Plain) &&
                                 v[node.output].layout == static_cast<uint32_t>(ValueLayout::Plain),
                             InvalidProgram,
                             "cpu blob: node %u (quantized_grouped_matmul): x (value %u) must be "
                             "a plain [S, %llu] f32 value and the output plain",
                             n, node.inputs[0], static_cast<unsigned long long>(k));
  TERN_CHECK_OR_RETURN_ERROR(
      ends.kind == static_cast<uint32_t>(ValueKind::ExternalInput) && ends.rank == 1 &&
          ends.dims[0] == e,
      InvalidProgram,
      "cpu blob: node %u (quantized_grouped_matmul): the ends (value %u) must be an external "
      "[%llu] input",
      n, node.inputs[2], static_cast<unsigned long long>(e));
  const uint64_t want[2] = {x.dims[0], rows / e};
  return check_out_dims(n, node, v[node.output], want, 2);
}

Error check_quant_embedding(uint32_t n, const BlobNode& node, const BlobValue* v,
                            const uint8_t* data) {
  QuantWeightView w;
  TERN_RETURN_IF_ERROR(check_quant_weight(n, node, v, data, &w));
  const BlobValue& idx = v[node.inputs[0]];
  TERN_CHECK_OR_RETURN_ERROR(idx.layout == static_cast<uint32_t>(ValueLayout::Int64Plain) &&
                                 idx.rank < kMaxDims,
                             InvalidProgram,
                             "cpu blob: node %u (quantized_embedding): indices (value %u) must "
                             "be an int64 external input (layout 2) of rank below %u; found "
                             "layout %u, rank %u",
                             n, node.inputs[0], kMaxDims, idx.layout, idx.rank);
  uint64_t expect[kMaxDims];
  for (uint32_t i = 0; i < idx.rank; ++i) expect[i] = idx.dims[i];
  expect[idx.rank] = node.params[kQuantCols];
  return check_out_dims(n, node, v[node.output], expect, idx.rank + 1);
}

}  // namespace tern::cpu
