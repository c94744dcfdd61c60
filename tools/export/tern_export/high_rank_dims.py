"""Values of more than six dims, folded to fewer.

Delegates keep values to six dims (the cpu backend's blob, XNNPACK), yet models build more in
their index work, only between two reshapes:
- window attention over video (torchvision's Swin3D, Video Swin) splits [B, T, H, W, C] into
  windows with view [B, T/wt, wt, H/wh, wh, W/ww, ww, C] -> permute(0, 1, 3, 5, 2, 4, 6, 7) ->
  clone -> view [B*nW, wt*wh*ww, C], and back the same way; einsum's decomposition permutes
  unsqueezed operands of seven dims (MViT's relative positions);
- MViT adds its relative-position terms broadcast over eight dims
  ([.., 1, kh, 1] + [.., 1, 1, kw] + [.., kt, 1, 1]), then views the sum back to four.
Several of those dims move together: dims that stay next to each other through a permute, dims
that every operand of a broadcast has either whole or as 1, and dims of size 1, can be merged
without changing a single element's place.

fold_high_rank_permutes rewrites a permute of more than six dims (after composing it with the
permutes before it), when every reader only reshapes it (a view or reshape, or a clone read only
by those), into reshape -> permute -> (clone) over the merged dims; when more than six remain
after merging (LTX-Video's 3-D pixel shuffle: [C, p, p, p, F, H, W] -> [C, F, p, H, p, W, p]),
into two such permutes of at most six merged dims each (split_permute). fold_high_rank_elementwise
rewrites a connected group of elementwise ops of more than six dims whose operands come from
reshapes and whose readers outside the group are reshapes, to run on the merged dims. In both,
the reshapes' own outputs are unchanged (the elements come in the same row-major order), so
nothing after them changes; the nodes of many dims are left without users and are not lowered.
"""
import torch

from .gqa import _VIEWS, _is, _shape

MAX_RANK = 6
# Ops that only reshape their first argument (row-major order kept).
_RESHAPES = _VIEWS + ("unsqueeze.default", "squeeze.dim", "squeeze.dims", "squeeze.default",
                      "flatten.using_ints")


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


def split_permute(sizes, perm):
    """Two permutes composing to x.permute(perm), each of at most MAX_RANK dims after merging
    (merged_permute): the first brings the sources of the output's first k dims to the front in
    output order, the rest staying in input order; the second finishes, its first k dims already
    in place. Returns (q1, sizes2, perm2) — x.permute(q1), of sizes2, permuted by perm2 — for
    the smallest k that works, or None."""
    r = len(sizes)
    for k in range(1, r):
        head = list(perm[:k])
        q1 = head + [d for d in range(r) if d not in head]
        if len(merged_permute(sizes, q1)[0]) > MAX_RANK:
            continue
        sizes2 = [sizes[d] for d in q1]
        place = {d: i for i, d in enumerate(q1)}
        perm2 = [place[d] for d in perm]
        if len(merged_permute(sizes2, perm2)[0]) <= MAX_RANK:
            return q1, sizes2, perm2
    return None


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


def _past_high_rank_views(v):
    """The view that ends a chain of views starting at `v` whose outputs up to it have more
    than MAX_RANK dims, each read only by the next (flatten(6, 7) then flatten(4, 5)...): it
    reshapes the folded value itself, and the views before it are left without readers."""
    while (_rank_of(v) is not None and _rank_of(v) > MAX_RANK and len(v.users) == 1 and
           _is(next(iter(v.users)), _VIEWS) and next(iter(v.users)).args[0] is v):
        v = next(iter(v.users))
    return v


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
        inner = p.args[0]
        while (_is(inner, ("permute.default",)) and len(inner.users) == 1 and
               _perm_arg(inner) is not None and _shape(inner.args[0]) is not None):
            # permute(permute(y, q), perm) is permute(y, q[perm]) (einsum's decomposition
            # permutes twice in a row)
            q = [d % len(sizes) for d in _perm_arg(inner)]
            perm = [q[d] for d in perm]
            x, sizes = inner.args[0], _shape(inner.args[0])
            inner = x
        readers = _reshape_readers(p)
        if readers is None:
            continue
        steps = [(sizes, perm)]
        if len(merged_permute(sizes, perm)[0]) > MAX_RANK:
            split = split_permute(sizes, perm)
            if split is None:
                continue
            q1, sizes2, perm2 = split
            steps = [(sizes, q1), (sizes2, perm2)]
        src = x
        while (_is(src, _RESHAPES) and len(src.users) == 1 and
               isinstance(src.args[0], torch.fx.Node) and _shape(src.args[0]) is not None):
            src = src.args[0]  # the views into many dims (unsqueezes too), skipped
        q = src
        with graph.inserting_before(p):
            for step_sizes, step_perm in steps:
                merged, mperm = merged_permute(step_sizes, step_perm)
                permuted = [merged[d] for d in mperm]
                r = graph.call_function(reshape, (q, merged))
                _meta_like(r, merged, p)
                q = graph.call_function(torch.ops.aten.permute.default, (r, mperm))
                _meta_like(q, permuted, p)
        permuted = _shape(q)
        for c in readers[1]:
            with graph.inserting_before(c):
                c2 = graph.call_function(torch.ops.aten.clone.default, (q,))
                _meta_like(c2, permuted, c)
            for w in list(c.users):
                w = _past_high_rank_views(w)
                w.target = reshape
                w.args = (c2,) + tuple(w.args[1:])
        for v in readers[0]:
            v = _past_high_rank_views(v)
            # A view of the permuted (not contiguous) value: reshape, as PyTorch's view of it
            # was legal only for the strides it had.
            v.target = reshape
            v.args = (q,) + tuple(v.args[1:])
        count += 1
    return count


