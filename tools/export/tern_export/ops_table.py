"""The explicit ATen -> tern operator table (docs/export.md; argument order: docs/ops.md).

A handler is `handler(L, node, a, real) -> LVal` where L is the Lowerer, `a` the node's
arguments bound to the ATen schema's names (defaults filled in; each a TVal, Const, Multi or a
list of them) and `real` the value PyTorch computed for the node on the example inputs.
Handlers raise errors.Unsupported (with a reason) for a case they cannot express.
"""
import torch
import torch.fx

from . import gqa
from .errors import Unsupported
from .values import Const, Multi, TVal, Unavailable

aten = torch.ops.aten

HANDLERS = {}


def _overloads(names):
    result = []
    for name in names:
        packet, _, overload = name.partition(".")
        try:
            op = getattr(getattr(aten, packet), overload or "default")
        except (AttributeError, RuntimeError):
            continue  # not in this PyTorch version
        result.append(op)
    return result


def handles(*names):
    def register(fn):
        for op in _overloads(names):
            HANDLERS[op] = fn
        return fn
    return register


def bind(op, args, kwargs):
    """Arguments bound to the schema's names, defaults (as Const) filled in."""
    out = {}
    for i, arg in enumerate(op._schema.arguments):
        if i < len(args) and not arg.kwarg_only:
            out[arg.name] = args[i]
        elif arg.name in kwargs:
            out[arg.name] = kwargs[arg.name]
        elif arg.has_default_value():
            out[arg.name] = Const(arg.default_value)
        else:
            out[arg.name] = Const(None)
    return out


def V(x):
    """The literal value of an argument (recursively for lists); error for an activation."""
    if isinstance(x, Const):
        v = x.value
        if isinstance(v, (list, tuple)):
            return [V(Const(e)) if not isinstance(e, Const) else V(e) for e in v]
        return v
    if isinstance(x, (list, tuple)):
        return [V(e) for e in x]
    raise Unsupported("an attribute depends on the model's inputs (%s)" % type(x).__name__)


def real_of(x):
    if isinstance(x, TVal):
        return x.real
    if isinstance(x, Const):
        return x.value
    raise Unsupported("unexpected argument %s" % type(x).__name__)


def is_none(x):
    return isinstance(x, Const) and x.value is None


def is_tensor(x):
    return isinstance(x, TVal) or (isinstance(x, Const) and isinstance(x.value, torch.Tensor))


def opt_tensor(L, x):
    return L.mb.none() if is_none(x) else L.tensor_id(x)


def rank(x):
    return real_of(x).dim()


# Elementwise -----------------------------------------------------------------------------------

def _binary(L, a, real, op, promote=None, alpha=None):
    x, y = a["self"], a["other"]
    dt = promote if promote is not None else torch.result_type(real_of(x), real_of(y))
    if (op == "mul" and isinstance(x, TVal) and not is_tensor(y) and V(y) == 1
            and real_of(x).dtype == dt and list(real.shape) == x.shape
            and L.in_place.get(L.node) is None):
        return x  # x * 1 (Whisper scales its attention scores by 1.0): nothing to compute
    x = L.cast(x, dt) if is_tensor(x) else Const(torch.tensor(V(x), dtype=dt))
    args = [L.tensor_id(x)]
    if is_tensor(y):
        args.append(L.tensor_id(L.cast(y, dt)))
    else:
        args.append(L.scalar_id(V(y), as_float=dt.is_floating_point))
    if alpha is not None and V(alpha) != 1:
        args.append(L.scalar_id(V(alpha), as_float=dt.is_floating_point))
    return L.emit(op, args, real)


def _binary_handler(op, with_alpha=False):
    def h(L, n, a, real):
        return _binary(L, a, real, op, alpha=a.get("alpha") if with_alpha else None)
    return h


for _name, _op in [("add", "add"), ("sub", "sub")]:
    handles(_name + ".Tensor", _name + ".Scalar")(_binary_handler(_op, with_alpha=True))
handles("mul.Tensor", "mul.Scalar")(_binary_handler("mul"))
handles("maximum.default")(_binary_handler("maximum"))
handles("minimum.default")(_binary_handler("minimum"))
handles("pow.Tensor_Tensor", "pow.Tensor_Scalar")(
    lambda L, n, a, real: _binary(L, {"self": a["self"], "other": a["exponent"]}, real, "pow",
                                  promote=real.dtype))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    handles(_name + ".Tensor", _name + ".Scalar")(_binary_handler(_name))
for _name in ("logical_and", "logical_or"):
    handles(_name + ".default")(
        (lambda op: lambda L, n, a, real: L.emit(
            op, [L.tensor_id(a["self"]), L.tensor_id(a["other"])], real))(_name))


@handles("div.Tensor", "div.Scalar", "div.Tensor_mode", "div.Scalar_mode")
def _div(L, n, a, real):
    mode = V(a["rounding_mode"]) if "rounding_mode" in a else None
    x, y = a["self"], a["other"]
    dt = torch.result_type(real_of(x), real_of(y))
    args = [L.tensor_id(L.cast(x, dt))]
    if is_tensor(y):
        args.append(L.tensor_id(L.cast(y, dt)))
    else:
        args.append(L.scalar_id(V(y), as_float=dt.is_floating_point))
    if mode is not None:
        args.append(L.mb.string(mode))
    return L.emit("div", args, real)


@handles("floor_divide.default", "floor_divide.Scalar")
def _floor_divide(L, n, a, real):
    x, y = a["self"], a["other"]
    dt = real.dtype
    args = [L.tensor_id(L.cast(x, dt))]
    if is_tensor(y):
        args.append(L.tensor_id(L.cast(y, dt)))
    else:
        args.append(L.scalar_id(V(y), as_float=dt.is_floating_point))
    return L.emit("div", args + [L.mb.string("floor")], real)


@handles("remainder.Tensor", "remainder.Scalar")
def _remainder(L, n, a, real):
    # remainder(x, y) = x - y * floor(x / y)  (the sign of y, as Python's %)
    x, y = a["self"], a["other"]
    dt = real.dtype
    x = L.cast(x, dt)
    rx = real_of(x)
    if is_tensor(y):
        y = L.cast(y, dt)
        yid, ry = L.tensor_id(y), real_of(y)
    else:
        yid, ry = L.scalar_id(V(y), as_float=dt.is_floating_point), V(y)
    q = L.emit("div", [L.tensor_id(x), yid, L.mb.string("floor")],
               torch.div(rx, ry, rounding_mode="floor"))
    qy = L.emit("mul", [q.vid, yid], q.real * ry)
    return L.emit("sub", [L.tensor_id(x), qy.vid], real)


@handles("rsub.Scalar", "rsub.Tensor")
def _rsub(L, n, a, real):
    # rsub(x, other, alpha) = other - alpha * x
    x, other, alpha = a["self"], a["other"], V(a["alpha"])
    dt = real.dtype
    if is_tensor(other):
        args = [L.tensor_id(L.cast(other, dt)), L.tensor_id(L.cast(x, dt))]
        if alpha != 1:
            args.append(L.scalar_id(alpha, as_float=dt.is_floating_point))
        return L.emit("sub", args, real)
    x = L.cast(x, dt)
    neg = L.emit("mul", [L.tensor_id(x), L.scalar_id(-alpha, as_float=dt.is_floating_point)],
                 real_of(x) * -alpha)
    return L.emit("add", [neg.vid, L.scalar_id(V(other), as_float=dt.is_floating_point)], real)


@handles("where.self", "where.ScalarSelf", "where.ScalarOther", "where.Scalar")
def _where(L, n, a, real):
    cond = L.cast(a["condition"], torch.bool)
    dt = real.dtype

    def operand(x):
        if is_tensor(x):
            return L.tensor_id(L.cast(x, dt))
        return L.weight(Const(torch.tensor(V(x), dtype=dt), "scalar"))
    return L.emit("where", [L.tensor_id(cond), operand(a["self"]), operand(a["other"])], real)


_UNARY = ["neg", "abs", "exp", "log", "expm1", "log1p", "acos", "asin", "atan", "sqrt",
          "rsqrt", "reciprocal", "sin", "cos", "tanh", "sigmoid", "erf", "floor", "ceil",
          "round", "relu", "silu", "hardswish", "hardsigmoid"]


def _unary_handler(op):
    def h(L, n, a, real):
        x = a["self"]
        if real.dtype != real_of(x).dtype:
            x = L.cast(x, real.dtype)
        return L.emit(op, [L.tensor_id(x)], real)
    return h


for _name in _UNARY:
    handles(_name + ".default")(_unary_handler(_name))


@handles("logical_not.default")
def _logical_not(L, n, a, real):
    return L.emit("logical_not", [L.tensor_id(a["self"])], real)


@handles("hardtanh.default")
def _hardtanh(L, n, a, real):
    return L.emit("hardtanh", [L.tensor_id(a["self"]), L.mb.double(V(a["min_val"])),
                               L.mb.double(V(a["max_val"]))], real)


def _clamp_bound(L, v, dtype):
    if v is None:
        return L.mb.none()
    return L.mb.double(v) if dtype.is_floating_point else L.mb.int(v)


@handles("clamp.default", "clamp_min.default", "clamp_max.default")
def _clamp(L, n, a, real):
    lo = V(a["min"]) if "min" in a else None
    hi = V(a["max"]) if "max" in a else None
    x = L.cast(a["self"], real.dtype)
    return L.emit("clamp", [L.tensor_id(x), _clamp_bound(L, lo, real.dtype),
                            _clamp_bound(L, hi, real.dtype)], real)


@handles("clamp.Tensor", "clamp_min.Tensor", "clamp_max.Tensor")
def _clamp_tensor(L, n, a, real):
    # Tensor bounds (PhiMoE's router clamps by a per-token threshold): max(x, lo), then
    # min(., hi), each broadcast like PyTorch's (NaN propagates through both, as in clamp).
    x = L.cast(a["self"], real.dtype)
    for key, op in (("min", "maximum"), ("max", "minimum")):
        b = a.get(key)
        if b is None or is_none(b):
            continue
        if not is_tensor(b):
            b = Const(torch.tensor(V(b), dtype=real.dtype))
        b = L.cast(b, real.dtype)
        fn = torch.maximum if op == "maximum" else torch.minimum
        r = fn(real_of(x), real_of(b))
        x = L.emit(op, [L.tensor_id(x), L.tensor_id(b)], r)
    return x


@handles("leaky_relu.default")
def _leaky_relu(L, n, a, real):
    return L.emit("leaky_relu", [L.tensor_id(a["self"]), L.mb.double(V(a["negative_slope"]))],
                  real)


@handles("elu.default")
def _elu(L, n, a, real):
    return L.emit("elu", [L.tensor_id(a["self"]), L.mb.double(V(a["alpha"])),
                          L.mb.double(V(a["scale"])), L.mb.double(V(a["input_scale"]))], real)


@handles("gelu.default")
def _gelu(L, n, a, real):
    return L.emit("gelu", [L.tensor_id(a["self"]), L.mb.string(V(a["approximate"]))], real)


@handles("softplus.default")
def _softplus(L, n, a, real):
    return L.emit("softplus", [L.tensor_id(a["self"]), L.mb.double(V(a["beta"])),
                               L.mb.double(V(a["threshold"]))], real)


