"""The spine's first kernels against PyTorch: add, mul, relu, linear, reshape."""
import torch
import torch.nn.functional as F

from harness import Case, D, I, IL, NONE


def cases():
    def r(*shape):
        return torch.randn(tuple(shape))

    out = []
    for a, b in [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 5), (3, 1)), ((), (2, 2)), ((7,), ())]:
        out.append(Case("tern::add", [r(*a), r(*b)], torch.add, name="add%s%s" % (a, b)))
        out.append(Case("tern::mul", [r(*a), r(*b)], torch.mul, name="mul%s%s" % (a, b)))
    out.append(Case("tern::add", [r(3, 4), r(4), D(-0.5)], lambda a, b, al: torch.add(a, b, alpha=al),
                    name="add_alpha"))
    ia = torch.randint(-100, 100, (3, 4))
    ib = torch.randint(-100, 100, (4,))
    out.append(Case("tern::add", [ia, ib, I(3)], lambda a, b, al: torch.add(a, b, alpha=al),
                    name="add_i64_alpha"))
    out.append(Case("tern::mul", [ia.int(), ib.int()], torch.mul, name="mul_i32"))
    out.append(Case("tern::relu", [r(5, 7)], torch.relu))
    for x, w in [((1, 8), (3, 8)), ((2, 5, 16), (7, 16)), ((33, 65), (17, 65))]:
        out.append(Case("tern::linear", [r(*x), r(*w), r(w[0])], F.linear, name="linear%s" % (x,)))
    out.append(Case("tern::linear", [r(2, 5, 16), r(7, 16), NONE], lambda x, w, b: F.linear(x, w),
                    name="linear_nobias"))
    out.append(Case("tern::reshape", [r(2, 3, 4), IL([4, -1])], lambda x, s: x.reshape(s)))
    return out
