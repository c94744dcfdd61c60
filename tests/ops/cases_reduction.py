"""Reductions against PyTorch: sum mean prod amax amin argmax argmin cumsum (docs/ops.md)."""
import torch

from harness import B, Case, I, IL, NONE


def cases():
    def r(*shape):
        return torch.randn(tuple(shape))

    def ri(*shape, dtype=torch.int64):
        return torch.randint(-100, 100, tuple(shape), dtype=dtype)

    out = []
    # (shape, dims, keepdim): all dims, inner, outer, middle, several non-adjacent, negative,
    # size-1 dims, rank 0, empty dims.
    layouts = [
        ((2, 3, 4), [], False), ((2, 3, 4), [], True), ((2, 3, 4), [-1], False),
        ((2, 3, 4), [0], True), ((2, 3, 4), [1], False), ((2, 3, 4), [0, 2], False),
        ((2, 3, 4, 5), [1, 3], True), ((2, 3, 4, 5), [-4, -2], False),
        ((3, 1, 5), [1], False), ((1, 7, 1), [0, 2], True), ((5, 300), [0], False),
        ((300, 5), [1], True), ((7, 513), [1], False), ((), [], False), ((), [0], True),
        ((4, 0, 3), [2], False), ((4, 0, 3), [1], True), ((0, 3), [0], False),
        ((6,), [0], False), ((3, 4, 600), [0, 1], False),
    ]

    def over(f):
        """f over dims `d` (empty: every dim), as a reference that runs on torch 1.13 and 2.x."""
        def ref(x, d, k):
            d = d or list(range(x.dim()))
            return f(x, dim=d, keepdim=k) if d else f(x)
        return ref

    sum_ref, mean_ref = over(torch.sum), over(torch.mean)
    ext_ref = over

    for shape, dims, keep in layouts:
        tag = "%s%s%s" % (shape, dims, "k" if keep else "")
        x = r(*shape)
        out.append(Case("tern::sum", [x, IL(dims), B(keep)], sum_ref, rtol=1e-5, atol=1e-5,
                        name="sum" + tag))
        out.append(Case("tern::mean", [x, IL(dims), B(keep)], mean_ref, rtol=1e-5, atol=1e-6,
                        name="mean" + tag))
        if 0 not in shape:
            out.append(Case("tern::amax", [x, IL(dims), B(keep)], ext_ref(torch.amax),
                            rtol=0, atol=0, name="amax" + tag))
            out.append(Case("tern::amin", [x, IL(dims), B(keep)], ext_ref(torch.amin),
                            rtol=0, atol=0, name="amin" + tag))
    # Empty reductions along a kept dim that is not reduced is fine for amax (ATen allows).
    out.append(Case("tern::amax", [r(0, 3), IL([1]), B(False)], ext_ref(torch.amax),
                    name="amax_empty_kept"))
    # Large dims: sums and means stay within 1e-5 relative (double accumulation).
    big = torch.rand(3, 100000) + 1.0
    out.append(Case("tern::sum", [big, IL([1]), B(False)], sum_ref, rtol=1e-6, atol=0,
                    name="sum_large"))
    out.append(Case("tern::mean", [big, IL([-1]), B(True)], mean_ref, rtol=1e-6, atol=0,
                    name="mean_large"))
    out.append(Case("tern::mean", [big.t().contiguous(), IL([0]), B(False)], mean_ref,
                    rtol=1e-6, atol=0, name="mean_large_outer"))
    # Integers: sum promotes to i64; amax/amin keep the dtype.
    for dt in (torch.int64, torch.int32):
        x = ri(3, 4, 5, dtype=dt)
        for dims in ([], [1], [0, 2]):
            tag = "%s%s" % (str(dt)[6:], dims)
            out.append(Case("tern::sum", [x, IL(dims), B(False)], sum_ref, name="sum_" + tag))
            out.append(Case("tern::amax", [x, IL(dims), B(True)], ext_ref(torch.amax),
                            name="amax_" + tag))
            out.append(Case("tern::amin", [x, IL(dims), B(False)], ext_ref(torch.amin),
                            name="amin_" + tag))
    # prod: ATen takes one dim at a time; the reference multiplies over each in turn. Values
    # near 1 keep long products inside f32's range (tern accumulates in double, ATen in f32).
    def prod_ref(x, d, k):
        d = sorted((i % max(x.dim(), 1) for i in d), reverse=True) if d else None
        if d is None:
            y = torch.prod(x)
            return y.reshape([1] * x.dim()) if k else y
        for i in d:
            x = torch.prod(x, i, keepdim=True)
        return x if k else x.reshape([s for j, s in enumerate(x.shape) if j not in d])

    for shape, dims, keep in layouts:
        tag = "%s%s%s" % (shape, dims, "k" if keep else "")
        x = torch.rand(shape) * 0.5 + 0.75 if shape else torch.tensor(1.5)
        out.append(Case("tern::prod", [x, IL(dims), B(keep)], prod_ref, rtol=1e-5, atol=1e-6,
                        name="prod" + tag))
    xs = torch.randn(4, 6)
    xs[2, 3] = 0.0
    xs[1, 0] = float("nan")
    xs[3, 5] = float("inf")
    out.append(Case("tern::prod", [xs, IL([1]), B(False)], prod_ref, rtol=1e-5, atol=1e-6,
                    name="prod_zero_nan_inf"))
    for dt in (torch.int64, torch.int32):
        x = torch.randint(-3, 4, (3, 4, 5), dtype=dt)
        for dims in ([], [1], [0, 2]):
            tag = "%s%s" % (str(dt)[6:], dims)
            out.append(Case("tern::prod", [x, IL(dims), B(False)], prod_ref, name="prod_" + tag))
    # Wrapping as ATen's: 2^40 * 2^40 overflows int64.
    xw = torch.tensor([[1 << 40, 1 << 40, 3], [-(1 << 62), 2, 5]], dtype=torch.int64)
    out.append(Case("tern::prod", [xw, IL([1]), B(True)], prod_ref, name="prod_int64_wraps"))

    # NaN propagates through amax/amin.
    xn = r(3, 5)
    xn[1, 2] = float("nan")
    out.append(Case("tern::amax", [xn, IL([1]), B(False)], ext_ref(torch.amax), name="amax_nan"))
    out.append(Case("tern::amin", [xn, IL([0]), B(False)], ext_ref(torch.amin), name="amin_nan"))

    # argmax / argmin: dims, keepdim, None (flattened), ties (first index), NaN, ints.
    def arg_ref(f):
        def ref(x, d, k):
            return f(x, dim=d, keepdim=k)
        return ref

    ties = torch.randint(0, 3, (4, 6, 5)).float()
    xa = r(4, 6, 5)
    xa[2, 3, 1] = float("nan")
    xa[2, 1, 1] = float("nan")
    for f, name in ((torch.argmax, "argmax"), (torch.argmin, "argmin")):
        for x, tag in ((r(4, 6, 5), ""), (ties, "_ties"), (xa, "_nan"),
                       (ri(4, 6, 5, dtype=torch.int32), "_i32"), (ri(4, 6, 5), "_i64")):
            for dim, keep in ((0, False), (1, True), (-1, False), (2, True)):
                out.append(Case("tern::" + name, [x, I(dim), B(keep)], arg_ref(f),
                                name="%s%s_d%d%s" % (name, tag, dim, "k" if keep else "")))
            out.append(Case("tern::" + name, [x, NONE, B(False)], arg_ref(f),
                            name="%s%s_flat" % (name, tag)))
        out.append(Case("tern::" + name, [r(), I(0), B(False)], arg_ref(f), name=name + "_rank0"))
        out.append(Case("tern::" + name, [r(9), I(0), B(True)], arg_ref(f), name=name + "_1d"))
        out.append(Case("tern::" + name, [r(0, 4), I(1), B(False)], arg_ref(f),
                        name=name + "_empty_outer"))
        out.append(Case("tern::" + name, [r(3, 700), I(1), B(False)], arg_ref(f),
                        name=name + "_long"))
        out.append(Case("tern::" + name, [r(3, 2, 300), I(1), B(False)], arg_ref(f),
                        name=name + "_wide_inner"))
    # keepdim with dim None: every dim kept as 1 (torch 2.x and 1.13 agree).
    out.append(Case("tern::argmax", [r(3, 4), NONE, B(True)], arg_ref(torch.argmax),
                    name="argmax_flat_keepdim"))

    # cumsum: every dim, negative dims, ints (promoted to i64), rank 0, empty.
    x = r(3, 4, 5)
    for dim in (0, 1, 2, -1, -3):
        out.append(Case("tern::cumsum", [x, I(dim)], torch.cumsum, rtol=1e-5, atol=1e-5,
                        name="cumsum_d%d" % dim))
    out.append(Case("tern::cumsum", [r(2, 1000), I(1)], torch.cumsum, rtol=1e-5, atol=1e-5,
                    name="cumsum_long"))
    out.append(Case("tern::cumsum", [r(300, 300), I(0)], torch.cumsum, rtol=1e-5, atol=1e-5,
                    name="cumsum_wide"))
    out.append(Case("tern::cumsum", [r(), I(0)], torch.cumsum, name="cumsum_rank0"))
    out.append(Case("tern::cumsum", [r(0, 4), I(1)], torch.cumsum, name="cumsum_empty"))
    for dt in (torch.int64, torch.int32):
        out.append(Case("tern::cumsum", [ri(4, 6, dtype=dt), I(1)], torch.cumsum,
                        name="cumsum_" + str(dt)[6:]))
        out.append(Case("tern::cumsum", [ri(4, 6, dtype=dt), I(0)], torch.cumsum,
                        name="cumsum0_" + str(dt)[6:]))
    return out
