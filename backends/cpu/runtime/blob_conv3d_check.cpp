#include "backends/cpu/runtime/blob_conv3d_check.h"

#include "backends/cpu/runtime/blob_check_util.h"
#include "backends/cpu/runtime/blob_copy_checks.h"
#include "runtime/core/checked_math.h"

namespace tern::cpu {
namespace {

constexpr const char* kAxis[3] = {"depth", "height", "width"};

unsigned long long ull(uint64_t x) { return static_cast<unsigned long long>(x); }

}  // namespace

Error check_packed_conv3d(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const uint32_t* q = node.params;
  for (uint32_t i = 0; i < kNodeParams; ++i) {
    // Pads, the activation and the groups field may be 0; every other parameter is >= 1.
    const bool may_be_zero = i < kConv3dKernel || i == kConv3dActivation || i == kConv3dGroups;
    TERN_CHECK_OR_RETURN_ERROR(q[i] <= kMaxParam && (may_be_zero || q[i] >= 1), InvalidProgram,
                               "cpu blob: node %u (packed_conv3d): parameter %u is %u, expected "
                               "%s",
                               n, i, q[i], may_be_zero ? "0..2^30" : "1..2^30");
  }
  TERN_CHECK_OR_RETURN_ERROR(q[kConv3dActivation] <= kLastPackedActivation &&
                                 q[kConv3dActivation] != kLeakyReluActivation,
                             InvalidProgram,
                             "cpu blob: node %u (packed_conv3d): activation %u, expected 0..%u "
                             "but %u (leaky relu: no slope here)",
                             n, q[kConv3dActivation], kLastPackedActivation,
                             kLeakyReluActivation);
  const uint64_t c = q[kConv3dInChannels], o = q[kConv3dOutChannels];
  const uint64_t groups = conv_groups(q[kConv3dGroups]);
  TERN_CHECK_OR_RETURN_ERROR(c % groups == 0 && o % groups == 0, InvalidProgram,
                             "cpu blob: node %u (packed_conv3d): %llu groups do not divide %llu "
                             "input and %llu output channels",
                             n, ull(groups), ull(c), ull(o));
  const BlobValue& x = v[node.inputs[0]];
  TERN_CHECK_OR_RETURN_ERROR(x.rank == 5 && x.dims[4] == c, InvalidProgram,
                             "cpu blob: node %u (packed_conv3d): input value %u: expected 5 dims "
                             "[N, D, H, W, C] with %llu channels, found rank %u",
                             n, node.inputs[0], ull(c), x.rank);
  uint64_t k = c / groups;
  for (uint32_t d = 0; d < 3; ++d) {
    TERN_CHECK_OR_RETURN_ERROR(checked_mul(k, q[kConv3dKernel + d], &k) && k <= (uint64_t{1} << 31),
                               InvalidProgram,
                               "cpu blob: node %u (packed_conv3d): a %ux%ux%u window of %llu "
                               "channels is too large",
                               n, q[kConv3dKernel], q[kConv3dKernel + 1], q[kConv3dKernel + 2],
                               ull(c / groups));
  }
  uint64_t want = 0;
  const BlobValue& f = v[node.inputs[1]];
  TERN_CHECK_OR_RETURN_ERROR(
      checked_mul(groups, packed_fc_floats(o / groups, k), &want) && f.rank == 1 &&
          f.dims[0] == want,
      InvalidProgram,
      "cpu blob: node %u (packed_conv3d): packed weight value %u is not [%llu] (%llu out "
      "channels x %ux%ux%u x %llu channels, %llu groups)",
      n, node.inputs[1], ull(want), ull(o), q[kConv3dKernel], q[kConv3dKernel + 1],
      q[kConv3dKernel + 2], ull(c / groups), ull(groups));
  uint64_t out[5] = {x.dims[0], 0, 0, 0, o};
  for (uint32_t d = 0; d < 3; ++d) {
    // Each factor <= 2^31 and <= 2^30: no overflow.
    const uint64_t padded = x.dims[1 + d] + 2 * uint64_t{q[kConv3dPad + d]};
    const uint64_t span = uint64_t{q[kConv3dDilation + d]} * (q[kConv3dKernel + d] - 1) + 1;
    TERN_CHECK_OR_RETURN_ERROR(padded >= span, InvalidProgram,
                               "cpu blob: node %u (packed_conv3d): the %s window (%llu) does not "
                               "fit the padded input (%llu)",
                               n, kAxis[d], ull(span), ull(padded));
    out[1 + d] = (padded - span) / q[kConv3dStride + d] + 1;
  }
  if (node.num_inputs == 3) {
    const BlobValue& r = v[node.inputs[2]];
    TERN_CHECK_OR_RETURN_ERROR(dims_equal(r, out, 5), InvalidProgram,
                               "cpu blob: node %u (packed_conv3d): residual value %u (rank %u) is "
                               "not the output's [%llu, %llu, %llu, %llu, %llu]",
                               n, node.inputs[2], r.rank, ull(out[0]), ull(out[1]), ull(out[2]),
                               ull(out[3]), ull(out[4]));
  }
  TERN_CHECK_OR_RETURN_ERROR(dims_equal(v[node.output], out, 5), InvalidProgram,
                             "cpu blob: node %u (packed_conv3d): output value %u (rank %u) is not "
                             "[%llu, %llu, %llu, %llu, %llu] as the input and window give",
                             n, node.output, v[node.output].rank, ull(out[0]), ull(out[1]),
                             ull(out[2]), ull(out[3]), ull(out[4]));
  return Error::Ok;
}

}  // namespace tern::cpu
