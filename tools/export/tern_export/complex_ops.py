"""Complex tensors during lowering: FFTs (torch.fft, torch.stft) and the arithmetic around them,
expressed with real tern operators (docs/export.md, *Complex values and FFTs*).

tern has no complex dtype. A complex tensor z of shape S is carried as the real f32 tensor
view_as_real(z), of shape S + [2] (real and imaginary parts interleaved) -- or, while its
imaginary part is known to be zero (a real tensor cast to complex), as the real tensor itself.
A discrete Fourier transform along one dim is then a matrix product by a constant DFT matrix:
the dim moved last, the interleaved pairs flattened, one `linear` (which the backends run as a
GEMM) and the pairs restored. Sizes are static, so the matrices are computed here, in float64.
"""
import math

import torch

from .errors import Unsupported
from .values import Const, TVal

aten = torch.ops.aten


class CVal:
    """A complex value: `inner` (a TVal or Const of f32) holds view_as_real(z), or z's real part
    when `zero_im`; `real` is the complex tensor PyTorch computed."""
    __slots__ = ("inner", "zero_im", "real")

    def __init__(self, inner, zero_im, real):
        self.inner = inner
        self.zero_im = zero_im
        self.real = real

    @property
    def rank(self):
        return self.real.dim()


def _is_complex_tensor(t):
    return isinstance(t, torch.Tensor) and t.is_complex()


def involves_complex(real, flat):
    """True when the node reads or makes a complex tensor (and so is lowered here)."""
    if any(isinstance(a, CVal) for a in flat):
        return True
    reals = real if isinstance(real, (list, tuple)) else [real]
    return any(_is_complex_tensor(r) for r in reals)


def _as_cval(x):
    """x as a CVal: a complex constant becomes one of its interleaved parts."""
    if isinstance(x, CVal):
        return x
    if isinstance(x, Const) and _is_complex_tensor(x.value):
        t = x.value.to(torch.complex64).resolve_conj()
        return CVal(Const(torch.view_as_real(t).contiguous(), x.name), False, x.value)
    return None


def _pairs_real(z):
    """The real f32 tensor holding complex z's interleaved parts."""
    return torch.view_as_real(z.to(torch.complex64).resolve_conj()).contiguous()


def _wrap(dim, rank):
    return dim % rank if rank else 0


# Building blocks ------------------------------------------------------------------------------

def _emit(L, op, args, real):
    return L.emit(op, args, real.contiguous())


def _pairs(L, cv):
    """cv's interleaved parts (a TVal or Const of shape S + [2]): a zero imaginary part is
    appended by one multiply, x[..., None] * [1, 0]."""
    if not cv.zero_im:
        return cv.inner
    x = cv.inner
    rx = _real(x)
    unit = Const(torch.tensor([1.0, 0.0]), "complex_unit")
    col = _emit(L, "view", [L.tensor_id(x), L.mb.int_list(list(rx.shape) + [1])],
                rx.unsqueeze(-1))
    return _emit(L, "mul", [col.vid, L.tensor_id(unit)], rx.unsqueeze(-1) * unit.value)


def _real(x):
    return x.real if isinstance(x, TVal) else x.value


def _linear(L, x, matrix, real_out=None):
    """x [..., K] @ matrix [K, N] as tern::linear (weight [N, K], no bias)."""
    rx = _real(x)
    weight = Const(matrix.t().contiguous().to(torch.float32), "dft_matrix")
    out = torch.nn.functional.linear(rx, weight.value) if real_out is None else real_out
    return _emit(L, "linear", [L.tensor_id(x), L.tensor_id(weight), L.mb.none()], out)


def _permute(L, x, dims):
    if list(dims) == list(range(len(dims))):
        return x
    rx = _real(x)
    return _emit(L, "permute", [L.tensor_id(x), L.mb.int_list(list(dims))], rx.permute(dims))


def _view(L, x, shape):
    rx = _real(x)
    if list(rx.shape) == list(shape):
        return x
    return _emit(L, "view", [L.tensor_id(x), L.mb.int_list(list(shape))], rx.reshape(shape))


def _angles(n_in, n_out, period):
    j = torch.arange(n_in, dtype=torch.int64).view(-1, 1)
    k = torch.arange(n_out, dtype=torch.int64).view(1, -1)
    return (j * k % period).to(torch.float64) * (2.0 * math.pi / period)


