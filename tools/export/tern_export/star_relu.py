"""StarReLU after a conv, s · relu(conv(x))² + b, with s folded into the conv and b into the next.

MetaFormer's PoolFormerV2 (timm) ends each MLP's first 1x1 conv with StarReLU: one-number s and
b. Run as written that is a square, a multiply and an add over the widest activation of the
block. For s > 0, s · relu(z)² = relu(√s · z)², and √s · z is the same conv with its weights and
bias times √s; when the result is read only by a conv without padding (the MLP's second 1x1
conv), that conv reads y + b, which is its own bias plus b · Σ of each output channel's weights.
fold_star_relus rewrites the chain into the scaled conv, relu, square and the next conv with
the new bias (or an add of b where no such conv reads it); the old nodes are left without users
and are not lowered. The result differs from the chain's by float rounding only.

Taken: z a conv term as branch_convs.py reads it, read only by `relu`, read only by `pow(., 2)`
or `mul(r, r)`, then a chain of `mul` / `div` by, `add` / `sub` of numbers or one-element
constants (clamp_affine.py's steps) scaling by s > 0; every node read once.
"""
import math

import torch

from .branch_convs import _CONV, _Folder
from .clamp_affine import _affine_step
from .gqa import _is


def _squares(folder, r):
    """The node squaring r (pow(r, 2) or mul(r, r)) when r's only reader is one, else None."""
    readers = folder.readers(r)
    if len(readers) != 1:
        return None
    u = readers[0]
    if _is(u, ("pow.Tensor_Scalar",)) and u.args[0] is r and u.args[1] == 2 and not u.kwargs:
        return u
    if _is(u, ("mul.Tensor",)) and u.args[0] is r and u.args[1] is r and not u.kwargs:
        return u
    return None


def _unpadded_conv(folder, n):
    """The conv reading n as its input, without padding and with constant weights, when it is
    n's only reader; else None."""
    readers = folder.readers(n)
    if len(readers) != 1 or not _is(readers[0], _CONV):
        return None
    c = readers[0]
    args = list(c.args)
    if len(args) < 9 or args[0] is not n or args[6] or any(int(p) != 0 for p in args[4]):
        return None
    w = folder.const(args[1])
    b = None if args[2] is None else folder.const(args[2])
    if w is None or (args[2] is not None and b is None):
        return None
    return c, w, b


def fold_star_relus(gm, constants):
    """Rewrites the StarReLUs after convs in gm's graph (the module docstring). `constants` maps
    constant placeholder nodes to their tensors. Returns how many it rewrote."""
    folder = _Folder(gm, constants)
    graph = gm.graph
    count = 0
    for r in list(graph.nodes):
        if not _is(r, ("relu.default",)):
            continue
        z = r.args[0]
        sq = _squares(folder, r)
        if sq is None or not isinstance(z, torch.fx.Node) or folder.readers(z) != [r]:
            continue
        s, b, last = 1.0, 0.0, sq
        while len(folder.readers(last)) == 1:
            step = _affine_step(folder, folder.readers(last)[0], last)
            if step is None:
                break
            s, b, last = step[0] * s, step[0] * b + step[1], folder.readers(last)[0]
        if last is sq or not s > 0.0 or not math.isfinite(s) or not math.isfinite(b):
            continue
        x = folder.first_conv_input(z)
        t = None if x is None else folder.term(z, x, z)
        if t is None or t.w is None:
            continue
        root = math.sqrt(s)
        t = t.scaled(torch.tensor([root], dtype=torch.float64), torch.zeros(1, dtype=torch.float64))
        name = "tern_star_relu_%d" % count
        nxt = _unpadded_conv(folder, last) if b != 0.0 else None
        with graph.inserting_before(last):
            new = folder.conv_node(t, name, z.meta)
            relu = graph.call_function(torch.ops.aten.relu.default, (new,))
            relu.meta = dict(r.meta)
            out = graph.call_function(torch.ops.aten.pow.Tensor_Scalar, (relu, 2))
            out.meta = dict(last.meta)
            if b != 0.0 and nxt is None:
                out = graph.call_function(torch.ops.aten.add.Tensor, (out, b))
                out.meta = dict(last.meta)
        if nxt is not None:  # the next conv reads out + b: b · Σ weights joins its bias
            c, w, cb = nxt
            bias = w.sum(dim=tuple(range(1, w.dim()))) * b
            if cb is not None:
                bias = bias + cb.reshape(-1)
            bias_name = "%s_%s_bias" % (name, c.name)
            gm.register_buffer(bias_name, bias.to(folder.dtype(c.args[1])))
            with graph.inserting_before(c):
                args = list(c.args)
                args[0], args[2] = out, graph.get_attr(bias_name)
                new_next = graph.call_function(c.target, tuple(args), dict(c.kwargs))
                new_next.meta = dict(c.meta)
            c.replace_all_uses_with(new_next)
        else:
            last.replace_all_uses_with(out)
        folder.refresh()
        count += 1
    return count
