#!/usr/bin/env python3
"""run_model.py NAME... : export -> `tern run` -> compare with PyTorch eager, per model.

Models: tests/models/model_zoo.py (random weights, seed 0, calibrated batch norm). For each,
prints max abs error, max |reference|, max relative error (max abs err / max |ref|), top-1
agreement (classifiers, over --samples random inputs), the arena size against its lower bound
(`tern inspect`), and PASS when max abs err <= 1e-4 * max |ref| on every sample; then the
closing line "N passed, M failed". Exit status 1 on any failure, 77 (ctest: skipped) when this
interpreter lacks torch (or torchvision for the torchvision models).

  TERN=build/tern python3 tests/models/run_model.py resnet18 --json results.jsonl
"""
import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "export"))
sys.path.insert(0, HERE)

try:
    import numpy as np
    import torch
except ImportError as e:
    print("skipped: %s (install python3-torch, or run scripts/setup-venv.sh)" % e)
    sys.exit(77)

import model_zoo  # noqa: E402
import tern_export  # noqa: E402

TOLERANCE = 1e-4


def check_model(name, samples, tern):
    torch.manual_seed(0)
    module, inputs, classifier = model_zoo.MODELS[name]()
    work = tempfile.mkdtemp(prefix="tern_model_%s_" % name)
    pte = os.path.join(work, name + ".pte")
    t0 = time.time()
    result = tern_export.export(module, inputs, pte, source_model="tests/models:" + name)
    export_s = time.time() - t0
    arenas = tern_export.arena_report(pte, tern)

    max_abs, max_ref, agree, total, run_s = 0.0, 0.0, 0, 0, 0.0
    ok = True
    for s in range(samples):
        feed = inputs if s == 0 else tuple(torch.randn_like(x) for x in inputs)
        with torch.no_grad():
            ref = [r.numpy() for r in tern_export.flatten_outputs(module(*feed))]
        t0 = time.time()
        got = tern_export.run(pte, feed, tern=tern)
        run_s += time.time() - t0
        if len(got) != len(ref):
            raise AssertionError("%d outputs, expected %d" % (len(got), len(ref)))
        for g, r in zip(got, ref):
            if g.shape != r.shape:
                raise AssertionError("output shape %s, expected %s" % (g.shape, r.shape))
            err = float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64))))
            scale = float(np.max(np.abs(r)))
            max_abs, max_ref = max(max_abs, err), max(max_ref, scale)
            ok = ok and err <= TOLERANCE * scale
        if classifier:
            a, b = got[0].argmax(-1), ref[0].argmax(-1)
            agree += int(np.sum(a == b))
            total += a.size
    arena, bound = (sum(a for a, _ in arenas), sum(b for _, b in arenas))
    return {
        "model": name, "torch": torch.__version__, "capture": result.capture.split(" (")[0],
        "max_abs_err": max_abs, "max_abs_ref": max_ref,
        "max_rel_err": max_abs / max_ref if max_ref else 0.0,
        "top1": "%d/%d" % (agree, total) if classifier else None,
        "arena_bytes": arena, "lower_bound_bytes": bound,
        "nodes": sum(result.ops.values()), "export_s": round(export_s, 2),
        "run_s_per_sample": round(run_s / samples, 3), "samples": samples, "pass": ok,
    }


def describe(r):
    line = "%s [torch %s, %s]: max abs err %.3g, max |ref| %.3g, max rel err %.3g" % (
        r["model"], r["torch"], r["capture"], r["max_abs_err"], r["max_abs_ref"],
        r["max_rel_err"])
    if r["top1"]:
        line += ", top-1 agreement %s" % r["top1"]
    line += ", %d nodes, arena %d B vs lower bound %d B (%.3fx)" % (
        r["nodes"], r["arena_bytes"], r["lower_bound_bytes"],
        r["arena_bytes"] / r["lower_bound_bytes"] if r["lower_bound_bytes"] else 1.0)
    line += ", export %.1f s, tern run %.2f s/sample: %s" % (
        r["export_s"], r["run_s_per_sample"], "PASS" if r["pass"] else
        "FAIL (tolerance %g * max |ref|)" % TOLERANCE)
    return line


def main():
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="*", default=list(model_zoo.MODELS))
    p.add_argument("--samples", type=int, default=None,
                   help="random inputs per model (default: 2 for classifiers, 1 otherwise)")
    p.add_argument("--json", help="append one JSON line per model to this file")
    a = p.parse_args()
    unknown = [m for m in a.models if m not in model_zoo.MODELS]
    if unknown:
        p.error("unknown model(s) %s; known: %s" % (unknown, ", ".join(model_zoo.MODELS)))
    if any(m in model_zoo.TORCHVISION for m in a.models):
        try:
            import torchvision  # noqa: F401
        except ImportError as e:
            print("skipped: %s (apt-get install python3-torchvision, or scripts/setup-venv.sh)" % e)
            return 77
    tern = tern_export.find_tern()
    passed = failed = 0
    for name in a.models:
        samples = a.samples or (2 if name in model_zoo.TORCHVISION else 1)
        try:
            r = check_model(name, samples, tern)
        except Exception as e:  # report and go on with the next model
            failed += 1
            print("FAIL %s [torch %s]: %s: %s" % (name, torch.__version__, type(e).__name__, e))
            continue
        print(describe(r))
        sys.stdout.flush()
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(r) + "\n")
        if r["pass"]:
            passed += 1
        else:
            failed += 1
    print("torch %s: %d passed, %d failed" % (torch.__version__, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
