#!/usr/bin/env python3
"""run_vulkan_nets.py [NAME...] [--skip NAME...]: whole models on the vulkan backend.

Each model (random weights, seed 0; small inputs so lavapipe, a CPU-emulated Vulkan device,
keeps CI time sane) is exported with tern_export, compiled twice with the `tern` command (the
portable kernels alone, and `--backend vulkan`), inspected (`tern inspect`: the number of
vulkan delegates must stay within the model's bound) and run with `tern run` on the same
input; the vulkan program must take its delegates on the backend (not the fallback) and match
PyTorch eager (max abs err <= 1e-4 * max |ref|) and the portable program. Closing line
"N passed, M failed"; exit 1 on a failure, 77 (ctest: skipped) without torch/torchvision or
when every model asked for was skipped (the transformers ones without `transformers`).

  TERN=build-vk/tern VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json \\
      python3 tests/backends/vulkan/run_vulkan_nets.py
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

try:
    import numpy as np
    import torch
    import torchvision
except ImportError as e:
    print("skipped: %s (install python3-torch python3-torchvision)" % e)
    sys.exit(77)

import model_zoo  # noqa: E402
import tern_export  # noqa: E402
from tern_export.compiler import run_compile  # noqa: E402

TOLERANCE = 1e-4


def _vision(name):
    def make():
        m = model_zoo.calibrate_bn(getattr(torchvision.models, name)(num_classes=10),
                                   (2, 3, 64, 64))
        return m, (torch.randn(1, 3, 64, 64),)
    return make


def _zoo(name):
    def make():
        m, inputs, _ = model_zoo.MODELS[name]()
        return m, inputs
    return make


# name -> (factory, most vulkan delegates allowed). Every model of docs/models.md; the
# torchvision classifiers at 64x64 (convnext_tiny is the zoo's, 64x64 too) to keep lavapipe
# time down. bert_tiny: its attention mask (int64 -> bool, logical_and, where on a computed
# condition) stays on the portable kernels, between the embeddings and the encoder.
MODELS = {
    "mlp": (_zoo("mlp"), 1),
    "gpt_block": (_zoo("gpt_block"), 1),
    "resnet18": (_vision("resnet18"), 1),
    "mobilenet_v2": (_vision("mobilenet_v2"), 1),
    "mobilenet_v3_small": (_vision("mobilenet_v3_small"), 1),
    "squeezenet1_1": (_vision("squeezenet1_1"), 1),
    "shufflenet_v2_x0_5": (_vision("shufflenet_v2_x0_5"), 1),
    "convnext_tiny": (_zoo("convnext_tiny"), 1),
    "transformer_encoder_layer": (_zoo("transformer_encoder_layer"), 1),
    "llama_block": (_zoo("llama_block"), 1),
    "bert_tiny": (_zoo("bert_tiny"), 2),
    "gpt2_tiny": (_zoo("gpt2_tiny"), 1),
    "vit_tiny": (_zoo("vit_tiny"), 1),
}
# Hugging Face models: built only where `transformers` works with this PyTorch.
TRANSFORMERS = ("bert_tiny", "gpt2_tiny", "vit_tiny")


def _compare(got, ref):
    err = max(float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64))))
              for g, r in zip(got, ref))
    scale = max(float(np.max(np.abs(r))) for r in ref)
    return err, scale


def check(name, tern, work):
    factory, max_delegates = MODELS[name]
    torch.manual_seed(0)
    module, inputs = factory()
    graph, _ = tern_export.export_graph(module, inputs, os.path.join(work, "graph"))
    with torch.no_grad():
        ref = [r.numpy() for r in tern_export.flatten_outputs(module(*inputs))]
    pte = {}
    for backend in ("portable", "vulkan"):
        pte[backend] = os.path.join(work, "%s_%s.pte" % (name, backend))
        run_compile(graph, pte[backend], tern, (backend,))
    inspect = subprocess.run([tern, "inspect", pte["vulkan"]], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
    vulkan_delegates = len(re.findall(r"^\s+\d+ vulkan: blob", inspect, re.M))
    t0 = time.time()
    got = tern_export.run(pte["vulkan"], inputs, tern=tern)
    run_s = time.time() - t0
    portable = tern_export.run(pte["portable"], inputs, tern=tern)
    # Which path each delegate call took (tern run's report).
    r = subprocess.run([tern, "run", pte["vulkan"]] + sum(
        [["--input", p] for p in _save_inputs(inputs, work)], []) +
        ["--output-dir", os.path.join(work, "out")], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True, check=True)
    fallbacks = len(re.findall(r"delegate call \d+: portable fallback", r.stdout))
    err, scale = _compare(got, ref)
    perr, _ = _compare(got, portable)
    ok = (err <= TOLERANCE * scale and 1 <= vulkan_delegates <= max_delegates and fallbacks == 0)
    print("%s: %d vulkan delegate(s) (at most %d), %d fallback call(s), max abs err vs PyTorch "
          "%.3g (max |ref| %.3g, rel %.3g), vs portable %.3g, tern run %.2f s: %s" % (
              name, vulkan_delegates, max_delegates, fallbacks, err, scale,
              err / scale if scale else 0.0, perr, run_s, "PASS" if ok else "FAIL"))
    if not ok:
        print(inspect)
        print(r.stderr)
    return ok


def _save_inputs(inputs, work):
    paths = []
    for i, x in enumerate(inputs):
        p = os.path.join(work, "in_%d.npy" % i)
        np.save(p, x.numpy())
        paths.append(p)
    return paths


def main():
    args = sys.argv[1:]
    skip = args[args.index("--skip") + 1:] if "--skip" in args else []
    names = args[:args.index("--skip")] if "--skip" in args else args
    names = [n for n in (names or list(MODELS)) if n not in skip]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print("unknown model(s): %s (known: %s)" % (", ".join(unknown), ", ".join(MODELS)))
        return 2
    tern = tern_export.find_tern()
    passed = failed = 0
    missing = model_zoo.transformers_missing()
    for name in names:
        if name in TRANSFORMERS and missing:
            print("%s: skipped: %s" % (name, missing))
            continue
        work = tempfile.mkdtemp(prefix="tern_vk_%s_" % name)
        t0 = time.time()
        try:
            ok = check(name, tern, work)
        except Exception as e:  # report and go on
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
            ok = False
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print("  (%.1f s)" % (time.time() - t0))
        sys.stdout.flush()
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    if passed + failed == 0:
        return 77
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
