// tern::linear(x, weight, bias, out): out = x @ weight^T + bias, f32.
//
// Blocked loop: the K dimension in chunks that keep a strip of weight rows in cache, and a
// register tile of kRows rows of x by kCols rows of weight whose dot products run kLanes
// independent partial sums (so the compiler vectorizes without reassociating floats).
#include <cinttypes>
#include <cstring>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

constexpr int kRows = 2;
constexpr int kCols = 4;
constexpr int kLanes = 4;
constexpr int64_t kBlockK = 512;
constexpr int64_t kBlockN = 64;

// out[r * ldo + c] += dot(x + r * ldx, w + c * ldw) over k in [0, k_len), for an R x C tile.
template <int R, int C>
void tile(const float* x, int64_t ldx, const float* w, int64_t ldw, float* out, int64_t ldo,
          int64_t k_len) {
  float acc[R][C][kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= k_len; k += kLanes) {
    float xv[R][kLanes];
    for (int r = 0; r < R; ++r) {
      for (int l = 0; l < kLanes; ++l) xv[r][l] = x[r * ldx + k + l];
    }
    for (int c = 0; c < C; ++c) {
      float wv[kLanes];
      for (int l = 0; l < kLanes; ++l) wv[l] = w[c * ldw + k + l];
      for (int r = 0; r < R; ++r) {
        for (int l = 0; l < kLanes; ++l) acc[r][c][l] += xv[r][l] * wv[l];
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      float sum = (acc[r][c][0] + acc[r][c][1]) + (acc[r][c][2] + acc[r][c][3]);
      for (int64_t kk = k; kk < k_len; ++kk) sum += x[r * ldx + kk] * w[c * ldw + kk];
      out[r * ldo + c] += sum;
    }
  }
}

template <int R>
void tile_row_block(const float* x, int64_t ldx, const float* w, int64_t ldw, float* out,
                    int64_t ldo, int64_t n_len, int64_t k_len) {
  int64_t n = 0;
  for (; n + kCols <= n_len; n += kCols) {
    tile<R, kCols>(x, ldx, w + n * ldw, ldw, out + n, ldo, k_len);
  }
  for (; n < n_len; ++n) tile<R, 1>(x, ldx, w + n * ldw, ldw, out + n, ldo, k_len);
}

void linear_f32(const float* x, const float* w, const float* bias, float* out, int64_t m,
                int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    float* row = out + i * n;
    if (bias != nullptr) {
      std::memcpy(row, bias, static_cast<size_t>(n) * sizeof(float));
    } else {
      std::memset(row, 0, static_cast<size_t>(n) * sizeof(float));
    }
  }
  for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
    const int64_t k_len = k - k0 < kBlockK ? k - k0 : kBlockK;
    for (int64_t n0 = 0; n0 < n; n0 += kBlockN) {
      const int64_t n_len = n - n0 < kBlockN ? n - n0 : kBlockN;
      const float* wb = w + n0 * k + k0;
      int64_t i = 0;
      for (; i + kRows <= m; i += kRows) {
        tile_row_block<kRows>(x + i * k + k0, k, wb, k, out + i * n + n0, n, n_len, k_len);
      }
      for (; i < m; ++i) {
        tile_row_block<1>(x + i * k + k0, k, wb, k, out + i * n + n0, n, n_len, k_len);
      }
    }
  }
}

}  // namespace

Error linear(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::linear";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* weight, tensor_arg(op, args, 1, "weight"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 3, "out"));
  TERN_CHECK_OR_RETURN_ERROR(args[2] != nullptr, InvalidArgument,
                             "%s: argument 2 (bias) is a null EValue", op);
  TensorView* bias = nullptr;
  if (!args[2]->is_none()) {
    TERN_CHECK_OR_RETURN_ERROR(args[2]->is_tensor(), InvalidArgument,
                               "%s: argument 2 (bias): expected a tensor or none, found %s", op,
                               to_string(args[2]->tag));
    TERN_ASSIGN_OR_RETURN(bias, tensor_arg(op, args, 2, "bias"));
  }
  TERN_RETURN_IF_ERROR(check_dtype(op, "x", *x, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "weight", *weight, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  if (bias != nullptr) TERN_RETURN_IF_ERROR(check_dtype(op, "bias", *bias, DType::F32));

  TERN_CHECK_OR_RETURN_ERROR(x->rank >= 1, InvalidArgument,
                             "%s: x: expected rank >= 1, found rank 0", op);
  TERN_CHECK_OR_RETURN_ERROR(weight->rank == 2, InvalidArgument,
                             "%s: weight: expected rank 2 [out_features, in_features], found "
                             "rank %u",
                             op, weight->rank);
  const int64_t in_features = x->sizes[x->rank - 1];
  const int64_t out_features = weight->sizes[0];
  TERN_CHECK_OR_RETURN_ERROR(weight->sizes[1] == in_features, InvalidArgument,
                             "%s: weight: expected in_features %" PRId64
                             " (last dim of x), found %" PRId64,
                             op, in_features, weight->sizes[1]);
  if (bias != nullptr) {
    const int64_t want[1] = {out_features};
    TERN_RETURN_IF_ERROR(check_shape(op, "bias", *bias, Span<const int64_t>(want)));
  }
  int64_t want_out[kMaxRank];
  for (uint32_t d = 0; d + 1 < x->rank; ++d) want_out[d] = x->sizes[d];
  want_out[x->rank - 1] = out_features;
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(want_out, x->rank)));
  TERN_CHECK_OR_RETURN_ERROR(out->data != x->data || out->numel() == 0, InvalidArgument,
                             "%s: out must not alias x", op);

  int64_t rows = 1;
  for (uint32_t d = 0; d + 1 < x->rank; ++d) rows *= x->sizes[d];
  if (rows == 0 || out_features == 0) return Error::Ok;
  linear_f32(x->data_as<const float>(), weight->data_as<const float>(),
             bias ? bias->data_as<const float>() : nullptr, out->data_as<float>(), rows,
             in_features, out_features);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
