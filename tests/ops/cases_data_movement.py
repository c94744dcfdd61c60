"""Data-movement ops against PyTorch (docs/ops.md "Data movement").

Every tensor argument is a planned method input, so views (reshape, squeeze, contiguous
slice/select/split pieces) run as planner aliases here; the copy paths of the same kernels are
covered by tests/kernels/data_movement_*_test.cpp. Copies are exact (tolerance 0);
upsample_bilinear2d allows f32 rounding (rtol 1e-5).
"""
import torch
import torch.nn.functional as F

from harness import Case, B, D, I, IL, NONE, S, TL

EXACT = dict(rtol=0.0, atol=0.0)


def r(*shape):
    return torch.randn(tuple(shape))


def ri(*shape, dtype=torch.int64):
    return torch.randint(-100, 100, tuple(shape), dtype=dtype)


def rb(*shape):
    return torch.rand(tuple(shape)) > 0.5


def squeeze_ref(x, dims):
    if not dims:
        return x.squeeze()
    for d in sorted({d % max(x.dim(), 1) for d in dims}, reverse=True):
        x = x.squeeze(d)
    return x


def slice_ref(x, dim, start, end, step):
    index = [slice(None)] * x.dim()
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


def views():
    out = []
    for x, shape in [((2, 3, 4), [4, -1]), ((2, 3, 4), [24]), ((5,), [1, 5, 1]), ((0, 3), [3, 0]),
                     ((0, 3), [-1, 6]), ((1, 1), [])]:
        for op in ("tern::reshape", "tern::view"):
            out.append(Case(op, [r(*x), IL(shape)], lambda t, s: t.reshape(s), name="%s%s->%s" % (
                op[6:], x, shape), **EXACT))
    out.append(Case("tern::view", [ri(2, 6), IL([3, 4])], lambda t, s: t.reshape(s),
                    name="view_i64", **EXACT))
    for x, dims in [((1, 3, 1, 2), []), ((1, 3, 1, 2), [0]), ((1, 3, 1, 2), [-2, 0]),
                    ((1, 3, 1, 2), [1]), ((1,), []), ((2, 3), [])]:
        out.append(Case("tern::squeeze", [r(*x), IL(dims)], squeeze_ref,
                        name="squeeze%s%s" % (x, dims), **EXACT))
    out.append(Case("tern::squeeze", [rb(1, 4, 1), IL([])], squeeze_ref, name="squeeze_bool",
                    **EXACT))
    for x, dim in [((2, 3), 0), ((2, 3), 2), ((2, 3), -1), ((2, 3), -3), ((), 0), ((0, 4), 1)]:
        out.append(Case("tern::unsqueeze", [r(*x), I(dim)], lambda t, d: t.unsqueeze(d),
                        name="unsqueeze%s,%d" % (x, dim), **EXACT))
    for x, s, e in [((2, 3, 4, 5), 1, 2), ((2, 3, 4, 5), 0, -1), ((2, 3, 4, 5), -2, -1),
                    ((2, 3), 1, 1), ((), 0, -1), ((2, 0, 3), 0, 1)]:
        out.append(Case("tern::flatten", [r(*x), I(s), I(e)],
                        lambda t, a, b: torch.flatten(t, a, b), name="flatten%s,%d,%d" % (x, s, e),
                        **EXACT))
    out.append(Case("tern::flatten", [ri(2, 3, 4, dtype=torch.int32), I(1), I(-1)],
                    lambda t, a, b: torch.flatten(t, a, b), name="flatten_i32", **EXACT))
    return out