@handles("_to_copy.default")
def _to_copy(L, n, a, real):
    x = a["self"]
    if real.dtype == real_of(x).dtype:
        return L.emit("clone", [L.tensor_id(x)], real)
    if real.dtype == torch.bool and real_of(x).dtype.is_floating_point:
        # x.bool() is x != 0 (NaN too is true): a comparison with a number, which the cpu
        # delegate fuses into the selects that read it (Hunyuan-DiT's text mask) where a
        # cast to bool is no op it takes.
        return L.emit("ne", [L.tensor_id(x), L.mb.double(0.0)], real)
    return L.emit("cast", [L.tensor_id(x)], real)


# Reductions ------------------------------------------------------------------------------------

def _reduce_input(L, a, real):
    x = a["self"]
    want = V(a["dtype"]) if "dtype" in a else None
    if want is not None:
        x = L.cast(x, want)
    elif real_of(x).dtype == torch.bool:
        x = L.cast(x, torch.int64)
    return x


def _dims(a):
    d = V(a["dim"]) if "dim" in a else None
    if d is None:
        return []
    return [d] if isinstance(d, int) else list(d)


@handles("sum.dim_IntList", "sum.default", "mean.dim", "mean.default")
def _sum_mean(L, n, a, real):
    op = "sum" if n.target._schema.name == "aten::sum" else "mean"
    x = _reduce_input(L, a, real)
    keep = V(a["keepdim"]) if "keepdim" in a else False
    return L.emit(op, [L.tensor_id(x), L.mb.int_list(_dims(a)), L.mb.bool(keep)], real)


@handles("prod.dim_int", "prod.default")
def _prod(L, n, a, real):
    # One dim (prod.dim_int) or every element (prod.default); integers and bools multiply into
    # int64 as ATen's, or into the dtype argument.
    x = _reduce_input(L, a, real)
    keep = V(a["keepdim"]) if "keepdim" in a else False
    return L.emit("prod", [L.tensor_id(x), L.mb.int_list(_dims(a)), L.mb.bool(keep)], real)


@handles("var.correction", "std.correction", "var.dim", "std.dim")
def _var_std(L, n, a, real):
    # sum((x - mean(x))^2) / (N - correction) over the dims (all without any), on tern's
    # mean, sub, mul, sum and div (xLSTM's multi-head norm); std its square root.
    is_std = n.target._schema.name == "aten::std"
    x = a["self"]
    xr = real_of(x)
    if not xr.is_floating_point():
        raise Unsupported("var/std of a %s tensor" % xr.dtype)
    dims = _dims(a) or list(range(xr.dim()))
    dims = [d % max(xr.dim(), 1) for d in dims]
    if "correction" in a:
        c = V(a["correction"])
        c = 1.0 if c is None else float(c)
    else:
        c = 1.0 if V(a["unbiased"]) else 0.0
    keep = bool(V(a["keepdim"])) if "keepdim" in a else False
    count = 1
    for d in dims:
        count *= int(xr.shape[d])
    xv = TVal(L.tensor_id(x), xr)
    mean_r = xr.mean(dims, keepdim=True)
    mean = L.emit("mean", [xv.vid, L.mb.int_list(dims), L.mb.bool(True)], mean_r)
    dev_r = xr - mean_r
    dev = L.emit("sub", [xv.vid, mean.vid], dev_r)
    sq = L.emit("mul", [dev.vid, dev.vid], dev_r * dev_r)
    ss_r = (dev_r * dev_r).sum(dims, keepdim=keep)
    ss = L.emit("sum", [sq.vid, L.mb.int_list(dims), L.mb.bool(keep)], ss_r)
    denom = count - c
    var_r = ss_r / denom if denom != 0 else ss_r / 0.0
    var = L.emit("div", [ss.vid, L.scalar_id(float(denom), as_float=True)],
                 var_r if is_std else real)
    if not is_std:
        return var
    return L.emit("sqrt", [var.vid], real)


@handles("amax.default", "amin.default")
def _amax(L, n, a, real):
    op = n.target._schema.name.split("::")[1]
    return L.emit(op, [L.tensor_id(a["self"]), L.mb.int_list(_dims(a)),
                       L.mb.bool(V(a["keepdim"]))], real)


@handles("argmax.default", "argmin.default")
def _argmax(L, n, a, real):
    op = n.target._schema.name.split("::")[1]
    d = V(a["dim"])
    return L.emit(op, [L.tensor_id(a["self"]), L.mb.none() if d is None else L.mb.int(d),
                       L.mb.bool(V(a["keepdim"]))], real)


@handles("max.dim", "min.dim")
def _max_dim(L, n, a, real):
    base = "amax" if n.target._schema.name == "aten::max" else "amin"
    arg = "argmax" if base == "amax" else "argmin"
    x, d, keep = a["self"], V(a["dim"]), V(a["keepdim"])
    return Multi([
        lambda: L.emit(base, [L.tensor_id(x), L.mb.int_list([d]), L.mb.bool(keep)], real[0]),
        lambda: L.emit(arg, [L.tensor_id(x), L.mb.int(d), L.mb.bool(keep)], real[1]),
    ])


@handles("max.default", "min.default")
def _max_all(L, n, a, real):
    op = "amax" if n.target._schema.name == "aten::max" else "amin"
    return L.emit(op, [L.tensor_id(a["self"]), L.mb.int_list([]), L.mb.bool(False)], real)


@handles("cumsum.default")
def _cumsum(L, n, a, real):
    x = L.cast(a["self"], real.dtype)
    return L.emit("cumsum", [L.tensor_id(x), L.mb.int(V(a["dim"]))], real)


# Normalisation ---------------------------------------------------------------------------------

@handles("_softmax.default", "_log_softmax.default")
def _softmax(L, n, a, real):
    op = "softmax" if n.target._schema.name == "aten::_softmax" else "log_softmax"
    return L.emit(op, [L.tensor_id(a["self"]), L.mb.int(V(a["dim"]))], real)


@handles("native_layer_norm.default")
def _layer_norm(L, n, a, real):
    out = L.emit("layer_norm", [L.tensor_id(a["input"]), L.mb.int_list(V(a["normalized_shape"])),
                                opt_tensor(L, a["weight"]), opt_tensor(L, a["bias"]),
                                L.mb.double(V(a["eps"]))], real[0])
    return Multi([out, Unavailable(n.target, 1), Unavailable(n.target, 2)])


@handles("native_group_norm.default")
def _group_norm(L, n, a, real):
    out = L.emit("group_norm", [L.tensor_id(a["input"]), L.mb.int(V(a["group"])),
                                opt_tensor(L, a["weight"]), opt_tensor(L, a["bias"]),
                                L.mb.double(V(a["eps"]))], real[0])
    return Multi([out, Unavailable(n.target, 1), Unavailable(n.target, 2)])


@handles("rms_norm.default")
def _rms_norm(L, n, a, real):
    eps = V(a["eps"])
    return L.emit("rms_norm", [L.tensor_id(a["input"]), L.mb.int_list(V(a["normalized_shape"])),
                               opt_tensor(L, a["weight"]),
                               L.mb.none() if eps is None else L.mb.double(eps)], real)


NATIVE_BN = aten.native_batch_norm.default
BN_OPS = set(_overloads(["native_batch_norm.default",
                         "_native_batch_norm_legit_no_training.default"]))
BN_FOLDABLE = set(_overloads(["convolution.default", "addmm.default", "mm.default"]))


def _batch_statistics_norm(L, x, weight, bias, eps, real):
    """Batch norm by the input's own statistics (no running ones: what instance norm becomes,
    nn.InstanceNorm2d over [1, N*C, H, W]): each channel of x [N, C, *] normalized over every
    other dim. A group norm of C groups over [1, C, N * rest] (directly when N is 1)."""
    xr = real_of(x)
    if xr.dim() < 2 or not all(int(d) >= 1 for d in xr.shape):
        raise Unsupported("batch norm by batch statistics of a %s input (expected [N, C, ...])"
                          % list(xr.shape))
    xv = x if isinstance(x, TVal) else TVal(L.tensor_id(x), xr)
    shape = [int(d) for d in xr.shape]
    nb, c = shape[0], shape[1]
    rest = 1
    for d in shape[2:]:
        rest *= d
    if nb == 1:
        planes = _reshaped(L, xv, [1, c, rest] if xr.dim() != 4 else shape)
        y = L.emit("group_norm", [planes.vid, L.mb.int(c), opt_tensor(L, weight),
                                  opt_tensor(L, bias), L.mb.double(eps)],
                   torch.nn.functional.group_norm(planes.real, c, real_of(weight) if not
                                                  is_none(weight) else None,
                                                  real_of(bias) if not is_none(bias) else None,
                                                  eps))
        return _reshaped(L, y, shape)
    perm = [1, 0] + list(range(2, xr.dim()))
    moved = L.emit("permute", [xv.vid, L.mb.int_list(perm)], xr.permute(perm).contiguous())
    planes = _reshaped(L, moved, [1, c, nb * rest])
    y = L.emit("group_norm", [planes.vid, L.mb.int(c), opt_tensor(L, weight),
                              opt_tensor(L, bias), L.mb.double(eps)],
               torch.nn.functional.group_norm(planes.real, c, real_of(weight) if not
                                              is_none(weight) else None,
                                              real_of(bias) if not is_none(bias) else None, eps))
    back = _reshaped(L, y, [c, nb] + shape[2:])
    return L.emit("permute", [back.vid, L.mb.int_list(perm)], real)


@handles("_native_batch_norm_legit.no_stats")
def _batch_norm_no_stats(L, n, a, real):
    if not V(a["training"]):
        raise Unsupported("batch norm without running statistics outside training mode")
    y = _batch_statistics_norm(L, a["input"], a["weight"], a["bias"], float(V(a["eps"])),
                               real[0])
    return Multi([y, Unavailable(n.target, 1), Unavailable(n.target, 2)])


@handles("native_batch_norm.default", "_native_batch_norm_legit_no_training.default")
def _batch_norm(L, n, a, real):
    if n in L.folded_bn:
        x = L.env[n.args[0]]
    else:
        if "training" in a and V(a["training"]):
            if is_none(a["running_mean"]) and is_none(a["running_var"]):
                # The 1.13 line's instance norm: batch statistics, nothing to update.
                y = _batch_statistics_norm(L, a["input"], a["weight"], a["bias"],
                                           float(V(a["eps"])), real[0])
                return Multi([y, Unavailable(n.target, 1), Unavailable(n.target, 2)])
            raise Unsupported("training-mode batch norm (export the module in eval mode)")
        x = L.emit("batch_norm", [L.tensor_id(a["input"]), opt_tensor(L, a["weight"]),
                                  opt_tensor(L, a["bias"]), L.tensor_id(a["running_mean"]),
                                  L.tensor_id(a["running_var"]), L.mb.double(V(a["eps"]))],
                   real[0])
    return Multi([x, Unavailable(n.target, 1), Unavailable(n.target, 2)])


def _bn_scale_shift(L, bn):
    """(scale, shift) in float64 of the batch norm node `bn` if all its parameters are
    constants, else None: bn(y) = y * scale + shift per channel."""
    def arg(i):
        v = bn.args[i] if i < len(bn.args) else None
        if isinstance(v, torch.fx.Node):
            return L.env.get(v)
        return Const(v)
    w, b, mean, var = arg(1), arg(2), arg(3), arg(4)
    eps = bn.args[7] if bn.target is NATIVE_BN else bn.args[6]
    for x in (w, b, mean, var):
        if not isinstance(x, Const):
            return None
    if not isinstance(mean.value, torch.Tensor) or not isinstance(var.value, torch.Tensor):
        return None
    var64 = var.value.double()
    scale = torch.rsqrt(var64 + float(eps))
    if w.value is not None:
        scale = scale * w.value.double()
    shift = -mean.value.double() * scale
    if b.value is not None:
        shift = shift + b.value.double()
    return scale, shift


