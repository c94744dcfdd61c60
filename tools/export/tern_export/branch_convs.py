"""Parallel convolution branches over one input, summed, folded into one convolution.

Re-parameterizable models (RepVGG, MobileOne, RepViT, FastViT, RepGhost, ...) train with several
branches over the same input and sum them: a 3x3 conv, a 1x1 conv, the identity, each with its
batch norm, sometimes a batch norm or a per-channel scale after the sum. Their authors fold the
branches into one conv for deployment (`reparameterize()`), but a model exported as it is
trained runs every branch and every add: five passes over the activation where one would do.

Each branch is affine in x, so their sum is one conv of x: the kernels embedded at the same
centre and added, the biases added, batch norms and constant scales folded into both.
fold_branch_convs rewrites such a sum in the captured FX graph into one `aten.convolution` whose
weight and bias are new constants (float64 arithmetic, stored in the first conv's dtype); the
branches are left without users and are not lowered. The result differs from the branches'
sum by float rounding only.

What a sum may be made of (every node but x read once, by the next one):
  - conv2d(x, W, b) with constant W and b (or no bias); all of one sum's convs with the same
    stride, dilation and groups and their windows centred alike (2·pad − dilation·(k − 1) the
    same for each dim; kernels of different sizes are embedded at the centre of the largest);
  - x itself (the identity branch): only beside stride-1 "same" convs whose out channels are
    x's channels;
  - a batch norm in eval mode (constant statistics) of any of these, `mul` by a constant
    per-channel tensor or number, `add` of a constant per-channel tensor or number;
  - add(a, b) and sub(a, b) (alpha 1) of two such terms.
The sum's nodes are left without users (not lowered), like erf_gelu's.
A sum is rewritten only when it has at least two branches (convs or identities), so a lone
conv + batch norm keeps the exporter's own fold.
"""
import operator

import torch

from .gqa import _is
from .node_meta import node_shape
from .ops_table import BN_OPS, NATIVE_BN

_ADD = ("add.Tensor",)
_SUB = ("sub.Tensor",)
_MUL = ("mul.Tensor",)
_CONV = ("convolution.default",)


class _Term:
    """y = conv(x, w, b) (w float64 [O, C/g, kh, kw]), or when w is None the diagonal
    y = x · s + b (s, b float64 per channel or of one element, broadcast)."""

    def __init__(self, x, w=None, b=None, s=None, stride=(1, 1), pad=(0, 0), dil=(1, 1),
                 groups=1, branches=1):
        self.x, self.w, self.b, self.s = x, w, b, s
        self.stride, self.pad, self.dil, self.groups = tuple(stride), tuple(pad), tuple(dil), groups
        self.branches = branches
        self.first_conv = None  # the FX node of the first conv folded in (for names and meta)

    def scaled(self, c, t):
        """This term times c plus t (per output channel, or numbers)."""
        out = _Term(self.x, None, None, None, self.stride, self.pad, self.dil, self.groups,
                    self.branches)
        out.first_conv = self.first_conv
        if self.w is not None:
            out.w = self.w * c.reshape(-1, 1, 1, 1)
        else:
            out.s = self.s * c
        out.b = self.b * c + t
        return out


def _centre(t, d):
    """2·pad − dilation·(k − 1) of conv term t along spatial dim d (0 for a diagonal)."""
    if t.w is None:
        return 0
    return 2 * t.pad[d] - t.dil[d] * (t.w.shape[2 + d] - 1)


def _as_conv(t, like):
    """Diagonal term t as a 1x1 conv of `like`'s groups; None when it cannot be one."""
    o, cg = like.w.shape[0], like.w.shape[1]
    channels = cg * like.groups
    if like.stride != (1, 1) or o != channels:
        return None
    s = t.s.expand(o) if t.s.numel() == 1 else t.s
    if s.numel() != o:
        return None
    w = torch.zeros(o, cg, 1, 1, dtype=torch.float64)
    idx = torch.arange(o)
    w[idx, idx % cg, 0, 0] = s
    out = _Term(t.x, w, t.b, None, (1, 1), (0, 0), like.dil, like.groups, t.branches)
    return out


def _embedded(w, kh, kw):
    """Kernel w [O, C/g, h, w] centred in a zero kernel of kh x kw."""
    h, wd = w.shape[2], w.shape[3]
    out = torch.zeros(w.shape[0], w.shape[1], kh, kw, dtype=torch.float64)
    top, left = (kh - h) // 2, (kw - wd) // 2
    out[:, :, top:top + h, left:left + wd] = w
    return out