def copies():
    out = []
    for x, dims in [((2, 3, 4), [2, 0, 1]), ((2, 3, 4), [0, 2, 1]), ((2, 3, 4), [1, 0, 2]),
                    ((33, 65), [1, 0]), ((2, 3, 4, 5), [0, 2, 3, 1]), ((2, 3, 4, 5), [-1, -2, 0, 1]),
                    ((3, 1, 4), [1, 2, 0]), ((0, 3), [1, 0]), ((7,), [0]), ((), [])]:
        out.append(Case("tern::permute", [r(*x), IL(dims)], lambda t, d: t.permute(d),
                        name="permute%s%s" % (x, dims), **EXACT))
    out.append(Case("tern::permute", [ri(3, 5, 2), IL([2, 0, 1])], lambda t, d: t.permute(d),
                    name="permute_i64", **EXACT))
    out.append(Case("tern::permute", [rb(3, 5, 2), IL([1, 2, 0])], lambda t, d: t.permute(d),
                    name="permute_bool", **EXACT))
    out.append(Case("tern::permute", [ri(40, 70, dtype=torch.int16), IL([1, 0])],
                    lambda t, d: t.permute(d), name="permute_i16_tiles", **EXACT))
    for x, dims in [((2, 3, 4), [1]), ((2, 3, 4), [0, 2]), ((2, 3, 4), [-1, 0, 1]),
                    ((5,), [0]), ((1, 20, 40), [1]), ((3, 1, 2), [1]), ((), [0]), ((0, 3), [1]),
                    ((2, 3), [])]:
        out.append(Case("tern::flip", [r(*x), IL(dims)], lambda t, d: torch.flip(t, d),
                        name="flip%s%s" % (x, dims), **EXACT))
    out.append(Case("tern::flip", [ri(3, 4, dtype=torch.int32), IL([0])],
                    lambda t, d: torch.flip(t, d), name="flip_i32", **EXACT))
    out.append(Case("tern::flip", [rb(2, 5), IL([1])], lambda t, d: torch.flip(t, d),
                    name="flip_bool", **EXACT))
    for x, a, b in [((2, 3), 0, 1), ((2, 3, 4), -1, 0), ((2, 3, 4), 1, 1), ((4, 5, 6), 1, 2),
                    ((), 0, -1)]:
        out.append(Case("tern::transpose", [r(*x), I(a), I(b)],
                        lambda t, d0, d1: t.transpose(d0, d1), name="transpose%s,%d,%d" % (x, a, b),
                        **EXACT))
    out.append(Case("tern::transpose", [ri(3, 4, dtype=torch.int32), I(0), I(1)],
                    lambda t, d0, d1: t.transpose(d0, d1), name="transpose_i32", **EXACT))
    for x, sizes in [((3, 1), [3, 4]), ((3, 1), [2, 3, 4]), ((1,), [5]), ((2, 1, 3), [-1, 4, -1]),
                     ((), [2, 3]), ((1, 4), [0, 4]), ((3, 1), [2, -1, 0])]:
        out.append(Case("tern::expand", [r(*x), IL(sizes)], lambda t, s: t.expand(s),
                        name="expand%s%s" % (x, sizes), **EXACT))
    out.append(Case("tern::expand", [rb(1, 3), IL([2, 3])], lambda t, s: t.expand(s),
                    name="expand_bool", **EXACT))
    for x in [(2, 3), (), (0, 4)]:
        out.append(Case("tern::clone", [r(*x)], lambda t: t.clone(), name="clone%s" % (x,),
                        **EXACT))
    out.append(Case("tern::clone", [ri(5)], lambda t: t.clone(), name="clone_i64", **EXACT))
    return out


def cat_cases():
    out = []
    for shapes, dim in [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1),
                        ([(2, 3), (2, 3)], -1), ([(2, 0, 3), (2, 2, 3)], 1),
                        ([(3, 2), (0,), (1, 2)], 0), ([(1, 2, 3)], 2), ([(0,), (0,)], 0),
                        ([(2, 3, 4), (2, 3, 4), (2, 3, 4)], -2)]:
        out.append(Case("tern::cat", [TL([r(*s) for s in shapes]), I(dim)],
                        lambda ts, d: torch.cat(ts, d), name="cat%s,%d" % (shapes, dim), **EXACT))
    out.append(Case("tern::cat", [TL([ri(2, 2), ri(2, 3)]), I(1)], lambda ts, d: torch.cat(ts, d),
                    name="cat_i64", **EXACT))
    out.append(Case("tern::cat", [TL([rb(1, 3), rb(2, 3)]), I(0)], lambda ts, d: torch.cat(ts, d),
                    name="cat_bool", **EXACT))
    return out


