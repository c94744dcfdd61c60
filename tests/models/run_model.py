#!/usr/bin/env python3
"""run_model.py NAME... : export -> `tern run` -> compare with PyTorch eager, per model and backend.

Models: tests/models/model_zoo.py (random weights, seed 0, calibrated batch norm). Each model is
captured and lowered once, then compiled twice: for the portable kernels alone and for the cpu
backend (`--backend cpu`: XNNPACK and tern's own kernels, portable fallback kept); both programs
run on the same inputs. For each backend it prints max abs error, max |reference|, max relative
error (max abs err / max |ref|), top-1 agreement (classifiers, over --samples random inputs), the
arena size against its lower bound (`tern inspect`), and PASS when max abs err <= 1e-4 * max |ref|
on every output, sample and backend; then the closing line "N passed, M failed". Exit status 1 on
any failure, 77 (ctest: skipped) when this interpreter lacks what every model asked for needs
(torch; torchvision or transformers for those models). A compiler built without the cpu backend
checks the portable kernels only.

  TERN=build/tern python3 tests/models/run_model.py resnet18 --json results.jsonl
"""
import argparse
import copy
import json
import os
import re
import shutil
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
from work_dir import work_root  # noqa: E402
import tern_export  # noqa: E402
from tern_export.compiler import UNKNOWN_BACKEND_MARK, run_compile  # noqa: E402

TOLERANCE = 1e-4
BACKENDS = ("portable", "cpu")


def _random_like(x):
    """Another sample for input x: random normal for float inputs; integer and bool inputs
    (token ids, masks) are kept, since their valid ranges are the model's."""
    return torch.randn_like(x) if x.is_floating_point() else x.clone()


def _compare(got, ref):
    """(max abs err, max |ref|, all within tolerance) over the outputs of one sample."""
    if len(got) != len(ref):
        raise AssertionError("%d outputs, expected %d" % (len(got), len(ref)))
    max_abs, max_ref, ok = 0.0, 0.0, True
    for g, r in zip(got, ref):
        if g.shape != r.shape:
            raise AssertionError("output shape %s, expected %s" % (g.shape, r.shape))
        err = float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64)))) if r.size else 0.0
        err = float("inf") if np.isnan(err) else err  # NaN: a failure, and reported as one
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        max_abs, max_ref = max(max_abs, err), max(max_ref, scale)
        ok = ok and err <= TOLERANCE * scale
    return max_abs, max_ref, ok


def backend_spec(text):
    """A --backend value: one of BACKENDS, optionally with options after ':' (e.g. cpu:winograd=f2)."""
    if text.split(":", 1)[0] not in BACKENDS:
        raise argparse.ArgumentTypeError("%r: expected one of %s, optionally NAME:OPTIONS"
                                         % (text, ", ".join(BACKENDS)))
    return text


