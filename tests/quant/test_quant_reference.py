#!/usr/bin/env python3
"""Bit-exact tests of tern's NF4 / FP8 encoders (tools/compiler/nf4.cpp, fp8.cpp, run through
tests/quant/quant_tool) against independent references:

- an implementation of ../shared/docs/QUANT.md written here, in numpy (always);
- bitsandbytes: functional.quantize_4bit(..., quant_type="nf4", blocksize=B) on CPU, with and
  without compress_statistics (double quantization), and create_dynamic_map(signed=True);
- ml_dtypes.float8_e4m3fn / float8_e5m2 and torch.float8_e4m3fn / float8_e5m2.

A reference that is not installed is reported as skipped (scripts/setup-venv.sh installs
bitsandbytes and ml_dtypes into .venv). Prints one line per failure and "N passed, M failed";
exits 1 on failure, 77 without numpy or quant_tool.

  TERN_QUANT_TOOL=build/tests/quant/quant_tool .venv/bin/python tests/quant/test_quant_reference.py
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

TOOL = os.environ.get("TERN_QUANT_TOOL", "")
if not os.path.isfile(TOOL):
    print("skipped: TERN_QUANT_TOOL (the quant_tool binary) not set or missing: %r" % TOOL)
    sys.exit(77)

# bitsandbytes' dequantize_4bit goes through torch.compile: slow to start and noisy. Eager
# mode computes the same numbers.
os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")
try:
    import torch
except ImportError:
    torch = None
try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None
try:
    import contextlib
    import io
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        import bitsandbytes.functional as bnb  # prints a note about optional CPU kernels
except Exception as e:  # ImportError, or a library that fails to load
    bnb = None
    BNB_WHY = "%s: %s" % (type(e).__name__, e)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quant_ref import (F32, FP8, NF4_MID, ref_double_quant, ref_dynamic_map,  # noqa: E402
                       ref_fp8_decode_table, ref_fp8_encode, ref_nf4, ref_nf4_dequant,
                       run_tests)

WORK = tempfile.mkdtemp(prefix="tern_quant_ref_")
SKIPPED = []


def skip(what):
    SKIPPED.append(what)


# ------------------------------------------------------------------- calling quant_tool

def _tool(*args):
    subprocess.run([TOOL] + [str(a) for a in args], check=True)


def _read(path, dtype):
    return np.fromfile(path, dtype=dtype)


def tern_nf4(x, block, double=False):
    d = tempfile.mkdtemp(dir=WORK)
    src = os.path.join(d, "in.f32")
    np.ascontiguousarray(x, F32).tofile(src)
    _tool("nf4dq" if double else "nf4", block, src, d)
    out = {"packed": _read(d + "/packed.bin", np.uint8), "absmax": _read(d + "/absmax.bin", F32)}
    if double:
        for name, dt in (("dq_codes", np.uint8), ("dq_absmax2", F32), ("dq_offset", F32),
                         ("dq_table", F32), ("dq_absmax", F32)):
            out[name] = _read("%s/%s.bin" % (d, name), dt)
    return out


def tern_fp8(x, fmt):
    d = tempfile.mkdtemp(dir=WORK)
    np.ascontiguousarray(x, F32).tofile(d + "/in.f32")
    _tool("fp8", fmt, d + "/in.f32", d + "/out.bin")
    return _read(d + "/out.bin", np.uint8)


def tern_fp8_decode(fmt):
    d = tempfile.mkdtemp(dir=WORK)
    _tool("fp8dec", fmt, d + "/out.bin")
    return _read(d + "/out.bin", F32)


def tern_fp8_quantize(x, fmt, gran):
    d = tempfile.mkdtemp(dir=WORK)
    np.ascontiguousarray(x, F32).tofile(d + "/in.f32")
    _tool("fp8q", fmt, gran, x.shape[0], x.shape[1], d + "/in.f32", d)
    return _read(d + "/codes.bin", np.uint8), _read(d + "/scales.bin", F32)


def tern_dynamic_map():
    d = tempfile.mkdtemp(dir=WORK)
    _tool("dynamic_map", d + "/map.bin")
    return _read(d + "/map.bin", F32)


# -------------------------------------------------------------------------- test inputs

def nf4_cases():
    rng = np.random.default_rng(13)
    cases = []
    for block in (32, 64, 128, 256, 4096):
        for n in (block * 3, block * 3 + 17, 63, 1, 3, block - 1):
            cases.append(("normal n=%d block=%d" % (n, block), rng.standard_normal(n).astype(F32),
                          block))
    # Edge values in one block of 64: +-absmax, zeros, every midpoint exactly (absmax 1, so
    # x * (1/1) is exact), just above and below each midpoint, tiny values.
    edge = np.zeros(64, F32)
    edge[0], edge[1] = 1.0, -1.0
    edge[2:17] = NF4_MID
    edge[17:32] = np.nextafter(NF4_MID, F32(2))
    edge[32:47] = np.nextafter(NF4_MID, F32(-2))
    edge[47:50] = [1e-30, -1e-30, 1e-45]
    cases.append(("midpoints, +-absmax, zeros", edge, 64))
    # The same as a partial block (division path).
    cases.append(("midpoints in a partial block", edge[:50].copy(), 64))
    # All-zero full and partial blocks, and blocks of one repeated value.
    z = np.zeros(64 * 2 + 10, F32)
    z[64:128] = 3.5
    cases.append(("all-zero full and partial blocks", z, 64))
    # Large and small magnitudes.
    cases.append(("wide range", (rng.standard_normal(640) * 10.0 ** rng.integers(-20, 20, 640))
                  .astype(F32), 64))
    # A value where x * (1/a) and x / a pick different codes in a full block.
    a = F32(3.0)
    for i in range(15):
        x = F32(NF4_MID[i] * a)
        for _ in range(64):
            if (np.searchsorted(NF4_MID, x * (F32(1) / a)) != np.searchsorted(NF4_MID, x / a)):
                blk = np.zeros(64, F32)
                blk[0], blk[1] = a, x
                cases.append(("reciprocal vs division (full block)", blk, 64))
                cases.append(("reciprocal vs division (partial block)", blk[:2].copy(), 64))
                break
            x = np.nextafter(x, F32(10))
    return cases


def bnb_nf4(x, block, double=False):
    t = torch.from_numpy(np.ascontiguousarray(x, F32))
    q, st = bnb.quantize_4bit(t, quant_type="nf4", blocksize=block, compress_statistics=double)
    return q.reshape(-1).numpy(), st


def same_packed_as_bnb(tern_packed, bnb_packed, n):
    """Equal bytes, except the padding nibble of an odd count: QUANT.md pads with code 0,
    bitsandbytes pads the scaled values with 0.0 and so writes its code, 7. The nibble is never
    read (it is past the tensor's last element)."""
    if tern_packed.size != bnb_packed.size:
        return False
    a, b = tern_packed.copy(), bnb_packed.copy()
    if n % 2:
        assert a[-1] & 0xF == 0, "tern pads an odd count with code 0 (QUANT.md)"
        assert b[-1] & 0xF == 7, "bitsandbytes pads with the code of 0.0"
        a[-1] &= 0xF0
        b[-1] &= 0xF0
    return np.array_equal(a, b)


# --------------------------------------------------------------------------------- tests

def test_nf4_matches_quant_md_reference():
    for what, x, block in nf4_cases():
        got = tern_nf4(x, block)
        packed, absmax = ref_nf4(x, block)
        assert np.array_equal(got["packed"], packed), "%s: packed codes differ at %s" % (
            what, np.flatnonzero(got["packed"] != packed)[:8])
        assert np.array_equal(got["absmax"].view(np.uint32), absmax.view(np.uint32)), what


def test_nf4_matches_bitsandbytes():
    if bnb is None or torch is None:
        return skip("bitsandbytes NF4 (%s)" % ("no torch" if torch is None else BNB_WHY))
    for what, x, block in nf4_cases():
        got = tern_nf4(x, block)
        q, st = bnb_nf4(x, block)
        assert same_packed_as_bnb(got["packed"], q, x.size), "%s: packed bytes differ at %s" % (
            what, np.flatnonzero(got["packed"] != q)[:8])
        ba = st.absmax.numpy().astype(F32)
        diff = np.flatnonzero(got["absmax"].view(np.uint32) != ba.view(np.uint32))
        # The one difference: bitsandbytes stores 0.0 for an all-zero *full* block (its partial
        # block gets 1e-38); QUANT.md and tern store 1e-38 for both. The codes are equal.
        for b in diff:
            assert ba[b] == 0.0 and got["absmax"][b] == F32(1e-38), (
                "%s: absmax of block %d: tern %r, bitsandbytes %r" % (what, b, got["absmax"][b],
                                                                      ba[b]))
        # Dequantization agrees too (bitsandbytes' own dequantize_4bit).
        deq = bnb.dequantize_4bit(torch.from_numpy(q.reshape(-1, 1)), st).reshape(-1).numpy()
        mine = ref_nf4_dequant(got["packed"], got["absmax"], x.size, block)
        assert np.array_equal(deq, mine), what


def test_dynamic_map():
    t = tern_dynamic_map()
    r = ref_dynamic_map()
    assert t.size == 256 and np.array_equal(t.view(np.uint32), r.view(np.uint32)), (
        np.flatnonzero(t != r))
    assert np.isclose(t[0], -0.99296874) and t[255] == 1.0
    assert np.allclose(t[125:131], [-3.25e-06, -5.5e-07, 0, 5.5e-07, 3.25e-06, 7.75e-06],
                       rtol=1e-6, atol=0)
    if bnb is None:
        return skip("bitsandbytes create_dynamic_map (%s)" % BNB_WHY)
    b = bnb.create_dynamic_map(signed=True).numpy()
    assert np.array_equal(t.view(np.uint32), b.astype(F32).view(np.uint32)), np.flatnonzero(t != b)


def test_nf4_double_quant_matches_quant_md_reference():
    table = ref_dynamic_map()
    rng = np.random.default_rng(5)
    for n, block in ((64 * 300, 64), (64 * 1000 + 5, 64), (32 * 600, 32), (64, 64),
                     (64 * 7, 64), (128 * 513, 128)):
        x = (rng.standard_normal(n) * rng.uniform(0.5, 2)).astype(F32)
        got = tern_nf4(x, block, double=True)
        _, absmax = ref_nf4(x, block)
        offset, codes, a2 = ref_double_quant(absmax, table)
        assert got["dq_offset"][0].view(np.uint32) == offset.view(np.uint32), (n, got["dq_offset"],
                                                                               offset)
        assert np.array_equal(got["dq_absmax2"].view(np.uint32), a2.view(np.uint32)), n
        assert np.array_equal(got["dq_codes"], codes), (n, np.flatnonzero(got["dq_codes"] != codes))
        assert np.array_equal(got["dq_table"].view(np.uint32), table.view(np.uint32))
        decoded = (table[codes] * np.repeat(a2, 256)[:codes.size]).astype(F32) + offset
        assert np.array_equal(got["dq_absmax"], decoded.astype(F32)), n


def test_nf4_double_quant_against_bitsandbytes():
    """bitsandbytes' compress_statistics=True on CPU: the same NF4 codes, the same code table;
    its offset is torch's f32 mean (tern: the exact mean rounded once, so they may differ by an
    ulp); its second-level codes come from a CPU binary search (csrc/cpu_ops.cpp, BinSearch)
    that misplaces values near zero, so where the codes differ, tern's code must be the nearer
    one (QUANT.md: nearest by the midpoint rule)."""
    if bnb is None or torch is None:
        return skip("bitsandbytes double quantization (%s)" % BNB_WHY)
    rng = np.random.default_rng(7)
    report = []
    for n, block in ((64 * 300, 64), (64 * 1000 + 5, 64), (32 * 600, 32), (128 * 513, 128)):
        x = (rng.standard_normal(n) * rng.uniform(0.5, 2)).astype(F32)
        got = tern_nf4(x, block, double=True)
        q, st = bnb_nf4(x, block, double=True)
        assert same_packed_as_bnb(got["packed"], q, n), n
        bcode = st.state2.code.numpy().astype(F32)
        assert np.array_equal(got["dq_table"].view(np.uint32), bcode.view(np.uint32))
        b_off = F32(st.offset.item())
        t_off = got["dq_offset"][0]
        assert abs(int(b_off.view(np.int32)) - int(t_off.view(np.int32))) <= 1, (b_off, t_off)
        # Compare the second level on tern's offset so the inputs are identical: run
        # bitsandbytes' quantize_blockwise on tern's centered absmax values.
        _, absmax = ref_nf4(x, block)
        centered = torch.from_numpy((absmax - t_off).astype(F32))
        bq, bst = bnb.quantize_blockwise(centered, code=torch.from_numpy(bcode), blocksize=256)
        ba2 = bst.absmax.numpy().astype(F32)
        assert np.array_equal(got["dq_absmax2"].view(np.uint32), ba2.view(np.uint32)), n
        bq = bq.numpy()
        diff = np.flatnonzero(bq != got["dq_codes"])
        c = (absmax - t_off).astype(np.float64)
        a2 = np.repeat(ba2, 256)[:c.size].astype(np.float64)
        err_t = np.abs(bcode[got["dq_codes"]] * a2 - c)
        err_b = np.abs(bcode[bq] * a2 - c)
        assert np.all(err_t[diff] <= err_b[diff]), (
            "tern's second-level code is farther than bitsandbytes' at %s" %
            diff[err_t[diff] > err_b[diff]][:8])
        report.append("n=%d: %d of %d codes differ (bitsandbytes' CPU search), tern nearer or "
                      "equal in all; offset ulps %d" % (
                          n, diff.size, c.size,
                          abs(int(b_off.view(np.int32)) - int(t_off.view(np.int32)))))
        # Where bitsandbytes' offset equals tern's, its stored codes equal the re-run ones.
        if b_off == t_off:
            assert np.array_equal(st.absmax.numpy(), bq), n
    print("  double quant vs bitsandbytes: " + "; ".join(report))


def fp8_inputs(fmt):
    """Every fp8 value, every midpoint (ties), one f32 ulp around them, +-max and beyond,
    subnormals, zeros, infinities, NaN, f32 subnormals and random values over the range."""
    table = ref_fp8_decode_table(fmt)
    mx = FP8[fmt][0]
    pos = np.sort(np.unique(table[:128][np.isfinite(table[:128])]))
    mids = ((pos[:-1].astype(np.float64) + pos[1:]) / 2).astype(F32)  # exact in f32
    assert np.array_equal(mids.astype(np.float64), (pos[:-1].astype(np.float64) + pos[1:]) / 2)
    above = np.nextafter(mids, F32(np.inf))
    below = np.nextafter(mids, F32(-np.inf))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, mx, -mx, mx * 1.03125,
                        mx * 1.0625, mx * 2, 1e30, -1e30, 1e-40, -1e-40, 1e-45,
                        float(pos[1]) / 2, float(pos[1]) / 2 * 3], F32)
    rng = np.random.default_rng(11)
    rand = (rng.standard_normal(4000) * 2.0 ** rng.integers(-20, 18, 4000)).astype(F32)
    x = np.concatenate([pos, mids, above, below, special, rand]).astype(F32)
    return np.concatenate([x, -x]).astype(F32)


