"""An implementation of ../shared/docs/QUANT.md in numpy, written for the tests from the document
(not from tern's sources): NF4 quantize / pack / dequantize, double quantization and its
dynamic map, FP8 encode / decode and scaled FP8 quantization. Used by test_quant_reference.py
(bit-exact against tern's encoders) and test_quant_e2e.py (the reference model outputs)."""
import traceback
from fractions import Fraction

import numpy as np

F32 = np.float32


NF4_CODE = np.array([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0], F32)
NF4_MID = ((NF4_CODE[:-1] + NF4_CODE[1:]) / F32(2)).astype(F32)


def ref_nf4(x, block):
    """QUANT.md: flattened row-major blocks, f32 absmax per block (all-zero: 1e-38), x / absmax
    clamped to [-1, 1], nearest code by the midpoints with ties to the lower index, two codes
    per byte (first in the high nibble, odd count padded with 0). As in bitsandbytes' CPU
    arithmetic, a full block multiplies by the f32 reciprocal 1 / absmax and the trailing
    partial block divides."""
    x = np.asarray(x, F32).reshape(-1)
    n = x.size
    absmax = []
    codes = np.zeros(n + (n & 1), np.uint8)
    for b in range(0, n, block):
        blk = x[b:b + block]
        a = max(F32(np.max(np.abs(blk))), F32(1e-38))
        absmax.append(a)
        if blk.size == block:
            s = blk * (F32(1) / a)
        else:
            s = blk / a
        s = np.clip(s.astype(F32), F32(-1), F32(1))
        codes[b:b + blk.size] = np.searchsorted(NF4_MID, s, side="left")  # mids strictly below
    packed = ((codes[0::2] << 4) | codes[1::2]).astype(np.uint8)
    return packed, np.array(absmax, F32)


def ref_nf4_dequant(packed, absmax, n, block):
    codes = np.empty(packed.size * 2, np.uint8)
    codes[0::2] = packed >> 4
    codes[1::2] = packed & 0xF
    vals = NF4_CODE[codes[:n]]
    return (vals * np.repeat(absmax, block)[:n]).astype(F32)


def _fma32(a, b, c):
    return F32(float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))))


def ref_dynamic_map():
    """QUANT.md: for i in 0..6, n = 2^i + 1 points evenly spaced on [0.1, 1] in f32 (as
    torch.linspace computes them: start + step*j fused for the first half, end - step*(n-1-j)
    fused for the rest), the 2^i midpoints m, and +-f32(10^(i-6)) * m; then 0 and 1; sorted."""
    data = []
    for i in range(7):
        n = 2 ** i + 1
        start, end = F32(0.1), F32(1.0)
        step = F32((end - start) / F32(n - 1))
        pts = [_fma32(step, F32(j), start) if j < n // 2 else _fma32(-step, F32(n - 1 - j), end)
               for j in range(n)]
        pts = np.array(pts, F32)
        means = ((pts[:-1] + pts[1:]) / F32(2)).astype(F32)
        s = F32(10.0 ** (i - 6))
        data += list((s * means).astype(F32)) + list(((-s) * means).astype(F32))
    data += [F32(0), F32(1)]
    data += [F32(0)] * (256 - len(data))
    return np.sort(np.array(data, F32))


def ref_double_quant(absmax, table, dq_block=256):
    """QUANT.md: offset = mean(absmax) (exact mean rounded to f32 once), c = absmax - offset,
    blocks of 256 with absmax2 = max |c|, index of c / absmax2 by the same midpoint rule."""
    absmax = np.asarray(absmax, F32)
    offset = F32(np.mean(absmax.astype(np.float64)))
    c = (absmax - offset).astype(F32)
    mids = ((table[:-1] + table[1:]) / F32(2)).astype(F32)
    codes = np.zeros(c.size, np.uint8)
    a2 = []
    zero = int(np.searchsorted(mids, F32(0), side="left"))
    for b in range(0, c.size, dq_block):
        blk = c[b:b + dq_block]
        a = F32(np.max(np.abs(blk)))
        a2.append(a)
        codes[b:b + blk.size] = zero if a == 0 else np.searchsorted(mids, (blk / a).astype(F32),
                                                                     side="left")
    return offset, codes, np.array(a2, F32)


FP8 = {"e4m3": (F32(448.0), "float8_e4m3fn"), "e5m2": (F32(57344.0), "float8_e5m2")}


