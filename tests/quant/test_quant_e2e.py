#!/usr/bin/env python3
"""End to end: a small model (embedding, linear with bias, matmul with a constant) written as
graph.json + safetensors, compiled with `tern compile --quantize SCHEME` for every scheme, run
with `tern run` on the portable kernels and compared with numpy: the weights quantized and
dequantized by the QUANT.md implementation of quant_ref.py, then the f32 ops; max relative error
<= 1e-5. Also checks what `tern compile` and `tern inspect` print about the quantized weights.
Prints "N passed, M failed"; exits 77 without numpy or tern.

  TERN=build/tern .venv/bin/python tests/quant/test_quant_e2e.py
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

TERN = os.environ.get("TERN", "")
if not os.path.isfile(TERN):
    print("skipped: TERN (the tern binary) not set or missing: %r" % TERN)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quant_ref import F32, ref_fp8_quantize, ref_nf4_weight, run_tests  # noqa: E402

WORK = tempfile.mkdtemp(prefix="tern_quant_e2e_")
V, D = 50, 97      # embedding table [V, D]
IN, OUT = 97, 161  # linear weight [OUT, IN]: 15617 elements, partial last NF4 block, odd count
N = 33             # matmul b [OUT, N]


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        dt = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[a.dtype]
        header[name] = {"dtype": dt, "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def make_model():
    rng = np.random.default_rng(21)
    w = {"emb.weight": rng.standard_normal((V, D)).astype(F32),
         "fc.weight": (rng.standard_normal((OUT, IN)) * 0.1).astype(F32),
         "fc.bias": rng.standard_normal(OUT).astype(F32),
         "proj": (rng.standard_normal((OUT, N)) * 0.2).astype(F32)}
    w["fc.weight"][5, :] = 0.0  # an all-zero row (NF4 blocks of zeros, an FP8 scale of 1)
    d = os.path.join(WORK, "model")
    os.makedirs(d, exist_ok=True)
    write_safetensors(os.path.join(d, "w.safetensors"), w)

    def t(name, dtype, shape, **kw):
        v = {"type": "tensor", "name": name, "dtype": dtype, "shape": shape}
        v.update(kw)
        return v
    values = [t("idx", "i64", [4]), t("x", "f32", [2, IN]),
              t("emb.weight", "f32", [V, D], weight="emb.weight"), t("e", "f32", [4, D]),
              t("fc.weight", "f32", [OUT, IN], weight="fc.weight"),
              t("fc.bias", "f32", [OUT], weight="fc.bias"), t("h", "f32", [2, OUT]),
              t("r", "f32", [2, OUT]), t("proj", "f32", [OUT, N], weight="proj"),
              t("y", "f32", [2, N])]
    graph = {"format": "tern-graph", "version": 1, "weights": "w.safetensors",
             "methods": [{"name": "forward", "values": values, "inputs": ["idx", "x"],
                          "outputs": ["e", "y"],
                          "nodes": [{"op": "tern::embedding", "args": ["emb.weight", "idx"],
                                     "outputs": ["e"], "name": "emb"},
                                    {"op": "tern::linear", "args": ["x", "fc.weight", "fc.bias"],
                                     "outputs": ["h"], "name": "fc"},
                                    {"op": "tern::relu", "args": ["h"], "outputs": ["r"]},
                                    {"op": "tern::matmul", "args": ["r", "proj"],
                                     "outputs": ["y"], "name": "proj"}]}]}
    path = os.path.join(d, "graph.json")
    with open(path, "w") as f:
        json.dump(graph, f)
    idx = np.array([0, 49, 7, 7], np.int64)
    x = rng.standard_normal((2, IN)).astype(F32)
    np.save(os.path.join(d, "idx.npy"), idx)
    np.save(os.path.join(d, "x.npy"), x)
    return path, w, idx, x


GRAPH, W, IDX, X = make_model()


def dequantized(weight, scheme):
    """What the program holds for an f32 weight quantized with `scheme`, as f32."""
    parts = scheme.split(":")
    if parts[0] == "nf4":
        block = 64
        for p in parts[1:]:
            if p.startswith("block="):
                block = int(p[6:])
        return ref_nf4_weight(weight, block, double="double" in parts)
    fmt = "e4m3" if parts[0] == "fp8_e4m3" else "e5m2"
    gran = parts[1] if len(parts) > 1 else "per_channel"
    return ref_fp8_quantize(weight, fmt, gran)[2]


def reference(scheme):
    emb = dequantized(W["emb.weight"], scheme)
    fc = dequantized(W["fc.weight"], scheme)
    # The compiler stores matmul's constant b [OUT, N] transposed, as a linear weight [N, OUT],
    # so its scales follow output channels.
    proj_t = dequantized(np.ascontiguousarray(W["proj"].T), scheme)
    e = emb[IDX]
    h = (X.astype(np.float64) @ fc.T.astype(np.float64) + W["fc.bias"]).astype(F32)
    r = np.maximum(h, 0)
    y = r.astype(np.float64) @ proj_t.T.astype(np.float64)
    return e.astype(np.float64), y


def run(*args):
    r = subprocess.run([TERN] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    assert r.returncode == 0, "tern %s failed:\n%s" % (" ".join(args), r.stderr)
    return r.stdout


def rel_err(got, want):
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


SCHEMES = ["nf4", "nf4:block=32", "nf4:double", "nf4:block=128:double", "fp8_e4m3",
           "fp8_e4m3:per_tensor", "fp8_e4m3:block=128", "fp8_e5m2", "fp8_e5m2:block=16x32"]
RESULTS = []


def check_scheme(scheme):
    out_pte = os.path.join(WORK, "m_%s.pte" % scheme.replace(":", "_").replace("=", ""))
    report = run("compile", GRAPH, "-o", out_pte, "--quantize", scheme)
    assert "quantized 3 weights:" in report, report
    for name in ("emb.weight", "fc.weight", "proj"):
        assert "  %s " % name in report, report
    assert "matmul b stored transposed" in report and "all weights:" in report, report
    out_dir = os.path.join(WORK, "out_" + os.path.basename(out_pte))
    run("run", out_pte, "--input", os.path.join(os.path.dirname(GRAPH), "idx.npy"),
        "--input", os.path.join(os.path.dirname(GRAPH), "x.npy"), "--output-dir", out_dir)
    e = np.load(os.path.join(out_dir, "output_0.npy"))
    y = np.load(os.path.join(out_dir, "output_1.npy"))
    want_e, want_y = reference(scheme)
    err_e, err_y = rel_err(e, want_e), rel_err(y, want_y)
    # Against the f32 model: the quantization error itself (reported, not a pass/fail).
    f32_y = (np.maximum(X @ W["fc.weight"].T + W["fc.bias"], 0) @ W["proj"]).astype(np.float64)
    nmse = float(np.sum((y - f32_y) ** 2) / np.sum(f32_y ** 2))
    RESULTS.append("%-22s embedding max rel err %.2e, output max rel err %.2e; NMSE vs f32 %.2e"
                   % (scheme, err_e, err_y, nmse))
    assert err_e <= 1e-5 and err_y <= 1e-5, (scheme, err_e, err_y)
    inspect = run("inspect", out_pte)
    assert "quantized weights: 3" in inspect, inspect
    assert "bytes/param" in inspect and "before quantization (as f32)" in inspect, inspect
    if scheme.startswith("nf4"):
        assert "nf4%s, block " % (" double-quant" if "double" in scheme else "") in inspect, inspect
    else:
        assert "fp8 " in inspect and "f32 scales" in inspect, inspect
    return os.path.getsize(out_pte)


def test_every_scheme_matches_numpy():
    sizes = {s: check_scheme(s) for s in SCHEMES}
    f32_pte = os.path.join(WORK, "f32.pte")
    run("compile", GRAPH, "-o", f32_pte)
    sizes["f32"] = os.path.getsize(f32_pte)
    assert sizes["nf4"] * 4 < sizes["f32"] and sizes["fp8_e4m3"] * 3 < sizes["f32"], sizes
    for r in RESULTS:
        print("  " + r)
    print("  file sizes: " + ", ".join("%s %d" % kv for kv in sorted(sizes.items())))


def test_rules_and_errors():
    out_pte = os.path.join(WORK, "ruled.pte")
    report = run("compile", GRAPH, "-o", out_pte, "--quantize", "nf4",
                 "--quantize-weight", "emb.*=fp8_e5m2:per_tensor",
                 "--quantize-weight", "proj=none")
    assert "quantized 2 weights:" in report and "fp8_e5m2:per_tensor" in report, report
    r = subprocess.run([TERN, "compile", GRAPH, "-o", out_pte, "--quantize", "nf4:block=48"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode != 0 and "not a power of two in [32, 4096]" in r.stderr, r.stderr
    assert r.stderr.startswith("tern: error: "), r.stderr


def main(filters):
    return run_tests(globals(), filters)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