def test_fp8_matches_quant_md_reference():
    for fmt in ("e4m3", "e5m2"):
        x = fp8_inputs(fmt)
        got = tern_fp8(x, fmt)
        want = ref_fp8_encode(x, fmt)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, "%s: %d differ, e.g. x=%r tern=%#x ref=%#x" % (
            fmt, bad.size, x[bad[0]], got[bad[0]], want[bad[0]])
        dec = tern_fp8_decode(fmt)
        ref = ref_fp8_decode_table(fmt)
        assert np.array_equal(np.isnan(dec), np.isnan(ref))
        ok = ~np.isnan(ref)
        assert np.array_equal(dec[ok].view(np.uint32), ref[ok].view(np.uint32)), fmt


def test_fp8_matches_ml_dtypes():
    if ml_dtypes is None:
        return skip("ml_dtypes")
    for fmt in ("e4m3", "e5m2"):
        mx, name = FP8[fmt]
        dt = getattr(ml_dtypes, name)
        x = fp8_inputs(fmt)
        got = tern_fp8(x, fmt)
        # QUANT.md: clamp to +-max (saturate) before the round-to-nearest-even conversion.
        want = np.clip(x, -mx, mx).astype(dt).view(np.uint8)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, "%s: %d differ, e.g. x=%r tern=%#x ml_dtypes=%#x" % (
            fmt, bad.size, x[bad[0]], got[bad[0]], want[bad[0]])
        dec = tern_fp8_decode(fmt)
        ref = np.arange(256, dtype=np.uint8).view(dt).astype(F32)
        assert np.array_equal(np.isnan(dec), np.isnan(ref))
        ok = ~np.isnan(ref)
        assert np.array_equal(dec[ok].view(np.uint32), ref[ok].view(np.uint32)), fmt


