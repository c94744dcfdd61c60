"""Convolution and pooling against PyTorch: conv1d, conv2d, conv3d, conv_transpose2d, max_pool2d,
avg_pool2d, adaptive_avg_pool2d."""
import torch
import torch.nn.functional as F

from harness import B, Case, I, IL, NONE

RTOL = 2e-5
ATOL = 1e-5


def cases():
    def r(*shape):
        return torch.randn(tuple(shape))

    out = []

    def conv2d(x, w, b, stride, padding, dilation, groups):
        return F.conv2d(x, w, b, stride, padding, dilation, groups)

    # (x, w, bias, stride, padding, dilation, groups)
    for name, x, w, bias, s, p, d, g in [
            ("3x3_pad1", (2, 3, 9, 11), (5, 3, 3, 3), True, [1, 1], [1, 1], [1, 1], 1),
            ("stride2", (1, 4, 12, 13), (6, 4, 3, 3), True, [2, 2], [1, 1], [1, 1], 1),
            ("dilation2", (1, 3, 14, 10), (4, 3, 3, 3), True, [1, 1], [2, 2], [2, 2], 1),
            ("asym_kernel", (2, 2, 9, 12), (3, 2, 3, 5), True, [2, 1], [1, 2], [1, 1], 1),
            ("groups2", (2, 6, 8, 8), (4, 3, 3, 3), True, [1, 1], [1, 1], [1, 1], 2),
            ("depthwise", (2, 8, 10, 9), (8, 1, 3, 3), True, [1, 1], [1, 1], [1, 1], 8),
            ("depthwise_s2", (1, 6, 11, 12), (6, 1, 3, 3), True, [2, 2], [1, 1], [1, 1], 6),
            ("depthwise_mult2", (1, 4, 7, 7), (8, 1, 5, 5), True, [1, 2], [2, 2], [1, 1], 4),
            ("depthwise_dil", (1, 3, 9, 9), (3, 1, 3, 3), False, [1, 1], [2, 2], [2, 2], 3),
            ("1x1", (2, 16, 7, 5), (9, 16, 1, 1), True, [1, 1], [0, 0], [1, 1], 1),
            ("1x1_groups", (1, 8, 4, 4), (6, 4, 1, 1), True, [1, 1], [0, 0], [1, 1], 2),
            ("1x1_stride2", (1, 5, 8, 9), (7, 5, 1, 1), True, [2, 2], [0, 0], [1, 1], 1),
            ("no_bias", (1, 3, 6, 6), (2, 3, 3, 3), False, [1, 1], [0, 0], [1, 1], 1),
            ("kernel_gt_input", (1, 2, 3, 3), (2, 2, 5, 5), True, [1, 1], [2, 2], [1, 1], 1),
            ("single_values", (1, 3, 8, 8), (4, 3, 3, 3), True, [2], [1], [1], 1),
            ("unbatched", (3, 7, 6), (2, 3, 3, 3), True, [1, 1], [1, 1], [1, 1], 1),
            ("empty_batch", (0, 3, 7, 6), (2, 3, 3, 3), True, [1, 1], [1, 1], [1, 1], 1),
            ("resnet_layer", (1, 64, 56, 56), (64, 64, 3, 3), True, [1, 1], [1, 1], [1, 1], 1),
            ("wide_tiles", (1, 256, 20, 20), (8, 256, 5, 5), True, [1, 1], [2, 2], [1, 1], 1)]:
        args = [r(*x), r(*w), r(w[0]) if bias else NONE, IL(s), IL(p), IL(d), I(g)]
        tol = 1e-4 if name in ("resnet_layer", "wide_tiles") else RTOL
        out.append(Case("tern::conv2d", args, conv2d, tol, ATOL, name="conv2d_" + name))

    def conv1d(x, w, b, stride, padding, dilation, groups):
        return F.conv1d(x, w, b, stride, padding, dilation, groups)

    for name, x, w, bias, s, p, d, g in [
            ("basic", (2, 3, 20), (5, 3, 3), True, [1], [1], [1], 1),
            ("stride_dil", (1, 4, 31), (6, 4, 5), True, [2], [3], [2], 1),
            ("groups", (2, 6, 10), (9, 2, 3), False, [1], [0], [1], 3),
            ("depthwise", (1, 5, 17), (5, 1, 4), True, [1], [2], [1], 5),
            ("pointwise", (3, 8, 9), (4, 8, 1), True, [1], [0], [1], 1),
            ("unbatched", (4, 12), (3, 4, 3), True, [1], [1], [1], 1)]:
        args = [r(*x), r(*w), r(w[0]) if bias else NONE, IL(s), IL(p), IL(d), I(g)]
        out.append(Case("tern::conv1d", args, conv1d, RTOL, ATOL, name="conv1d_" + name))

    def conv3d(x, w, b, stride, padding, dilation, groups):
        return F.conv3d(x, w, b, stride, padding, dilation, groups)

    # Video models (torchvision r3d_18 / mc3_18 / r2plus1d_18: 3x7x7 stems, 3x3x3, 1x3x3 and
    # 3x1x1 blocks, 1x1x1 stride-2 shortcuts) and the edges of each path.
    for name, x, w, bias, s, p, d, g in [
            ("3x3x3_pad1", (2, 3, 5, 7, 6), (4, 3, 3, 3, 3), True, [1, 1, 1], [1, 1, 1],
             [1, 1, 1], 1),
            ("stem_3x7x7", (1, 3, 4, 16, 16), (8, 3, 3, 7, 7), False, [1, 2, 2], [1, 3, 3],
             [1, 1, 1], 1),
            ("spatial_1x3x3", (1, 4, 3, 9, 8), (5, 4, 1, 3, 3), True, [1, 2, 2], [0, 1, 1],
             [1, 1, 1], 1),
            ("temporal_3x1x1", (1, 6, 7, 5, 4), (3, 6, 3, 1, 1), True, [2, 1, 1], [1, 0, 0],
             [1, 1, 1], 1),
            ("shortcut_1x1x1_s2", (1, 8, 4, 6, 6), (6, 8, 1, 1, 1), False, [2, 2, 2], [0, 0, 0],
             [1, 1, 1], 1),
            ("pointwise", (2, 7, 3, 4, 5), (5, 7, 1, 1, 1), True, [1, 1, 1], [0, 0, 0],
             [1, 1, 1], 1),
            ("groups2_dilated", (1, 6, 6, 7, 7), (4, 3, 3, 3, 3), True, [1, 1, 1], [2, 1, 2],
             [2, 1, 2], 2),
            ("depthwise", (2, 4, 5, 6, 7), (4, 1, 3, 3, 3), True, [1, 2, 1], [1, 1, 1],
             [1, 1, 1], 4),
            ("depthwise_mult2", (1, 3, 4, 5, 5), (6, 1, 2, 3, 3), False, [2, 1, 2], [0, 2, 1],
             [1, 2, 1], 3),
            ("single_values", (1, 2, 5, 5, 5), (3, 2, 3, 3, 3), True, [2], [1], [1], 1),
            ("kernel_gt_input", (1, 2, 2, 3, 3), (2, 2, 3, 5, 5), True, [1, 1, 1], [1, 2, 2],
             [1, 1, 1], 1),
            ("unbatched", (3, 4, 5, 6), (2, 3, 3, 3, 3), True, [1, 1, 1], [1, 1, 1], [1, 1, 1], 1),
            ("empty_batch", (0, 3, 4, 5, 6), (2, 3, 3, 3, 3), True, [1, 1, 1], [1, 1, 1],
             [1, 1, 1], 1),
            ("many_tiles", (1, 64, 4, 28, 28), (16, 64, 3, 3, 3), True, [1, 1, 1], [1, 1, 1],
             [1, 1, 1], 1)]:
        args = [r(*x), r(*w), r(w[0]) if bias else NONE, IL(s), IL(p), IL(d), I(g)]
        tol = 1e-4 if name == "many_tiles" else RTOL
        out.append(Case("tern::conv3d", args, conv3d, tol, ATOL, name="conv3d_" + name))

    def conv_t(x, w, b, stride, padding, output_padding, groups, dilation):
        return F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation)

    # (x, w [C, O/g, kh, kw], bias, stride, padding, output_padding, groups, dilation)
    for name, x, w, bias, s, p, op, g, d in [
            ("basic", (2, 3, 5, 6), (3, 4, 3, 3), True, [1, 1], [0, 0], [0, 0], 1, [1, 1]),
            ("stride2_outpad", (1, 4, 5, 5), (4, 2, 3, 3), True, [2, 2], [1, 1], [1, 1], 1, [1, 1]),
            ("stride_asym", (1, 2, 4, 6), (2, 3, 4, 3), True, [2, 3], [1, 0], [0, 2], 1, [1, 1]),
            ("groups2", (2, 4, 5, 4), (4, 3, 3, 3), True, [2, 2], [1, 1], [0, 0], 2, [1, 1]),
            ("dilation2", (1, 3, 6, 5), (3, 2, 3, 3), False, [1, 1], [1, 1], [0, 0], 1, [2, 2]),
            ("1x1", (2, 6, 4, 5), (6, 5, 1, 1), True, [1, 1], [0, 0], [0, 0], 1, [1, 1]),
            ("1x1_outpad_dil", (1, 3, 4, 5), (3, 2, 1, 1), True, [1, 1], [0, 0], [1, 1], 1, [2, 2]),
            ("1x1_stride2", (1, 3, 4, 4), (3, 2, 1, 1), True, [2, 2], [0, 0], [1, 1], 1, [1, 1]),
            ("unbatched", (3, 4, 4), (3, 2, 3, 3), True, [2, 2], [0, 0], [0, 0], 1, [1, 1]),
            ("decoder", (1, 64, 14, 14), (64, 32, 4, 4), True, [2, 2], [1, 1], [0, 0], 1, [1, 1])]:
        args = [r(*x), r(*w), r(w[1] * g) if bias else NONE, IL(s), IL(p), IL(op), I(g), IL(d)]
        tol = 1e-4 if name == "decoder" else RTOL
        out.append(Case("tern::conv_transpose2d", args, conv_t, tol, ATOL,
                        name="conv_transpose2d_" + name))

    def max_pool(x, k, s, p, d, ceil):
        return F.max_pool2d(x, k, s if s else None, p, d, ceil_mode=ceil)

    with_nan = r(1, 2, 6, 6)
    with_nan[0, 1, 2, 3] = float("nan")
    for name, x, k, s, p, d, ceil in [
            ("2x2", r(2, 3, 8, 8), [2, 2], [2, 2], [0, 0], [1, 1], False),
            ("3x3_s2_p1", r(1, 4, 11, 10), [3, 3], [2, 2], [1, 1], [1, 1], False),
            ("ceil", r(1, 2, 6, 7), [3, 3], [2, 2], [1, 1], [1, 1], True),
            ("ceil_drop_last", r(1, 1, 5, 5), [2, 2], [2, 2], [1, 1], [1, 1], True),
            ("dilation", r(1, 2, 10, 9), [3, 2], [1, 2], [1, 1], [2, 3], False),
            ("dilation_ceil", r(1, 2, 9, 9), [3, 3], [2, 2], [1, 1], [2, 2], True),
            ("default_stride", r(1, 2, 9, 9), [3, 3], [], [0, 0], [1, 1], False),
            ("asym", r(2, 2, 7, 12), [2, 4], [1, 3], [1, 2], [1, 1], False),
            ("negative_padded", -torch.rand(1, 2, 5, 5) - 1, [3, 3], [2, 2], [1, 1], [1, 1], True),
            ("nan", with_nan, [2, 2], [2, 2], [0, 0], [1, 1], False),
            ("unbatched", r(3, 8, 8), [2, 2], [2, 2], [0, 0], [1, 1], False)]:
        out.append(Case("tern::max_pool2d", [x, IL(k), IL(s), IL(p), IL(d), B(ceil)], max_pool,
                        name="max_pool2d_" + name))

    def avg_pool(x, k, s, p, ceil, include_pad, divisor):
        return F.avg_pool2d(x, k, s if s else None, p, ceil, include_pad, divisor)

    for name, x, k, s, p, ceil, inc, div in [
            ("2x2", r(2, 3, 8, 8), [2, 2], [2, 2], [0, 0], False, True, None),
            ("pad_include", r(1, 2, 7, 7), [3, 3], [2, 2], [1, 1], False, True, None),
            ("pad_exclude", r(1, 2, 7, 7), [3, 3], [2, 2], [1, 1], False, False, None),
            ("ceil_include", r(1, 2, 6, 7), [3, 3], [2, 2], [1, 1], True, True, None),
            ("ceil_exclude", r(1, 2, 6, 7), [3, 3], [2, 2], [1, 1], True, False, None),
            ("ceil_nopad", r(1, 2, 8, 8), [3, 3], [2, 2], [0, 0], True, True, None),
            ("divisor", r(1, 2, 6, 6), [3, 3], [1, 1], [1, 1], False, True, 5),
            ("divisor_ceil", r(1, 2, 7, 7), [2, 2], [2, 2], [0, 0], True, False, 3),
            ("default_stride", r(1, 2, 9, 9), [3, 3], [], [0, 0], False, True, None),
            ("asym", r(2, 2, 7, 12), [2, 4], [1, 3], [1, 2], False, False, None),
            ("unbatched", r(3, 8, 8), [2, 2], [2, 2], [0, 0], False, True, None)]:
        out.append(Case("tern::avg_pool2d",
                        [x, IL(k), IL(s), IL(p), B(ceil), B(inc), I(div) if div else NONE],
                        avg_pool, name="avg_pool2d_" + name))

    for name, x, size in [("7to3", r(2, 3, 7, 7), [3, 3]), ("10x9to4x5", r(1, 2, 10, 9), [4, 5]),
                          ("identity", r(1, 2, 5, 6), [5, 6]), ("global", r(2, 8, 7, 7), [1, 1]),
                          ("upsample", r(1, 2, 5, 3), [7, 4]), ("unbatched", r(3, 9, 9), [2, 2]),
                          ("single_value", r(1, 2, 9, 9), [3])]:
        out.append(Case("tern::adaptive_avg_pool2d", [x, IL(size)],
                        lambda t, s: F.adaptive_avg_pool2d(t, s if len(s) == 2 else s[0]),
                        name="adaptive_avg_pool2d_" + name))
    return out