def pieces():
    out = []
    sl = [((6, 4), 0, 1, 4, 1), ((6, 4), 0, None, None, 1), ((6, 4), 1, 1, 3, 1),
          ((6, 4), 0, -4, -1, 2), ((6, 4), 1, -100, 100, 3), ((6, 4), -1, 3, 1, 1),
          ((1, 8, 3), 1, 2, 7, 1), ((1, 8, 3), 1, 2, 7, 2), ((1, 1, 8), -1, 5, None, 1),
          ((6, 4), 0, 10, 20, 1), ((6, 4), 0, None, -2, 1), ((2, 0, 3), 2, 1, 2, 1),
          ((5,), 0, 1, 2, 1), ((5,), 0, -2, None, 4)]
    for x, dim, start, end, step in sl:
        out.append(Case("tern::slice", [r(*x), I(dim), NONE if start is None else I(start),
                                        NONE if end is None else I(end), I(step)],
                        slice_ref, name="slice%s,%d,%s,%s,%d" % (x, dim, start, end, step),
                        **EXACT))
    out.append(Case("tern::slice", [ri(1, 9, dtype=torch.int32), I(1), I(2), I(5), I(1)],
                    slice_ref, name="slice_i32", **EXACT))
    out.append(Case("tern::slice", [rb(4, 3), I(0), I(1), I(3), I(1)], slice_ref,
                    name="slice_bool", **EXACT))
    for x, dim, index in [((4, 3), 0, 2), ((4, 3), 1, -1), ((1, 5, 2), 1, 3), ((1, 5, 2), -1, 0),
                          ((7,), 0, -7), ((2, 3, 4), 1, 1)]:
        out.append(Case("tern::select", [r(*x), I(dim), I(index)], lambda t, d, i: t.select(d, i),
                        name="select%s,%d,%d" % (x, dim, index), **EXACT))
    out.append(Case("tern::select", [ri(3, 4), I(0), I(1)], lambda t, d, i: t.select(d, i),
                    name="select_i64", **EXACT))
    for x, sizes, dim in [((6, 4), [2, 4], 0), ((6, 4), [1, 3], 1), ((1, 9, 2), [2, 3, 4], 1),
                          ((1, 9, 2), [3], 1), ((1, 9, 2), [4], -2), ((5, 3), [0, 5, 0], 0),
                          ((5, 3), [10], 0), ((2, 6), [6], 1)]:
        out.append(Case("tern::split", [r(*x), IL(sizes), I(dim)],
                        lambda t, s, d: torch.split(t, s[0] if len(s) == 1 else s, d),
                        name="split%s%s,%d" % (x, sizes, dim), **EXACT))
    out.append(Case("tern::split", [ri(1, 4, dtype=torch.int32), IL([1, 3]), I(1)],
                    lambda t, s, d: torch.split(t, s, d), name="split_i32", **EXACT))
    return out