def _scale(normalization, n):
    # ATen's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n.
    return {0: 1.0, 1: 1.0 / math.sqrt(n), 2: 1.0 / n}[int(normalization)]


def _dft_along(L, cv, dim, m, forward, scale):
    """The DFT of cv along `dim` (size n), keeping the first m outputs: out_k = scale *
    sum_j z_j exp(-+2 pi i j k / n). Returns a full CVal (its `real` left to the caller)."""
    r = cv.rank
    n = int(cv.real.shape[dim])
    theta = _angles(n, m, n)
    c, s = torch.cos(theta) * scale, torch.sin(theta) * scale
    sign = -1.0 if forward else 1.0  # exp(i * sign * theta) = C + i * sign * S
    if cv.zero_im:
        # z = x real: re = x C, im = sign * x S; one matrix [n, 2m], outputs interleaved.
        w = torch.stack([c, sign * s], dim=-1).reshape(n, 2 * m)
        order = [d for d in range(r) if d != dim] + [dim]
        moved = _permute(L, cv.inner, order)
        flat = moved
    else:
        # (re + i im)(C + i sign S): rows (j, re) -> [C, sign S], rows (j, im) -> [-sign S, C].
        w = torch.empty(n, 2, m, 2, dtype=torch.float64)
        w[:, 0, :, 0], w[:, 0, :, 1] = c, sign * s
        w[:, 1, :, 0], w[:, 1, :, 1] = -sign * s, c
        w = w.reshape(2 * n, 2 * m)
        order = [d for d in range(r) if d != dim] + [dim, r]
        moved = _permute(L, cv.inner, order)
        lead = list(_real(moved).shape[:-2])
        flat = _view(L, moved, lead + [2 * n])
    out = _linear(L, flat, w)
    lead = list(_real(out).shape[:-1])
    pairs = _view(L, out, lead + [m, 2])
    back = [0] * (r + 1)
    for pos, d in enumerate(order[:r]):
        back[d] = pos
    back[r] = r
    shape = list(cv.real.shape)
    shape[dim] = m
    return CVal(_permute(L, pairs, back), False, torch.zeros(shape, dtype=torch.complex64))


def _finish(L, cv, real):
    """cv with PyTorch's value attached (the emitted tensor keeps its own real value)."""
    cv.real = real
    return cv


# Handlers --------------------------------------------------------------------------------------

def _fft_r2c(L, n, a, real):
    x = a["self"]
    if isinstance(x, CVal):
        raise Unsupported("_fft_r2c of a complex tensor")
    dims = [_wrap(d, _real_of(x).dim()) for d in _V(a["dim"])]
    onesided = bool(_V(a["onesided"]))
    norm = _V(a["normalization"])
    cv = CVal(_cast_f32(L, x), True, _real_of(x).to(torch.complex64))
    # The last dim first (its outputs halved when onesided), then the others in full.
    for i, d in enumerate(reversed(dims)):
        size = int(cv.real.shape[d])
        m = size // 2 + 1 if (i == 0 and onesided) else size
        cv = _dft_along(L, cv, d, m, True, _scale(norm, size))
    return _finish(L, cv, real)


def _fft_c2c(L, n, a, real):
    cv = _operand(L, a["self"])
    forward = bool(_V(a["forward"]))
    norm = _V(a["normalization"])
    for d in reversed([_wrap(d, cv.rank) for d in _V(a["dim"])]):
        size = int(cv.real.shape[d])
        cv = _dft_along(L, cv, d, size, forward, _scale(norm, size))
    return _finish(L, cv, real)