def test_fp8_matches_torch_float8():
    if torch is None or not hasattr(torch, "float8_e4m3fn"):
        return skip("torch.float8_*")
    for fmt, tdt in (("e4m3", torch.float8_e4m3fn), ("e5m2", torch.float8_e5m2)):
        mx = FP8[fmt][0]
        x = fp8_inputs(fmt)
        got = tern_fp8(x, fmt)
        t = torch.from_numpy(np.clip(x, -mx, mx)).to(tdt).view(torch.uint8).numpy()
        nan = np.isnan(x)
        bad = np.flatnonzero((got != t) & ~nan)
        assert bad.size == 0, "%s: x=%r tern=%#x torch=%#x" % (fmt, x[bad[0]], got[bad[0]],
                                                               t[bad[0]])
        # NaN stays NaN (torch writes e5m2 NaN as S.11111.11, ml_dtypes and tern as S.11111.10).
        back = torch.from_numpy(got[nan]).view(tdt).float().numpy()
        assert np.all(np.isnan(back)), fmt


def test_fp8_scaled_quantization():
    rng = np.random.default_rng(3)
    shapes = [(7, 13), (1, 5), (300, 260), (3, 1)]
    for fmt in ("e4m3", "e5m2"):
        mx, name = FP8[fmt]
        for rows, cols in shapes:
            x = (rng.standard_normal((rows, cols)) * 3).astype(F32)
            x[0, :] = 0.0  # an all-zero row: scale 1
            for gran in ("per_tensor", "per_channel", "block=128", "block=2x3"):
                codes, scales = tern_fp8_quantize(x, fmt, gran)
                if gran == "per_tensor":
                    groups = [(slice(0, rows), slice(0, cols))]
                elif gran == "per_channel":
                    groups = [(slice(r, r + 1), slice(0, cols)) for r in range(rows)]
                else:
                    br, bc = (128, 128) if gran == "block=128" else (2, 3)
                    groups = [(slice(i, i + br), slice(j, j + bc))
                              for i in range(0, rows, br) for j in range(0, cols, bc)]
                assert scales.size == len(groups), (gran, scales.size, len(groups))
                want_codes = np.zeros((rows, cols), np.uint8)
                for k, (rs, cs) in enumerate(groups):
                    amax = F32(np.max(np.abs(x[rs, cs])))
                    s = F32(amax / mx)
                    s = s if s > 0 else F32(1.0)
                    assert scales[k].view(np.uint32) == s.view(np.uint32), (fmt, gran, k)
                    scaled = (x[rs, cs] / s).astype(F32)
                    want_codes[rs, cs] = ref_fp8_encode(scaled, fmt).reshape(scaled.shape)
                    if ml_dtypes is not None:
                        m = np.clip(scaled, -mx, mx).astype(getattr(ml_dtypes, name)).view(np.uint8)
                        assert np.array_equal(m, want_codes[rs, cs]), (fmt, gran)
                assert np.array_equal(codes.reshape(rows, cols), want_codes), (fmt, gran,
                                                                               rows, cols)


def report_references():
    for s in SKIPPED:
        print("skipped reference: %s" % s)
    print("references: bitsandbytes %s, ml_dtypes %s, torch %s" % (
        "yes" if bnb else "no", ml_dtypes.__version__ if ml_dtypes else "no",
        torch.__version__ if torch else "no"))


def main(filters):
    return run_tests(globals(), filters, report_references)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
