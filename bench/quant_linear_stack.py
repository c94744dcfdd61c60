#!/usr/bin/env python3
"""Weight-bandwidth-bound decode: a stack of large linear layers at batch 1 (4096 -> 14336 ->
4096, x LAYERS pairs, 470 MB of f32 weights per pair) compiled for the cpu backend as f32, NF4
and FP8 (e4m3, per channel and 128x128 blocks), timed with `tern bench` (2 threads unless
--threads) in alternating rounds, against a STREAM-style read loop (same threads, a 1 GiB buffer) measured in
the same run, and PyTorch on CPU as the peer (f32 torch.nn.functional.linear; bitsandbytes NF4
when it runs on CPU in the venv). Prints a markdown table: median latency (range), effective
weight-read GB/s (bytes of weights and their parameters per forward / latency) and its
fraction of the measured read bandwidth. Each tern round records the median and the minimum of
its executes; the table gives the median of the round medians (range) and, as "best", the
minimum over all executes with its GB/s: on a shared, oversubscribed host a 2-thread execute
waits for a descheduled pool thread (the delegate's barrier), which the median absorbs and
the best does not (the read loop reports its best of 3 per round, for comparison). The load
average is printed before and after.

  .venv/bin/python bench/quant_linear_stack.py --tern build/tern [--rounds 5] [--layers 1] [--threads 2]
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

IN, HID = 4096, 14336

STREAM_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <immintrin.h>
#include <omp.h>
#include <time.h>
/* The widest vectors this CPU has (built with -march=native): AVX-512 or AVX2. */
#ifdef __AVX512F__
typedef __m512 vec;
#define VW 16
#define vzero _mm512_setzero_ps
#define vadd _mm512_add_ps
#define vload _mm512_load_ps
static float vsum(vec v) { return _mm512_reduce_add_ps(v); }
#else
typedef __m256 vec;
#define VW 8
#define vzero _mm256_setzero_ps
#define vadd _mm256_add_ps
#define vload _mm256_load_ps
static float vsum(vec v) { float t[8]; _mm256_storeu_ps(t, v); return t[0]+t[1]+t[2]+t[3]+t[4]+t[5]+t[6]+t[7]; }
#endif
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char** argv) {
  size_t bytes = (size_t)1 << 30; int reps = atoi(argv[1]); int threads = atoi(argv[2]);
  float* a = aligned_alloc(64, bytes); memset(a, 1, bytes);
  size_t n = bytes / 4; double best = 1e30; float sink = 0;
  for (int r = 0; r < reps; ++r) {
    double t0 = now();
    #pragma omp parallel num_threads(threads) reduction(+:sink)
    { vec s0 = vzero(), s1 = s0, s2 = s0, s3 = s0;
      #pragma omp for schedule(static)
      for (size_t i = 0; i < n; i += 4 * VW) {
        s0 = vadd(s0, vload(a + i)); s1 = vadd(s1, vload(a + i + VW));
        s2 = vadd(s2, vload(a + i + 2 * VW)); s3 = vadd(s3, vload(a + i + 3 * VW)); }
      sink += vsum(vadd(vadd(s0, s1), vadd(s2, s3))); }
    double t = now() - t0; if (t < best) best = t;
    printf("%.3f\n", bytes / t / 1e9);
  }
  fprintf(stderr, "%g\n", sink); return 0;
}
"""


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a).tobytes())


