#!/usr/bin/env python3
"""A/B of two tern builds on the benchmark models (docs/bench.md, "Comparing two builds").

Each model of bench/models.py is captured once (tern_export.export_graph), compiled by EACH
build's own `tern compile --backend cpu` (a blob format may differ between them), then timed with
`tern bench` in alternating rounds: every round runs A then B (B then A on odd rounds), each in a
fresh process, so a slow spell of the machine hits both. Prints per model the median over rounds
of each build's median latency and the median of the per-round ratios B/A with their range.

  .venv/bin/python bench/ab_compare.py --a OLD/tern --b NEW/tern [--rounds 5] [--runs 30]
      [--threads 2] [--models resnet18,mobilenet_v2] [--backend cpu|portable]
      [--a-backend SPEC] [--b-backend SPEC] [--workdir /tmp/tern-ab]

--a-backend / --b-backend compile one side with another backend spec (options included), e.g.
one build with `--a-backend cpu --b-backend cpu:winograd=f4` compares a compile option.

Not a test: timings go into a note or docs/BENCHMARKS.md with the command that made them.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def compile_for(tern, graph_json, out, backend):
    cmd = [tern, "compile", graph_json, "-o", out]
    if backend != "portable":
        cmd += ["--backend", backend]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def bench_once(tern, pte, input_npy, args, out_json):
    inputs = [a for npy in input_npy.split(",") for a in ("--input", npy)]
    subprocess.run([tern, "bench", pte, "--threads", str(args.threads), "--iterations",
                    str(args.runs), "--warmup", str(args.warmup)] + inputs +
                   ["--json", out_json], check=True, stdout=subprocess.DEVNULL)
    with open(out_json) as f:
        return statistics.median(json.load(f)["samples_ms"])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="the baseline tern binary")
    p.add_argument("--b", required=True, help="the candidate tern binary")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--models", default="resnet18,mobilenet_v2,mobilenet_v3_small,"
                                        "transformer_encoder,gpt_block,linear_stack")
    p.add_argument("--backend", default="cpu", help="cpu, or portable (no delegation)")
    p.add_argument("--a-backend", help="A's backend spec (default: --backend)")
    p.add_argument("--b-backend", help="B's backend spec (default: --backend)")
    p.add_argument("--workdir", default="/tmp/tern-ab")
    args = p.parse_args()

    import numpy as np
    import tern_export
    import models

    os.makedirs(args.workdir, exist_ok=True)
    print("model                 A median ms   B median ms   B/A (range)")
    for name in args.models.split(","):
        model, examples = models.build(name)
        graph_dir = os.path.join(args.workdir, name + ".graph")
        graph_json, _ = tern_export.export_graph(model, examples, graph_dir)
        npys = []
        for i, x in enumerate(examples):
            npys.append(os.path.join(args.workdir, "%s.input%d.npy" % (name, i)))
            np.save(npys[-1], x.detach().numpy())
        input_npy = ",".join(npys)
        specs = {"a": args.a_backend or args.backend, "b": args.b_backend or args.backend}
        ptes = {k: compile_for(t, graph_json, os.path.join(args.workdir, "%s.%s.pte" % (name, k)),
                               specs[k])
                for k, t in (("a", args.a), ("b", args.b))}
        times = {"a": [], "b": []}
        ratios = []
        for r in range(args.rounds):
            order = ("a", "b") if r % 2 == 0 else ("b", "a")
            got = {}
            for k in order:
                tern = args.a if k == "a" else args.b
                got[k] = bench_once(tern, ptes[k], input_npy, args,
                                    os.path.join(args.workdir, "%s.%s.json" % (name, k)))
                times[k].append(got[k])
            ratios.append(got["b"] / got["a"])
        print("%-20s %12.3f %13.3f   %.3fx (%.2f-%.2f)" % (
            name, statistics.median(times["a"]), statistics.median(times["b"]),
            statistics.median(ratios), min(ratios), max(ratios)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