# Elementwise ops (NumPy broadcasting over their tensor arguments, the rest scalars).
_ELEMENTWISE = ("add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "add.Scalar",
                "sub.Scalar", "mul.Scalar", "div.Scalar", "maximum.default", "minimum.default",
                "clone.default", "neg.default", "exp.default", "relu.default",
                "sigmoid.default", "tanh.default")


def _rank_of(n):
    s = _shape(n)
    return len(s) if s is not None else None


def _group(start, rank):
    """The elementwise nodes of `rank` dims connected to `start` through producer and reader
    edges, in graph order."""
    seen, todo = {start}, [start]
    while todo:
        n = todo.pop()
        near = [a for a in n.args if isinstance(a, torch.fx.Node)] + list(n.users)
        for m in near:
            if m not in seen and _is(m, _ELEMENTWISE) and _rank_of(m) == rank:
                seen.add(m)
                todo.append(m)
    order = {n: i for i, n in enumerate(start.graph.nodes)}
    return sorted(seen, key=order.get)


def merged_broadcast(shapes, rank):
    """The merged dims of tensors broadcast together (each shape right-aligned to `rank`):
    groups of dims (lists of dim indices), dims every shape has as 1 dropped, neighbours
    merged when every shape has both whole or both 1."""
    padded = [[1] * (rank - len(s)) + list(s) for s in shapes]
    groups, last = [], None
    for d in range(rank):
        if all(p[d] == 1 for p in padded):
            continue
        pattern = tuple(p[d] == 1 for p in padded)
        if groups and pattern == last:
            groups[-1].append(d)
        else:
            groups.append([d])
            last = pattern
    return groups, padded


def fold_high_rank_elementwise(gm):
    """Rewrites groups of elementwise ops of more than MAX_RANK dims (module docstring).
    Returns how many groups."""
    graph = gm.graph
    reshape = torch.ops.aten.reshape.default
    done, count = set(), 0
    for start in list(graph.nodes):
        rank = _rank_of(start) if _is(start, _ELEMENTWISE) else None
        if start in done or rank is None or rank <= MAX_RANK:
            continue
        group = _group(start, rank)
        done.update(group)
        members = set(group)
        leaves = []
        for n in group:
            for a in n.args:
                if isinstance(a, torch.fx.Node) and a not in members and a not in leaves:
                    leaves.append(a)
        outside = [u for n in group for u in n.users if u not in members]
        if (any(_shape(a) is None or len(_shape(a)) > rank for a in leaves) or
                any(not _is(u, _RESHAPES) or u.args[0] not in members or _shape(u) is None
                    for u in outside)):
            continue
        tensors = leaves + group
        groups, padded = merged_broadcast([_shape(t) for t in tensors], rank)
        if len(groups) > MAX_RANK:
            continue
        merged = {}
        for t, p in zip(tensors, padded):
            dims = []
            for g in groups:
                n = 1
                for d in g:
                    n *= p[d]
                dims.append(n)
            merged[t] = dims or [1]
        sources = {}
        for a in leaves:
            src = a
            while (_is(src, _RESHAPES) and len(src.users) == 1 and
                   isinstance(src.args[0], torch.fx.Node) and _shape(src.args[0]) is not None):
                src = src.args[0]
            sources[a] = src
        if any(len(_shape(src)) > MAX_RANK for src in sources.values()):
            continue
        new = {}
        for n in group:
            with graph.inserting_before(n):
                for a in n.args:
                    if isinstance(a, torch.fx.Node) and a in sources and a not in new:
                        r = graph.call_function(reshape, (sources[a], merged[a]))
                        _meta_like(r, merged[a], a)
                        new[a] = r
                args = tuple(new[a] if isinstance(a, torch.fx.Node) else a for a in n.args)
                m = graph.call_function(n.target, args, dict(n.kwargs))
                _meta_like(m, merged[n], n)
                new[n] = m
        for u in outside:
            u.args = (new[u.args[0]], _shape(u))
            u.kwargs = {}
            u.target = reshape
        count += 1
    return count
