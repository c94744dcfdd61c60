"""The exact (erf) GELU written out, folded into one gelu.

Models that predate `nn.GELU` or copy Google's BERT code write the exact GELU by hand
(ESM, ...): `x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))`. Exported as written, that is five
elementwise ops, and `erf` alone is one no delegate takes (the cpu backend's XNNPACK has none), so
each layer's MLP leaves the delegate twice. fold_erf_gelus rewrites such a chain in the captured
FX graph into `aten.gelu(x)` (approximate="none": the same function; the float32 results differ
from the chain's by rounding only); the chain is left without users and is not lowered.

The forms taken (each product and sum in either operand order, every intermediate read once):
  u = x / sqrt(2)  or  x * (1 / sqrt(2));   s = erf(u) + 1;
  y = (x * 0.5) * s,  or  (x * s) * 0.5,  or  (x * s) / 2.
"""
import math

import torch

from .gqa import _is

_MUL = ("mul.Tensor", "mul.Scalar")
_DIV = ("div.Tensor", "div.Scalar")
_ADD = ("add.Tensor", "add.Scalar")


def _number(a):
    """a as a float when it is a Python number (or a one-element constant), else None."""
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        return float(a)
    return None


def _near(a, b):
    return a is not None and abs(a - b) <= 1e-6 * abs(b)


def _once(n):
    return isinstance(n, torch.fx.Node) and len(n.users) == 1


def _scaled(n, factor):
    """x when n is mul(x, c) or mul(c, x) with c near factor (x an FX node), else None."""
    if not _is(n, _MUL) or n.kwargs:
        return None
    for t, c in ((n.args[0], n.args[1]), (n.args[1], n.args[0])):
        if isinstance(t, torch.fx.Node) and _near(_number(c), factor):
            return t
    return None


def _plus_one(n, e):
    """Whether n is add(e, 1) or add(1, e) (alpha 1)."""
    if not _is(n, _ADD) or n.kwargs.get("alpha", 1) != 1 or len(n.args) > 2:
        return False
    a, b = n.args
    return (a is e and _number(b) == 1.0) or (b is e and _number(a) == 1.0)


def _gelu_output(x, s):
    """The node computing 0.5 * x * s from s = 1 + erf(x / sqrt 2), or None."""
    y = next(iter(s.users))
    if _is(y, _MUL) and not y.kwargs:  # (x * 0.5) * s
        other = y.args[1] if y.args[0] is s else y.args[0] if y.args[1] is s else None
        if other is not None and _once(other) and _scaled(other, 0.5) is x:
            return y
        if other is x and _once(y):  # (x * s), then * 0.5 or / 2
            z = next(iter(y.users))
            if _scaled(z, 0.5) is y:
                return z
            if _is(z, _DIV) and z.args[0] is y and _number(z.args[1]) == 2.0 and not z.kwargs:
                return z
    return None


def fold_erf_gelus(gm):
    """Rewrites the exact GELUs written out in gm's graph (the module docstring) into
    aten.gelu. Returns how many it rewrote."""
    count = 0
    for e in list(gm.graph.nodes):
        if not _is(e, ("erf.default",)) or not _once(e):
            continue
        u = e.args[0]
        if not _once(u):
            continue
        x = _scaled(u, 1.0 / math.sqrt(2.0))
        if x is None and _is(u, _DIV) and not u.kwargs and _near(_number(u.args[1]),
                                                                 math.sqrt(2.0)):
            x = u.args[0]
        if not isinstance(x, torch.fx.Node):
            continue
        s = next(iter(e.users))
        if not _plus_one(s, e) or not _once(s):
            continue
        y = _gelu_output(x, s)
        if y is None:
            continue
        with gm.graph.inserting_before(y):
            g = gm.graph.call_function(torch.ops.aten.gelu.default, (x,))
        g.meta = dict(y.meta)
        y.replace_all_uses_with(g)
        count += 1
    return count