def _sum(a, b):
    """The term a + b, or None when they are not one conv of the same x."""
    if a is None or b is None or a.x is not b.x:
        return None
    if a.w is None and b.w is None:
        out = _Term(a.x, s=a.s + b.s, b=a.b + b.b, branches=a.branches + b.branches)
        out.first_conv = a.first_conv or b.first_conv
        return out
    if a.w is None or b.w is None:  # one diagonal: same-padded stride-1 windows only
        conv, diag = (b, a) if a.w is None else (a, b)
        if _centre(conv, 0) != 0 or _centre(conv, 1) != 0:
            return None
        diag = _as_conv(diag, conv)
        if diag is None:
            return None
        a, b = conv, diag
    if (a.stride != b.stride or a.dil != b.dil or a.groups != b.groups
            or a.w.shape[:2] != b.w.shape[:2]):
        return None
    kh, kw = max(a.w.shape[2], b.w.shape[2]), max(a.w.shape[3], b.w.shape[3])
    pads = []
    for d, k in ((0, kh), (1, kw)):
        if _centre(a, d) != _centre(b, d):
            return None
        for t in (a, b):
            if (k - t.w.shape[2 + d]) % 2:
                return None
        big = a if a.w.shape[2 + d] == k else b
        pads.append(big.pad[d])
    out = _Term(a.x, _embedded(a.w, kh, kw) + _embedded(b.w, kh, kw), a.b + b.b, None,
                a.stride, pads, a.dil, a.groups, a.branches + b.branches)
    out.first_conv = a.first_conv or b.first_conv
    return out