def _fft_c2r(L, n, a, real):
    # irfft: the dims but the last by inverse complex DFTs, then the last from its one-sided
    # spectrum (first size // 2 + 1 entries) to `last_dim_size` real outputs:
    # x_t = sum_k w_k (re_k cos(2 pi k t / N) - im_k sin(2 pi k t / N)), w_k = 1 for k = 0 and
    # (N even) k = N / 2, 2 otherwise; imaginary parts of those two are ignored (as pocketfft).
    cv = _operand(L, a["self"])
    dims = [_wrap(d, cv.rank) for d in _V(a["dim"])]
    norm = _V(a["normalization"])
    big_n = int(_V(a["last_dim_size"]))
    for d in reversed(dims[:-1]):
        size = int(cv.real.shape[d])
        cv = _dft_along(L, cv, d, size, False, _scale(norm, size))
    last = dims[-1]
    m_in = int(cv.real.shape[last])
    half = big_n // 2 + 1
    theta = _angles(min(m_in, half), big_n, big_n)
    weight = torch.full((theta.shape[0], 1), 2.0, dtype=torch.float64)
    weight[0] = 1.0
    if big_n % 2 == 0 and half - 1 < theta.shape[0]:
        weight[half - 1] = 1.0
    scale = _scale(norm, big_n)
    w = torch.zeros(m_in, 2, big_n, dtype=torch.float64)
    w[:theta.shape[0], 0] = weight * torch.cos(theta) * scale
    w[:theta.shape[0], 1] = -weight * torch.sin(theta) * scale
    r = cv.rank
    pairs = _pairs(L, cv)
    order = [d for d in range(r) if d != last] + [last, r]
    moved = _permute(L, pairs, order)
    lead = list(_real(moved).shape[:-2])
    flat = _view(L, moved, lead + [2 * m_in])
    perm_real = real.permute([d for d in range(r) if d != last] + [last])
    out = _linear(L, flat, w.reshape(2 * m_in, big_n), perm_real.contiguous())
    back = [0] * r
    for pos, d in enumerate(order[:r]):
        back[d] = pos
    return _permute(L, out, back) if back != list(range(r)) else out


def _to_copy(L, n, a, real):
    x = a["self"]
    if _is_complex_tensor(real):
        if real.dtype != torch.complex64:
            raise Unsupported("complex dtype %s (tern computes complex64 in f32 pairs)"
                              % real.dtype)
        if isinstance(x, CVal):
            return _finish(L, CVal(x.inner, x.zero_im, None), real)
        return CVal(_cast_f32(L, x), True, real)
    cv = _operand(L, x)  # complex to real: the real part (PyTorch warns and does the same)
    return _cast(L, _part(L, cv, 0), real.dtype)


def _view_as_real(L, n, a, real):
    return _pairs(L, _operand(L, a["self"]))


def _view_as_complex(L, n, a, real):
    x = a["self"]
    if isinstance(x, CVal):
        raise Unsupported("view_as_complex of a complex tensor")
    return CVal(_cast_f32(L, x), False, real)


def _part(L, cv, index):
    """The real (0) or imaginary (1) part of cv as a real tensor."""
    if cv.zero_im:
        if index == 0:
            return cv.inner
        z = torch.zeros(cv.real.shape, dtype=torch.float32)
        return Const(z, "zero_imag")
    x = cv.inner
    rx = _real(x)
    return _emit(L, "select", [L.tensor_id(x), L.mb.int(rx.dim() - 1), L.mb.int(index)],
                 rx.select(-1, index))


def _real_part(L, n, a, real):
    return _part(L, _operand(L, a["self"]), 0)


def _imag_part(L, n, a, real):
    return _part(L, _operand(L, a["self"]), 1)


def _abs(L, n, a, real):
    cv = _operand(L, a["self"])
    if cv.zero_im:
        x = cv.inner
        return _emit(L, "abs", [L.tensor_id(x)], _real(x).abs())
    x = cv.inner
    rx = _real(x)
    sq = _emit(L, "mul", [L.tensor_id(x), L.tensor_id(x)], rx * rx)
    total = _emit(L, "sum", [sq.vid, L.mb.int_list([rx.dim() - 1]), L.mb.bool(False)],
                  (rx * rx).sum(-1))
    return _emit(L, "sqrt", [total.vid], real)


def _conj(L, n, a, real):
    cv = _operand(L, a["self"])
    if cv.zero_im:
        return cv
    x = cv.inner
    flip = Const(torch.tensor([1.0, -1.0]), "conj_sign")
    out = _emit(L, "mul", [L.tensor_id(x), L.tensor_id(flip)], _real(x) * flip.value)
    return CVal(out, False, real)


def _column(L, x):
    """A real tensor x as x[..., None] (to scale both parts of a complex value)."""
    rx = _real(x)
    if isinstance(x, Const):
        return Const(rx.unsqueeze(-1).contiguous(), x.name)
    return _emit(L, "view", [x.vid, L.mb.int_list(list(rx.shape) + [1])], rx.unsqueeze(-1))


def _factor(L, other):
    """A real operand scaling both parts of an interleaved value: a tensor of rank >= 1 as a
    column (broadcast over the pair), a 0-D tensor or a number as it is."""
    if isinstance(other, (TVal, Const)) and _real(other).dim() > 0:
        return _column(L, other)
    return other


