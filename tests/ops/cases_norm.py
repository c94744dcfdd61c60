"""Normalisation against PyTorch: softmax log_softmax layer_norm rms_norm group_norm batch_norm."""
import torch
import torch.nn.functional as F

from harness import Case, D, I, IL, NONE


def rms_norm_ref(x, shape, weight, eps):
    """x * rsqrt(mean(x^2) + eps) * weight, by hand (torch 1.13 has no rms_norm); eps None is
    f32 machine epsilon (ATen's default)."""
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    dims = list(range(x.dim() - len(shape), x.dim()))
    xd = x.double()
    y = xd * torch.rsqrt(xd.pow(2).mean(dim=dims, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.double()
    return y.float()


def cases():
    def r(*shape):
        return torch.randn(tuple(shape))

    out = []
    for shape, dim in [((2, 3, 4), -1), ((2, 3, 4), 0), ((2, 3, 4), 1), ((5,), 0), ((), 0),
                       ((7, 1000), 1), ((300, 3), 0), ((2, 200, 3), 1), ((4, 0, 3), 2),
                       ((1, 1, 9), -3)]:
        x = r(*shape) * 4
        out.append(Case("tern::softmax", [x, I(dim)], lambda x, d: torch.softmax(x, d),
                        rtol=1e-5, atol=1e-6, name="softmax%s_d%d" % (shape, dim)))
        out.append(Case("tern::log_softmax", [x, I(dim)], lambda x, d: torch.log_softmax(x, d),
                        rtol=1e-5, atol=1e-5, name="log_softmax%s_d%d" % (shape, dim)))
    # Large logits (max subtraction keeps them finite) and -inf entries.
    big = r(3, 8) * 100 + 1000
    big[1, 3] = float("-inf")
    out.append(Case("tern::softmax", [big, I(1)], lambda x, d: torch.softmax(x, d),
                    name="softmax_large"))
    out.append(Case("tern::log_softmax", [big, I(1)], lambda x, d: torch.log_softmax(x, d),
                    rtol=1e-5, atol=1e-4, name="log_softmax_large"))

    # layer_norm: 1 to 3 normalized dims, with/without weight and bias, eps variants.
    for shape, norm in [((2, 3, 8), (8,)), ((4, 5, 6), (5, 6)), ((3, 4), (3, 4)), ((7,), (7,)),
                        ((2, 2, 3, 1000), (1000,)), ((0, 5), (5,)), ((2, 1, 1), (1, 1))]:
        x = r(*shape) * 3 + 2
        w, b = r(*norm), r(*norm)
        tag = "%s%s" % (shape, norm)
        out.append(Case("tern::layer_norm", [x, IL(norm), w, b, D(1e-5)],
                        lambda x, n, w, b, e: F.layer_norm(x, n, w, b, e), rtol=1e-5, atol=1e-5,
                        name="layer_norm" + tag))
        out.append(Case("tern::layer_norm", [x, IL(norm), NONE, NONE, D(1e-3)],
                        lambda x, n, w, b, e: F.layer_norm(x, n, w, b, e), rtol=1e-5, atol=1e-5,
                        name="layer_norm_noaffine" + tag))
    x = r(3, 16)
    out.append(Case("tern::layer_norm", [x, IL([16]), r(16), NONE, D(1e-6)],
                    lambda x, n, w, b, e: F.layer_norm(x, n, w, b, e), rtol=1e-5, atol=1e-5,
                    name="layer_norm_weight_only"))
    out.append(Case("tern::layer_norm", [x, IL([16]), NONE, r(16), D(1e-6)],
                    lambda x, n, w, b, e: F.layer_norm(x, n, w, b, e), rtol=1e-5, atol=1e-5,
                    name="layer_norm_bias_only"))
    # Large offset: the mean must be subtracted before squaring.
    xo = r(4, 4096) + 1000.0
    out.append(Case("tern::layer_norm", [xo, IL([4096]), NONE, NONE, D(1e-5)],
                    lambda x, n, w, b, e: F.layer_norm(x, n, w, b, e), rtol=1e-3, atol=1e-3,
                    name="layer_norm_offset"))

    # rms_norm: reference written by hand so it runs on torch 1.13 too.
    for shape, norm in [((2, 3, 8), (8,)), ((4, 5, 6), (5, 6)), ((7,), (7,)),
                        ((2, 3, 2048), (2048,)), ((0, 4), (4,))]:
        x = r(*shape)
        tag = "%s%s" % (shape, norm)
        out.append(Case("tern::rms_norm", [x, IL(norm), r(*norm), D(1e-6)], rms_norm_ref,
                        rtol=1e-5, atol=1e-5, name="rms_norm" + tag))
        out.append(Case("tern::rms_norm", [x, IL(norm), NONE, NONE], rms_norm_ref,
                        rtol=1e-5, atol=1e-5, name="rms_norm_default_eps" + tag))
    # A tiny input where eps dominates: the default eps value matters.
    tiny = r(2, 8) * 1e-4
    out.append(Case("tern::rms_norm", [tiny, IL([8]), NONE, NONE], rms_norm_ref, rtol=1e-5,
                    atol=1e-6, name="rms_norm_eps_matters"))
    if hasattr(F, "rms_norm"):
        out.append(Case("tern::rms_norm", [r(3, 5, 8), IL([8]), r(8), NONE],
                        lambda x, n, w, e: F.rms_norm(x, n, w, e), rtol=1e-5, atol=1e-5,
                        name="rms_norm_vs_F"))

    # group_norm: [N, C], [N, C, L], [N, C, H, W]; groups 1, C, between.
    for shape, g in [((2, 6, 5), 3), ((2, 6, 4, 4), 2), ((3, 8), 4), ((1, 4, 3, 3), 1),
                     ((2, 4, 7), 4), ((2, 32, 16, 16), 8), ((0, 4, 2), 2)]:
        x = r(*shape) * 2 + 1
        c = shape[1]
        tag = "%s_g%d" % (shape, g)
        out.append(Case("tern::group_norm", [x, I(g), r(c), r(c), D(1e-5)],
                        lambda x, g, w, b, e: F.group_norm(x, g, w, b, e), rtol=1e-5, atol=1e-5,
                        name="group_norm" + tag))
        out.append(Case("tern::group_norm", [x, I(g), NONE, NONE, D(1e-3)],
                        lambda x, g, w, b, e: F.group_norm(x, g, w, b, e), rtol=1e-5, atol=1e-5,
                        name="group_norm_noaffine" + tag))

    # batch_norm at eval: [N, C], [N, C, L], [N, C, H, W].
    def bn(x, w, b, m, v, e):
        return F.batch_norm(x, m, v, w, b, training=False, eps=e)

    for shape in [(4, 3), (2, 5, 7), (2, 3, 4, 5), (1, 16, 1, 1), (0, 3, 2)]:
        c = shape[1]
        x = r(*shape)
        m, v = r(c), torch.rand(c) + 0.5
        tag = "%s" % (shape,)
        out.append(Case("tern::batch_norm", [x, r(c), r(c), m, v, D(1e-5)], bn, rtol=1e-5,
                        atol=1e-5, name="batch_norm" + tag))
        out.append(Case("tern::batch_norm", [x, NONE, NONE, m, v, D(1e-3)], bn, rtol=1e-5,
                        atol=1e-5, name="batch_norm_noaffine" + tag))
    return out