def indexing():
    out = []
    for x, dim, n in [((5, 3), 0, 4), ((5, 3), 1, 6), ((2, 5, 3), -2, 3), ((5,), 0, 0), ((4, 0), 0, 2)]:
        size = x[dim]
        idx = torch.randint(0, max(size, 1), (n,))
        out.append(Case("tern::index_select", [r(*x), I(dim), idx],
                        lambda t, d, i: torch.index_select(t, d, i),
                        name="index_select%s,%d,%d" % (x, dim, n), **EXACT))
    out.append(Case("tern::index_select", [ri(4, 3), I(0), torch.tensor([3, 0, 0], dtype=torch.int32)],
                    lambda t, d, i: torch.index_select(t, d, i.long()), name="index_select_i32idx",
                    **EXACT))
    out.append(Case("tern::index_select", [r(4, 3), I(1), torch.tensor(2)],
                    lambda t, d, i: torch.index_select(t, d, i), name="index_select_0d", **EXACT))
    # index_copy (a KV cache written at its positions): distinct indices, as the reference
    # leaves the order of writes to a repeated index unspecified.
    for x, dim, n in [((1, 2, 8, 4), 2, 3), ((1, 2, 8, 4), -2, 1), ((6, 3), 0, 6), ((5, 3), 1, 2),
                      ((4,), 0, 0)]:
        idx = torch.randperm(x[dim])[:n]
        src_shape = list(x)
        src_shape[dim] = n
        out.append(Case("tern::index_copy", [r(*x), I(dim), idx, r(*src_shape)],
                        lambda t, d, i, s: torch.index_copy(t, d, i, s),
                        name="index_copy%s,%d,%d" % (x, dim, n), **EXACT))
    out.append(Case("tern::index_copy", [ri(4, 3), I(0), torch.tensor([2], dtype=torch.int32),
                                         ri(1, 3)],
                    lambda t, d, i, s: torch.index_copy(t, d, i.long(), s),
                    name="index_copy_i32idx_int", **EXACT))
    for x, dim, idx_shape in [((4, 5), 0, (3, 5)), ((4, 5), 1, (4, 7)), ((4, 5), -1, (2, 3)),
                              ((2, 3, 4), 1, (2, 5, 4)), ((3, 4), 0, (0, 4))]:
        idx = torch.randint(0, x[dim], idx_shape)
        out.append(Case("tern::gather", [r(*x), I(dim), idx], lambda t, d, i: torch.gather(t, d, i),
                        name="gather%s,%d,%s" % (x, dim, idx_shape), **EXACT))
    out.append(Case("tern::gather", [ri(3, 4), I(1), torch.randint(0, 4, (3, 2))],
                    lambda t, d, i: torch.gather(t, d, i), name="gather_i64", **EXACT))
    # scatter: replace (unique indices per row, so the result does not depend on write order)
    # and add (repeated indices accumulate); src of index's shape or one element (the value).
    for x, dim, idx_shape in [((4, 5), 0, (3, 5)), ((4, 5), 1, (4, 2)), ((2, 6, 3), 1, (2, 4, 2)),
                              ((2, 6, 3), -1, (1, 6, 3)), ((3, 4), 0, (0, 4))]:
        d = dim % len(x)
        idx = torch.rand(*idx_shape[:d], x[d], *idx_shape[d + 1:]).argsort(d).narrow(
            d, 0, idx_shape[d])
        out.append(Case("tern::scatter", [r(*x), I(dim), idx, r(*idx_shape), S("none")],
                        lambda t, dd, i, src, _: torch.scatter(t, dd, i, src),
                        name="scatter%s,%d,%s" % (x, dim, idx_shape), **EXACT))
        out.append(Case("tern::scatter", [r(*x), I(dim), idx, torch.tensor([2.5]), S("none")],
                        lambda t, dd, i, v, _: torch.scatter(t, dd, i, float(v)),
                        name="scatter_value%s,%d,%s" % (x, dim, idx_shape), **EXACT))
        rep = torch.randint(0, x[d], idx_shape)
        out.append(Case("tern::scatter", [r(*x), I(dim), rep, r(*idx_shape), S("add")],
                        lambda t, dd, i, src, _: torch.scatter_add(t, dd, i, src),
                        name="scatter_add%s,%d,%s" % (x, dim, idx_shape)))
    for dt in (torch.int64, torch.int32):
        rep = torch.randint(0, 4, (3, 6))
        out.append(Case("tern::scatter", [ri(3, 4, dtype=dt), I(1), rep, ri(3, 6, dtype=dt),
                                          S("add")],
                        lambda t, dd, i, src, _: torch.scatter_add(t, dd, i, src),
                        name="scatter_add_%s" % str(dt)[6:], **EXACT))
    out.append(Case("tern::scatter", [rb(3, 4), I(1), torch.tensor([[0], [3], [1]]),
                                      torch.tensor([True]), S("none")],
                    lambda t, dd, i, v, _: torch.scatter(t, dd, i, bool(v)), name="scatter_bool",
                    **EXACT))
    for v, d, idx_shape in [(10, 4, (3,)), (10, 4, (2, 5)), (7, 3, ()), (5, 2, (0,)), (3, 0, (4,))]:
        idx = torch.randint(0, v, idx_shape)
        out.append(Case("tern::embedding", [r(v, d), idx], lambda w, i: F.embedding(i, w),
                        name="embedding[%d,%d]%s" % (v, d, idx_shape), **EXACT))
    out.append(Case("tern::embedding", [r(6, 3), torch.randint(0, 6, (2, 2), dtype=torch.int32)],
                    lambda w, i: F.embedding(i.long(), w), name="embedding_i32idx", **EXACT))
    return out