def _bias_name(weight_name):
    if weight_name and weight_name.endswith("weight"):
        return weight_name[:-len("weight")] + "bias"
    return (weight_name or "folded") + ".bias"


def _try_fold_bn(L, n, weight, bias, channel_shape):
    """Folded (weight, bias) Const pair when a batch norm folds into node n, else None.
    `channel_shape` reshapes the per-channel scale to broadcast against the weight."""
    bn = L.bn_folds.get(n)
    if bn is None or not isinstance(weight, Const) or not isinstance(weight.value, torch.Tensor):
        return None
    if not (is_none(bias) or isinstance(bias, Const)):
        return None
    ss = _bn_scale_shift(L, bn)
    if ss is None:
        return None
    scale, shift = ss
    w = weight.value.double() * scale.reshape(channel_shape)
    b = shift if is_none(bias) else bias.value.double() * scale + shift
    L.folded_bn.add(bn)
    dt = weight.value.dtype
    return (Const(w.to(dt), weight.name),
            Const(b.to(dt), bias.name if isinstance(bias, Const) and bias.name
                  else _bias_name(weight.name)))


# Linear algebra --------------------------------------------------------------------------------

@handles("addmm.default")
def _addmm(L, n, a, real):
    bias, x, w = a["self"], a["mat1"], a["mat2"]
    beta, alpha = V(a["beta"]), V(a["alpha"])
    if isinstance(w, Const) and beta == 1 and alpha == 1 and real_of(bias).dim() == 1:
        folded = _try_fold_bn(L, n, w, bias, (1, -1))
        if folded:
            w, bias = folded
        weight = Const(w.value.t().contiguous(), w.name)
        return L.emit("linear", [L.tensor_id(x), L.tensor_id(weight), L.tensor_id(bias)], real)
    return L.emit("addmm", [L.tensor_id(bias), L.tensor_id(x), L.tensor_id(w),
                            L.mb.double(beta), L.mb.double(alpha)], real)


def _linear_by(L, n, x, w, real):
    """x @ w for a constant w [K, N]: tern::linear with the weight [N, K] (a batch norm after it
    folded in)."""
    folded = _try_fold_bn(L, n, w, Const(None), (1, -1))
    bias = L.mb.none()
    if folded:
        w, b = folded
        bias = L.tensor_id(b)
    weight = Const(w.value.t().contiguous(), w.name)
    return L.emit("linear", [L.tensor_id(x), L.tensor_id(weight), bias], real)


@handles("mm.default")
def _mm(L, n, a, real):
    x, w = a["self"], a["mat2"]
    if isinstance(w, Const):
        return _linear_by(L, n, x, w, real)
    return L.emit("matmul", [L.tensor_id(x), L.tensor_id(w)], real)


@handles("bmm.default")
def _bmm(L, n, a, real):
    # A batch times a constant [B, K, N] that is one matrix for every batch entry (LeViT's and
    # SwiftFormer's x @ W on [1, T, C] activations, the weight expanded to a batch of one;
    # torch.export's GRU, whose input projection of every time step is a bmm by the weight
    # expanded over the steps): a linear of x [B, M, K] by that matrix, which backends take
    # with packed weights and which stores the matrix once; bmm otherwise.
    x, w = a["self"], a["mat2"]
    if (isinstance(w, Const) and isinstance(w.value, torch.Tensor) and w.value.dim() == 3
            and real.dim() == 3 and w.value.shape[0] >= 1 and _same_over_dim0(w.value)):
        return _linear_by(L, n, x, Const(w.value[0], w.name), real)
    return L.emit("bmm", [L.tensor_id(x), L.tensor_id(w)], real)


def _same_over_dim0(t):
    """Whether every t[i] equals t[0] bit for bit (an expanded tensor, stride 0, at once)."""
    if t.shape[0] == 1 or t.stride(0) == 0:
        return True
    c = t.contiguous()
    if c.element_size() == 4 and c.is_floating_point():
        c = c.view(torch.int32)  # bits: -0.0 is not 0.0, a NaN equals itself
    return bool(torch.equal(c, c[:1].expand_as(c)))


# Convolution and pooling -----------------------------------------------------------------------