class _Folder:
    def __init__(self, gm, constants):
        self.gm = gm
        self.constants = constants  # placeholder node -> tensor (lifted parameters, buffers)
        self.refresh()

    def refresh(self):
        """Finds the live nodes again (after a rewrite): those the graph's output depends on."""
        out = [n for n in self.gm.graph.nodes if n.op == "output"]
        self.live, stack = set(out), list(out)
        while stack:
            for m in stack.pop().all_input_nodes:
                if m not in self.live:
                    self.live.add(m)
                    stack.append(m)

    def readers(self, n):
        """n's live users (make_fx leaves unused detach chains and batch-norm statistics)."""
        return [u for u in n.users if u in self.live]

    def const(self, v):
        """v as a float64 tensor when it is a constant (a number, a constant node), else None."""
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return torch.tensor([float(v)], dtype=torch.float64)
        if not isinstance(v, torch.fx.Node):
            return None
        if v.op == "placeholder":
            t = self.constants.get(v)
        elif v.op == "get_attr":
            t = self.gm
            for part in v.target.split("."):
                t = getattr(t, part, None)
        else:
            return None
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            return None
        return t.detach().double()

    def channel_const(self, v, channels):
        """v as a per-channel float64 vector (a number, or a constant of [C, 1, 1] /
        [1, C, 1, 1] / one element), else None."""
        t = self.const(v)
        if t is None:
            return None
        if t.numel() == 1:
            return t.reshape(1)
        shape = list(t.shape)
        while shape and shape[0] == 1 and len(shape) > 3:
            shape.pop(0)
        if len(shape) == 3 and shape[1:] == [1, 1] and shape[0] == channels:
            return t.reshape(channels)
        return None

    def term(self, n, x, root):
        """n as a _Term of x, or None. Every node but x and the root is read once."""
        if n is x:
            return _Term(x, s=torch.ones(1, dtype=torch.float64),
                         b=torch.zeros(1, dtype=torch.float64))
        if not isinstance(n, torch.fx.Node) or (n is not root and len(self.readers(n)) != 1):
            return None
        if _is(n, _CONV):
            return self.conv_term(n, x)
        if n.op == "call_function" and n.target is operator.getitem and n.args[1] == 0:
            bn = n.args[0]
            if not (isinstance(bn, torch.fx.Node) and bn.op == "call_function"
                    and bn.target in BN_OPS):
                return None
            if self.readers(bn) != [n]:  # its saved statistics unread
                return None
            if bn.target is NATIVE_BN and bn.args[5]:
                return None  # training mode
            inner = self.term(bn.args[0], x, None)
            ss = self.bn_scale_shift(bn)
            if inner is None or ss is None:
                return None
            return inner.scaled(*ss)
        if (_is(n, _ADD) or _is(n, _SUB)) and n.kwargs.get("alpha", 1) == 1 and len(n.args) == 2:
            a, b = self.term(n.args[0], x, None), self.term(n.args[1], x, None)
            one = torch.ones(1, dtype=torch.float64)
            sign = -one if _is(n, _SUB) else one
            if a is not None and b is not None:
                return _sum(a, b.scaled(sign, 0 * one))
            if a is not None:  # a ± c
                c = self.channel_const(n.args[1], self.channels(n))
                return None if c is None else a.scaled(one, sign * c)
            if b is not None:  # c ± b
                c = self.channel_const(n.args[0], self.channels(n))
                return None if c is None else b.scaled(sign, c)
            return None
        if _is(n, _MUL) and len(n.args) == 2 and not n.kwargs:
            for i in (0, 1):
                t = self.term(n.args[i], x, None)
                if t is not None:
                    c = self.channel_const(n.args[1 - i], self.channels(n))
                    return None if c is None else t.scaled(c, torch.zeros(1, dtype=torch.float64))
            return None
        return None

    @staticmethod
    def channels(n):
        shape = node_shape(n)
        return shape[1] if shape is not None and len(shape) == 4 else -1

    def conv_term(self, n, x):
        args = list(n.args)
        if len(args) < 9 or args[0] is not x or args[6]:
            return None
        w = self.const(args[1])
        if w is None or w.dim() != 4 or list(args[7]) not in ([0, 0], [0]):
            return None
        b = torch.zeros(w.shape[0], dtype=torch.float64) if args[2] is None else self.const(args[2])
        if b is None or b.numel() != w.shape[0]:
            return None
        two = lambda v: tuple(int(e) for e in (list(v) * 2 if len(v) == 1 else v))
        t = _Term(x, w, b.reshape(-1), None, two(args[3]), two(args[4]), two(args[5]),
                  int(args[8]))
        t.first_conv = n
        return t

    def bn_scale_shift(self, bn):
        w, b, mean, var = (self.const(bn.args[i]) if bn.args[i] is not None else None
                           for i in (1, 2, 3, 4))
        if mean is None or var is None:
            return None
        if (bn.args[1] is not None and w is None) or (bn.args[2] is not None and b is None):
            return None
        eps = bn.args[7] if bn.target is NATIVE_BN else bn.args[6]
        scale = torch.rsqrt(var + float(eps))
        if w is not None:
            scale = scale * w
        shift = -mean * scale
        if b is not None:
            shift = shift + b
        return scale, shift

    def first_conv_input(self, n):
        """The input of the first conv found below n through the node kinds term() takes, each
        but n read once (so the search stays inside what term() could fold)."""
        seen, stack = set(), [n]
        while stack:
            m = stack.pop()
            if not isinstance(m, torch.fx.Node) or m in seen or m.op != "call_function":
                continue
            if m is not n and len(self.readers(m)) != 1:
                continue
            seen.add(m)
            if _is(m, _CONV):
                return m.args[0]
            if (_is(m, _ADD) or _is(m, _SUB) or _is(m, _MUL) or m.target in BN_OPS
                    or m.target is operator.getitem):
                single = m.target in BN_OPS or m.target is operator.getitem
                stack.extend(reversed(m.args[:1] if single else m.args))
        return None

    def dtype(self, v):
        """The dtype of constant node v as stored (float32 unless it says otherwise)."""
        if v.op == "placeholder" and isinstance(self.constants.get(v), torch.Tensor):
            return self.constants[v].dtype
        if v.op == "get_attr":
            t = self.gm
            for part in v.target.split("."):
                t = getattr(t, part, None)
            if isinstance(t, torch.Tensor):
                return t.dtype
        val = v.meta.get("val") if hasattr(v, "meta") else None
        return getattr(val, "dtype", torch.float32)

    def conv_node(self, t, prefix, meta):
        """A new `aten.convolution` node computing conv term t, inserted at the graph's current
        insertion point: its weight and bias stored on the module as `<prefix>_weight` /
        `_bias` in the dtype of t's first conv weight; `meta` copied onto the node."""
        graph, dtype = self.gm.graph, self.dtype(t.first_conv.args[1])
        name = "%s_%s" % (prefix, t.first_conv.name)
        self.gm.register_buffer(name + "_weight", t.w.to(dtype))
        self.gm.register_buffer(name + "_bias", t.b.expand(t.w.shape[0]).contiguous().to(dtype))
        node = graph.call_function(
            torch.ops.aten.convolution.default,
            (t.x, graph.get_attr(name + "_weight"), graph.get_attr(name + "_bias"),
             list(t.stride), list(t.pad), list(t.dil), False, [0, 0], t.groups))
        node.meta = dict(meta)
        return node


def fold_branch_convs(gm, constants):
    """Rewrites the sums of convolution branches in gm's graph (the module docstring) into one
    convolution each. `constants` maps constant placeholder nodes to their tensors. Returns how
    many sums it rewrote."""
    folder = _Folder(gm, constants)
    graph = gm.graph
    done = set()
    count = 0
    for n in reversed(list(graph.nodes)):
        if n in done or n.op != "call_function" or not folder.readers(n):
            continue
        if not (_is(n, _ADD) or _is(n, _SUB) or _is(n, _MUL) or n.target is operator.getitem):
            continue
        x = folder.first_conv_input(n)
        if x is None:
            continue
        t = folder.term(n, x, n)
        if t is None or t.w is None or t.branches < 2:
            continue
        with graph.inserting_before(n):
            new = folder.conv_node(t, "tern_branches_%d" % count, n.meta)
        n.replace_all_uses_with(new)
        stack = [n]
        while stack:  # the sum's nodes: not visited again as roots
            m = stack.pop()
            if m in done or m is x or not isinstance(m, torch.fx.Node):
                continue
            done.add(m)
            stack.extend(a for a in m.all_input_nodes if a is not x)
        folder.refresh()
        count += 1
    return count
