"""Reshapes around row-wise ops, dropped.

Attention written out by hand (Whisper's, BART's, many `transformers` encoders) reshapes its
scores around the softmax: view [B*H, L, S] -> [B, H, L, S], a multiply by a scalar (Whisper's
by 1.0), softmax over the last dim, view back to [B*H, L, S]. A reshape that keeps the last dim
changes nothing for ops that work row by row, yet each costs a copy of the scores in a delegate
that cannot alias it (the cpu backend's reshape is XNNPACK's copy: 54 MB a layer for Whisper-tiny
at 1500 frames). fold_row_views rewrites such a chain in the captured FX graph to run on the
reshape's input and gives the reshape back's readers the chain's last node; the views are left
without users and are not lowered.
"""
import torch

from .gqa import _VIEWS, _aten, _is, _shape

# Ops that compute each row (last dim) of their first argument on its own, the other arguments
# scalars: their result does not depend on how the leading dims are shaped.
_SCALAR_OPS = ("mul.Tensor", "mul.Scalar", "div.Tensor", "div.Scalar", "add.Tensor",
               "add.Scalar", "sub.Tensor", "sub.Scalar")
_SOFTMAX = ("_softmax.default", "_log_softmax.default")


def _row_op(n, rank):
    """Whether FX node n computes row by row on its first argument (a tensor of `rank` dims)."""
    if _is(n, _SCALAR_OPS):
        return all(not isinstance(a, torch.fx.Node) for a in n.args[1:]) and not n.kwargs
    if _is(n, _SOFTMAX):
        return len(n.args) >= 2 and n.args[1] in (-1, rank - 1)
    return False


def _through_identity_expand(n):
    """n, or the only reader of n when n is an expand to its input's own shape (what a 4-D
    matmul's decomposition puts before the reshape to 3-D)."""
    if _is(n, ("expand.default",)) and len(n.users) == 1 and _shape(n) == _shape(n.args[0]):
        return next(iter(n.users))
    return n


def fold_row_views(gm):
    """Rewrites view -> row-wise ops -> view back chains of gm's graph (the module docstring).
    Returns how many it rewrote."""
    count = 0
    for v1 in list(gm.graph.nodes):
        if not _is(v1, _VIEWS) or len(v1.users) != 1:
            continue
        a = v1.args[0]
        a_shape, s1 = _shape(a), _shape(v1)
        if a_shape is None or s1 is None or not a_shape or not s1 or a_shape[-1] != s1[-1]:
            continue
        chain, cur = [], v1
        while len(cur.users) == 1:
            user = next(iter(cur.users))
            if user.args[0] is not cur or not _row_op(user, len(s1)):
                break
            chain.append(user)
            cur = user
        if not chain or not cur.users:
            continue
        backs = [_through_identity_expand(b) for b in cur.users]
        if not all(b is not None and _is(b, _VIEWS) and _shape(b) == a_shape for b in backs):
            continue
        chain[0].args = (a,) + tuple(chain[0].args[1:])
        for n in chain:
            if _is(n, _SOFTMAX):
                n.args = (n.args[0], -1) + tuple(n.args[2:])
        for b in backs:
            b.replace_all_uses_with(cur)
        count += 1
    return count
