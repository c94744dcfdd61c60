"""Strided slice assignments that together write a whole tensor, folded into one interleave.

Rotary embeddings written pairwise (Wan, and RoPE code ported from Meta's) fill a new tensor
by strided assignment: `out = torch.empty_like(x); out[..., 0::2] = a; out[..., 1::2] = b`.
Functionalized, that is a chain of `slice_scatter`s with step k along one dim, each writing
`copy(slice(previous, ...), value)`; lowered one by one, each becomes an index_copy at
constant positions, which no delegate takes. When k assignments of step k start at 0, 1, ...,
k - 1 and each covers the dim to its end, the tensor's old values are all overwritten, and
the result is the values interleaved: `stack([v_0, ..., v_{k-1}], dim + 1)` viewed back to the
tensor's shape (element i * k + j along dim is v_j's element i). fold_interleaves rewrites the
last slice_scatter of such a chain into that stack and view; the chain is left without users
and is not lowered (unless something else reads a partly written tensor of it: that reader
keeps its part of the chain, the rewrite is still exact).
"""
import torch

from .gqa import _is
from .node_meta import node_dtype as _dtype, node_shape

_SCATTER = ("slice_scatter.default",)
_END = 2 ** 62  # an end at or past the dim's size: "to the end" (Python's sys.maxsize and such)


def _scatter_args(n, rank):
    """(base, src, dim, start, end, step) of the slice_scatter node n, dim non-negative."""
    names = ("input", "src", "dim", "start", "end", "step")
    defaults = (None, None, 0, None, None, 1)
    vals = [n.args[i] if i < len(n.args) else n.kwargs.get(names[i], defaults[i])
            for i in range(6)]
    base, src, dim, start, end, step = vals
    return base, src, dim % rank, 0 if start is None else start, \
        _END if end is None else end, step


def _value(src, shape, dtype):
    """What src writes: the value a `copy(slice(...), value)` copies when it has the slice's
    shape and dtype (so the slice of the old tensor is not read), else src itself."""
    if _is(src, ("copy.default",)) and len(src.args) >= 2 and not src.kwargs:
        v = src.args[1]
        if node_shape(v) == shape and _dtype(v) == dtype:
            return v
    return src


def _chain(n):
    """[(start, src)] of the k slice_scatters of step k ending at n that write all of their
    dim, or None."""
    shape = node_shape(n)
    if shape is None or not _is(n, _SCATTER):
        return None
    rank = len(shape)
    _, _, dim, _, _, k = _scatter_args(n, rank)
    if not isinstance(k, int) or k < 2 or shape[dim] % k:
        return None
    entries, cur = [], n
    for i in range(k):
        if not _is(cur, _SCATTER) or node_shape(cur) != shape:
            return None
        base, src, d, start, end, step = _scatter_args(cur, rank)
        if d != dim or step != k or not isinstance(start, int) or not isinstance(end, int) \
                or end < shape[dim] or not 0 <= start < k:
            return None
        entries.append((start, src))
        if i < k - 1:
            if not isinstance(base, torch.fx.Node):
                return None
            cur = base
    if sorted(s for s, _ in entries) != list(range(k)):
        return None
    return dim, entries


def _drop_whole_slices(gm):
    """Replaces slices and slice assignments that cover their whole tensor (dim from 0 to its
    end, step 1) by what they read or write: make_fx (the 1.13 line) writes `out[:, 0::2] = v`
    as a whole slice of dim 0 with a strided assignment inside it."""
    for n in list(gm.graph.nodes):
        shape = node_shape(n)
        if shape is None:
            continue
        if _is(n, ("slice.Tensor",)):
            src = n.args[0]
            names = ("dim", "start", "end", "step")
            dim, start, end, step = [n.args[i + 1] if i + 1 < len(n.args) else
                                     n.kwargs.get(names[i], (0, None, None, 1)[i])
                                     for i in range(4)]
        elif _is(n, _SCATTER):
            _, src, dim, start, end, step = _scatter_args(n, len(shape))
        else:
            continue
        if not isinstance(src, torch.fx.Node) or node_shape(src) != shape or \
                _dtype(src) != _dtype(n) or step != 1 or start not in (0, None) or \
                not (end is None or (isinstance(end, int) and end >= shape[dim % len(shape)])):
            continue
        n.replace_all_uses_with(src)


def fold_interleaves(gm):
    """Rewrites each chain of strided slice assignments that writes a whole tensor (the module
    docstring) into stack + view. Returns how many it rewrote."""
    count = 0
    if any(_is(n, _SCATTER) for n in gm.graph.nodes):
        _drop_whole_slices(gm)
    for n in list(gm.graph.nodes):
        found = _chain(n)
        if found is None:
            continue
        dim, entries = found
        shape = node_shape(n)
        dtype = _dtype(n)
        part = list(shape)
        part[dim] //= len(entries)
        values = [_value(src, part, dtype) for _, src in sorted(entries, key=lambda e: e[0])]
        if dtype is None or any(not isinstance(v, torch.fx.Node) or node_shape(v) != part
                                or _dtype(v) != dtype for v in values):
            continue
        with gm.graph.inserting_before(n):
            stacked = gm.graph.call_function(torch.ops.aten.stack.default, (values, dim + 1))
            view = gm.graph.call_function(torch.ops.aten.view.default, (stacked, list(shape)))
        try:
            stacked.meta["val"] = torch.stack([v.meta["val"] for v in values], dim + 1)
        except Exception:  # noqa: BLE001 - (make_fx has no "val"): the lowering computes values
            pass
        view.meta = dict(n.meta)
        n.replace_all_uses_with(view)
        count += 1
    return count
