"""Every elementwise op of docs/ops.md against PyTorch: broadcasting (size-1 dims, rank
mismatch, rank 0, empty), scalars, type promotion, attribute variants, int/bool dtypes."""

import torch
import torch.nn.functional as F

from harness import Case, D, I, NONE, S

BCAST = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 5), (3, 1)), ((), (2, 2)), ((7,), ()),
         ((2, 1, 3, 1), (1, 4, 1, 5)), ((0, 3), (3,)), ((1,), (1,)), ((3, 17, 33), (3, 17, 33)),
         ((2, 3, 4, 5), (1, 3, 1, 1))]


def r(*shape):
    return torch.randn(tuple(shape))


def ri(*shape, low=-50, high=50, dtype=torch.int64):
    return torch.randint(low, high, tuple(shape), dtype=dtype)


def nonzero_int(*shape, dtype=torch.int64):
    t = torch.randint(1, 20, tuple(shape), dtype=dtype)
    sign = torch.randint(0, 2, tuple(shape), dtype=dtype) * 2 - 1
    return t * sign


def rb(*shape):
    return torch.rand(tuple(shape)) > 0.5


def with_specials(t):
    """A float tensor with NaN, +-inf, +-0 and halves planted in."""
    t = t.clone().reshape(-1)
    specials = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 0.5, -1.5, 2.5]
    for i, v in enumerate(specials[:t.numel()]):
        t[i * 3 % t.numel()] = v
    return t


def binary_cases():
    out = []
    for op, fn in [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul),
                   ("div", torch.div), ("maximum", torch.maximum), ("minimum", torch.minimum)]:
        for a, b in BCAST:
            out.append(Case("tern::" + op, [r(*a), r(*b)], fn, name="%s%s%s" % (op, a, b)))
        # Integers (i64 and i32), broadcast.
        if op != "div":
            out.append(Case("tern::" + op, [ri(3, 4), ri(4)], fn, name=op + "_i64"))
            out.append(Case("tern::" + op, [ri(2, 1, 5, dtype=torch.int32),
                                            ri(3, 1, dtype=torch.int32)], fn, name=op + "_i32"))
    # Scalars and alpha.
    for op, fn in [("add", torch.add), ("sub", torch.sub)]:
        out.append(Case("tern::" + op, [r(3, 4), r(4), D(-0.5)],
                        lambda a, b, al, fn=fn: fn(a, b, alpha=al), name=op + "_alpha"))
        out.append(Case("tern::" + op, [ri(3, 4), ri(4), I(3)],
                        lambda a, b, al, fn=fn: fn(a, b, alpha=al), name=op + "_i64_alpha"))
        out.append(Case("tern::" + op, [r(5), D(2.5)], fn, name=op + "_scalar_double"))
        out.append(Case("tern::" + op, [ri(5, dtype=torch.int32), I(7)], fn,
                        name=op + "_i32_scalar_int"))
        out.append(Case("tern::" + op, [ri(5), D(0.25)], fn, name=op + "_int_scalar_double_f32"))
    out.append(Case("tern::mul", [r(2, 8), D(0.125)], torch.mul, name="mul_scalar"))
    out.append(Case("tern::mul", [rb(3, 4), rb(4)], torch.mul, name="mul_bool"))
    # Promotion between tensors: f32 with i64, i32 with i64, 0-dim tensors as scalars.
    out.append(Case("tern::add", [r(3, 4), ri(4)], torch.add, name="add_f32_i64"))
    out.append(Case("tern::add", [ri(3, 4, dtype=torch.int32), ri(4)], torch.add,
                    name="add_i32_i64"))
    out.append(Case("tern::mul", [ri(3, 4, dtype=torch.int32), ri()], torch.mul,
                    name="mul_i32_i64_0dim"))
    out.append(Case("tern::mul", [ri(3, 4), r()], torch.mul, name="mul_i64_f32_0dim"))
    out.append(Case("tern::add", [rb(3), ri(3)], torch.add, name="add_bool_i64"))
    # div: true division of integers gives f32; rounding modes.
    out.append(Case("tern::div", [ri(3, 4), nonzero_int(4)], torch.div, name="div_int_true"))
    out.append(Case("tern::div", [ri(6), I(4)], torch.div, name="div_int_scalar_true"))
    for mode in ["trunc", "floor"]:
        out.append(Case("tern::div", [r(3, 4) * 10, r(4), S(mode)],
                        lambda a, b, m: torch.div(a, b, rounding_mode=m), name="div_" + mode))
        out.append(Case("tern::div", [ri(3, 4, low=-100, high=100), nonzero_int(4), S(mode)],
                        lambda a, b, m: torch.div(a, b, rounding_mode=m),
                        name="div_i64_" + mode))
        out.append(Case("tern::div", [ri(7, low=-100, high=100, dtype=torch.int32),
                                      nonzero_int(7, dtype=torch.int32), S(mode)],
                        lambda a, b, m: torch.div(a, b, rounding_mode=m),
                        name="div_i32_" + mode))
        out.append(Case("tern::div", [r(9) * 5, D(-1.5), S(mode)],
                        lambda a, b, m: torch.div(a, b, rounding_mode=m),
                        name="div_scalar_" + mode))
    out.append(Case("tern::div", [r(4, 3), r(3), NONE],
                    lambda a, b, m: torch.div(a, b, rounding_mode=m), name="div_mode_none"))
    out.append(Case("tern::div", [with_specials(r(24)), with_specials(r(24)).flip(0)],
                    torch.div, name="div_specials"))
    # pow: tensor and scalar exponents (negative bases give NaN for fractional exponents).
    out.append(Case("tern::pow", [r(3, 4).abs() + 0.1, r(4)], torch.pow, name="pow_tensor"))
    out.append(Case("tern::pow", [r(3, 4), r(3, 1)], torch.pow, name="pow_tensor_nan"))
    for e in [2.0, 0.5, 3.0, -1.0, 1.0, 0.0, -2.5]:
        out.append(Case("tern::pow", [r(5, 6), D(e)], torch.pow, rtol=1e-5, atol=1e-5,
                        name="pow_scalar_%g" % e))
    out.append(Case("tern::pow", [r(5), I(3)], torch.pow, name="pow_scalar_int"))
    # maximum/minimum propagate NaN.
    for op, fn in [("maximum", torch.maximum), ("minimum", torch.minimum)]:
        out.append(Case("tern::" + op, [with_specials(r(24)), r(24)], fn, name=op + "_nan"))
    return out


