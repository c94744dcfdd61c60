#!/usr/bin/env python3
"""coverage_probe.py [NAME...]: which architectures beyond the test zoo export and match PyTorch.

Not a ctest test: a survey to run by hand after exporter changes (docs/models.md, *Coverage
probe*). Each entry builds a tiny random-weight model — Hugging Face `transformers` classes
from small configs (nothing is downloaded), torchvision segmentation and video models, timm's
image models, Ultralytics' detectors and diffusers' generative models (those two packages come
with bench/setup-venv.sh: run the probe with bench/.venv/bin/python for them) — and
run_model.py's check exports it, compiles it for the portable kernels and the cpu backend and
compares with PyTorch eager in float64 (same 1e-4 * max|ref| bound). Prints one line per model (PASS, FAIL with the error, or ERROR with the
exporter's message) and a closing count.

  TERN=build/tern .venv/bin/python tests/models/coverage_probe.py [--backend B] [NAME...]

--backend B (vulkan, cuda, ...) checks the portable program and B's instead of the cpu
backend's and counts B's regions (a backend this tern build lacks is reported skipped).

The entries: probe_architectures.py (transformers and torchvision), probe_timm.py,
probe_detectors.py (Ultralytics' and torchvision's detectors), probe_diffusers.py (diffusers);
their builders in probe_builders.py (probe_diffusers.py has its own).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import model_zoo  # noqa: E402
import run_model  # noqa: E402
from probe_architectures import ARCHITECTURES  # noqa: E402
from probe_builders import timm_missing  # noqa: E402
from probe_detectors import DETECTORS, ULTRALYTICS  # noqa: E402
from probe_diffusers import DIFFUSERS, diffusers_missing  # noqa: E402
from probe_timm import TIMM  # noqa: E402

PROBE = dict(ARCHITECTURES)
PROBE.update(TIMM)
PROBE.update(ULTRALYTICS)
PROBE.update(DETECTORS)
PROBE.update(DIFFUSERS)
TORCHVISION = {"lraspp_mobilenet_v3", "deeplabv3_mobilenet_v3", "fcn_resnet50", "mc3_18",
               "efficientnet_b0", "regnet_y_400mf", "swin_t", "swin_v2_t", "maxvit_t",
               "alexnet", "squeezenet1_0", "swin3d_t", "mvit_v2_s", "s3d", "raft_small"} | \
    set(DETECTORS)


def main(args):
    backend = "cpu"
    if args[:1] == ["--backend"] and len(args) >= 2:
        backend, args = args[1], args[2:]
    names = args or list(PROBE)
    unknown = [n for n in names if n not in PROBE]
    if unknown:
        print("unknown: %s; known: %s" % (unknown, ", ".join(PROBE)))
        return 2
    model_zoo.MODELS.update(PROBE)
    tern = run_model.tern_export.find_tern()
    counts = {"PASS": 0, "FAIL": 0, "ERROR": 0}
    for name in names:
        why = (timm_missing() if name in TIMM else
               model_zoo.ultralytics_missing() if name in ULTRALYTICS else
               diffusers_missing() if name in DIFFUSERS else
               None if name in TORCHVISION else model_zoo.transformers_missing())
        if why:
            print("%-24s SKIP %s" % (name, why))
            continue
        t0 = time.time()
        try:
            r = run_model.check_model(name, 1, tern, ("portable", backend))
            verdict = "PASS" if r["pass"] else "FAIL"
            worst = max(b.get("max_rel_err", 0.0) for b in r["backends"].values())
            b = r["backends"].get(backend, {})
            detail = "%d nodes, max rel %.1e, %s %s region(s)" % (
                r["nodes"], worst, b.get("delegates", b.get("skipped", "-")), backend)
        except Exception as e:  # noqa: BLE001 - a survey: report and go on
            verdict = "ERROR"
            detail = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:300])
        counts[verdict] += 1
        print("%-24s %-5s %5.1f s  %s" % (name, verdict, time.time() - t0, detail))
        sys.stdout.flush()
    print("torch %s: %d PASS, %d FAIL, %d ERROR" % (torch.__version__, counts["PASS"],
                                                    counts["FAIL"], counts["ERROR"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