def _scalar_const(v, name):
    return Const(torch.tensor(float(v), dtype=torch.float32), name)


def _mul(L, n, a, real):
    x, y = a["self"], a["other"]
    cx, cy = _as_cval(x), _as_cval(y)
    if cx is not None and cy is not None:
        return CVal(_complex_product(L, cx, cy), False, real)
    cv, other = (cx, y) if cx is not None else (cy, x)
    other = _real_operand(other)
    if cv.zero_im:
        return CVal(_binary(L, "mul", cv.inner, other), True, real)
    return CVal(_binary(L, "mul", cv.inner, _factor(L, other)), False, real)


def _div(L, n, a, real):
    x, y = a["self"], a["other"]
    if _as_cval(y) is not None:
        raise Unsupported("division by a complex tensor")
    cv = _operand(L, x)
    other = _real_operand(y)
    if cv.zero_im:
        return CVal(_binary(L, "div", cv.inner, other), True, real)
    return CVal(_binary(L, "div", cv.inner, _factor(L, other)), False, real)


def _add_sub(op):
    def handler(L, n, a, real):
        alpha = _V(a["alpha"]) if "alpha" in a else 1
        if alpha != 1:
            raise Unsupported("%s of complex values with alpha=%r" % (op, alpha))
        x, y = a["self"], a["other"]
        cx, cy = _as_cval(x), _as_cval(y)
        if cx is None:
            cx = CVal(_real_operand(x), True, None)
        if cy is None:
            cy = CVal(_real_operand(y), True, None)
        if cx.zero_im and cy.zero_im:
            return CVal(_binary(L, op, cx.inner, cy.inner), True, real)
        return CVal(_binary(L, op, _pairs(L, cx), _pairs(L, cy)), False, real)
    return handler


def _neg(L, n, a, real):
    cv = _operand(L, a["self"])
    x = cv.inner
    return CVal(_emit(L, "neg", [L.tensor_id(x)], -_real(x)), cv.zero_im, real)


def _complex_product(L, cx, cy):
    """(a + ib)(c + id) = (ac - bd) + i(ad + bc), on interleaved pairs:
    x * c + flip(x) * d * [-1, 1] with c, d the parts of y as columns."""
    if cx.zero_im and cy.zero_im:
        return _binary(L, "mul", cx.inner, cy.inner)
    if cx.zero_im:
        cx, cy = cy, cx
    x = cx.inner
    if cy.zero_im:
        return _binary(L, "mul", x, _column(L, cy.inner))
    yc = _slice_last(L, cy.inner, 0)
    yd = _slice_last(L, cy.inner, 1)
    rx = _real(x)
    flipped = _emit(L, "flip", [L.tensor_id(x), L.mb.int_list([rx.dim() - 1])], rx.flip(-1))
    sign = Const(torch.tensor([-1.0, 1.0]), "complex_sign")
    ac = _binary(L, "mul", x, yc)
    bd = _binary(L, "mul", _binary(L, "mul", flipped, yd), sign)
    return _binary(L, "add", ac, bd)


def _slice_last(L, x, index):
    rx = _real(x)
    if isinstance(x, Const):
        return Const(rx[..., index:index + 1].contiguous(), x.name)
    last = rx.dim() - 1
    return _emit(L, "slice", [x.vid, L.mb.int(last), L.mb.int(index), L.mb.int(index + 1),
                              L.mb.int(1)], rx[..., index:index + 1])


def _binary(L, op, x, y):
    rx = _real(x)
    ry = _real(y) if isinstance(y, (TVal, Const)) else None
    if ry is None:
        y = _scalar_const(y, "scalar")
        ry = y.value
    fn = {"mul": torch.mul, "div": torch.div, "add": torch.add, "sub": torch.sub}[op]
    return _emit(L, op, [L.tensor_id(x), L.tensor_id(y)], fn(rx, ry))


# Structural ops: the same op on the interleaved tensor, dims counted in the complex rank ----------

def _structural(L, n, a, real, handler, adjust):
    cv = _operand(L, a["self"])
    args = dict(a)
    args["self"] = cv.inner
    if not cv.zero_im:
        adjust(args, cv.rank)
    inner_real = real.real.contiguous() if cv.zero_im else _pairs_real(real)
    out = handler(L, n, args, inner_real)
    return CVal(out, cv.zero_im, real)


