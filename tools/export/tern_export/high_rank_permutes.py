"""Permutes of more than six dims, folded to fewer.

Window attention over video (torchvision's Swin3D, Video Swin) splits a [B, T, H, W, C] tensor
into windows with view [B, T/wt, wt, H/wh, wh, W/ww, ww, C] -> permute(0, 1, 3, 5, 2, 4, 6, 7)
-> clone -> view [B*nW, wt*wh*ww, C], and back the same way. The eight dims exist only between
the two views, and several of them move together: dims that stay next to each other in the
permutation (0 and 1, 6 and 7 above) and dims of size 1 can be merged without changing a single
element's place. Delegates keep values to six dims (the cpu backend's blob, XNNPACK), so each such
permute split the program into a delegate region per window partition.

fold_high_rank_permutes rewrites such a permute in the captured FX graph, when every reader of it
only reshapes it (a view or reshape, or a clone read only by those), into reshape -> permute ->
(clone) over the merged dims; the readers' own shapes are unchanged (the elements come in the
same row-major order), so nothing after them changes. The view into more than six dims is left
without users and is not lowered.
"""
import torch

from .gqa import _VIEWS, _is, _shape

MAX_RANK = 6


def merged_permute(sizes, perm):
    """(input sizes, permutation) with size-1 dims dropped and every run of input dims that
    stays in order in the output merged into one: y = x.permute(perm) equals
    x.reshape(sizes').permute(perm').reshape(y.shape) element for element."""
    keep = [d for d in range(len(sizes)) if sizes[d] != 1]
    if not keep:
        return [1], [0]
    out_order = [p for p in perm if sizes[p] != 1]  # input dims in output order
    runs = []  # each a list of consecutive input dims, in output order
    for d in out_order:
        if runs and runs[-1][-1] + 1 == d:
            runs[-1].append(d)
        else:
            runs.append([d])
    by_input = sorted(range(len(runs)), key=lambda r: runs[r][0])
    merged_sizes = []
    for r in by_input:
        n = 1
        for d in runs[r]:
            n *= sizes[d]
        merged_sizes.append(n)
    place = {r: i for i, r in enumerate(by_input)}
    return merged_sizes, [place[r] for r in range(len(runs))]


def _perm_arg(n):
    dims = n.args[1] if len(n.args) > 1 else n.kwargs.get("dims")
    return [int(d) for d in dims] if dims is not None else None


def _reshape_readers(p):
    """P's readers when each only reshapes it: (views, clones) (a clone counted only when its
    own readers are all views); None otherwise."""
    views, clones = [], []
    for u in p.users:
        if _is(u, _VIEWS) and u.args[0] is p:
            views.append(u)
        elif (_is(u, ("clone.default",)) and u.args[0] is p and u.users and
              all(_is(w, _VIEWS) and w.args[0] is u for w in u.users)):
            clones.append(u)
        else:
            return None
    return views, clones


def _meta_like(node, shape, like):
    val = like.meta.get("val")
    node.meta["val"] = torch.empty(shape, dtype=val.dtype, device="meta")


def fold_high_rank_permutes(gm):
    """Rewrites permutes of more than MAX_RANK dims (module docstring). Returns how many."""
    graph = gm.graph
    reshape = torch.ops.aten.reshape.default
    count = 0
    for p in list(graph.nodes):
        if not _is(p, ("permute.default",)):
            continue
        x, sizes, perm = p.args[0], _shape(p.args[0]), _perm_arg(p)
        if sizes is None or perm is None or len(sizes) <= MAX_RANK or _shape(p) is None:
            continue
        perm = [d % len(sizes) for d in perm]
        readers = _reshape_readers(p)
        if readers is None:
            continue
        merged, mperm = merged_permute(sizes, perm)
        if len(merged) > MAX_RANK:
            continue
        src = x
        if _is(x, _VIEWS) and len(x.users) == 1 and _shape(x.args[0]) is not None:
            src = x.args[0]  # the view into many dims, skipped
        permuted = [merged[d] for d in mperm]
        with graph.inserting_before(p):
            r = graph.call_function(reshape, (src, merged))
            _meta_like(r, merged, p)
            q = graph.call_function(torch.ops.aten.permute.default, (r, mperm))
            _meta_like(q, permuted, p)
        for c in readers[1]:
            with graph.inserting_before(c):
                c2 = graph.call_function(torch.ops.aten.clone.default, (q,))
                _meta_like(c2, permuted, c)
            for w in list(c.users):
                w.args = (c2,) + tuple(w.args[1:])
        for v in readers[0]:
            # A view of the permuted (not contiguous) value: reshape, as PyTorch's view of it
            # was legal only for the strides it had.
            v.target = reshape
            v.args = (q,) + tuple(v.args[1:])
        count += 1
    return count