def compare_cases():
    out = []
    for op, fn in [("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le),
                   ("gt", torch.gt), ("ge", torch.ge)]:
        x = r(3, 4)
        y = x.clone()
        y[0] = r(4)
        out.append(Case("tern::" + op, [x, y], fn, name=op + "_f32"))
        out.append(Case("tern::" + op, [r(2, 1, 5), r(3, 1)], fn, name=op + "_bcast"))
        out.append(Case("tern::" + op, [ri(3, 4, low=-3, high=3), ri(4, low=-3, high=3)], fn,
                        name=op + "_i64"))
        out.append(Case("tern::" + op, [ri(3, 4, low=-3, high=3, dtype=torch.int32),
                                        ri(3, 4, low=-3, high=3, dtype=torch.int32)], fn,
                        name=op + "_i32"))
        out.append(Case("tern::" + op, [rb(3, 4), rb(4)], fn, name=op + "_bool"))
        out.append(Case("tern::" + op, [r(6), D(0.0)], fn, name=op + "_scalar"))
        out.append(Case("tern::" + op, [ri(6, low=-3, high=3), D(0.5)], fn,
                        name=op + "_int_scalar_double"))
        out.append(Case("tern::" + op, [ri(6, low=-3, high=3), I(1)], fn,
                        name=op + "_int_scalar_int"))
        out.append(Case("tern::" + op, [with_specials(r(12)), with_specials(r(12)).flip(0)], fn,
                        name=op + "_specials"))
        out.append(Case("tern::" + op, [r(3, 4), ri(4, low=-1, high=1)], fn,
                        name=op + "_f32_i64"))
        out.append(Case("tern::" + op, [r(0, 3), r(3)], fn, name=op + "_empty"))
    return out


def logical_cases():
    out = []
    for op, fn in [("logical_and", torch.logical_and), ("logical_or", torch.logical_or)]:
        out.append(Case("tern::" + op, [rb(3, 4), rb(4)], fn, name=op + "_bool"))
        out.append(Case("tern::" + op, [with_specials(r(12)), ri(12, low=-1, high=2)], fn,
                        name=op + "_f32_i64"))
        out.append(Case("tern::" + op, [ri(2, 1, 3, low=-1, high=2, dtype=torch.int32),
                                        rb(4, 1)], fn, name=op + "_i32_bool"))
        out.append(Case("tern::" + op, [ri(5, low=0, high=3, dtype=torch.uint8),
                                        r(5).half()], fn, name=op + "_u8_f16"))
        out.append(Case("tern::" + op, [rb(0, 2), rb(2)], fn, name=op + "_empty"))
    out.append(Case("tern::logical_not", [rb(3, 4)], torch.logical_not, name="logical_not_bool"))
    out.append(Case("tern::logical_not", [with_specials(r(12))], torch.logical_not,
                    name="logical_not_f32"))
    out.append(Case("tern::logical_not", [ri(7, low=-2, high=2)], torch.logical_not,
                    name="logical_not_i64"))
    out.append(Case("tern::logical_not", [ri(7, low=-2, high=2, dtype=torch.int8)],
                    torch.logical_not, name="logical_not_i8"))
    return out


def bitwise_cases():
    """Integer and bool bitwise operators (CPM-Ant ANDs integer masks), promoting as PyTorch."""
    out = []
    for op, fn in [("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or),
                   ("bitwise_xor", torch.bitwise_xor)]:
        out.append(Case("tern::" + op, [ri(3, 4, low=-300, high=300), ri(4, low=-300, high=300)],
                        fn, rtol=0, atol=0, name=op + "_i64"))
        out.append(Case("tern::" + op, [ri(2, 5, low=-9, high=9, dtype=torch.int32),
                                        ri(2, 1, low=-9, high=9)], fn, rtol=0, atol=0,
                        name=op + "_i32_i64"))
        out.append(Case("tern::" + op, [rb(3, 1), rb(4)], fn, rtol=0, atol=0,
                        name=op + "_bool"))
        out.append(Case("tern::" + op, [ri(6, low=-5, high=5, dtype=torch.int32), rb(6)], fn,
                        rtol=0, atol=0, name=op + "_i32_bool"))
        out.append(Case("tern::" + op, [ri(5, low=-100, high=100), I(6)], fn, rtol=0, atol=0,
                        name=op + "_scalar"))
    out.append(Case("tern::bitwise_not", [ri(7, low=-4, high=4)], torch.bitwise_not, rtol=0,
                    atol=0, name="bitwise_not_i64"))
    out.append(Case("tern::bitwise_not", [ri(7, low=-4, high=4, dtype=torch.int32)],
                    torch.bitwise_not, rtol=0, atol=0, name="bitwise_not_i32"))
    out.append(Case("tern::bitwise_not", [rb(5)], torch.bitwise_not, rtol=0, atol=0,
                    name="bitwise_not_bool"))
    return out


def where_cases():
    out = []
    for c, a, b in [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), (3, 4)), ((), (2, 3), (3,)),
                    ((2, 1, 4), (3, 1), (1,)), ((0, 4), (4,), (1, 4)), ((2, 3, 1, 5), (3, 4, 1), ())]:
        out.append(Case("tern::where", [rb(*c), r(*a), r(*b)], torch.where,
                        name="where%s%s%s" % (c, a, b)))
    out.append(Case("tern::where", [rb(3, 4), ri(3, 4), ri(4)], torch.where, name="where_i64"))
    out.append(Case("tern::where", [rb(3, 4), ri(3, 4, dtype=torch.int32),
                                    ri(4, dtype=torch.int32)], torch.where, name="where_i32"))
    out.append(Case("tern::where", [rb(3, 4), rb(3, 4), rb(4)], torch.where, name="where_bool"))
    out.append(Case("tern::where", [rb(3, 4), r(3, 4), ri(4)], torch.where,
                    name="where_f32_i64"))
    out.append(Case("tern::where", [rb(3, 4), r(3, 4), D(-1e9)],
                    lambda c, a, b: torch.where(c, a, torch.tensor(b)), name="where_scalar_b"))
    out.append(Case("tern::where", [rb(2, 5), D(0.0), r(5)],
                    lambda c, a, b: torch.where(c, torch.tensor(a), b), name="where_scalar_a"))
    out.append(Case("tern::where", [rb(2, 5), r(5).half(), r(2, 1).half()], torch.where,
                    name="where_f16"))
    return out


