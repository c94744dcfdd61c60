#!/usr/bin/env python3
"""End to end on the vulkan backend: the model of tests/quant/test_quant_e2e.py (an embedding,
a linear with bias, a relu, a matmul with a constant: graph.json + safetensors) compiled with
`tern compile --quantize SCHEME --backend vulkan` is one vulkan delegate (`tern inspect`), runs
on the backend (`tern run`: "delegate call 0: backend"), and its outputs equal the portable
program's (`tern compile --quantize SCHEME`, no backend) within 1e-5 relative (the embedding bit
for bit) and numpy's dequantize-then-matmul (tests/quant/quant_ref.py) within 1e-5 relative.
Prints "N passed, M failed"; exits 77 without numpy or tern.

  TERN=build/tern VK_ICD_FILENAMES=... python3 tests/backends/vulkan/test_vulkan_quant_e2e.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "quant"))
import test_quant_e2e as q  # noqa: E402  (exits 77 without numpy or tern)
import numpy as np  # noqa: E402

SCHEMES = ["nf4", "nf4:block=32:double", "nf4:block=128", "fp8_e4m3", "fp8_e4m3:per_tensor",
           "fp8_e4m3:block=16x32", "fp8_e5m2", "fp8_e5m2:block=8x8"]
RESULTS = []


def run_program(pte):
    d = os.path.dirname(q.GRAPH)
    out_dir = pte + ".out"
    stdout = q.run("run", pte, "--input", os.path.join(d, "idx.npy"),
                   "--input", os.path.join(d, "x.npy"), "--output-dir", out_dir)
    return (np.load(os.path.join(out_dir, "output_0.npy")),
            np.load(os.path.join(out_dir, "output_1.npy")), stdout)


def check_scheme(scheme):
    stem = os.path.join(q.WORK, "vk_" + scheme.replace(":", "_").replace("=", ""))
    report = q.run("compile", q.GRAPH, "-o", stem + ".pte", "--quantize", scheme,
                   "--backend", "vulkan")
    assert "quantized 3 weights:" in report and "1 delegates" in report, report
    inspect = q.run("inspect", stem + ".pte")
    assert "delegates: 1\n    0 vulkan:" in inspect, inspect
    assert "delegate:vulkan                      1" in inspect, inspect
    e, y, stdout = run_program(stem + ".pte")
    assert "delegate call 0: backend" in stdout, stdout
    q.run("compile", q.GRAPH, "-o", stem + "_portable.pte", "--quantize", scheme)
    pe, py, _ = run_program(stem + "_portable.pte")
    want_e, want_y = q.reference(scheme)
    err_portable = q.rel_err(y, py.astype(np.float64))
    err_numpy = q.rel_err(y, want_y)
    RESULTS.append("%-22s vulkan vs portable: embedding %s, output max rel err %.2e; "
                   "vs numpy %.2e" % (scheme, "identical" if np.array_equal(e, pe) else "DIFFERENT",
                                      err_portable, err_numpy))
    assert np.array_equal(e, pe), scheme
    assert q.rel_err(e, want_e) <= 1e-5, scheme
    assert err_portable <= 1e-5 and err_numpy <= 1e-5, (scheme, err_portable, err_numpy)


def test_every_scheme_one_vulkan_delegate_matches_portable():
    for s in SCHEMES:
        check_scheme(s)
    for r in RESULTS:
        print("  " + r)


if __name__ == "__main__":
    sys.exit(q.run_tests(globals(), sys.argv[1:]))