def check_model(name, samples, tern, backends=BACKENDS):
    torch.manual_seed(0)
    module, inputs, classifier = model_zoo.MODELS[name]()
    work = tempfile.mkdtemp(prefix="tern_model_%s_" % name, dir=work_root())
    try:
        return _check(name, module, inputs, classifier, samples, tern, backends, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _references(module, feeds):
    """PyTorch's outputs for each feed, computed in float64 (a copy of the module and the float
    inputs in double precision) so that the bound measures tern's rounding, not the sum of
    tern's and PyTorch's own float32 rounding (on the deep random-weight CNNs, PyTorch's f32
    output is 3-6e-5 * max|ref| from its f64 output). A module that cannot run in float64 falls
    back to the float32 reference; the result says which was used."""
    def run(m, cast):
        out = []
        with torch.no_grad():
            for feed in feeds:
                args = tuple(cast(x) for x in feed)
                out.append([r.float().numpy() if r.is_floating_point() else r.numpy()
                            for r in tern_export.flatten_outputs(m(*args))])
        return out
    try:
        m64 = copy.deepcopy(module).double()
        out = run(m64, lambda x: x.double() if x.is_floating_point() else x)
    except Exception:  # noqa: BLE001 - any failure of the f64 copy: use the f32 reference
        return run(module, lambda x: x), "float32"
    if _all_finite(out):
        return out, "float64"
    # A model whose float64 copy is not finite where float32 is (CANINE: a mask constant made
    # for float32's range) is compared with its float32 outputs.
    out32 = run(module, lambda x: x)
    return (out32, "float32 (float64 not finite)") if _all_finite(out32) else (out, "float64")


def _all_finite(outs):
    return all(np.isfinite(o).all() for feed in outs for o in feed
               if np.issubdtype(o.dtype, np.floating))


def _check(name, module, inputs, classifier, samples, tern, backends, work):
    t0 = time.time()
    graph, info = tern_export.export_graph(module, inputs, os.path.join(work, "graph"),
                                           source_model="tests/models:" + name)
    export_s = time.time() - t0
    feeds = [tuple(inputs)]
    for _ in range(1, samples):
        feeds.append(tuple(_random_like(x) for x in inputs))
    refs, reference = _references(module, feeds)

    r = {"model": name, "torch": torch.__version__, "capture": info["capture"].split(" (")[0],
         "nodes": sum(info["ops"].values()), "export_s": round(export_s, 2), "samples": samples, "reference": reference,
         "backends": {}, "pass": True}
    for backend in backends:
        pte = os.path.join(work, "%s_%s.pte" % (name, backend))
        t0 = time.time()
        try:
            report = run_compile(graph, pte, tern, (backend,))
        except tern_export.CompileError as e:
            if backend != "portable" and UNKNOWN_BACKEND_MARK in (e.stderr or ""):
                r["backends"][backend] = {"skipped": "not in this tern build"}
                continue
            raise
        compile_s = time.time() - t0
        arenas = tern_export.arena_report(pte, tern)
        max_abs, max_ref, agree, total, run_s, ok = 0.0, 0.0, 0, 0, 0.0, True
        for feed, ref in zip(feeds, refs):
            t0 = time.time()
            got = tern_export.run(pte, feed, tern=tern)
            run_s += time.time() - t0
            e, s, good = _compare(got, ref)
            max_abs, max_ref, ok = max(max_abs, e), max(max_ref, s), ok and good
            if classifier:
                a, b = got[0].argmax(-1), ref[0].argmax(-1)
                agree += int(np.sum(a == b))
                total += a.size
        delegates = [int(d) for d in re.findall(r"(\d+) delegates?", report)]
        r["backends"][backend] = {
            "max_abs_err": max_abs, "max_abs_ref": max_ref,
            "max_rel_err": max_abs / max_ref if max_ref else 0.0,
            "top1": "%d/%d" % (agree, total) if classifier else None,
            "arena_bytes": sum(a for a, _ in arenas),
            "lower_bound_bytes": sum(b for _, b in arenas),
            "delegates": sum(delegates), "compile_s": round(compile_s, 2),
            "run_s_per_sample": round(run_s / samples, 3), "pass": ok}
        r["pass"] = r["pass"] and ok
        os.remove(pte)  # one program on disk at a time
    return r


def describe(r):
    lines = ["%s [torch %s, %s]: %d nodes, export %.1f s, %s reference" % (
        r["model"], r["torch"], r["capture"], r["nodes"], r["export_s"], r["reference"])]
    for backend, b in r["backends"].items():
        if "skipped" in b:
            lines.append("  %s: skipped (%s)" % (backend, b["skipped"]))
            continue
        line = "  %s: max abs err %.3g, max |ref| %.3g, max rel err %.3g" % (
            backend, b["max_abs_err"], b["max_abs_ref"], b["max_rel_err"])
        if b["top1"]:
            line += ", top-1 agreement %s" % b["top1"]
        line += ", %d delegate(s), arena %d B vs lower bound %d B (%.3fx)" % (
            b["delegates"], b["arena_bytes"], b["lower_bound_bytes"],
            b["arena_bytes"] / b["lower_bound_bytes"] if b["lower_bound_bytes"] else 1.0)
        line += ", compile %.1f s, tern run %.2f s/sample: %s" % (
            b["compile_s"], b["run_s_per_sample"], "PASS" if b["pass"] else
            "FAIL (tolerance %g * max |ref|)" % TOLERANCE)
        lines.append(line)
    return "\n".join(lines)


def missing_dependency(name):
    """None when this interpreter can build model `name`, else why not."""
    if name in model_zoo.TORCHVISION:
        try:
            import torchvision  # noqa: F401
        except ImportError as e:
            return "%s (apt-get install python3-torchvision, or scripts/setup-venv.sh)" % e
    if name in model_zoo.TRANSFORMERS:
        return model_zoo.transformers_missing()
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="*", default=list(model_zoo.MODELS))
    p.add_argument("--samples", type=int, default=None,
                   help="random inputs per model (default: 2 for classifiers, 1 otherwise)")
    p.add_argument("--backend", action="append", type=backend_spec,
                   help="check only this backend, with options if any (e.g. cpu:winograd=f2; "
                        "repeatable; default: %s)" % ", ".join(BACKENDS))
    p.add_argument("--json", help="append one JSON line per model to this file")
    a = p.parse_args()
    unknown = [m for m in a.models if m not in model_zoo.MODELS]
    if unknown:
        p.error("unknown model(s) %s; known: %s" % (unknown, ", ".join(model_zoo.MODELS)))
    tern = tern_export.find_tern()
    passed = failed = skipped = 0
    for name in a.models:
        why = missing_dependency(name)
        if why:
            skipped += 1
            print("skipped %s [torch %s]: %s" % (name, torch.__version__, why))
            continue
        samples = a.samples or (2 if name in model_zoo.TORCHVISION else 1)
        t0 = time.time()
        try:
            r = check_model(name, samples, tern, tuple(a.backend or BACKENDS))
        except Exception as e:  # report and go on with the next model
            failed += 1
            print("FAIL %s [torch %s]: %s: %s" % (name, torch.__version__, type(e).__name__, e))
            continue
        r["total_s"] = round(time.time() - t0, 1)
        print(describe(r))
        print("%s: %s in %.1f s" % (name, "PASS" if r["pass"] else "FAIL", r["total_s"]))
        sys.stdout.flush()
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(r) + "\n")
        if r["pass"]:
            passed += 1
        else:
            failed += 1
    print("torch %s: %d passed, %d failed, %d skipped" % (torch.__version__, passed, failed,
                                                           skipped))
    if failed:
        return 1
    return 77 if skipped and not passed else 0


if __name__ == "__main__":
    sys.exit(main())