def unary_cases():
    out = []
    ops = [("neg", torch.neg), ("abs", torch.abs), ("exp", torch.exp), ("log", torch.log),
           ("sqrt", torch.sqrt), ("rsqrt", torch.rsqrt), ("reciprocal", torch.reciprocal),
           ("sin", torch.sin), ("cos", torch.cos), ("tanh", torch.tanh),
           ("sigmoid", torch.sigmoid), ("erf", torch.erf), ("floor", torch.floor),
           ("ceil", torch.ceil), ("round", torch.round), ("expm1", torch.expm1),
           ("log1p", torch.log1p), ("acos", torch.acos), ("asin", torch.asin),
           ("atan", torch.atan)]
    for op, fn in ops:
        for shape in [(3, 4), (2, 3, 5), (), (0, 4), (1000,)]:
            x = r(*shape) * 3
            if op in ("log", "sqrt", "rsqrt", "log1p") and shape == (1000,):
                x = x.abs() + 1e-3  # keep the large one finite; the others check NaN
            if op in ("acos", "asin") and shape == (1000,):
                x = torch.tanh(x)  # inside [-1, 1]
            out.append(Case("tern::" + op, [x], fn, rtol=2e-6, atol=1e-6,
                            name="%s%s" % (op, shape)))
        out.append(Case("tern::" + op, [with_specials(r(24))], fn, rtol=2e-6, atol=1e-6,
                        name=op + "_specials"))
    for op, fn in [("neg", torch.neg), ("abs", torch.abs)]:
        out.append(Case("tern::" + op, [ri(3, 4)], fn, name=op + "_i64"))
        out.append(Case("tern::" + op, [ri(3, 4, dtype=torch.int32)], fn, name=op + "_i32"))
    for op, fn in [("floor", torch.floor), ("ceil", torch.ceil), ("round", torch.round)]:
        out.append(Case("tern::" + op, [ri(3, 4)], fn, name=op + "_i64"))
    # expm1 and log1p near 0, where exp(x) - 1 and log(1 + x) lose every digit (xIELU's
    # negative branch, xLSTM's gates): relative error against float64.
    tiny = torch.tensor([1e-10, -1e-10, 3e-8, -3e-8, 1e-5, -1e-5, 1e-20, 0.0, -0.0])
    for op, fn in [("expm1", torch.expm1), ("log1p", torch.log1p)]:
        out.append(Case("tern::" + op, [tiny], fn, rtol=2e-7, atol=0, name=op + "_near_zero"))
    # Half-to-even rounding.
    halves = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 1e7 + 0.5, 0.49999997])
    out.append(Case("tern::round", [halves], torch.round, rtol=0, atol=0, name="round_halves"))
    # Integer inputs of the float ops give f32 (as ATen).
    for op, fn in [("exp", torch.exp), ("sqrt", torch.sqrt), ("sigmoid", torch.sigmoid),
                   ("sin", torch.sin)]:
        out.append(Case("tern::" + op, [ri(3, 4, low=0, high=10)], fn, name=op + "_int_in"))
    out.append(Case("tern::exp", [rb(5)], torch.exp, name="exp_bool_in"))
    return out