def make_model(d, layers):
    rng = np.random.default_rng(0)
    w, values, nodes = {}, [], []

    def t(name, shape, weight=None):
        v = {"type": "tensor", "name": name, "dtype": "f32", "shape": shape}
        if weight:
            v["weight"] = weight
        values.append(v)
    t("x", [1, IN])
    cur = "x"
    for i in range(layers):
        for j, (o, k) in enumerate(((HID, IN), (IN, HID))):
            name = "l%d_%d" % (i, j)
            w[name + ".weight"] = (rng.standard_normal((o, k), dtype=np.float32) * 0.02)
            t(name + ".weight", [o, k], name + ".weight")
            t(name, [1, o])
            nodes.append({"op": "tern::linear", "args": [cur, name + ".weight", "none"],
                          "outputs": [name], "name": name})
            cur = name
    values.append({"type": "none", "name": "none"})
    write_safetensors(os.path.join(d, "w.safetensors"), w)
    graph = {"format": "tern-graph", "version": 1, "weights": "w.safetensors",
             "methods": [{"name": "forward", "values": values, "inputs": ["x"],
                          "outputs": [cur], "nodes": nodes}]}
    with open(os.path.join(d, "graph.json"), "w") as f:
        json.dump(graph, f)
    return w


def tern_bench(tern, pte, iters, threads):
    out = pte + ".json"
    subprocess.run([tern, "bench", pte, "--threads", str(threads), "--iterations", str(iters),
                    "--warmup", "2", "--json", out], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        j = json.load(f)
    return j


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tern", default="build/tern")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=10, help="timed executes per round")
    ap.add_argument("--layers", type=int, default=1, help="4096->14336->4096 pairs")
    ap.add_argument("--threads", type=int, default=2, help="tern, read loop and torch threads")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tern_qstack_")
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, work):
    weights = make_model(work, args.layers)
    f32_bytes = sum(a.nbytes for a in weights.values())
    params = f32_bytes // 4
    configs = [("f32", None), ("nf4", "nf4"), ("fp8_e4m3 per_channel", "fp8_e4m3"),
               ("fp8_e4m3 block 128", "fp8_e4m3:block=128")]
    # Bytes each forward reads: codes plus their parameters (tern's blob layout).
    nblocks = sum((a.size + 63) // 64 for a in weights.values())
    read_bytes = {"f32": f32_bytes, "nf4": params // 2 + 4 * nblocks,
                  "fp8_e4m3 per_channel": params + 4 * sum(a.shape[0] for a in weights.values()),
                  "fp8_e4m3 block 128": params + 4 * sum(
                      -(-a.shape[0] // 128) * -(-a.shape[1] // 128) for a in weights.values())}
    ptes = {}
    for name, q in configs:
        pte = os.path.join(work, name.replace(" ", "_") + ".pte")
        cmd = [args.tern, "compile", os.path.join(work, "graph.json"), "-o", pte, "--backend", "cpu"]
        if q:
            cmd += ["--quantize", q]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        ptes[name] = pte
    del weights
    # STREAM-style read bandwidth, 2 threads.
    src = os.path.join(work, "stream.c")
    with open(src, "w") as f:
        f.write(STREAM_C)
    exe = os.path.join(work, "stream")
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", src, "-o", exe], check=True)
    # Peers: PyTorch f32 linear and bitsandbytes NF4 (CPU), 2 threads.
    torch_fn, bnb_fn, bnb_note = None, None, "not run"
    try:
        import torch
        torch.set_num_threads(args.threads)
        rng = np.random.default_rng(0)
        tw = [torch.from_numpy(rng.standard_normal(s, dtype=np.float32) * 0.02)
              for _ in range(args.layers) for s in ((HID, IN), (IN, HID))]
        x = torch.randn(1, IN)

        def torch_fn():
            y = x
            for w in tw:
                y = torch.nn.functional.linear(y, w)
            return y
        try:
            import bitsandbytes.functional as bf
            qs = [bf.quantize_4bit(w, quant_type="nf4", blocksize=64) for w in tw]

            def bnb_fn():
                y = x
                for (qw, st) in qs:
                    y = bf.gemv_4bit(y, qw.t(), state=st) if hasattr(bf, "gemv_4bit") else None
                return y
            bnb_fn()
            bnb_note = "bitsandbytes %s" % __import__("bitsandbytes").__version__
        except Exception as e:  # noqa: BLE001
            bnb_fn, bnb_note = None, "bitsandbytes NF4 on CPU did not run: %s" % str(e).splitlines()[0][:120]
    except ImportError:
        torch_fn = None

    def time_py(fn, iters):
        fn()
        ts = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return median(ts) * 1e3

    lat = {name: [] for name, _ in configs}
    lat["torch f32"], lat["bnb nf4"], bw = [], [], []
    best = {name: [] for name, _ in configs}
    load0 = os.getloadavg()
    for r in range(args.rounds):
        out = subprocess.run([exe, "3", str(args.threads)], check=True, stdout=subprocess.PIPE, universal_newlines=True)
        bw.append(max(float(v) for v in out.stdout.split()))
        order = configs if r % 2 == 0 else configs[::-1]
        for name, _ in order:
            j = tern_bench(args.tern, ptes[name], args.iterations, args.threads)
            lat[name].append(j["latency_ms"]["median"])
            best[name].append(j["latency_ms"]["min"])
        if torch_fn:
            lat["torch f32"].append(time_py(torch_fn, args.iterations))
        if bnb_fn:
            lat["bnb nf4"].append(time_py(bnb_fn, args.iterations))
        print("round %d done" % r, file=sys.stderr)
    bwm = median(bw)
    print("threads %d; read bandwidth (STREAM-style, same threads, 1 GiB): median %.1f GB/s (range %.1f-%.1f); "
          "\"best of read BW\" is against the best, %.1f" % (args.threads, bwm, min(bw), max(bw), max(bw)))
    load1 = os.getloadavg()
    print("weights: %d layers, %.0f MB f32; load average %.1f/%.1f/%.1f before, "
          "%.1f/%.1f/%.1f after\n" % ((2 * args.layers, f32_bytes / 1e6) + load0 + load1))
    print("| config | median ms (range) | vs f32 | weight bytes read | GB/s | of read BW "
          "| best ms (vs f32 best) | best GB/s | best of read BW |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    f32m = median(lat["f32"])
    for name, _ in configs:
        m = median(lat[name])
        gbs = read_bytes[name] / (m * 1e-3) / 1e9
        b = min(best[name])
        bgbs = read_bytes[name] / (b * 1e-3) / 1e9
        print("| tern cpu %s | %.2f (%.2f-%.2f) | %.2fx | %.0f MB | %.1f | %.0f%% | %.2f (%.2fx) "
              "| %.1f | %.0f%% |"
              % (name, m, min(lat[name]), max(lat[name]), f32m / m, read_bytes[name] / 1e6, gbs,
                 100 * gbs / bwm, b, min(best["f32"]) / b, bgbs, 100 * bgbs / max(bw)))
    if lat["torch f32"]:
        m = median(lat["torch f32"])
        print("| torch %s F.linear f32 | %.2f (%.2f-%.2f) | %.2fx | %.0f MB | %.1f | %.0f%% | | | |" % (
            __import__("torch").__version__, m, min(lat["torch f32"]), max(lat["torch f32"]),
            f32m / m, f32_bytes / 1e6, f32_bytes / (m * 1e-3) / 1e9,
            100 * f32_bytes / (m * 1e-3) / 1e9 / bwm))
    if lat["bnb nf4"]:
        m = median(lat["bnb nf4"])
        print("| %s NF4 (CPU) | %.2f (%.2f-%.2f) | %.2fx | %.0f MB | %.1f | %.0f%% | | | |" % (
            bnb_note, m, min(lat["bnb nf4"]), max(lat["bnb nf4"]), f32m / m,
            read_bytes["nf4"] / 1e6, read_bytes["nf4"] / (m * 1e-3) / 1e9,
            100 * read_bytes["nf4"] / (m * 1e-3) / 1e9 / bwm))
    else:
        print("\n(%s)" % bnb_note)


if __name__ == "__main__":
    main()