def ref_fp8_decode_table(fmt):
    """QUANT.md's table: e4m3fn bias 7, no inf, NaN S.1111.111; e5m2 bias 15, inf S.11111.00."""
    out = np.zeros(256, F32)
    for b in range(256):
        s = -1.0 if b & 0x80 else 1.0
        if fmt == "e4m3":
            e, m = (b >> 3) & 0xF, b & 7
            if e == 15 and m == 7:
                out[b] = np.nan
            elif e == 0:
                out[b] = s * m * 2.0 ** -9
            else:
                out[b] = s * (1 + m / 8.0) * 2.0 ** (e - 7)
        else:
            e, m = (b >> 2) & 0x1F, b & 3
            if e == 31:
                out[b] = s * np.inf if m == 0 else np.nan
            elif e == 0:
                out[b] = s * m * 2.0 ** -16
            else:
                out[b] = s * (1 + m / 4.0) * 2.0 ** (e - 15)
    return out


def ref_fp8_encode(x, fmt):
    """Round to nearest even among the finite values of the table after clamping to +-max;
    NaN -> NaN (e4m3 0x7F, e5m2 0x7E, with x's sign). Done by exhaustive comparison."""
    table = ref_fp8_decode_table(fmt)
    mx = FP8[fmt][0]
    finite = [b for b in range(128) if np.isfinite(table[b])]
    vals = np.array([float(table[b]) for b in finite])
    out = np.zeros(x.size, np.uint8)
    for i, v in enumerate(np.asarray(x, F32).reshape(-1)):
        sign = 0x80 if np.signbit(v) else 0
        if np.isnan(v):
            out[i] = sign | (0x7F if fmt == "e4m3" else 0x7E)
            continue
        a = min(abs(float(v)), float(mx))
        d = np.abs(vals - a)
        best = np.flatnonzero(d == d.min())
        if best.size > 1:  # a tie: the even code (mantissa lsb 0)
            best = [k for k in best if finite[k] % 2 == 0]
        out[i] = sign | finite[best[0]]
    return out



def ref_fp8_quantize(x, fmt, gran):
    """Scaled FP8 of a 2-D weight: groups (the tensor, each row, or block_rows x block_cols
    tiles; gran "per_tensor", "per_channel", "block=R" or "block=RxC") get scale = amax / max
    (1.0 for an all-zero group); codes = encode(x / scale). Returns (codes, scales, decoded)."""
    mx = FP8[fmt][0]
    rows, cols = x.shape
    if gran == "per_tensor":
        groups = [(slice(0, rows), slice(0, cols))]
    elif gran == "per_channel":
        groups = [(slice(r, r + 1), slice(0, cols)) for r in range(rows)]
    else:
        dims = gran.split("=")[1].split("x")
        br = int(dims[0])
        bc = int(dims[1]) if len(dims) > 1 else br
        groups = [(slice(i, i + br), slice(j, j + bc))
                  for i in range(0, rows, br) for j in range(0, cols, bc)]
    codes = np.zeros((rows, cols), np.uint8)
    decoded = np.zeros((rows, cols), F32)
    table = ref_fp8_decode_table(fmt)
    scales = []
    for rs, cs in groups:
        s = F32(F32(np.max(np.abs(x[rs, cs]))) / mx)
        s = s if s > 0 else F32(1.0)
        scales.append(s)
        scaled = (x[rs, cs] / s).astype(F32)
        c = ref_fp8_encode(scaled, fmt).reshape(scaled.shape)
        codes[rs, cs] = c
        decoded[rs, cs] = (table[c] * s).astype(F32)
    return codes, np.array(scales, F32), decoded


def ref_nf4_weight(x, block, double=False):
    """NF4 of a weight as tern compile stores it, dequantized back to f32 (QUANT.md)."""
    flat = np.asarray(x, F32).reshape(-1)
    packed, absmax = ref_nf4(flat, block)
    if double:
        table = ref_dynamic_map()
        offset, codes, a2 = ref_double_quant(absmax, table)
        absmax = ((table[codes] * np.repeat(a2, 256)[:codes.size]).astype(F32) + offset
                  ).astype(F32)
    return ref_nf4_dequant(packed, absmax, flat.size, block).reshape(x.shape)


def run_tests(namespace, filters, report=None):
    """Runs every function named test_* in `namespace` (a module's globals()) whose name
    contains one of `filters` (all when empty), printing each failure's traceback; `report`
    (optional) prints extra lines before the totals. Returns the process exit code."""
    tests = [(k, v) for k, v in sorted(namespace.items()) if k.startswith("test_")]
    if filters:
        tests = [(k, v) for k, v in tests if any(f in k for f in filters)]
    passed = failed = 0
    for name, fn in tests:
        try:
            fn()
            passed += 1
        except Exception:
            failed += 1
            print("FAIL %s:\n%s" % (name, traceback.format_exc()))
    if report is not None:
        report()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0