def activation_cases():
    out = []
    x = lambda: r(4, 33) * 4  # noqa: E731
    out.append(Case("tern::relu", [with_specials(r(24))], torch.relu, name="relu_specials"))
    out.append(Case("tern::relu", [ri(3, 4)], torch.relu, name="relu_i64"))
    out.append(Case("tern::relu", [ri(3, 4, dtype=torch.int32)], torch.relu, name="relu_i32"))
    out.append(Case("tern::relu", [r(0, 5)], torch.relu, name="relu_empty"))
    for lo, hi in [(-1.0, 1.0), (0.0, 6.0), (-0.5, 2.0)]:
        out.append(Case("tern::hardtanh", [x(), D(lo), D(hi)], F.hardtanh,
                        name="hardtanh_%g_%g" % (lo, hi)))
    out.append(Case("tern::hardtanh", [x(), I(0), I(6)], F.hardtanh, name="hardtanh_int_bounds"))
    clamp = lambda t, lo, hi: torch.clamp(t, lo, hi)  # noqa: E731
    out.append(Case("tern::clamp", [x(), D(-1.5), D(2.0)], clamp, name="clamp_f32"))
    out.append(Case("tern::clamp", [x(), NONE, D(0.5)], clamp, name="clamp_max_only"))
    out.append(Case("tern::clamp", [x(), D(-0.5), NONE], clamp, name="clamp_min_only"))
    out.append(Case("tern::clamp", [x(), D(2.0), D(-1.0)], clamp, name="clamp_min_gt_max"))
    out.append(Case("tern::clamp", [with_specials(r(24)), D(-1.0), D(1.0)], clamp,
                    name="clamp_nan"))
    out.append(Case("tern::clamp", [ri(3, 5), I(-10), I(10)], clamp, name="clamp_i64"))
    out.append(Case("tern::clamp", [ri(3, 5, dtype=torch.int32), I(-3), NONE], clamp,
                    name="clamp_i32"))
    out.append(Case("tern::clamp", [x(), I(-1), I(1)], clamp, name="clamp_f32_int_bounds"))
    for slope in [0.01, 0.2, -0.5]:
        out.append(Case("tern::leaky_relu", [x(), D(slope)], F.leaky_relu,
                        name="leaky_relu_%g" % slope))
    for alpha, scale, in_scale in [(1.0, 1.0, 1.0), (0.5, 2.0, 1.5),
                                   (1.6732632423543772, 1.0507009873554805, 1.0)]:
        out.append(Case("tern::elu", [x(), D(alpha), D(scale), D(in_scale)],
                        lambda t, a, s, i: torch.ops.aten.elu(t, a, s, i),
                        name="elu_%g_%g_%g" % (alpha, scale, in_scale)))
    for approx in ["none", "tanh"]:
        out.append(Case("tern::gelu", [x(), S(approx)],
                        lambda t, a: F.gelu(t, approximate=a), name="gelu_" + approx))
    # Large magnitudes against float64 (the tails where 1 + erf and 1 + tanh cancel in f32),
    # and values whose result is exactly x or -0.
    big = torch.linspace(-20, 20, 4001)
    extremes = torch.tensor([1e3, -1e3, 1e30, -1e30, 3e38, -3e38])
    for approx in ["none", "tanh"]:
        out.append(Case("tern::gelu", [big, S(approx)],
                        lambda t, a: F.gelu(t.double(), approximate=a).float(), rtol=0, atol=2e-6,
                        name="gelu_large_" + approx))
        out.append(Case("tern::gelu", [extremes, S(approx)],
                        lambda t, a: F.gelu(t.double(), approximate=a).float(), rtol=0, atol=0,
                        name="gelu_extremes_" + approx))
    out.append(Case("tern::silu", [x()], F.silu))
    out.append(Case("tern::hardswish", [x()], F.hardswish))
    out.append(Case("tern::hardsigmoid", [x()], F.hardsigmoid))
    for beta, threshold in [(1.0, 20.0), (2.0, 5.0), (0.5, 1.0)]:
        out.append(Case("tern::softplus", [x() * 3, D(beta), D(threshold)], F.softplus,
                        name="softplus_%g_%g" % (beta, threshold)))
    for op, fn in [("silu", F.silu), ("gelu", F.gelu), ("hardswish", F.hardswish),
                   ("sigmoid", torch.sigmoid)]:
        out.append(Case("tern::" + op, [r(2, 0, 3)], fn, name=op + "_empty"))
    return out


