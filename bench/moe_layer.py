#!/usr/bin/env python3
"""A mixture-of-experts layer at a realistic width: transformers' MixtralSparseMoeBlock (router,
top-k, experts' gated MLPs through grouped_mm) with Mixtral's shape scaled by 1/4 (hidden 1024,
expert MLP 3584, 8 experts, top-2; 352 MB of f32 expert weights; random weights), at a decode
step (1 token) and a prefill (--tokens, default 32). Exported by tern_export for the portable
kernels and for the cpu backend (the expert products in its GroupedMatmul node, blob version
23), timed with `tern bench` and against PyTorch eager on the same module, same threads, in
alternating rounds. Outputs are checked against PyTorch first (max |err| / max |ref|; f32
programs must be within 1e-4). --quantize nf4,fp8_e4m3 adds cpu programs with quantized experts
(the router stays f32; the experts through the delegate's op 47), their error against the f32 module reported and
their file size in the table.

    .venv/bin/python bench/moe_layer.py --tern build/tern [--rounds 3] [--threads 2] [--quantize nf4]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools", "export"))


def build_block(hidden, inter, experts, top_k):
    import torch
    import transformers as tf
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
    torch.manual_seed(0)
    cfg = tf.MixtralConfig(hidden_size=hidden, intermediate_size=inter, num_local_experts=experts,
                           num_experts_per_tok=top_k)
    # As a whole model picks (PreTrainedModel): the experts through grouped_mm, which exports
    # (the eager loop over the experts hit is data-dependent).
    cfg._experts_implementation = "grouped_mm"
    block = MixtralSparseMoeBlock(cfg).eval()
    for p in block.parameters():  # transformers leaves some expert weights uninitialised
        torch.nn.init.normal_(p, std=hidden ** -0.5)

    class Out(torch.nn.Module):  # the hidden states only (not the router logits)
        def __init__(self, b):
            super().__init__()
            self.b = b

        def forward(self, x):
            y = self.b(x)
            return y[0] if isinstance(y, tuple) else y
    return Out(block).eval()


def tern_bench(tern, pte, threads, iters, npy):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "b.json")
        subprocess.run([tern, "bench", pte, "--threads", str(threads), "--iterations", str(iters),
                        "--warmup", "3", "--input", npy, "--json", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)["latency_ms"]["median"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tern", default="build/tern")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--inter", type=int, default=3584)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--quantize", default="", help="comma-separated schemes for extra cpu rows")
    args = ap.parse_args()
    import numpy as np
    import torch
    import tern_export
    torch.set_num_threads(args.threads)
    model = build_block(args.hidden, args.inter, args.experts, args.top_k)
    weight_mb = sum(p.numel() * 4 for p in model.parameters()) / 1e6
    print("MoE block: hidden %d, expert MLP %d, %d experts, top-%d, %.0f MB of f32 weights, "
          "%d threads, torch %s" % (args.hidden, args.inter, args.experts, args.top_k, weight_mb,
                                    args.threads, torch.__version__))
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for tokens in (1, args.tokens):
            x = torch.randn(1, tokens, args.hidden)
            npy = os.path.join(d, "x%d.npy" % tokens)
            np.save(npy, x.numpy())
            with torch.no_grad():
                ref = model(x).numpy()
            ptes = {}
            variants = [("tern portable", ("portable",), None), ("tern cpu", ("cpu",), None)]
            variants += [("tern cpu " + q, ("cpu",), q) for q in args.quantize.split(",") if q]
            for name, backends, scheme in variants:
                pte = os.path.join(d, "%s_%d.pte" % (name.replace(" ", "_").replace(":", "_"),
                                                     tokens))
                quantize = None if scheme is None else {"*.gate": None, "*": scheme}
                tern_export.export(model, (x,), pte, backends=backends, quantize=quantize,
                                   verbose=False)
                subprocess.run([args.tern, "run", pte, "--input", npy, "--output-dir", d],
                               check=True, stdout=subprocess.DEVNULL)
                got = np.load(os.path.join(d, "output_0.npy"))
                err = float(np.abs(got - ref).max() / np.abs(ref).max())
                if err > 1e-4 and scheme is None:
                    raise SystemExit("%s at %d tokens: max rel error %.2e" % (name, tokens, err))
                ptes[name] = (pte, err, os.path.getsize(pte) / 1e6)
            times = {k: [] for k in list(ptes) + ["PyTorch eager"]}
            for _ in range(args.rounds):
                for name, (pte, _, _) in ptes.items():
                    times[name].append(tern_bench(args.tern, pte, args.threads, args.iters, npy))
                with torch.no_grad():
                    for _ in range(3):
                        model(x)
                    ts = []
                    for _ in range(args.iters):
                        t0 = time.perf_counter()
                        model(x)
                        ts.append((time.perf_counter() - t0) * 1e3)
                times["PyTorch eager"].append(statistics.median(ts))
            for name, t in times.items():
                err, mb = ptes[name][1:] if name in ptes else (None, None)
                rows.append((tokens, name, statistics.median(t), min(t), max(t), err, mb))
    eager = {r[0]: r[2] for r in rows if r[1] == "PyTorch eager"}
    print("\n| tokens | runtime | median ms (range) | ÷ PyTorch eager | max rel err vs PyTorch f32 "
          "| file MB |")
    print("|---|---|---|---|---|---|")
    for tok, name, med, lo, hi, err, mb in rows:
        print("| %d | %s | %.2f (%.2f–%.2f) | %.2f× | %s | %s |" % (
            tok, name, med, lo, hi, med / eager[tok], "—" if err is None else "%.1e" % err,
            "—" if mb is None else "%.0f" % mb))


if __name__ == "__main__":
    main()