def padding():
    out = []
    for x, pad, value in [((2, 3), [1, 2], 0.5), ((2, 3), [1, 0, 0, 2], -1.0),
                          ((1, 2, 3, 4), [2, 1, 1, 0], 0.0), ((2, 3), [-1, 1], 0.0),
                          ((2, 5), [0, 0, -1, 2], 3.0), ((2, 3), [], 0.0), ((0, 3), [1, 1], 2.0),
                          ((4,), [3, 3], 1.5), ((2, 3, 4), [1, 1, 1, 1, 1, 1], 7.0)]:
        out.append(Case("tern::pad", [r(*x), IL(pad), S("constant"), D(value)],
                        lambda t, p, m, v: F.pad(t, p, m, v), name="pad_constant%s%s" % (x, pad),
                        **EXACT))
    out.append(Case("tern::pad", [ri(2, 3), IL([1, 1]), S("constant"), D(5)],
                    lambda t, p, m, v: F.pad(t, p, m, v), name="pad_constant_i64", **EXACT))
    out.append(Case("tern::pad", [r(2, 3), IL([2, 1]), S("constant"), NONE],
                    lambda t, p, m, v: F.pad(t, p, m), name="pad_constant_none", **EXACT))
    for x, pad in [((2, 3, 5), [2, 3]), ((2, 3, 5), [4, 0]), ((1, 2, 4, 5), [1, 2, 3, 0]),
                   ((1, 2, 4, 5), [4, 4, 3, 3]), ((1, 1, 3, 4, 5), [1, 1, 2, 2, 1, 1]),
                   ((2, 3, 5), [0, 0])]:
        out.append(Case("tern::pad", [r(*x), IL(pad), S("reflect"), NONE],
                        lambda t, p, m, v: F.pad(t, p, m), name="pad_reflect%s%s" % (x, pad),
                        **EXACT))
    return out


def tiling():
    out = []
    for x, reps in [((2, 3), [2, 2]), ((2, 3), [1, 3]), ((3,), [2, 1, 2]), ((), [3, 2]),
                    ((2, 3), [0, 2]), ((1, 2, 3), [2, 1, 1]), ((2, 1), [1, 1])]:
        out.append(Case("tern::repeat", [r(*x), IL(reps)], lambda t, rp: t.repeat(rp),
                        name="repeat%s%s" % (x, reps), **EXACT))
    out.append(Case("tern::repeat", [rb(2, 2), IL([2, 3])], lambda t, rp: t.repeat(rp),
                    name="repeat_bool", **EXACT))
    for x, diag in [((4, 5), 0), ((4, 5), 1), ((4, 5), -2), ((2, 3, 3), 0), ((3, 4), 10),
                    ((3, 4), -10), ((0, 3), 0)]:
        out.append(Case("tern::triu", [r(*x), I(diag)], lambda t, d: torch.triu(t, d),
                        name="triu%s,%d" % (x, diag), **EXACT))
        out.append(Case("tern::tril", [r(*x), I(diag)], lambda t, d: torch.tril(t, d),
                        name="tril%s,%d" % (x, diag), **EXACT))
    out.append(Case("tern::tril", [rb(4, 4), I(0)], lambda t, d: torch.tril(t, d),
                    name="tril_bool", **EXACT))
    out.append(Case("tern::triu", [ri(3, 3), I(-1)], lambda t, d: torch.triu(t, d),
                    name="triu_i64", **EXACT))
    return out