def _dim_arg(name, extra=0):
    def adjust(args, rank):
        args[name] = Const(_wrap(_V(args[name]), rank + extra))
    return adjust


def _dims_arg(name):
    def adjust(args, rank):
        args[name] = Const([_wrap(d, rank) for d in _V(args[name])] + [rank])
    return adjust


def _no_adjust(args, rank):
    pass


def _structural_table():
    from . import ops_table as ot
    h = ot.HANDLERS
    table = {}

    def add(names, adjust):
        for op in ot._overloads(names):
            if op in h:
                table[op] = (h[op], adjust)
    add(ot._VIEWS + ["alias.default", "detach.default", "clone.default",
                     "expand.default", "lift_fresh_copy.default"], _no_adjust)
    add(["permute.default"], _dims_arg("dims"))
    add(["select.int", "slice.Tensor", "index_select.default"], _dim_arg("dim"))
    add(["transpose.int"], lambda args, rank: (_dim_arg("dim0")(args, rank),
                                               _dim_arg("dim1")(args, rank)))
    add(["flip.default"], lambda args, rank: args.__setitem__(
        "dims", Const([_wrap(d, rank) for d in _V(args["dims"])])))
    return table


_STRUCTURAL = None


# Dispatch --------------------------------------------------------------------------------------

def _handlers():
    table = {}

    def add(names, fn):
        from . import ops_table as ot
        for op in ot._overloads(names):
            table[op] = fn
    add(["_fft_r2c.default"], _fft_r2c)
    add(["_fft_c2c.default"], _fft_c2c)
    add(["_fft_c2r.default"], _fft_c2r)
    add(["_to_copy.default"], _to_copy)
    add(["view_as_real.default", "view_as_real_copy.default"], _view_as_real)
    add(["view_as_complex.default", "view_as_complex_copy.default"], _view_as_complex)
    add(["real.default"], _real_part)
    add(["imag.default"], _imag_part)
    add(["abs.default"], _abs)
    add(["conj.default", "_conj.default", "conj_physical.default"], _conj)
    add(["resolve_conj.default", "resolve_neg.default"], lambda L, n, a, real: _operand(L,
                                                                                     a["self"]))
    add(["mul.Tensor", "mul.Scalar"], _mul)
    add(["div.Tensor", "div.Scalar"], _div)
    add(["add.Tensor", "add.Scalar"], _add_sub("add"))
    add(["sub.Tensor", "sub.Scalar"], _add_sub("sub"))
    add(["neg.default"], _neg)
    return table


_HANDLERS = None


def lower(L, n, a, real):
    """The LVal of node n, which reads or makes a complex tensor."""
    global _HANDLERS, _STRUCTURAL
    if _HANDLERS is None:
        _HANDLERS, _STRUCTURAL = _handlers(), _structural_table()
    fn = _HANDLERS.get(n.target)
    if fn is not None:
        return fn(L, n, a, real)
    entry = _STRUCTURAL.get(n.target)
    if entry is not None and _is_complex_tensor(real):
        handler, adjust = entry
        return _structural(L, n, a, real, handler, adjust)
    raise Unsupported("complex values: %s is not taken on complex tensors (FFTs, view_as_real/"
                      "complex, real/imag, abs, conj, +, -, * and / by real or complex values "
                      "and the view, permute, slice and select ops are)" % (n.target,))


# Helpers -----------------------------------------------------------------------------------------

def _V(x):
    from .ops_table import V
    return V(x)


def _real_of(x):
    from .ops_table import real_of
    return real_of(x)


def _operand(L, x):
    cv = _as_cval(x)
    if cv is None:
        return CVal(_real_operand(x), True, _real_of(x).to(torch.complex64))
    return cv


def _real_operand(x):
    """A real operand: a TVal, a real Const tensor, or a Python number."""
    if isinstance(x, TVal):
        return x
    if isinstance(x, Const):
        if isinstance(x.value, torch.Tensor):
            return x
        if isinstance(x.value, complex):
            raise Unsupported("a complex Python scalar operand")
        return x.value
    raise Unsupported("operand %s" % type(x).__name__)


def _cast_f32(L, x):
    if isinstance(x, Const):
        return Const(x.value.to(torch.float32), x.name)
    return L.cast(x, torch.float32)


def _cast(L, x, dtype):
    if isinstance(x, Const):
        return Const(x.value.to(dtype), x.name)
    return L.cast(x, dtype)