def _ints(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    if len(v) == 1 and n > 1:
        v = v * n
    if len(v) != n:
        raise Unsupported("expected %d values, found %s" % (n, v))
    return [int(e) for e in v]


@handles("convolution.default")
def _convolution(L, n, a, real):
    x, w, b = a["input"], a["weight"], a["bias"]
    transposed, groups = V(a["transposed"]), V(a["groups"])
    r = rank(x)
    if transposed and r == 3:
        return _conv_transpose1d(L, a, real)
    if r not in (3, 4, 5) or (transposed and r != 4):
        raise Unsupported("%s convolution of a %d-D input has no tern kernel (tern has conv1d, "
                          "conv2d, conv3d, conv_transpose1d and conv_transpose2d)"
                          % ("transposed" if transposed else "a", r))
    k = r - 2
    if not transposed:
        folded = _try_fold_bn(L, n, w, b, (-1,) + (1,) * (r - 1))
        if folded:
            w, b = folded
    args = [L.tensor_id(x), L.tensor_id(w), opt_tensor(L, b), L.mb.int_list(_ints(V(a["stride"]), k)),
            L.mb.int_list(_ints(V(a["padding"]), k))]
    if transposed:
        args += [L.mb.int_list(_ints(V(a["output_padding"]), k)), L.mb.int(groups),
                 L.mb.int_list(_ints(V(a["dilation"]), k))]
        return L.emit("conv_transpose2d", args, real)
    args += [L.mb.int_list(_ints(V(a["dilation"]), k)), L.mb.int(groups)]
    return L.emit({3: "conv1d", 4: "conv2d", 5: "conv3d"}[r], args, real)


def _conv_transpose1d(L, a, real):
    """ConvTranspose1d (audio decoders: DAC, EnCodec, HiFi-GAN's upsampling) as
    conv_transpose2d on a height of one: x [N, C, L] viewed [N, C, 1, L], the weight
    [C, O/g, K] as [C, O/g, 1, K], every height parameter neutral, the result viewed back."""
    x, w, b = a["input"], a["weight"], a["bias"]
    rx, rw = real_of(x), real_of(w)
    x4 = _reshaped(L, x if isinstance(x, TVal) else TVal(L.tensor_id(x), rx),
                   [rx.shape[0], rx.shape[1], 1, rx.shape[2]])
    w_shape = [rw.shape[0], rw.shape[1], 1, rw.shape[2]]
    if isinstance(w, Const):
        w4 = Const(w.value.reshape(w_shape), w.name)
    else:
        w4 = _reshaped(L, w, w_shape)
    stride, padding = _ints(V(a["stride"]), 1), _ints(V(a["padding"]), 1)
    out_pad, dilation = _ints(V(a["output_padding"]), 1), _ints(V(a["dilation"]), 1)
    groups = V(a["groups"])
    r4 = real.unsqueeze(2)
    y = L.emit("conv_transpose2d", [x4.vid, L.tensor_id(w4), opt_tensor(L, b),
                                    L.mb.int_list([1] + stride), L.mb.int_list([0] + padding),
                                    L.mb.int_list([0] + out_pad), L.mb.int(groups),
                                    L.mb.int_list([1] + dilation)], r4.contiguous())
    return _reshaped(L, y, list(real.shape))


@handles("col2im.default")
def _col2im(L, n, a, real):
    """F.fold / nn.Fold: x [N, C·kh·kw, L] (or unbatched [C·kh·kw, L]) holds L sliding blocks of
    [C, kh, kw], summed into [N, C, H, W]. Blocks that tile the output without overlapping (stride
    = kernel, dilation 1, no padding: MobileViTV2 folding its patches back into a feature map)
    are a rearrangement: view [N, C, kh, kw, Lh, Lw], permute to [N, C, Lh, kh, Lw, kw], view
    [N, C, Lh·kh, Lw·kw], then zeros where the blocks stop short of H or W. Any other fold is the
    transposed convolution, groups = C, of x viewed as [N, C·kh·kw, Lh, Lw] with the constant
    one-hot weight [C·kh·kw, 1, kh, kw] that sends block element (c, i, j) to tap (i, j) of
    channel c (exact for finite inputs: every other product is x · 0)."""
    x = a["self"]
    xr = real_of(x)
    H, W = _ints(V(a["output_size"]), 2)
    kh, kw = _ints(V(a["kernel_size"]), 2)
    dh, dw = _ints(V(a["dilation"]), 2)
    ph, pw = _ints(V(a["padding"]), 2)
    sh, sw = _ints(V(a["stride"]), 2)
    batched = xr.dim() == 3
    xb = xr if batched else xr.unsqueeze(0)
    nb, ckk, blocks = xb.shape
    lh = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    lw = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if lh < 1 or lw < 1 or lh * lw != blocks or ckk % (kh * kw) != 0:
        raise Unsupported("col2im of %s blocks into %s with kernel %s, stride %s, padding %s, "
                          "dilation %s: expected %d x %d blocks of a multiple of %d values"
                          % (list(xr.shape), [H, W], [kh, kw], [sh, sw], [ph, pw], [dh, dw],
                             lh, lw, kh * kw))
    c = ckk // (kh * kw)
    out_shape = [nb, c, H, W]

    xv = x if isinstance(x, TVal) else TVal(L.tensor_id(x), xr)
    if (sh, sw) == (kh, kw) and (dh, dw) == (1, 1) and (ph, pw) == (0, 0):
        blocks6 = _reshaped(L, xv, [nb, c, kh, kw, lh, lw])
        dims = [0, 1, 4, 2, 5, 3]
        moved = L.emit("permute", [blocks6.vid, L.mb.int_list(dims)],
                       blocks6.real.permute(dims).contiguous())
        y = _reshaped(L, moved, [nb, c, lh * kh, lw * kw])
        if lh * kh != H or lw * kw != W:
            pad = [0, W - lw * kw, 0, H - lh * kh]
            y = L.emit("pad", [y.vid, L.mb.int_list(pad), L.mb.string("constant"),
                               L.mb.double(0.0)], torch.nn.functional.pad(y.real, pad))
    else:
        planes = _reshaped(L, xv, [nb, ckk, lh, lw])
        onehot = torch.zeros(ckk, 1, kh, kw, dtype=xr.dtype)
        for e in range(ckk):
            tap = e % (kh * kw)
            onehot[e, 0, tap // kw, tap % kw] = 1.0
        # output_padding: the rows/columns past the last block that the fold still covers.
        extra = [(H + 2 * ph - dh * (kh - 1) - 1) % sh, (W + 2 * pw - dw * (kw - 1) - 1) % sw]
        r = torch.nn.functional.conv_transpose2d(planes.real, onehot, None, [sh, sw], [ph, pw],
                                                 extra, c, [dh, dw])
        args = [planes.vid, L.weight(Const(onehot, "fold_onehot_" + n.name)), L.mb.none(),
                L.mb.int_list([sh, sw]), L.mb.int_list([ph, pw]), L.mb.int_list(extra),
                L.mb.int(c), L.mb.int_list([dh, dw])]
        y = L.emit("conv_transpose2d", args, r)
    if not batched:
        y = _reshaped(L, y, out_shape[1:])
    return y


def _pool_args(L, a):
    kernel = _ints(V(a["kernel_size"]), 2)
    stride = V(a["stride"])
    stride = kernel if not stride else _ints(stride, 2)
    return kernel, stride, _ints(V(a["padding"]), 2)


@handles("max_pool2d_with_indices.default", "max_pool2d.default")
def _max_pool2d(L, n, a, real):
    kernel, stride, padding = _pool_args(L, a)
    multi = isinstance(real, (tuple, list))
    out = L.emit("max_pool2d", [L.tensor_id(a["self"]), L.mb.int_list(kernel), L.mb.int_list(stride),
                                L.mb.int_list(padding), L.mb.int_list(_ints(V(a["dilation"]), 2)),
                                L.mb.bool(V(a["ceil_mode"]))], real[0] if multi else real)
    return Multi([out, Unavailable(n.target, 1)]) if multi else out


@handles("avg_pool2d.default")
def _avg_pool2d(L, n, a, real):
    kernel, stride, padding = _pool_args(L, a)
    div = V(a["divisor_override"])
    return L.emit("avg_pool2d", [L.tensor_id(a["self"]), L.mb.int_list(kernel),
                                 L.mb.int_list(stride), L.mb.int_list(padding),
                                 L.mb.bool(V(a["ceil_mode"])), L.mb.bool(V(a["count_include_pad"])),
                                 L.mb.none() if div is None else L.mb.int(div)], real)


def _pool2d_planes(L, x, is_max, kernel, stride, padding, dilation, ceil, include_pad):
    """One 2-D pool (max or average) over the last two dims of x (a TVal of [1, P, A, B])."""
    F = torch.nn.functional
    if is_max:
        r = F.max_pool2d(x.real, kernel, stride, padding, dilation, ceil)
        return L.emit("max_pool2d", [x.vid, L.mb.int_list(kernel), L.mb.int_list(stride),
                                     L.mb.int_list(padding), L.mb.int_list(dilation),
                                     L.mb.bool(ceil)], r)
    r = F.avg_pool2d(x.real, kernel, stride, padding, ceil, include_pad)
    return L.emit("avg_pool2d", [x.vid, L.mb.int_list(kernel), L.mb.int_list(stride),
                                 L.mb.int_list(padding), L.mb.bool(ceil),
                                 L.mb.bool(include_pad), L.mb.none()], r)


@handles("max_pool3d_with_indices.default", "max_pool3d.default", "avg_pool3d.default")
def _pool3d(L, n, a, real):
    # A box window is separable: the max (or mean) over T x H x W is the max (mean) over T of
    # the max (mean) over H x W, padding and ceil mode applying per axis (a window's valid
    # cells are a box, so an average that leaves the padding out divides by the product of the
    # per-axis counts). So: a 2-D pool over (H, W) of [1, L*T, H, W], then one over T of
    # [1, L, T, H'*W'], on tern's 2-D pools (every backend has them).
    is_max = "max_pool3d" in str(n.target)
    multi = isinstance(real, (tuple, list))
    out_real = real[0] if multi else real
    xr = real_of(a["self"])
    if xr.dim() not in (4, 5):
        raise Unsupported("3-D pool of a %s input (expected [N, C, T, H, W] or [C, T, H, W])"
                          % list(xr.shape))
    kernel = _ints(V(a["kernel_size"]), 3)
    stride = V(a["stride"])
    stride = kernel if not stride else _ints(stride, 3)
    padding = _ints(V(a["padding"]), 3)
    dilation = _ints(V(a["dilation"]), 3) if is_max else [1, 1, 1]
    ceil = bool(V(a["ceil_mode"]))
    include_pad = True if is_max else bool(V(a["count_include_pad"]))
    if not is_max and V(a["divisor_override"]) is not None:
        raise Unsupported("avg_pool3d with divisor_override")
    lead = [int(d) for d in xr.shape[:-3]]
    t, h, w = [int(d) for d in xr.shape[-3:]]
    planes = 1
    for d in lead:
        planes *= d
    x = TVal(L.tensor_id(a["self"]), xr)
    y = _reshaped(L, x, [1, planes * t, h, w])
    if (kernel[1:], stride[1:], padding[1:], dilation[1:]) != ([1, 1], [1, 1], [0, 0], [1, 1]):
        y = _pool2d_planes(L, y, is_max, kernel[1:], stride[1:], padding[1:], dilation[1:],
                           ceil, include_pad)
    ho, wo = int(y.real.shape[-2]), int(y.real.shape[-1])
    if (kernel[0], stride[0], padding[0], dilation[0]) != (1, 1, 0, 1):
        y = _reshaped(L, y, [1, planes, t, ho * wo])
        y = _pool2d_planes(L, y, is_max, [kernel[0], 1], [stride[0], 1], [padding[0], 0],
                           [dilation[0], 1], ceil, include_pad)
    y = _reshaped(L, y, list(out_real.shape))
    return Multi([y, Unavailable(n.target, 1)]) if multi else y


@handles("affine_grid_generator.default")
def _affine_grid_generator(L, n, a, real):
    # F.affine_grid on PyTorch 1.13 (2.x decomposes it): the constant base grid of
    # (x, y, 1) points, [H·W, 3], times theta [N, 2, 3] transposed: [N, H·W, 2], viewed
    # [N, H, W, 2].
    size, align = V(a["size"]), V(a["align_corners"])
    if len(size) != 4:
        raise Unsupported("affine_grid of size %s (4-D is taken)" % (list(size),))
    nb, _, h, w = [int(v) for v in size]

    def steps(k):
        if k <= 1:
            return torch.zeros(max(k, 1), dtype=torch.float64)
        r = torch.linspace(-1, 1, k, dtype=torch.float64)
        return r if align else r * (k - 1) / k
    ys, xs = torch.meshgrid(steps(h), steps(w), indexing="ij")
    base = torch.stack([xs, ys, torch.ones_like(xs)], -1).reshape(1, h * w, 3).to(real.dtype)
    theta = a["theta"]
    rt = real_of(theta)
    t = L.emit("transpose", [L.tensor_id(theta), L.mb.int(1), L.mb.int(2)],
               rt.transpose(1, 2).contiguous())
    prod = L.emit("matmul", [L.weight(Const(base, "affine_grid_base")), t.vid],
                  torch.matmul(base, t.real))
    return _reshaped(L, prod, [nb, h, w, 2])


@handles("grid_sampler_2d.default")
def _grid_sampler_2d(L, n, a, real):
    # F.grid_sample on 4-D inputs (Mask2Former's deformable attention, RAFT, spatial
    # transformers): bilinear or nearest (bicubic has no tern kernel).
    mode = V(a["interpolation_mode"])
    if mode not in (0, 1):
        raise Unsupported("grid_sample with interpolation mode %d (bilinear and nearest are "
                          "taken, bicubic is not)" % mode)
    if real.dtype != torch.float32:
        raise Unsupported("grid_sample of %s (f32 is taken)" % real.dtype)
    return L.emit("grid_sample2d", [L.tensor_id(a["input"]), L.tensor_id(a["grid"]),
                                    L.mb.int(mode), L.mb.int(V(a["padding_mode"])),
                                    L.mb.bool(V(a["align_corners"]))], real)


# The largest pooling matrix (H·W by OH·OW floats) an adaptive average pool is written as.
_ADAPTIVE_POOL_MATRIX_LIMIT = 1 << 20


def _adaptive_windows(size, out):
    """PyTorch's adaptive pooling windows along one dim: [floor(i·size/out), ceil((i+1)·size/out))
    for each output index i, as an [out, size] float64 matrix of 1/window-length weights."""
    m = torch.zeros(out, size, dtype=torch.float64)
    for i in range(out):
        lo, hi = (i * size) // out, -((-(i + 1) * size) // out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


@handles("_adaptive_avg_pool2d.default")
def _adaptive_avg_pool2d(L, n, a, real):
    # A global pool stays one op (every backend's squeeze-excitation and classifier head); an
    # output of the input's size is the input; divisible sizes are a plain average pool; other
    # sizes (a pyramid-pooling head's 3x3 and 6x6 bins: UperNet, PSPNet) are one constant
    # linear over the flattened plane — every window's mean, the same on every backend.
    x = a["self"]
    out_hw = _ints(V(a["output_size"]), 2)
    rx = real_of(x)
    if rx.dim() != 4 or out_hw == [1, 1] or real.dtype != torch.float32:
        return L.emit("adaptive_avg_pool2d", [L.tensor_id(x), L.mb.int_list(out_hw)], real)
    h, w = int(rx.shape[2]), int(rx.shape[3])
    oh, ow = out_hw
    if [h, w] == out_hw and isinstance(x, TVal):
        return x
    if h % oh == 0 and w % ow == 0:
        k = [h // oh, w // ow]
        return L.emit("avg_pool2d", [L.tensor_id(x), L.mb.int_list(k), L.mb.int_list(k),
                                     L.mb.int_list([0, 0]), L.mb.bool(False), L.mb.bool(True),
                                     L.mb.none()], real)
    if h * w * oh * ow > _ADAPTIVE_POOL_MATRIX_LIMIT:
        return L.emit("adaptive_avg_pool2d", [L.tensor_id(x), L.mb.int_list(out_hw)], real)
    pool = torch.kron(_adaptive_windows(h, oh), _adaptive_windows(w, ow)).to(torch.float32)
    nb, c = int(rx.shape[0]), int(rx.shape[1])
    flat = L.emit("view", [L.tensor_id(x), L.mb.int_list([nb, c, h * w])],
                  rx.reshape(nb, c, h * w))
    weight = Const(pool, "adaptive_pool_matrix")
    prod = L.emit("linear", [flat.vid, L.tensor_id(weight), L.mb.none()],
                  real.reshape(nb, c, oh * ow))
    return _reshaped(L, prod, [nb, c, oh, ow])


# Data movement ---------------------------------------------------------------------------------

_VIEWS = ["view.default", "_unsafe_view.default", "_reshape_alias.default", "reshape.default",
          "view_copy.default", "squeeze.default", "squeeze.dim", "squeeze.dims",
          "unsqueeze.default", "flatten.using_ints", "squeeze_copy.dim", "squeeze_copy.dims",
          "unsqueeze_copy.default"]
VIEW_OPS = set(_overloads(_VIEWS))


@handles(*_VIEWS)
def _view(L, n, a, real):
    x = a["self"]
    if list(real.shape) == x.shape:
        return x
    return L.emit("view", [L.tensor_id(x), L.mb.int_list(real.shape)], real)


@handles("alias.default", "detach.default", "lift_fresh_copy.default")
def _identity(L, n, a, real):
    return a["self"]


@handles("clone.default")
def _clone(L, n, a, real):
    return L.emit("clone", [L.tensor_id(a["self"])], real)


@handles("copy.default")
def _copy(L, n, a, real):
    # The functional form of self.copy_(src): src in self's dtype, broadcast to self's shape
    # (self's values are not read). A state set from an input (a cache position) comes this way.
    src = L.cast(a["src"], real.dtype)
    if isinstance(src, Const):
        return Const(real.detach())
    if list(src.real.shape) != list(real.shape):
        return L.emit("expand", [src.vid, L.mb.int_list(real.shape)], real)
    return L.emit("clone", [src.vid], real)


@handles("permute.default")
def _permute(L, n, a, real):
    return L.emit("permute", [L.tensor_id(a["self"]), L.mb.int_list(V(a["dims"]))], real)


@handles("flip.default")
def _flip(L, n, a, real):
    # A bidirectional RNN's reverse direction (torch.export decomposes nn.LSTM/GRU with flips).
    x, dims = a["self"], V(a["dims"])
    if not dims or real.numel() <= 1:
        return x if isinstance(x, TVal) else L.emit("clone", [L.tensor_id(x)], real)
    return L.emit("flip", [L.tensor_id(x), L.mb.int_list(list(dims))], real)


@handles("transpose.int")
def _transpose(L, n, a, real):
    return L.emit("transpose", [L.tensor_id(a["self"]), L.mb.int(V(a["dim0"])),
                                L.mb.int(V(a["dim1"]))], real)


@handles("t.default")
def _t(L, n, a, real):
    if rank(a["self"]) < 2:
        return a["self"]
    return L.emit("transpose", [L.tensor_id(a["self"]), L.mb.int(0), L.mb.int(1)], real)


@handles("expand.default")
def _expand(L, n, a, real):
    x = a["self"]
    if isinstance(x, TVal) and list(real.shape) == x.shape:
        return x
    return L.emit("expand", [L.tensor_id(x), L.mb.int_list(real.shape)], real)


@handles("cat.default")
def _cat(L, n, a, real):
    tensors = a["tensors"]
    if isinstance(tensors, Const):
        tensors = [Const(t) for t in tensors.value]
    # Empty parts add nothing (legacy 1-D empty tensors are skipped by torch.cat whatever their
    # shape; Phi-3's rotary cat(q_rot, q[..., rotary_dim:]) with the whole head rotated): left
    # out, and a cat of one part left is that part.
    kept = [t for t in tensors if real_of(t).numel() != 0]
    dt = real.dtype
    if len(kept) == 1 and list(real_of(kept[0]).shape) == list(real.shape):
        return L.cast(kept[0], dt)
    if not kept:
        return Const(real.detach().clone())
    ids = [L.tensor_id(L.cast(t, dt)) for t in kept]
    return L.emit("cat", [L.mb.tensor_list(ids), L.mb.int(V(a["dim"]))], real)


def _opt_int(L, v):
    return L.mb.none() if v is None else L.mb.int(v)


@handles("slice.Tensor")
def _slice(L, n, a, real):
    x = a["self"]
    dim, start, end, step = V(a["dim"]), V(a["start"]), V(a["end"]), V(a["step"])
    if isinstance(x, TVal) and list(real.shape) == x.shape and step == 1:
        return x
    if real.numel() == 0:  # nothing to read: a constant (a cat leaves it out)
        return Const(real.detach().clone())
    return L.emit("slice", [L.tensor_id(x), L.mb.int(dim), _opt_int(L, start), _opt_int(L, end),
                            L.mb.int(step)], real)


@handles("roll.default")
def _roll(L, n, a, real):
    # roll(x, s, d) = cat(x[n - s:], x[:n - s]) along d (s taken mod n), one dim after the
    # other; with no dims the flattened tensor is rolled and viewed back (Swin's cyclic shift).
    x = a["self"]
    if not isinstance(x, TVal):
        x = TVal(L.tensor_id(x), real_of(x))
    shape = list(x.real.shape)
    shifts, dims = V(a["shifts"]), V(a["dims"])
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims or [])
    flat = not dims
    if flat:
        if len(shifts) != 1:
            raise Unsupported("roll without dims takes one shift, found %s" % shifts)
        x, dims = _reshaped(L, x, [x.real.numel()]), [0]
    if len(shifts) != len(dims):
        raise Unsupported("roll: %d shifts for %d dims" % (len(shifts), len(dims)))
    for shift, d in zip(shifts, dims):
        d = d % x.real.dim()
        size = int(x.real.shape[d])
        s = shift % size if size else 0
        if s == 0:
            continue
        parts = []
        for lo, hi in ((size - s, size), (0, size - s)):
            piece = x.real.narrow(d, lo, hi - lo)
            parts.append(L.emit("slice", [x.vid, L.mb.int(d), L.mb.int(lo), L.mb.int(hi),
                                          L.mb.int(1)], piece.contiguous()))
        x = L.emit("cat", [L.mb.tensor_list([p.vid for p in parts]), L.mb.int(d)],
                   torch.cat([p.real for p in parts], d))
    return _reshaped(L, x, shape)


@handles("split.Tensor", "split_with_sizes.default", "unsafe_split.Tensor",
         "unsafe_split_with_sizes.default")
def _split(L, n, a, real):
    dim = V(a["dim"])
    sizes = [int(t.shape[dim]) for t in real]
    return Multi(L.emit("split", [L.tensor_id(a["self"]), L.mb.int_list(sizes), L.mb.int(dim)],
                        list(real)))


@handles("unbind.int")
def _unbind(L, n, a, real):
    x, dim = a["self"], V(a["dim"])
    pieces = list(torch.split(real_of(x), 1, dim))
    outs = L.emit("split", [L.tensor_id(x), L.mb.int_list([1] * len(pieces)), L.mb.int(dim)],
                  pieces)
    return Multi([L.emit("view", [o.vid, L.mb.int_list(r.shape)], r) for o, r in zip(outs, real)])


@handles("select.int")
def _select(L, n, a, real):
    return L.emit("select", [L.tensor_id(a["self"]), L.mb.int(V(a["dim"])),
                             L.mb.int(V(a["index"]))], real)


@handles("index_select.default")
def _index_select(L, n, a, real):
    # A constant index that is a run start, start + step, ... (step >= 1; XLNet's relative
    # shift picks arange(klen)) is a slice: a view for step 1, and the backends take slices.
    x, dim, index = a["self"], V(a["dim"]), a["index"]
    if isinstance(index, Const) and isinstance(index.value, torch.Tensor) and \
            index.value.dim() == 1 and index.value.numel() >= 1:
        idx = index.value.to(torch.int64)
        size = int(real_of(x).shape[dim])
        start = int(idx[0])
        step = int(idx[1] - idx[0]) if idx.numel() > 1 else 1
        run = start + step * torch.arange(idx.numel(), dtype=torch.int64)
        if step >= 1 and 0 <= start and int(run[-1]) < size and torch.equal(idx, run):
            if start == 0 and step == 1 and idx.numel() == size and isinstance(x, TVal):
                return x
            return L.emit("slice", [L.tensor_id(x), L.mb.int(dim), L.mb.int(start),
                                    L.mb.int(int(run[-1]) + 1), L.mb.int(step)], real)
    return L.emit("index_select", [L.tensor_id(x), L.mb.int(dim), L.tensor_id(index)], real)


@handles("index_copy.default")
def _index_copy(L, n, a, real):
    # A KV cache written at its positions (transformers' StaticCache: index_copy_ along the
    # sequence dim); when its result is the new value of a state tensor, the lowering writes
    # that state in place (Lowerer.emit).
    return L.emit("index_copy", [L.tensor_id(a["self"]), L.mb.int(V(a["dim"])),
                                 L.tensor_id(a["index"]), L.tensor_id(a["source"])], real)


def _scatter_slices(L, x, src, dim, start, end, step, real):
    """x with its positions start:end:step along dim replaced by src (a TVal or Const shaped as
    that slice): cat(x[:start], src, x[end:]) for step 1 (the cpu backend takes cat), else an
    index_copy at the constant positions."""
    xr = real_of(x)
    size = int(xr.shape[dim])
    positions = list(range(size))[slice(start, end, step)]
    if not positions:
        return x  # an empty slice: nothing replaced
    lo, hi = positions[0], positions[-1] + 1
    src = L.cast(src, real.dtype)
    if step == 1 or len(positions) == 1:
        ids = []
        for a, b in ((0, lo), (hi, size)):
            if a < b:
                ids.append(L.emit("slice", [L.tensor_id(x), L.mb.int(dim), L.mb.int(a),
                                            L.mb.int(b), L.mb.int(1)],
                                  xr.narrow(dim, a, b - a).contiguous()).vid)
        ids.insert(1 if lo > 0 else 0, L.tensor_id(src))
        return L.emit("cat", [L.mb.tensor_list(ids), L.mb.int(dim)], real)
    index = Const(torch.tensor(positions, dtype=torch.int64), "positions")
    return L.emit("index_copy", [L.tensor_id(x), L.mb.int(dim), L.tensor_id(index),
                                 L.tensor_id(src)], real)


@handles("slice_scatter.default")
def _slice_scatter(L, n, a, real):
    # x[..., start:end:step, ...] = src, functionalized (in-place slice assignment in a model).
    x = a["self"]
    dim = V(a["dim"]) % real.dim()
    return _scatter_slices(L, x, a["src"], dim, V(a["start"]), V(a["end"]), V(a["step"]), real)


@handles("select_scatter.default")
def _select_scatter(L, n, a, real):
    # x[..., index, ...] = src (src lacks dim), functionalized: src viewed with dim of size 1.
    x, src = a["self"], a["src"]
    dim = V(a["dim"]) % real.dim()
    index = V(a["index"]) % int(real.shape[dim])
    r = real_of(src).unsqueeze(dim)
    if isinstance(src, Const):
        src = Const(src.value.unsqueeze(dim), src.name)
    else:
        src = L.emit("view", [L.tensor_id(src), L.mb.int_list(r.shape)], r)
    return _scatter_slices(L, x, src, dim, index, index + 1, 1, real)


def _lazy(emit):
    """A callable emitting `emit()` once, on first use (for Multi items sharing a node)."""
    cache = []

    def get():
        if not cache:
            cache.append(emit())
        return cache[0]
    return get


def _indices_and_values(L, x, dim, op, args, real):
    """(values, indices) of topk / sort: the indices by tern::<op>(x, *args()), the values a
    gather of x by them; each emitted on first use."""
    indices = _lazy(lambda: L.emit(op, [L.tensor_id(x)] + args(), real[1]))
    return Multi([lambda: L.emit("gather", [L.tensor_id(x), L.mb.int(dim), indices().vid],
                                 real[0]), indices])


@handles("topk.default")
def _topk(L, n, a, real):
    # Ties by position (tern::topk_indices); `sorted` is always honoured.
    dim = V(a["dim"])
    return _indices_and_values(
        L, a["self"], dim, "topk_indices",
        lambda: [L.mb.int(V(a["k"])), L.mb.int(dim), L.mb.bool(V(a["largest"]))], real)


@handles("sort.default", "sort.stable")
def _sort(L, n, a, real):
    # A stable sort whatever `stable` says (an unstable one may order ties either way).
    dim = V(a["dim"])
    return _indices_and_values(L, a["self"], dim, "argsort",
                               lambda: [L.mb.int(dim), L.mb.bool(V(a["descending"]))], real)


@handles("argsort.default", "argsort.stable")
def _argsort(L, n, a, real):
    return L.emit("argsort", [L.tensor_id(a["self"]), L.mb.int(V(a["dim"])),
                              L.mb.bool(V(a["descending"]))], real)


@handles("histc.default")
def _histc(L, n, a, real):
    if real.dtype != torch.float32:
        raise Unsupported("histc of %s (f32 only)" % real.dtype)
    return L.emit("histc", [L.tensor_id(a["self"]), L.mb.int(V(a["bins"])),
                            L.mb.double(float(V(a["min"]))), L.mb.double(float(V(a["max"])))],
                  real)


def _emit_scatter(L, a, src, reduce, real):
    """tern::scatter(x, dim, index, src, reduce): src is a tensor (cut to index's shape: ATen
    reads only src's leading part) or a number (one element of x's dtype)."""
    x, index = a["self"], a["index"]
    ri = real_of(index)
    if is_tensor(src):
        rs = real_of(src)
        if rs.dtype != real.dtype:
            src = L.cast(src, real.dtype)
            rs = real_of(src)
        for d in range(ri.dim()):
            if int(rs.shape[d]) != int(ri.shape[d]):
                rs = rs.narrow(d, 0, int(ri.shape[d]))
                src = L.emit("slice", [L.tensor_id(src), L.mb.int(d), L.mb.int(0),
                                       L.mb.int(int(ri.shape[d])), L.mb.int(1)], rs.contiguous())
        src_id = L.tensor_id(src)
    else:
        src_id = L.weight(Const(torch.tensor([V(src)], dtype=real.dtype), "scatter_value"))
    return L.emit("scatter", [L.tensor_id(L.cast(x, real.dtype)), L.mb.int(V(a["dim"])),
                              L.tensor_id(index), src_id, L.mb.string(reduce)], real)


@handles("scatter.src", "scatter_.src")
def _scatter_src(L, n, a, real):
    return _emit_scatter(L, a, a["src"], "none", real)


@handles("scatter.value", "scatter_.value")
def _scatter_value(L, n, a, real):
    return _emit_scatter(L, a, a["value"], "none", real)


@handles("scatter_add.default", "scatter_add_.default")
def _scatter_add(L, n, a, real):
    if real.dtype not in (torch.float32, torch.int64, torch.int32):
        raise Unsupported("scatter_add of %s (f32, i64 and i32 are taken)" % real.dtype)
    return _emit_scatter(L, a, a["src"], "add", real)


@handles("scatter_reduce.two", "scatter_reduce_.two")
def _scatter_reduce(L, n, a, real):
    reduce = V(a["reduce"])
    if reduce != "sum" or not V(a.get("include_self", True)):
        raise Unsupported("scatter_reduce with reduce=%r, include_self=%s (\"sum\" including "
                          "self is taken)" % (reduce, V(a.get("include_self", True))))
    return _scatter_add(L, n, a, real)


@handles("index_put.default", "index_put_.default")
def _index_put(L, n, a, real):
    # x[index] = values with one 1-D integer index (Hugging Face's MoE inverts its routing
    # permutation this way): index_copy along dim 0.
    if V(a["accumulate"]):
        raise Unsupported("index_put with accumulate=True")
    index = _index_list(a)
    if len(index) == 1 and not is_none(index[0]) and real_of(index[0]).dtype == torch.bool:
        return _index_put_mask(L, a, index[0], real)
    if len(index) != 1 or is_none(index[0]):
        raise Unsupported("index_put with %d index tensors (one, on dim 0, is taken)"
                          % len(index))
    ri, rx, rv = real_of(index[0]), real_of(a["self"]), real_of(a["values"])
    if ri.dim() != 1 or ri.dtype not in (torch.int64, torch.int32):
        raise Unsupported("index_put with a %s index of rank %d (a 1-D integer index is taken)"
                          % (ri.dtype, ri.dim()))
    if tuple(rv.shape) != (ri.shape[0],) + tuple(rx.shape[1:]) or rv.dtype != rx.dtype:
        raise Unsupported("index_put with values %s %s for %s %s rows"
                          % (rv.dtype, tuple(rv.shape), rx.dtype, tuple(rx.shape)))
    return L.emit("index_copy", [L.tensor_id(a["self"]), L.mb.int(0), L.tensor_id(index[0]),
                                 L.tensor_id(a["values"])], real)


def _index_put_mask(L, a, mask, real):
    # x[mask] = values with a constant boolean mask over x's leading dims (X-MOD's language
    # adapters write each language's rows back this way): the masked positions, known at
    # export, are an index_copy along dim 0 of x seen as [mask elements, rest].
    if not isinstance(mask, Const):
        raise Unsupported("index_put with a boolean mask computed from the model's inputs: the "
                          "rows written depend on the data")
    rx, rv, m = real_of(a["self"]), real_of(a["values"]), mask.value
    if tuple(m.shape) != tuple(rx.shape[:m.dim()]):
        raise Unsupported("index_put with a boolean mask %s over a %s tensor (a mask of its "
                          "leading dims is taken)" % (tuple(m.shape), tuple(rx.shape)))
    rest = list(rx.shape[m.dim():])
    pos = m.reshape(-1).nonzero().reshape(-1).clone()
    if tuple(rv.shape) != tuple([pos.numel()] + rest) or rv.dtype != rx.dtype:
        raise Unsupported("index_put with values %s %s for %d masked rows of %s %s"
                          % (rv.dtype, tuple(rv.shape), pos.numel(), rx.dtype, tuple(rx.shape)))
    x, flat_shape = a["self"], [m.numel()] + rest
    if pos.numel() == 0:
        return x
    if isinstance(x, Const):  # x = zeros_like(...) folded at export: a constant to write into
        flat = L.weight(Const(x.value.reshape(flat_shape).clone(), "x"))
    else:
        flat = _reshaped(L, x, flat_shape).vid
    copied = L.emit("index_copy", [flat, L.mb.int(0), L.weight(Const(pos, "index")),
                                   L.tensor_id(a["values"])], real.reshape(flat_shape))
    return _reshaped(L, copied, list(real.shape))


def _grouped_mm(L, n, a, real):
    # Mixture-of-experts products over rows sorted by expert: transformers' grouped_mm_fallback
    # (input, weight [E, K, N], offs) and torch._grouped_mm (self, mat2, offs).
    x = a["input"] if "input" in a else a["self"]
    w = a["weight"] if "weight" in a else a["mat2"]
    if "bias" in a and not is_none(a["bias"]):
        raise Unsupported("grouped_mm with a bias")
    if is_none(a["offs"]):
        raise Unsupported("grouped_mm without offsets")
    rx, rw = real_of(x), real_of(w)
    if rx.dim() != 2 or rw.dim() != 3 or rx.dtype != torch.float32 or rw.dtype != torch.float32:
        raise Unsupported("grouped_mm of %s %s by %s %s (f32 [S, K] by [E, K, N] is taken)"
                          % (rx.dtype, tuple(rx.shape), rw.dtype, tuple(rw.shape)))
    return L.emit("grouped_mm", [L.tensor_id(x), L.tensor_id(w), L.tensor_id(a["offs"])], real)


HANDLERS_BY_NAME = {
    "transformers::grouped_mm_fallback": _grouped_mm,
}
for _op in _overloads(["_grouped_mm.default"]):
    HANDLERS[_op] = _grouped_mm


def handler_for(target):
    """The handler of an operator: by its overload, or by its schema name for operators of
    other libraries registered at run time (transformers' custom ops)."""
    handler = HANDLERS.get(target)
    if handler is None and hasattr(target, "_schema"):
        handler = HANDLERS_BY_NAME.get(target._schema.name)
    return handler


@handles("gather.default")
def _gather(L, n, a, real):
    return L.emit("gather", [L.tensor_id(a["self"]), L.mb.int(V(a["dim"])),
                             L.tensor_id(a["index"])], real)


@handles("embedding.default")
def _embedding(L, n, a, real):
    return L.emit("embedding", [L.tensor_id(a["weight"]), L.tensor_id(a["indices"])], real)


@handles("constant_pad_nd.default")
def _constant_pad(L, n, a, real):
    # Negative pads crop (RWKV's time shift, nn.ZeroPad2d((0, 0, 1, -1))): the crops become
    # slices (views the backends take as such) and only the non-negative pads stay a pad.
    x, pad = a["self"], list(V(a["pad"]))
    if any(p < 0 for p in pad):
        rx = real_of(x)
        x = x if isinstance(x, TVal) else TVal(L.tensor_id(x), rx)
        for i in range(len(pad) // 2):
            dim = rx.dim() - 1 - i
            lo, hi = max(-pad[2 * i], 0), max(-pad[2 * i + 1], 0)
            if lo or hi:
                size = int(x.real.shape[dim])
                cut = x.real.narrow(dim, lo, size - lo - hi).contiguous()
                x = L.emit("slice", [x.vid, L.mb.int(dim), L.mb.int(lo), L.mb.int(size - hi),
                                     L.mb.int(1)], cut)
        pad = [max(p, 0) for p in pad]
        if not any(pad):
            return x
    return L.emit("pad", [L.tensor_id(x), L.mb.int_list(pad), L.mb.string("constant"),
                          L.mb.double(V(a["value"]))], real)


@handles("reflection_pad1d.default", "reflection_pad2d.default")
def _reflection_pad(L, n, a, real):
    return L.emit("pad", [L.tensor_id(a["self"]), L.mb.int_list(V(a["padding"])),
                          L.mb.string("reflect"), L.mb.double(0.0)], real)


@handles("repeat.default")
def _repeat(L, n, a, real):
    # A count of 0 (LTX-Video's causal pad of a kernel of 1 frame: x[:, :, :1].repeat(1, 1, 0,
    # 1, 1)) makes an empty tensor: a constant, which the cat after it leaves out, as slice's.
    if real.numel() == 0:
        return Const(real.detach().clone())
    return L.emit("repeat", [L.tensor_id(a["self"]), L.mb.int_list(V(a["repeats"]))], real)


def _scales(a):
    if "scale_factors" in a:
        s = V(a["scale_factors"])
        return (None, None) if not s else (_ints_f(s)[0], _ints_f(s)[1])
    return V(a["scales_h"]), V(a["scales_w"])


def _ints_f(v):
    v = list(v)
    return v * 2 if len(v) == 1 else v


@handles("upsample_nearest2d.vec", "upsample_nearest2d.default")
def _upsample_nearest(L, n, a, real):
    sh, sw = _scales(a)
    x = a["input"] if "input" in a else a["self"]
    return L.emit("upsample_nearest2d", [L.tensor_id(x), L.opt_double(sh), L.opt_double(sw)], real)


@handles("upsample_bilinear2d.vec", "upsample_bilinear2d.default")
def _upsample_bilinear(L, n, a, real):
    sh, sw = _scales(a)
    x = a["input"] if "input" in a else a["self"]
    return L.emit("upsample_bilinear2d", [L.tensor_id(x), L.mb.bool(V(a["align_corners"])),
                                          L.opt_double(sh), L.opt_double(sw)], real)


@handles("triu.default", "tril.default")
def _triu(L, n, a, real):
    op = n.target._schema.name.split("::")[1]
    return L.emit(op, [L.tensor_id(a["self"]), L.mb.int(V(a["diagonal"]))], real)


@handles("stack.default")
def _stack(L, n, a, real):
    # stack(tensors, dim) = cat([unsqueeze(t, dim) for t in tensors], dim): the unsqueezes are
    # views (aliases), the cat is the only copy.
    tensors = a["tensors"]
    if isinstance(tensors, Const):
        tensors = [Const(t) for t in tensors.value]
    dim = V(a["dim"])
    if dim < 0:
        dim += real.dim()
    dt = real.dtype
    ids = []
    for t in tensors:
        t = L.cast(t, dt)
        r = real_of(t).unsqueeze(dim)
        if isinstance(t, Const):
            ids.append(L.tensor_id(Const(t.value.unsqueeze(dim), t.name)))
        else:
            ids.append(L.emit("view", [t.vid, L.mb.int_list(r.shape)], r).vid)
    return L.emit("cat", [L.mb.tensor_list(ids), L.mb.int(dim)], real)


# Gathers by a constant element map (as_strided, index.Tensor with constant indices) -------------

def _reshaped(L, x, shape):
    """x (a TVal) viewed as `shape` (an alias; nothing emitted when the shape is x's)."""
    shape = [int(d) for d in shape]
    if x.shape == shape:
        return x
    return L.emit("view", [x.vid, L.mb.int_list(shape)], x.real.reshape(shape))


def _axis_permutation(m):
    """When the constant map m (int64, any shape) is start + an axis permutation of a
    contiguous block — m[i] = start + sum_k i_k * s_k with the dims of size > 1, ordered by
    stride, having contiguous strides — returns (start, sizes in stride order, permutation
    such that permute(view(block, sizes), perm) has m's non-1 dims in order); else None."""
    dims = [d for d in range(m.dim()) if m.shape[d] > 1]
    if not dims:
        return None
    base = int(m.reshape(-1)[0])
    strides = []
    for d in dims:
        idx = [0] * m.dim()
        idx[d] = 1
        strides.append(int(m[tuple(idx)]) - base)
    if any(s <= 0 for s in strides) or len(set(strides)) != len(strides):
        return None
    expected = torch.full(m.shape, base, dtype=torch.int64)
    for d, s in zip(dims, strides):
        shape = [1] * m.dim()
        shape[d] = m.shape[d]
        expected = expected + torch.arange(m.shape[d], dtype=torch.int64).view(shape) * s
    if not torch.equal(expected, m):
        return None
    order = sorted(range(len(dims)), key=lambda k: -strides[k])
    sizes = [int(m.shape[dims[k]]) for k in order]
    step = 1
    for k, size in zip(reversed(order), reversed(sizes)):
        if strides[k] != step:
            return None
        step *= size
    return base, sizes, [order.index(k) for k in range(len(dims))]


def _strided_box(m, xshape):
    """For a map m (x's row-major element numbers) of x's rank: per dim (start, count, step) when
    m picks x[start_d : ... : step_d] in every dim d (each coordinate an affine function of the
    output index along its own dim alone), else None. Falcon's qkv[..., [-2], :]."""
    if m.dim() != len(xshape) or m.numel() == 0 or not xshape:
        return None
    coords = []
    rest = m
    for size in reversed(xshape):
        coords.append(rest % size)
        rest = rest // size
    coords.reverse()
    box = []
    for d, c in enumerate(coords):
        count = int(m.shape[d])
        first = [0] * m.dim()
        start = int(c[tuple(first)])
        step = 1
        if count > 1:
            first[d] = 1
            step = int(c[tuple(first)]) - start
            if step < 1:
                return None
        shape = [1] * m.dim()
        shape[d] = count
        expect = start + torch.arange(count, dtype=torch.int64).view(shape) * step
        if not torch.equal(c, expect.expand(m.shape)):
            return None
        box.append((start, count, step))
    return box


def gather_by_map(L, x, m, real):
    """out = x.flatten()[m] for a constant int64 map `m` of out's shape whose values index x's
    elements in row-major order (tern tensors are contiguous). In order of preference:
    - m is every element in order: a view of x (an alias);
    - m is a contiguous run: a slice of the flattened x (an alias), viewed as out;
    - m is a strided box of x (a range with a step in every dim): a slice per dim cut;
    - m is an axis permutation of a contiguous run: view + permute (one copy) + view;
    - otherwise: index_select of the flattened x by the constant m (one copy)."""
    if not isinstance(x, TVal):
        x = TVal(L.tensor_id(x), real_of(x))
    shape = list(real.shape)
    numel = x.real.numel()
    flat = m.reshape(-1)
    k = flat.numel()
    start = int(flat[0]) if k else 0
    if k and torch.equal(flat, torch.arange(start, start + k, dtype=torch.int64)):
        if k == numel:
            return _reshaped(L, x, shape)
        line = _reshaped(L, x, [numel])
        piece = L.emit("slice", [line.vid, L.mb.int(0), L.mb.int(start), L.mb.int(start + k),
                                 L.mb.int(1)], line.real[start:start + k])
        return _reshaped(L, piece, shape)
    box = _strided_box(m, list(x.real.shape))
    if box is not None:
        # x[s0:e0:k0, s1:e1:k1, ...]: a slice per dim that is not whole (aliases with step 1).
        out = x
        for d, (lo, count, step) in enumerate(box):
            if lo == 0 and step == 1 and count == int(out.real.shape[d]):
                continue
            hi = lo + (count - 1) * step + 1
            piece = out.real.narrow(d, lo, hi - lo)
            if step > 1:
                piece = piece.index_select(d, torch.arange(0, hi - lo, step))
            out = L.emit("slice", [out.vid, L.mb.int(d), L.mb.int(lo), L.mb.int(hi),
                                   L.mb.int(step)], piece.contiguous())
        return _reshaped(L, out, shape)
    perm = _axis_permutation(m)
    if perm is not None:
        start, sizes, dims = perm
        block = 1
        for s in sizes:
            block *= s
        src = x
        if block != numel:
            line = _reshaped(L, x, [numel])
            src = L.emit("slice", [line.vid, L.mb.int(0), L.mb.int(start),
                                   L.mb.int(start + block), L.mb.int(1)],
                         line.real[start:start + block])
        src = _reshaped(L, src, sizes)
        moved = L.emit("permute", [src.vid, L.mb.int_list(dims)], src.real.permute(dims)
                       .contiguous())
        return _reshaped(L, moved, shape)
    line = _reshaped(L, x, [numel])
    index = L.weight(Const(flat.clone(), "index_map"))
    picked = L.emit("index_select", [line.vid, L.mb.int(0), index], line.real[flat])
    return _reshaped(L, picked, shape)


def _storage_elements(x):
    if hasattr(x, "untyped_storage"):
        return x.untyped_storage().nbytes() // x.element_size()
    return x.storage().size()  # PyTorch < 2.0


def _element_map(x):
    """A tensor like x (same shape, strides and storage offset, over a storage of the same
    size) whose elements are x's row-major element numbers; storage x does not cover holds -1.
    Running a view operator on it gives, for each element of the result, the element of x it
    reads (or -1: storage outside x). Elements sharing memory (stride 0) share a number's
    place; any of their numbers is right, since they hold the same value."""
    storage = torch.full((max(_storage_elements(x), 1),), -1, dtype=torch.int64)
    pos = torch.full(x.shape, x.storage_offset(), dtype=torch.int64)
    for d in range(x.dim()):
        shape = [1] * x.dim()
        shape[d] = x.shape[d]
        pos = pos + torch.arange(x.shape[d], dtype=torch.int64).view(shape) * x.stride(d)
    storage[pos.reshape(-1)] = torch.arange(x.numel(), dtype=torch.int64)
    return storage.as_strided(x.shape, x.stride(), x.storage_offset())


def _input_real(L, n, a, name="self"):
    """The value PyTorch computed for the node's input `name` (first argument), with the
    strides and storage offset eager mode gave it (TVal.real may be a contiguous copy)."""
    src = n.args[0] if n.args else None
    if isinstance(src, torch.fx.Node) and src in L.real:
        return L.real[src]
    return real_of(a[name])


@handles("as_strided.default", "as_strided_copy.default")
def _as_strided(L, n, a, real):
    # as_strided addresses its input's *storage*; tern tensors are contiguous, so the node is
    # re-expressed over the input's elements: which element of x each output element reads is
    # found by running the same as_strided on a map of x's element numbers.
    x = a["self"]
    rx = _input_real(L, n, a)
    size, stride, offset = V(a["size"]), V(a["stride"]), V(a["storage_offset"])
    m = n.target(_element_map(rx), size, stride, offset)
    if m.numel() and int(m.min()) < 0:
        raise Unsupported(
            "as_strided(size=%s, stride=%s, storage_offset=%s) reads memory outside its input "
            "(shape %s, strides %s, storage offset %d, in a storage of %d elements); a tern "
            "tensor holds only its own elements, so this view cannot be expressed"
            % (list(size), list(stride), offset, list(rx.shape), list(rx.stride()),
               rx.storage_offset(), _storage_elements(rx)))
    return gather_by_map(L, x, m.contiguous(), real)


@handles("unfold.default")
def _unfold(L, n, a, real):
    # Tensor.unfold(dim, size, step): every window of `size` along dim, as a new last dim (a
    # strided view in ATen; over tern's contiguous tensors, a gather by the element map).
    x = a["self"]
    rx = real_of(x)
    numbers = torch.arange(rx.numel(), dtype=torch.int64).view(rx.shape)
    m = numbers.unfold(V(a["dimension"]), V(a["size"]), V(a["step"]))
    return gather_by_map(L, x, m.contiguous(), real)


def _index_list(a):
    idx = a["indices"]
    if isinstance(idx, Const):
        idx = [Const(t) for t in idx.value]
    return list(idx)


def _expand_bool_indices(indices):
    """Boolean mask indices (constants) become their nonzero() integer indices, one per masked
    dim, as ATen does; None entries stay None."""
    out = []
    for t in indices:
        if is_none(t) or real_of(t).dtype != torch.bool:
            out.append(t)
            continue
        if not isinstance(t, Const):
            raise Unsupported(
                "indexing with a boolean mask computed from the model's inputs: the result's "
                "shape depends on the data (tern programs have static shapes)")
        nz = t.value.nonzero()
        for k in range(t.value.dim()):
            out.append(Const(nz[:, k].clone()))
    return out


# Above this many elements, constant indices are not analysed through a map of every element
# (an int64 tensor of that size); they go the index_select way of input-dependent indices.
_PROBE_LIMIT = 1 << 24


@handles("index.Tensor", "_unsafe_index.Tensor")
def _index(L, n, a, real):
    # Advanced indexing x[i0, i1, ...]. Constant indices: a gather by a constant element map
    # (a view, slice, permute or index_select: gather_by_map). Indices computed from the
    # inputs: the indexed dims are brought together, their broadcast indices turned into one
    # flat index (negative ones wrapped) and the rows picked with index_select.
    x = a["self"]
    rx = real_of(x)
    raw = _index_list(a)
    indices = _expand_bool_indices(raw)
    if len(indices) > rx.dim():
        raise Unsupported("%d indices for a %d-D tensor" % (len(indices), rx.dim()))
    if all(is_none(t) or isinstance(t, Const) for t in indices) and rx.numel() <= _PROBE_LIMIT:
        probe = torch.arange(rx.numel(), dtype=torch.int64).view(rx.shape)
        m = n.target(probe, [None if is_none(t) else t.value for t in raw])
        return gather_by_map(L, x, m.contiguous(), real)
    return _index_dynamic(L, x, indices, real)


def _add_terms(L, p, q):
    """p + q for index terms (Const or TVal, int64), in torch when both are constants."""
    if p is None:
        return q
    if isinstance(p, Const) and isinstance(q, Const):
        return Const(p.value + q.value)
    return L.emit("add", [L.tensor_id(p), L.tensor_id(q)], real_of(p) + real_of(q))


def _index_dynamic(L, x, indices, real):
    rx = real_of(x)
    if not isinstance(x, TVal):
        x = TVal(L.tensor_id(x), rx)
    dims = [d for d, t in enumerate(indices) if not is_none(t)]
    for d in dims:
        if real_of(indices[d]).dtype not in (torch.int64, torch.int32):
            raise Unsupported("index of dtype %s (expected int64, int32 or bool)"
                              % real_of(indices[d]).dtype)
    if dims != list(range(dims[0], dims[-1] + 1)):
        # Indexed dims apart: ATen puts the broadcast index dims first, so move them there.
        order = dims + [d for d in range(rx.dim()) if d not in dims]
        x = L.emit("permute", [x.vid, L.mb.int_list(order)], rx.permute(order).contiguous())
        rx = x.real
        indices = [indices[d] for d in dims]
        dims = list(range(len(dims)))
    else:
        indices = [indices[d] for d in dims]
    first = dims[0]
    sizes = [int(rx.shape[d]) for d in dims]
    # One flat index over the indexed dims: sum_j idx_j * prod(sizes after j); negative
    # indices count from the end (as in ATen); out-of-range ones stay errors (index_select).
    flat, scale = None, 1
    for j in reversed(range(len(dims))):
        t = L.cast(indices[j], torch.int64)
        if isinstance(t, Const):
            v = t.value
            if bool(((v < -sizes[j]) | (v >= sizes[j])).any()):
                raise Unsupported("constant index out of range for a dim of size %d" % sizes[j])
            term = Const(torch.where(v < 0, v + sizes[j], v) * scale)
        else:
            tr = t.real
            neg = L.emit("lt", [t.vid, L.mb.int(0)], tr < 0)
            up = L.emit("add", [t.vid, L.mb.int(sizes[j])], tr + sizes[j])
            term = L.emit("where", [neg.vid, up.vid, t.vid], torch.where(tr < 0, tr + sizes[j], tr))
            if scale != 1:
                term = L.emit("mul", [term.vid, L.mb.int(scale)], term.real * scale)
        flat = _add_terms(L, flat, term)
        scale *= sizes[j]
    if isinstance(flat, Const):  # constant indices on a large tensor
        flat = TVal(L.weight(Const(flat.value.contiguous(), "index")), flat.value)
    merged = _reshaped(L, x, list(rx.shape[:first]) + [scale] + list(rx.shape[first + len(dims):]))
    line = _reshaped(L, flat, [flat.real.numel()])
    picked = L.emit("index_select", [merged.vid, L.mb.int(first), line.vid],
                    torch.index_select(merged.real, first, line.real))
    return _reshaped(L, picked, list(real.shape))


# Bitwise operators on bool tensors are the logical ones; on integers tern's bitwise_* ops.

_INTEGER_BITWISE = (torch.int32, torch.int64)


def _integer_operand(L, v, dtype):
    """A bitwise operator's operand as a tensor of `dtype` (a number becomes a 0-D constant)."""
    if is_tensor(v):
        return L.tensor_id(L.cast(v, dtype))
    return L.weight(Const(torch.tensor(int(V(v)), dtype=dtype), "scalar"))


def _bitwise(op):
    integer_op = {"logical_and": "bitwise_and", "logical_or": "bitwise_or", "ne": "bitwise_xor"}[op]

    def h(L, n, a, real):
        x, y = a["self"], a["other"]
        if real.dtype in _INTEGER_BITWISE and n.target._schema.name != "aten::logical_xor":
            return L.emit(integer_op, [_integer_operand(L, x, real.dtype),
                                       _integer_operand(L, y, real.dtype)], real)
        if real.dtype != torch.bool:
            raise Unsupported("%s on %s tensors: tern has bitwise operators on bool, int32 and "
                              "int64 tensors" % (n.target._schema.name.split("::")[1], real.dtype))
        xid = L.tensor_id(L.cast(x, torch.bool)) if is_tensor(x) else L.weight(
            Const(torch.tensor(bool(V(x))), "scalar"))
        yid = L.tensor_id(L.cast(y, torch.bool)) if is_tensor(y) else L.weight(
            Const(torch.tensor(bool(V(y))), "scalar"))
        return L.emit(op, [xid, yid], real)
    return h


handles("bitwise_and.Tensor", "bitwise_and.Scalar")(_bitwise("logical_and"))
handles("bitwise_or.Tensor", "bitwise_or.Scalar")(_bitwise("logical_or"))
handles("bitwise_xor.Tensor", "bitwise_xor.Scalar")(_bitwise("ne"))
handles("logical_xor.default")(_bitwise("ne"))


@handles("bitwise_not.default")
def _bitwise_not(L, n, a, real):
    if real.dtype in _INTEGER_BITWISE:
        return L.emit("bitwise_not", [L.tensor_id(a["self"])], real)
    if real.dtype != torch.bool:
        raise Unsupported("bitwise_not on %s tensors: tern has bitwise_not on bool, int32 and "
                          "int64 tensors" % real.dtype)
    return L.emit("logical_not", [L.tensor_id(a["self"])], real)


# Attention -------------------------------------------------------------------------------------

def _regrouped(L, x, shape):
    """x (a TVal or a constant tensor) viewed as `shape`."""
    if isinstance(x, Const):
        return Const(x.value.reshape([int(d) for d in shape]), x.name)
    return _reshaped(L, x, shape)


def _additive_mask(L, mask, dtype):
    """A bool mask computed from the inputs (BERT's padding mask, made from attention_mask) as
    the additive one PyTorch's SDPA makes of it: 0 where true, -inf where false — one `where`
    per mask, shared by the layers that read it. Attention then reads an activation of the
    query's dtype, which the cpu delegate's fused attention takes (a bool activation it does
    not); rows with every key masked give zeros either way (docs/ops.md)."""
    cache = L.__dict__.setdefault("additive_masks", {})
    key = (mask.vid, dtype)
    if key not in cache:
        m = real_of(mask)
        real = torch.zeros(m.shape, dtype=dtype).masked_fill(~m, float("-inf"))
        zero = L.weight(Const(torch.tensor(0.0, dtype=dtype), "mask_attend"))
        ninf = L.weight(Const(torch.tensor(float("-inf"), dtype=dtype), "mask_masked"))
        cache[key] = L.emit("where", [mask.vid, zero, ninf], real)
    return cache[key]


def _sdpa(L, a, real):
    if V(a.get("dropout_p", Const(0.0))):
        raise Unsupported("attention dropout (export the module in eval mode)")
    q, k, v = a["query"], a["key"], a["value"]
    mask = a.get("attn_mask", Const(None))
    if isinstance(mask, TVal) and mask.real.dtype == torch.bool and real.dtype.is_floating_point:
        mask = _additive_mask(L, mask, real.dtype)
    grouped = V(a.get("enable_gqa", Const(False)))
    out_real = real
    if grouped:  # K/V heads read in place through grouped views (gqa.grouped_shapes)
        qs, ks, vs, ms, os_ = gqa.grouped_shapes(
            real_of(q).shape, real_of(k).shape, real_of(v).shape,
            None if is_none(mask) else real_of(mask).shape)
        q, k, v = _regrouped(L, q, qs), _regrouped(L, k, ks), _regrouped(L, v, vs)
        if ms is not None:
            mask = _regrouped(L, mask, ms)
        out_real = real.reshape(os_)
    out = L.emit("scaled_dot_product_attention", [
        L.tensor_id(q), L.tensor_id(k), L.tensor_id(v),
        opt_tensor(L, mask), L.mb.bool(V(a["is_causal"])), L.opt_double(V(a["scale"]))], out_real)
    return _reshaped(L, out, list(real.shape)) if grouped else out


@handles("scaled_dot_product_attention.default")
def _sdpa_handler(L, n, a, real):
    return _sdpa(L, a, real)


@handles("_scaled_dot_product_flash_attention_for_cpu.default")
def _sdpa_flash_cpu(L, n, a, real):
    return Multi([_sdpa(L, a, real[0])] + [Unavailable(n.target, i) for i in range(1, len(real))])


@handles("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(L, n, a, real):
    # masked_fill(x, mask, value) = where(mask, value, x)
    value = a["value"]
    if isinstance(value, Const) and isinstance(value.value, torch.Tensor):
        value = Const(value.value.item())
    if not isinstance(value, Const):
        value_id = L.tensor_id(L.cast(value, real.dtype))
    else:
        value_id = L.weight(Const(torch.tensor(value.value, dtype=real.dtype), "fill_value"))
    return L.emit("where", [L.tensor_id(L.cast(a["mask"], torch.bool)), value_id,
                            L.tensor_id(L.cast(a["self"], real.dtype))], real)


@handles("fill.Tensor")
def _fill_tensor(L, n, a, real):
    # fill(x, value): x's shape, every element value (a 0-d tensor; 1.13's functionalization of
    # `x[i] = 0.5`). A constant value folds; an activation is expanded.
    value = a["value"]
    if isinstance(value, Const):
        return Const(real.detach().clone())
    value = L.cast(value, real.dtype)
    one = real_of(value).reshape([1] * real.dim())
    v = L.emit("view", [L.tensor_id(value), L.mb.int_list(one.shape)], one)
    return L.emit("expand", [v.vid, L.mb.int_list(real.shape)], real)


@handles("_local_scalar_dense.default")
def _item(L, n, a, real):
    raise Unsupported("the model reads a tensor's value as a Python number (.item()); a tern "
                      "graph cannot depend on its input data this way")


# Folded whatever their inputs: the result depends only on shapes (or nothing).
SHAPE_ONLY = set(_overloads([
    "sym_size.int", "sym_numel.default", "sym_stride.int", "zeros_like.default",
    "ones_like.default", "full_like.default", "empty_like.default", "new_zeros.default",
    "new_ones.default", "new_full.default", "new_empty.default", "fill.Scalar",
    "scalar_tensor.default", "zeros.default", "ones.default", "full.default", "arange.default",
    "arange.start", "arange.start_step", "empty.memory_format"]))
UNINITIALIZED = set(_overloads(["empty_like.default", "new_empty.default",
                                "empty.memory_format"]))

# Operators that draw random numbers. Folding one would freeze a single draw into the program
# (ViTMAE's random masking in eval mode): they are refused, with the way out in the message.
RANDOM = set(_overloads([
    name + "." + o
    for name, overloads in [
        ("rand", ["default", "generator"]), ("randn", ["default", "generator"]),
        ("rand_like", ["default", "generator"]), ("randn_like", ["default", "generator"]),
        ("randint", ["default", "generator", "low", "low_generator"]),
        ("randint_like", ["default", "Tensor", "low_dtype"]),
        ("randperm", ["default", "generator"]),
        ("bernoulli", ["default", "p", "Tensor"]),
        ("normal", ["Tensor_float", "float_Tensor", "Tensor_Tensor", "float_float"]),
        ("uniform", ["default"]), ("multinomial", ["default"]), ("poisson", ["default"]),
        ("exponential", ["default"]), ("native_dropout", ["default"])]
    for o in overloads]))
RANDOM_REASON = ("draws random numbers: exporting it would freeze one draw into the program; "
                 "make the random tensor an input of the module (ViTMAE: pass `noise`), or "
                 "export in eval mode (dropout)")

# Operators left whole by the decomposition table (capture.py): those tern maps directly.
KEEP = set(HANDLERS) | SHAPE_ONLY | RANDOM