def cast_cases():
    out = []
    dtypes = [torch.float32, torch.float16, torch.int64, torch.int32, torch.int16,
              torch.int8, torch.uint8, torch.bool]

    def source(dtype):
        if dtype == torch.bool:
            return rb(3, 5)
        if dtype.is_floating_point:
            return (with_specials(r(15)).reshape(3, 5) * 40).to(dtype)
        if dtype == torch.uint8:
            return ri(3, 5, low=0, high=256, dtype=dtype)
        return ri(3, 5, low=-100, high=100, dtype=dtype)

    for src in dtypes:
        for dst in dtypes:
            x = source(src)
            if src.is_floating_point and not dst.is_floating_point and dst != torch.bool:
                # Float -> int is undefined in ATen for NaN/inf/out of range: finite values
                # inside the target's range only (truncation toward zero is what is checked).
                lo, hi = (0, 255) if dst == torch.uint8 else (-100, 100)
                x = (torch.rand(3, 5) * (hi - lo) + lo).to(src)
                x[0, 0] = -0.7 if dst != torch.uint8 else 0.7
            out.append(Case("tern::cast", [x], lambda t, dst=dst: t.to(dst), rtol=0, atol=0,
                            name="cast_%s_%s" % (str(src)[6:], str(dst)[6:])))
    # f32 -> f16 rounding, overflow and subnormals.
    v = torch.tensor([65504.0, 65519.0, 65520.0, 1e6, -1e6, 6.1e-5, 3e-8, 2.9802322e-08,
                      1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, 0.1, -0.0, float("nan")])
    out.append(Case("tern::cast", [v], lambda t: t.half(), rtol=0, atol=0, name="cast_f16_edges"))
    out.append(Case("tern::cast", [r(0, 3)], lambda t: t.to(torch.int64), name="cast_empty"))
    return out


def cases():
    return (binary_cases() + compare_cases() + logical_cases() + bitwise_cases() + where_cases()
            + unary_cases()
            + activation_cases() + cast_cases())