def upsampling():
    out = []
    nearest = torch.ops.aten.upsample_nearest2d
    bilinear = torch.ops.aten.upsample_bilinear2d
    # (input, output size, scale_h, scale_w): None scales use in/out; given scales use 1/scale.
    for x, size, sh, sw in [((1, 2, 3, 4), (6, 8), None, None), ((1, 2, 3, 4), (5, 7), None, None),
                            ((2, 1, 4, 4), (2, 3), None, None), ((1, 1, 3, 3), (7, 7), 2.5, 2.5),
                            ((1, 1, 5, 4), (5, 9), 1.0, 2.3), ((1, 3, 4, 6), (4, 6), None, None),
                            ((0, 2, 3, 3), (6, 6), None, None)]:
        args = [r(*x), NONE if sh is None else D(sh), NONE if sw is None else D(sw)]
        out.append(Case("tern::upsample_nearest2d", args,
                        lambda t, a, b, s=size: nearest(t, list(s), a, b),
                        name="upsample_nearest2d%s->%s,%s,%s" % (x, size, sh, sw), **EXACT))
    out.append(Case("tern::upsample_nearest2d", [ri(1, 1, 2, 3), NONE, NONE],
                    lambda t, a, b: nearest(t.float(), [4, 5], a, b).long(),
                    name="upsample_nearest2d_i64", **EXACT))
    out.append(Case("tern::upsample_nearest2d", [r(1, 2, 3, 5), D(2.0), D(2.0)],
                    lambda t, a, b: F.interpolate(t, scale_factor=2.0, mode="nearest"),
                    name="upsample_nearest2d_interpolate_x2", **EXACT))
    for x, size, ac, sh, sw in [((1, 2, 3, 4), (6, 8), False, None, None),
                                ((1, 2, 3, 4), (6, 8), True, None, None),
                                ((2, 1, 5, 5), (3, 2), False, None, None),
                                ((2, 1, 5, 5), (3, 2), True, None, None),
                                ((1, 1, 3, 3), (7, 7), False, 2.5, 2.5),
                                ((1, 1, 4, 4), (1, 1), True, None, None),
                                ((1, 1, 4, 4), (1, 1), False, None, None),
                                ((1, 3, 4, 6), (4, 9), False, None, None)]:
        args = [r(*x), B(ac), NONE if sh is None else D(sh), NONE if sw is None else D(sw)]
        out.append(Case("tern::upsample_bilinear2d", args,
                        lambda t, a, b, c, s=size: bilinear(t, list(s), a, b, c),
                        name="upsample_bilinear2d%s->%s,%s,%s" % (x, size, ac, sh),
                        rtol=1e-5, atol=1e-6))
    out.append(Case("tern::upsample_bilinear2d", [r(1, 2, 3, 5), B(False), D(2.0), D(2.0)],
                    lambda t, a, b, c: F.interpolate(t, scale_factor=2.0, mode="bilinear",
                                                     align_corners=False),
                    name="upsample_bilinear2d_interpolate_x2", rtol=1e-5, atol=1e-6))
    return out


def grid_sampling():
    # Points over [-1.3, 1.3] (some outside the image), every mode, padding and align_corners
    # pairing, plus exact pixel centres, NaN and huge coordinates. f32 rounding: rtol 1e-5.
    out = []
    ref = torch.ops.aten.grid_sampler_2d
    for mode, padding, align in [(m, p, a) for m in (0, 1) for p in (0, 1, 2) for a in (0, 1)]:
        x = r(2, 3, 5, 7)
        grid = (torch.rand(2, 4, 6, 2) * 2.6 - 1.3)
        out.append(Case("tern::grid_sample2d", [x, grid, I(mode), I(padding), B(bool(align))],
                        lambda t, g, m, p, al: ref(t, g, m, p, al), rtol=1e-5, atol=1e-6,
                        name="grid_sample_m%d_p%d_a%d" % (mode, padding, align)))
    centres = torch.stack(torch.meshgrid(torch.linspace(-1, 1, 7), torch.linspace(-1, 1, 5),
                                         indexing="xy"), -1).unsqueeze(0)
    out.append(Case("tern::grid_sample2d", [r(1, 2, 5, 7), centres, I(0), I(0), B(True)],
                    lambda t, g, m, p, al: ref(t, g, m, p, al), name="grid_sample_centres"))
    odd = torch.tensor([[[[float("nan"), 0.0], [1e20, -1e20], [0.25, float("inf")]]]])
    for mode, padding in [(0, 0), (1, 0)]:  # (border and reflection of NaN: unspecified)
        out.append(Case("tern::grid_sample2d", [r(1, 2, 4, 4), odd, I(mode), I(padding),
                                                B(False)],
                        lambda t, g, m, p, al: ref(t, g, m, p, al),
                        name="grid_sample_nonfinite_m%d_p%d" % (mode, padding)))
    return out


def cases():
    return views() + copies() + cat_cases() + pieces() + indexing() + padding() + tiling() + \
        upsampling() + grid_sampling()
