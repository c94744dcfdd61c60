#!/usr/bin/env python3
"""tern's cuda delegate against PyTorch on the same GPU, in one run (docs/BENCH.md's rules).

    TERN=build-gpu/tern python3 bench/cuda_compare.py OUT_DIR [CASE...]

Cases (default: all): resnet18, mobilenet_v2 (batch 1), mobilenet_v2_b32 (batch 32),
transformer_encoder, gpt_block (bench/models.py), each in f32 and f16. For each case and dtype:
- tern: the model exported once (`tern_export.export`, graph kept), compiled with
  `--backend cuda` or `--backend cuda:f16`, timed by `tern bench` (wall clock around execute:
  input copy to the device, the delegate's CUDA graph replay, output copy back, as an app sees
  it); also its "file to first output".
- PyTorch eager CUDA: the module on the device (`.half()` for f16), inputs already on the device,
  `torch.cuda.synchronize()` after each call, under inference_mode: median of the same number of
  calls after the same warm-up.
- torch.compile (CUDA_BENCH_COMPILE=MODE, e.g. "max-autotune-no-cudagraphs" or
  "reduce-overhead"; "none" skips it, the default because compiling costs minutes of device time).
A table is printed last and written to OUT_DIR/cuda_compare.md; JSON rows to cuda_compare.json.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools", "export"))

import torch  # noqa: E402
import models  # noqa: E402
import tern_export  # noqa: E402
from tern_export.compiler import run_compile  # noqa: E402

ITERATIONS = int(os.environ.get("CUDA_BENCH_ITERATIONS", "100"))
WARMUP = int(os.environ.get("CUDA_BENCH_WARMUP", "10"))
COMPILE_MODE = os.environ.get("CUDA_BENCH_COMPILE", "none")

# case -> (bench/models.py name, batch)
CASES = {
    "resnet18": ("resnet18", 1),
    "mobilenet_v2": ("mobilenet_v2", 1),
    "mobilenet_v2_b32": ("mobilenet_v2", 32),
    "transformer_encoder": ("transformer_encoder", 1),
    "gpt_block": ("gpt_block", 1),
}


def inputs_for(name, batch):
    factory, shape, _ = models.MODELS[name]
    torch.manual_seed(0)
    module = factory().eval()
    if callable(shape):
        xs = tuple(shape())
    else:
        xs = (torch.randn((batch,) + tuple(shape[1:])),)
    return module, xs


def tern_bench(tern, pte):
    """`tern bench`'s median latency and file-to-first-output (ms), and its delegate paths."""
    r = subprocess.run([tern, "bench", pte, "--iterations", str(ITERATIONS), "--warmup",
                        str(WARMUP)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("tern bench exit %d: %s" % (r.returncode, r.stderr[-800:]))
    median = float(re.search(r"median\s+([0-9.]+) ms", r.stdout).group(1))
    first = float(re.search(r"file to first output: ([0-9.]+) ms", r.stdout).group(1))
    paths = re.findall(r"delegate call \d+: (.*)", r.stdout)
    device_mib = sum(float(v) for v in re.findall(r"device memory ([0-9.]+) MiB", r.stdout))
    return median, first, paths, device_mib


def torch_median(fn, xs):
    with torch.inference_mode():
        for _ in range(WARMUP):
            fn(*xs)
        torch.cuda.synchronize()
        samples = []
        for _ in range(ITERATIONS):
            t0 = time.perf_counter()
            fn(*xs)
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def main():
    out = sys.argv[1]
    cases = sys.argv[2:] or list(CASES)
    os.makedirs(out, exist_ok=True)
    tern = tern_export.find_tern()
    torch.backends.cudnn.benchmark = True  # PyTorch's best convolution algorithms (fixed shapes)
    dev = torch.cuda.get_device_name(0)
    rows = []
    kept = {}
    for case in cases:
        name, batch = CASES[case]
        module, xs = inputs_for(name, batch)
        work = os.path.join(out, case)
        os.makedirs(work, exist_ok=True)
        graph_dir = os.path.join(work, "graph")
        tern_export.export(module, xs, os.path.join(work, "f32.pte"), backends=("cuda",),
                           keep_graph=graph_dir, verbose=False)
        graph = os.path.join(graph_dir, "graph.json")
        run_compile(graph, os.path.join(work, "f16.pte"), tern, ("cuda:f16",))
        for dtype in ("f32", "f16"):
            row = {"case": case, "dtype": dtype, "device": dev}
            try:
                row["tern_ms"], row["tern_first_ms"], paths, row["tern_device_mib"] = tern_bench(
                    tern, os.path.join(work, dtype + ".pte"))
                row["tern_paths"] = paths
                if any("fallback" in p for p in paths):
                    row["note"] = "tern's cuda delegate fell back to the portable kernels"
            except Exception as e:  # noqa: BLE001
                row["tern_error"] = str(e)[:300]
            torch.manual_seed(0)
            m = module.to("cuda")
            dx = tuple(x.to("cuda") for x in xs)
            if dtype == "f16":
                m = m.half()
                dx = tuple(x.half() if x.is_floating_point() else x for x in dx)
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            row["eager_ms"] = torch_median(m, dx)
            module = m.float().to("cpu")
            rows.append(row)
            print(json.dumps(row), flush=True)
            torch.cuda.empty_cache()
            write_tables(out, rows, dev)  # after every row: a run cut short keeps its figures
        kept[case] = (module, xs)
    # torch.compile last: its compile time (minutes) must not cost the figures above.
    if COMPILE_MODE != "none":
        for row in rows:
            module, xs = kept[row["case"]]
            m = module.to("cuda")
            dx = tuple(x.to("cuda") for x in xs)
            if row["dtype"] == "f16":
                m = m.half()
                dx = tuple(x.half() if x.is_floating_point() else x for x in dx)
            try:
                torch._dynamo.reset()
                t0 = time.perf_counter()
                compiled = torch.compile(m, mode=COMPILE_MODE)
                with torch.inference_mode():
                    compiled(*dx)
                torch.cuda.synchronize()
                row["compile_s"] = time.perf_counter() - t0
                row["compiled_ms"] = torch_median(compiled, dx)
            except Exception as e:  # noqa: BLE001
                row["compile_error"] = str(e)[:300]
            m.float().to("cpu")
            print(json.dumps(row), flush=True)
            write_tables(out, rows, dev)
    return write_tables(out, rows, dev)


def write_tables(out, rows, dev):
    with open(os.path.join(out, "cuda_compare.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = ["device: %s, torch %s, %d iterations after %d warm-up (medians, ms)" % (
        dev, torch.__version__, ITERATIONS, WARMUP), "",
        "| case | dtype | tern cuda | PyTorch eager | tern / eager | torch.compile (%s) | tern file to first output | tern device memory |"
        % COMPILE_MODE, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = r.get("tern_ms")
        ratio = "%.2f" % (t / r["eager_ms"]) if t else "-"
        lines.append("| %s | %s | %s | %.3f | %s | %s | %s | %s |" % (
            r["case"], r["dtype"], "%.3f" % t if t else "error", r["eager_ms"], ratio,
            "%.3f" % r["compiled_ms"] if "compiled_ms" in r else "-",
            "%.1f" % r["tern_first_ms"] if "tern_first_ms" in r else "-",
            "%.1f MiB" % r["tern_device_mib"] if r.get("tern_device_mib") else "-"))
    text = "\n".join(lines)
    with open(os.path.join(out, "cuda_compare.md"), "w") as f:
        f.write(text + "\n")
    return text


if __name__ == "__main__":
    print(main())
