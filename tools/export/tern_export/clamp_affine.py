"""A scale and shift after a conv's relu (or relu6 / clamp), folded into the conv and its clamp.

HGNetV2 (timm's and Hugging Face's, RT-DETR's backbone) follows every conv + batch norm + relu
with a learnable affine block: y = s · relu(z) + b, s and b one number each. Run as written that
is a multiply and an add over every activation after the conv. For s > 0,
s · clamp(z, lo, hi) + b = clamp(s·z + b, s·lo + b, s·hi + b), and s·z + b is the same conv with
its weights times s and its bias times s plus b; for s < 0 the bounds swap. fold_clamp_affines
rewrites such a chain in the captured FX graph into that conv and one `aten.clamp` (which the
backends fold into the conv again); the chain is left without users and is not lowered. The
result differs from the chain's by float rounding only.

Taken: z a conv term as branch_convs.py reads it (a conv of constant weights, its batch norm,
summed branches), read only by `relu`, `hardtanh` or `clamp` with number bounds (or none); after
it any chain of `mul` / `div` by, `add` / `sub` / `rsub` of a number or a one-element constant
tensor, each node read once; a chain that scales by 0 is left as written.
"""
import math

import torch

from .branch_convs import _Folder
from .gqa import _is

_CLAMPS = ("relu.default", "hardtanh.default", "clamp.default")


def _number(folder, v):
    """v as a float when it is a number or a one-element floating constant, else None."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    t = folder.const(v) if isinstance(v, torch.fx.Node) else None
    return float(t.reshape(-1)[0]) if t is not None and t.numel() == 1 else None


def _affine_step(folder, u, prev):
    """(s, b) with u = s·prev + b when u is such a step of the chain, else None."""
    if u.op != "call_function" or len(u.args) != 2:
        return None
    a0, a1 = u.args
    if _is(u, ("mul.Tensor", "mul.Scalar")) and not u.kwargs:
        c = _number(folder, a1 if a0 is prev else a0)
        return None if c is None else (c, 0.0)
    if _is(u, ("div.Tensor", "div.Scalar")) and not u.kwargs and a0 is prev:
        c = _number(folder, a1)
        return None if c is None or c == 0 else (1.0 / c, 0.0)
    if _is(u, ("add.Tensor", "add.Scalar")) and u.kwargs.get("alpha", 1) == 1:
        c = _number(folder, a1 if a0 is prev else a0)
        return None if c is None else (1.0, c)
    if _is(u, ("rsub.Scalar", "rsub.Tensor")) and u.kwargs.get("alpha", 1) == 1 and a0 is prev:
        c = _number(folder, a1)  # c - prev
        return None if c is None else (-1.0, c)
    if _is(u, ("sub.Tensor", "sub.Scalar")) and u.kwargs.get("alpha", 1) == 1:
        c = _number(folder, a1 if a0 is prev else a0)
        if c is None:
            return None
        return (1.0, -c) if a0 is prev else (-1.0, c)
    return None


def _bounds(n):
    """(lo, hi) of a relu / hardtanh / clamp node with number bounds, else None."""
    if _is(n, ("relu.default",)):
        return 0.0, math.inf
    if _is(n, ("hardtanh.default",)):
        lo = n.args[1] if len(n.args) > 1 else n.kwargs.get("min_val", -1.0)
        hi = n.args[2] if len(n.args) > 2 else n.kwargs.get("max_val", 1.0)
    else:
        lo = n.args[1] if len(n.args) > 1 else n.kwargs.get("min")
        hi = n.args[2] if len(n.args) > 2 else n.kwargs.get("max")
    ok = lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
    if not (ok(lo) and ok(hi)):
        return None
    return (-math.inf if lo is None else float(lo)), (math.inf if hi is None else float(hi))


def fold_clamp_affines(gm, constants):
    """Rewrites the scaled and shifted clamps of convs in gm's graph (the module docstring).
    `constants` maps constant placeholder nodes to their tensors. Returns how many it rewrote."""
    folder = _Folder(gm, constants)
    graph = gm.graph
    count = 0
    for r in list(graph.nodes):
        if not any(_is(r, (name,)) for name in _CLAMPS) or len(folder.readers(r)) != 1:
            continue
        bounds = _bounds(r)
        z = r.args[0]
        if (bounds is None or not isinstance(z, torch.fx.Node)
                or len(folder.readers(z)) != 1):
            continue
        s, b, last = 1.0, 0.0, r
        while len(folder.readers(last)) == 1:
            u = folder.readers(last)[0]
            step = _affine_step(folder, u, last)
            if step is None:
                break
            s, b, last = step[0] * s, step[0] * b + step[1], u
        if last is r or s == 0.0 or not math.isfinite(s) or not math.isfinite(b):
            continue
        x = folder.first_conv_input(z)
        t = None if x is None else folder.term(z, x, z)
        if t is None or t.w is None:
            continue
        t = t.scaled(torch.tensor([s], dtype=torch.float64),
                     torch.tensor([b], dtype=torch.float64))
        lo, hi = (s * e + b for e in bounds)
        if s < 0:
            lo, hi = hi, lo
        lo = None if math.isinf(lo) else lo
        hi = None if math.isinf(hi) else hi
        with graph.inserting_before(last):
            new = folder.conv_node(t, "tern_clamp_affine_%d" % count, z.meta)
            clamp = graph.call_function(torch.ops.aten.clamp.default, (new, lo, hi))
            clamp.meta = dict(last.meta)
        last.replace_all_uses_with(clamp)
        folder.refresh()
        count += 1
    return count
