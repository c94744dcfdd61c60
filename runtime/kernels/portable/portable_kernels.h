// Declarations of the portable kernels (one definition per file). Normally reached through
// the kernel registry (register_portable_kernels() then find_kernel("tern::add")).
#pragma once

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"
#include "runtime/kernel/kernel_registry.h"

namespace tern {
namespace portable {

// --- Elementwise (docs/ops.md "Elementwise"; register_elementwise.cpp) ---
// Binary ops broadcast (NumPy); a or b may be an Int/Double/Bool scalar; operands promote as
// torch.result_type says and out must have the promoted dtype (div: see below). Integer
// arithmetic wraps. Kernels whose op name is also a C math function are named <op>_kernel.

/// tern::add(a, b, [alpha: Int/Double], out): out = a + alpha * b; f32, i32, i64.
Error add(KernelContext& context, Span<EValue*> args);
/// tern::sub(a, b, [alpha], out): out = a - alpha * b; f32, i32, i64.
Error sub(KernelContext& context, Span<EValue*> args);
/// tern::mul(a, b, out): out = a * b; f32, i32, i64, bool (and).
Error mul(KernelContext& context, Span<EValue*> args);
/// tern::div(a, b, [rounding_mode: "trunc"/"floor"/None], out): without a rounding mode out
/// is f32 (integers divide as f32); with one, f32/i32/i64 (integer division by zero is
/// InvalidArgument).
Error div_kernel(KernelContext& context, Span<EValue*> args);
/// tern::pow(a, b, out): f32.
Error pow_kernel(KernelContext& context, Span<EValue*> args);
/// tern::maximum / tern::minimum(a, b, out): f32 (NaN propagates), i32, i64.
Error maximum(KernelContext& context, Span<EValue*> args);
Error minimum(KernelContext& context, Span<EValue*> args);
/// tern::eq, ne, lt, le, gt, ge(a, b, out bool): any plain dtype (compared in the promoted
/// dtype; integers exactly).
Error eq(KernelContext& context, Span<EValue*> args);
Error ne(KernelContext& context, Span<EValue*> args);
Error lt(KernelContext& context, Span<EValue*> args);
Error le(KernelContext& context, Span<EValue*> args);
Error gt(KernelContext& context, Span<EValue*> args);
Error ge(KernelContext& context, Span<EValue*> args);
/// tern::logical_and / logical_or(a, b, out bool), logical_not(x, out bool): any plain dtype,
/// nonzero (and NaN) is true.
Error logical_and(KernelContext& context, Span<EValue*> args);
Error logical_or(KernelContext& context, Span<EValue*> args);
Error logical_not(KernelContext& context, Span<EValue*> args);
/// tern::bitwise_and / bitwise_or / bitwise_xor(a, b, out), bitwise_not(x, out): i32, i64 and
/// bool (promoting as torch.result_type), broadcasting; floating operands are InvalidArgument.
Error bitwise_and(KernelContext& context, Span<EValue*> args);
Error bitwise_or(KernelContext& context, Span<EValue*> args);
Error bitwise_xor(KernelContext& context, Span<EValue*> args);
Error bitwise_not(KernelContext& context, Span<EValue*> args);
/// tern::where(cond bool, a, b, out): three-way broadcast; a/b tensors or scalars promoting
/// to out's dtype (any plain dtype).
Error where(KernelContext& context, Span<EValue*> args);
/// Unary math (x, out), same shape. neg, abs: f32, i32, i64 (out x's dtype). exp, log, sqrt,
/// rsqrt, reciprocal, sin, cos, tanh, sigmoid, erf, expm1, log1p, acos, asin, atan: out f32
/// (int/bool x read as f32).
/// floor, ceil, round (half to even): f32; an integer x is copied unchanged.
Error neg(KernelContext& context, Span<EValue*> args);
Error abs_kernel(KernelContext& context, Span<EValue*> args);
Error exp_kernel(KernelContext& context, Span<EValue*> args);
Error log_kernel(KernelContext& context, Span<EValue*> args);
Error sqrt_kernel(KernelContext& context, Span<EValue*> args);
Error rsqrt(KernelContext& context, Span<EValue*> args);
Error reciprocal(KernelContext& context, Span<EValue*> args);
Error sin_kernel(KernelContext& context, Span<EValue*> args);
Error cos_kernel(KernelContext& context, Span<EValue*> args);
Error tanh_kernel(KernelContext& context, Span<EValue*> args);
Error sigmoid(KernelContext& context, Span<EValue*> args);
Error erf_kernel(KernelContext& context, Span<EValue*> args);
Error expm1_kernel(KernelContext& context, Span<EValue*> args);
Error log1p_kernel(KernelContext& context, Span<EValue*> args);
Error acos_kernel(KernelContext& context, Span<EValue*> args);
Error asin_kernel(KernelContext& context, Span<EValue*> args);
Error atan_kernel(KernelContext& context, Span<EValue*> args);
Error floor_kernel(KernelContext& context, Span<EValue*> args);
Error ceil_kernel(KernelContext& context, Span<EValue*> args);
Error round_kernel(KernelContext& context, Span<EValue*> args);
/// tern::relu(x, out): max(x, 0); f32, i32, i64; out has x's dtype and shape.
Error relu(KernelContext& context, Span<EValue*> args);
/// tern::clamp(x, min: Int/Double/None, max: Int/Double/None, out): f32, i32, i64 (an int x
/// with a Double bound promotes to f32).
Error clamp(KernelContext& context, Span<EValue*> args);
/// f32 activations, attributes as docs/ops.md (trailing ones may be omitted: ATen
/// defaults): hardtanh(x, min_val, max_val), leaky_relu(x, negative_slope),
/// elu(x, alpha, scale, input_scale), gelu(x, approximate "none"/"tanh"), silu(x),
/// hardswish(x), hardsigmoid(x), softplus(x, beta, threshold); then out.
Error hardtanh(KernelContext& context, Span<EValue*> args);
Error leaky_relu(KernelContext& context, Span<EValue*> args);
Error elu(KernelContext& context, Span<EValue*> args);
Error gelu(KernelContext& context, Span<EValue*> args);
Error silu(KernelContext& context, Span<EValue*> args);
Error hardswish(KernelContext& context, Span<EValue*> args);
Error hardsigmoid(KernelContext& context, Span<EValue*> args);
Error softplus(KernelContext& context, Span<EValue*> args);
/// tern::cast(x, out): x converted to out's dtype (any plain dtype to any; float -> int
/// truncates, -> bool is != 0, f16/bf16 round to nearest even).
Error cast(KernelContext& context, Span<EValue*> args);

// --- Linear algebra, convolution, pooling (docs/ops.md; register_linalg.cpp) --- f32 only;
// matrix products run on the shared GEMM (gemm.h).
/// tern::linear(x [..., in], weight [out_features, in], bias [out_features] or None,
/// out [..., out_features]): out = x @ weight^T + bias.
Error linear(KernelContext& context, Span<EValue*> args);
/// tern::matmul(a, b, out): torch.matmul (1-D operands; batch dims broadcast).
Error matmul(KernelContext& context, Span<EValue*> args);
/// tern::bmm(a [B, n, k], b [B, k, m], out [B, n, m]).
Error bmm(KernelContext& context, Span<EValue*> args);
/// tern::addmm(bias (broadcasts to [n, m]), a [n, k], b [k, m], [beta, [alpha]], out):
/// out = beta * bias + alpha * a @ b (beta == 0 ignores bias, NaN included).
Error addmm(KernelContext& context, Span<EValue*> args);
/// tern::conv1d(x [N, C, L] or [C, L], weight [O, C/g, k], bias?, stride, padding, dilation:
/// IntList(1), groups: Int, out). Scratch: conv2d_scratch_bytes (scratch_sizes.h).
Error conv1d(KernelContext& context, Span<EValue*> args);
/// tern::conv2d(x [N, C, H, W] or [C, H, W], weight [O, C/g, kh, kw], bias?, stride, padding,
/// dilation: IntList(2) (or one value), groups: Int, out). Scratch: conv2d_scratch_bytes.
Error conv2d(KernelContext& context, Span<EValue*> args);
/// tern::conv3d(x [N, C, D, H, W] or [C, D, H, W], weight [O, C/g, kd, kh, kw], bias?, stride,
/// padding, dilation: IntList(3) (or one value), groups: Int, out). Scratch:
/// conv3d_scratch_bytes (scratch_sizes.h).
Error conv3d(KernelContext& context, Span<EValue*> args);
/// tern::conv_transpose2d(x, weight [C, O/g, kh, kw], bias?, stride, padding, output_padding,
/// groups, dilation, out). Scratch: conv_transpose2d_scratch_bytes.
Error conv_transpose2d(KernelContext& context, Span<EValue*> args);
/// tern::max_pool2d(x [N, C, H, W] or [C, H, W], kernel_size, stride (empty: kernel_size),
/// padding, dilation, ceil_mode: Bool, out).
Error max_pool2d(KernelContext& context, Span<EValue*> args);
/// tern::avg_pool2d(x, kernel_size, stride (empty: kernel_size), padding, ceil_mode,
/// count_include_pad: Bool, divisor_override: Int or None, out).
Error avg_pool2d(KernelContext& context, Span<EValue*> args);
/// tern::adaptive_avg_pool2d(x, output_size: IntList(2), out).
Error adaptive_avg_pool2d(KernelContext& context, Span<EValue*> args);

/// tern::reshape(x, shape IntList (one -1 allowed), out): out holds x's elements in the
/// resolved shape; copies (memmove) only when out's data differs from x's.
Error reshape(KernelContext& context, Span<EValue*> args);

// ---- Data movement (docs/ops.md "Data movement"). Dtypes: every whole-byte dtype, copied by
// element size, unless noted. View ops (reshape, view, squeeze, unsqueeze, flatten) and
// contiguous slice/select/split pieces copy nothing when the planner made out an alias of x
// (out.data is the piece's address), and copy otherwise.

/// tern::view(x, shape IntList, out): as reshape.
Error view(KernelContext& context, Span<EValue*> args);
/// tern::squeeze(x, dims IntList, out): drops the listed size-1 dims (empty: every size-1 dim).
Error squeeze(KernelContext& context, Span<EValue*> args);
/// tern::unsqueeze(x, dim Int, out): inserts a size-1 dim at dim (in [-rank-1, rank]).
Error unsqueeze(KernelContext& context, Span<EValue*> args);
/// tern::flatten(x, start_dim Int, end_dim Int, out): merges dims start..end (a scalar gives [1]).
Error flatten(KernelContext& context, Span<EValue*> args);
/// tern::permute(x, dims IntList, out): out dim i is x dim dims[i]; a copy.
Error permute(KernelContext& context, Span<EValue*> args);
/// tern::transpose(x, dim0 Int, dim1 Int, out): swaps two dims; a copy.
Error transpose(KernelContext& context, Span<EValue*> args);
/// tern::flip(x, dims IntList, out): x's elements in reverse order along each listed dim; a copy.
Error flip(KernelContext& context, Span<EValue*> args);
/// tern::expand(x, sizes IntList, out): broadcasts size-1 dims (and new leading dims); -1 keeps.
Error expand(KernelContext& context, Span<EValue*> args);
/// tern::cat(tensors TensorList, dim Int, out): concatenation; 1-D empty tensors are skipped.
Error cat(KernelContext& context, Span<EValue*> args);
/// tern::slice(x, dim Int, start Int|None, end Int|None, step Int > 0, out): bounds clamped
/// like ATen.
Error slice(KernelContext& context, Span<EValue*> args);
/// tern::select(x, dim Int, index Int, out): the index-th piece along dim, dim removed.
Error select(KernelContext& context, Span<EValue*> args);
/// tern::split(x, split_sizes IntList, dim Int, out0, out1, ...): consecutive pieces along dim
/// (one size per output, or one chunk size: split_piece.h).
Error split(KernelContext& context, Span<EValue*> args);
/// tern::grouped_mm(x [S, K], w [E, K, N], offsets [E] (i32/i64 running row ends), out
/// [S, N]): each group of rows times its own w[e]; rows after the last end are zeros; offsets
/// that go backwards or past S are InvalidArgument.
Error grouped_mm(KernelContext& context, Span<EValue*> args);
/// tern::grouped_linear(x [S, K], w [E * N, K] (f32, nf4 or fp8: each expert's matrix
/// transposed, as `tern compile --quantize` stores a grouped_mm's experts), ends [E] (i32/i64),
/// out [S, N]): group e times rows [e N, (e + 1) N) of w, transposed; as grouped_mm otherwise.
Error grouped_linear(KernelContext& context, Span<EValue*> args);
/// tern::index_copy(x, dim Int, index (i64/i32, 0-D or 1-D), source, out): out = x with slice
/// index[i] of dim replaced by source's slice i; in place when out is x (a state tensor). An
/// index outside [0, size) is InvalidArgument.
Error index_copy(KernelContext& context, Span<EValue*> args);
/// tern::index_select(x, dim Int, index (i64/i32, 0-D or 1-D), out): an index outside
/// [0, size) is InvalidArgument.
Error index_select(KernelContext& context, Span<EValue*> args);
/// tern::gather(x, dim Int, index (i64/i32, x's rank), out (index's shape)).
Error gather(KernelContext& context, Span<EValue*> args);
/// tern::scatter(x, dim Int, index (i64/i32, x's rank), src (index's shape, or one element),
/// reduce String ("none" | "add"), out (x's shape)).
Error scatter(KernelContext& context, Span<EValue*> args);
/// tern::grid_sample2d(x f32 [N, C, H, W], grid f32 [N, HO, WO, 2], mode Int (0 bilinear,
/// 1 nearest), padding_mode Int (0 zeros, 1 border, 2 reflection), align_corners Bool,
/// out [N, C, HO, WO]).
Error grid_sample2d(KernelContext& context, Span<EValue*> args);
/// tern::embedding(weight [V, D], indices (i64/i32), out [..., D]): weight rows; nf4/fp8
/// weights are not supported yet (InvalidArgument).
Error embedding(KernelContext& context, Span<EValue*> args);
/// tern::pad(x, pad IntList, mode String "constant"|"reflect", value Double|Int|None, out).
Error pad(KernelContext& context, Span<EValue*> args);
/// tern::repeat(x, repeats IntList, out): tiles x.
Error repeat(KernelContext& context, Span<EValue*> args);
/// tern::upsample_nearest2d(x [N,C,H,W], scale_h, scale_w: Double|None, out [N,C,OH,OW]).
Error upsample_nearest2d(KernelContext& context, Span<EValue*> args);
/// tern::upsample_bilinear2d(x, align_corners Bool, scale_h, scale_w: Double|None, out); f32.
Error upsample_bilinear2d(KernelContext& context, Span<EValue*> args);
/// tern::triu / tern::tril(x (rank >= 2), diagonal Int, out): zeros below / above the diagonal.
Error triu(KernelContext& context, Span<EValue*> args);
Error tril(KernelContext& context, Span<EValue*> args);
/// tern::clone(x, out): a copy.
Error clone(KernelContext& context, Span<EValue*> args);

// --- Reductions, normalisation, attention (docs/ops.md; register_reduction.cpp) ---

/// tern::sum(x, dims IntList (empty or None: all), keepdim Bool, out): f32 (accumulated in
/// double) or int (i32/i64 in, out i64 or x's dtype, wrapping).
Error sum(KernelContext& context, Span<EValue*> args);

/// tern::prod(x, dims IntList (empty or None: all), keepdim Bool, out): the product, f32
/// (accumulated in double) or int (i32/i64 in, out i64 or x's dtype, wrapping); an empty
/// reduction gives 1.
Error prod(KernelContext& context, Span<EValue*> args);

/// tern::mean(x, dims, keepdim, out): f32; an empty reduction gives NaN.
Error mean(KernelContext& context, Span<EValue*> args);

/// tern::amax / tern::amin(x, dims, keepdim, out): f32 (NaN propagates), i32, i64; out has
/// x's dtype; a reduced dim of size 0 is InvalidArgument.
Error amax(KernelContext& context, Span<EValue*> args);
Error amin(KernelContext& context, Span<EValue*> args);

/// tern::argmax / tern::argmin(x, dim Int or None (flattened), keepdim Bool, out i64): first
/// index of the extreme (first NaN wins); f32, i32, i64.
Error argmax(KernelContext& context, Span<EValue*> args);
Error argmin(KernelContext& context, Span<EValue*> args);

/// tern::cumsum(x, dim Int, out): f32 -> f32 (double accumulator); int -> i64 or x's dtype.
Error cumsum(KernelContext& context, Span<EValue*> args);
/// tern::argsort(x (f32, i32, i64), dim Int, descending Bool, out i64): the stable order of x
/// along dim (ties by position; NaN above every number).
Error argsort(KernelContext& context, Span<EValue*> args);
/// tern::topk_indices(x (f32, i32, i64), k Int, dim Int, largest Bool, out i64 [.., k, ..]):
/// the positions of the k largest (smallest) values along dim, in order, ties by position.
Error topk_indices(KernelContext& context, Span<EValue*> args);
/// tern::histc(x f32, bins Int, min Double, max Double, out f32 [bins]): ATen's histc.
Error histc(KernelContext& context, Span<EValue*> args);

/// tern::softmax / tern::log_softmax(x, dim Int, out): f32, max-subtracted.
Error softmax(KernelContext& context, Span<EValue*> args);
Error log_softmax(KernelContext& context, Span<EValue*> args);

/// tern::layer_norm(x, normalized_shape IntList, weight?, bias?, eps Double, out): f32.
Error layer_norm(KernelContext& context, Span<EValue*> args);

/// tern::rms_norm(x, normalized_shape IntList, weight?, eps Double or None (f32 epsilon),
/// out): f32.
Error rms_norm(KernelContext& context, Span<EValue*> args);

/// tern::group_norm(x [N, C, *], num_groups Int, weight [C]?, bias [C]?, eps Double, out).
Error group_norm(KernelContext& context, Span<EValue*> args);

/// tern::batch_norm(x [N, C, *], weight [C]?, bias [C]?, running_mean [C], running_var [C],
/// eps Double, out): f32, inference statistics.
Error batch_norm(KernelContext& context, Span<EValue*> args);

/// tern::scaled_dot_product_attention(q [..., L, E], k [..., S, E], v [..., S, Ev],
/// attn_mask (bool or f32, broadcast to [..., L, S]) or None, is_causal Bool, scale Double or
/// None (1/sqrt(E)), out [..., L, Ev]): f32. Takes sdpa_block_scratch_bytes(L, S) from
/// context.temp_allocator, or as many query rows as fit down to one row,
/// sdpa_scratch_bytes(S) (MemoryAllocationFailed when absent or smaller than that).
Error scaled_dot_product_attention(KernelContext& context, Span<EValue*> args);

}  // namespace portable
}  // namespace tern
