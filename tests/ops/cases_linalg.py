"""Linear algebra against PyTorch: linear, matmul (ATen rules), bmm, addmm."""
import torch
import torch.nn.functional as F

from harness import Case, D, I, NONE

# GEMM sums in a different order than PyTorch: error grows with K, relative to the output scale.
RTOL = 2e-5
ATOL = 1e-5


def cases():
    def r(*shape):
        return torch.randn(tuple(shape))

    out = []
    for x, w in [((8,), (3, 8)), ((1, 8), (3, 8)), ((2, 5, 16), (7, 16)), ((33, 65), (17, 65)),
                 ((1, 4096), (40, 4096)), ((70, 300), (130, 300)), ((0, 5), (4, 5)),
                 ((2, 0, 3), (6, 3)), ((3, 0), (4, 0)), ((2, 3, 1, 9), (1, 9))]:
        out.append(Case("tern::linear", [r(*x), r(*w), r(w[0])], F.linear, RTOL, ATOL,
                        name="linear%s%s" % (x, w)))
    out.append(Case("tern::linear", [r(4, 7, 16), r(9, 16), NONE], lambda x, w, b: F.linear(x, w),
                    RTOL, ATOL, name="linear_nobias"))

    for a, b in [((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((4, 5), (5, 3)),
                 ((2, 3, 4), (4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((3, 4), (2, 4, 5)),
                 ((2, 1, 3, 4), (5, 4, 6)), ((1, 3, 4), (6, 4, 2)), ((17, 33), (33, 65)),
                 ((3, 1, 130, 67), (1, 4, 67, 31)), ((0, 4), (4, 3)), ((3, 0), (0, 4)),
                 ((2, 0, 4), (4, 3)), ((0,), (0,)), ((1, 1), (1, 1)), ((100, 1), (1, 70)),
                 ((7, 300), (300, 1)), ((1, 300), (300, 70))]:
        out.append(Case("tern::matmul", [r(*a), r(*b)], torch.matmul, RTOL, ATOL,
                        name="matmul%s%s" % (a, b)))

    for a, b in [((3, 5, 7), (3, 7, 2)), ((1, 1, 1), (1, 1, 1)), ((4, 33, 17), (4, 17, 40)),
                 ((0, 3, 4), (0, 4, 5)), ((2, 0, 4), (2, 4, 5)), ((2, 3, 0), (2, 0, 5))]:
        out.append(Case("tern::bmm", [r(*a), r(*b)], torch.bmm, RTOL, ATOL,
                        name="bmm%s%s" % (a, b)))

    def addmm(bias, a, b, beta, alpha):
        return torch.addmm(bias, a, b, beta=beta, alpha=alpha)

    for bias in [(6,), (5, 6), (1, 6), (5, 1), ()]:
        out.append(Case("tern::addmm", [r(*bias), r(5, 9), r(9, 6), D(1.0), D(1.0)], addmm, RTOL,
                        ATOL, name="addmm_bias%s" % (bias,)))
    out.append(Case("tern::addmm", [r(40), r(33, 70), r(70, 40), D(0.5), D(-2.0)], addmm, RTOL,
                    ATOL, name="addmm_beta_alpha"))
    out.append(Case("tern::addmm", [r(4), r(3, 5), r(5, 4), I(2), I(3)], addmm, RTOL, ATOL,
                    name="addmm_int_scalars"))
    nan_bias = torch.full((4,), float("nan"))
    out.append(Case("tern::addmm", [nan_bias, r(3, 5), r(5, 4), D(0.0), D(1.0)], addmm, RTOL,
                    ATOL, name="addmm_beta0_ignores_nan"))
    out.append(Case("tern::addmm", [r(3, 4), r(3, 0), r(0, 4), D(2.0), D(1.0)], addmm, RTOL, ATOL,
                    name="addmm_k0"))
    return out
