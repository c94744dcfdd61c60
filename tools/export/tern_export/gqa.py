"""Grouped-query attention without repeated K and V.

transformers' `repeat_kv` (and code like it) feeds attention K and V of Hkv heads repeated to the
query's Hq heads: unsqueeze(x, 2) -> expand [B, Hkv, rep, S, D] -> clone -> view [B, Hq, S, D].
Exported as written, each of those copies the whole KV cache at every decode step (for the
1.1B-shaped Llama: 2 MB per tensor and layer, a fifth of a decode step). fold_repeat_kv
rewrites such an attention call in the captured FX graph to take x itself with
enable_gqa=True (what torch >= 2.5 computes the same way); ops_table's attention handler then
emits tern's attention on grouped views, which broadcasts each K/V head over its query heads
without a copy. The expand/clone/view chain is left without users and is not lowered.
"""
import torch

from .errors import Unsupported

_VIEWS = ("view.default", "_unsafe_view.default", "reshape.default")


def _aten(name):
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet, None), overload, None)


def _shape(n):
    val = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor):
        return None
    try:
        return [int(d) for d in val.shape]
    except Exception:  # noqa: BLE001 - a symbolic size (an unbacked one raises its guard error)
        return None


def _is(n, names):
    return isinstance(n, torch.fx.Node) and n.op == "call_function" and any(
        n.target is _aten(name) for name in names)


def _repeated_source(n):
    """(x, rep) when n is view(clone(expand(unsqueeze(x, 2)))) repeating x [.., Hkv, S, D] to
    [.., Hkv * rep, S, D]; else None."""
    if not _is(n, _VIEWS):
        return None
    e = n.args[0]
    if _is(e, ("clone.default",)):
        e = e.args[0]
    if not _is(e, ("expand.default",)) or not _is(e.args[0], ("unsqueeze.default",)):
        return None
    u = e.args[0]
    x = u.args[0]
    xs, us, es, ns = _shape(x), _shape(u), _shape(e), _shape(n)
    if None in (xs, us, es, ns) or len(xs) < 3:
        return None
    r = len(xs)
    dim = u.args[1] if len(u.args) > 1 else u.kwargs.get("dim")
    if dim not in (r - 2, -3):
        return None
    rep = es[r - 2]
    if us != xs[:-2] + [1] + xs[-2:] or es != xs[:-2] + [rep] + xs[-2:]:
        return None
    if ns != xs[:-3] + [xs[-3] * rep] + xs[-2:]:
        return None
    return x, rep


def fold_repeat_kv(gm):
    """Rewrites attention calls on repeated K and V in gm's graph (see the module docstring).
    Returns how many it rewrote."""
    sdpa = _aten("scaled_dot_product_attention.default")
    if sdpa is None or "enable_gqa" not in [a.name for a in sdpa._schema.arguments]:
        return 0  # torch < 2.5: no grouped attention to evaluate the rewritten call with
    count = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target is not sdpa or n.kwargs.get("enable_gqa"):
            continue
        if len(n.args) < 3:
            continue
        k, v = _repeated_source(n.args[1]), _repeated_source(n.args[2])
        if k is None or v is None or k[1] != v[1] or k[1] < 2:
            continue
        n.args = (n.args[0], k[0], v[0]) + tuple(n.args[3:])
        n.kwargs = dict(n.kwargs, enable_gqa=True)
        count += 1
    return count


def grouped_shapes(q, k, v, mask=None):
    """The shapes of attention(q, k, v, mask, enable_gqa=True) as tern's broadcasting attention
    takes it: query head h = g * rep + r reads key/value head g, so q [.., Hq, L, E] becomes
    [.., Hkv, rep, L, E], k and v [.., Hkv, 1, S, E], a mask's head dim (1 or Hq, when it has
    one) split the same way; returns (q, k, v, mask or None, out [.., Hkv, rep, L, Ev]) shapes.
    Raises Unsupported for heads that do not group."""
    qs, ks, vs = list(q), list(k), list(v)
    if len(qs) < 3 or len(ks) != len(qs) or len(vs) != len(qs):
        raise Unsupported("enable_gqa with q %s, k %s, v %s (expected [.., heads, L, E])"
                          % (qs, ks, vs))
    hq, hkv = qs[-3], ks[-3]
    if hkv < 1 or hq % hkv or vs[-3] != hkv:
        raise Unsupported("enable_gqa: %d query heads are not a multiple of %d key heads / "
                          "%d value heads" % (hq, hkv, vs[-3]))
    rep = hq // hkv
    ms = None
    if mask is not None and len(mask) >= 3:
        m = list(mask)
        split = [hkv, rep] if m[-3] == hq else [1, 1] if m[-3] == 1 else None
        if split is None:
            raise Unsupported("enable_gqa: the mask's %d heads are neither 1 nor the query's %d"
                              % (m[-3], hq))
        ms = m[:-3] + split + m[-2:]
    return (qs[:-3] + [hkv, rep] + qs[-2:], ks[:-3] + [hkv, 1] + ks[-2:],
            vs[:-3] + [hkv, 1] + vs[-2:], ms, qs[:-3] + [hkv, rep, qs[-2], vs[-1]])
