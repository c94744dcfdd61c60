#!/usr/bin/env python3
"""Model-level error of NF4 / FP8 weights (issue 13, docs/models.md "Quantized weights").

For the MLP, the GPT block and mobilenet_v2 of tests/models/model_zoo.py (random weights, seed 0),
and a mixture-of-experts block (transformers' MixtralSparseMoeBlock, its experts through
grouped_mm: the pass quantizes each expert's matrix, tern::grouped_linear; skipped without a
transformers that has grouped experts), and each scheme, the model is exported with `quantize=SCHEME` for the portable kernels and for
the cpu backend (`--backend vulkan` too: the MoE block's experts on the vulkan delegate), and
run with `tern run` on several random inputs. Two comparisons:

- **correctness**: against PyTorch (float64) running the same module with every weight tern
  quantized replaced by its dequantization computed by tests/quant/quant_ref.py (QUANT.md's
  rules written independently of tern): max abs err <= 1e-4 * max |ref|, as the f32 model tests.
  A wrong code, scale or kernel shows up here.
- **quality** (what quantization costs): against the f32 PyTorch model: NMSE = sum((q - f)^2) /
  sum(f^2) over all outputs and samples, the max relative error, and for mobilenet_v2 the top-1
  agreement. Printed (the docs table comes from this output); a NMSE above a loose ceiling per
  format fails (NF4 0.06, FP8 e4m3 0.01, e5m2 0.03: several times what the random-weight
  models measure), as does a top-1 agreement below 50%.

Prints one line per model, scheme and backend, then "N passed, M failed"; exits 77 without torch
or tern.

  TERN=build/tern .venv/bin/python tests/quant/quant_model_error.py [--samples 8] [model ...]
"""
import argparse
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
sys.path.insert(0, HERE)

try:
    import numpy as np
    import torch
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

import model_zoo  # noqa: E402
import tern_export  # noqa: E402
from quant_ref import ref_fp8_quantize, ref_nf4_weight  # noqa: E402

SCHEMES = ("nf4", "nf4:double", "fp8_e4m3", "fp8_e5m2")
MODELS = ("mlp", "gpt_block", "mobilenet_v2", "moe")
# mobilenet_v2 at 96x96 keeps the test quick; every layer but the input is the same.
SIZES = {"mobilenet_v2": 96}
NMSE_CEILING = {"nf4": 0.06, "fp8_e4m3": 0.01, "fp8_e5m2": 0.03}
TOLERANCE = 1e-4
# Weights kept f32 (a glob over weight names): the MoE block's router, as MoE quantization
# recipes keep it — its error flips tokens' top-k choice of experts, which the NMSE then sees as
# whole experts' outputs swapped (NF4 with the router quantized: NMSE 0.063).
KEEP_F32 = {"moe": "*.gate.weight"}


class MoeBlock(torch.nn.Module):
    """transformers' MixtralSparseMoeBlock (hidden 128, expert MLP 128, 4 experts, top-2; its
    experts through grouped_mm), returning the hidden states only."""

    def __init__(self):
        super().__init__()
        import transformers as tf
        from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
        cfg = tf.MixtralConfig(hidden_size=128, intermediate_size=128, num_local_experts=4,
                               num_experts_per_tok=2)
        cfg._experts_implementation = "grouped_mm"  # what a whole model picks; it exports
        self.block = MixtralSparseMoeBlock(cfg)
        for p in self.block.parameters():  # some expert weights are left uninitialised
            torch.nn.init.normal_(p, std=128 ** -0.5)

    def forward(self, x):
        y = self.block(x)
        return y[0] if isinstance(y, tuple) else y


def build(name):
    torch.manual_seed(0)
    if name == "moe":
        return MoeBlock().eval(), (torch.randn(1, 16, 128),), False
    if name in SIZES:
        module, inputs, classifier = model_zoo._torchvision(name, size=SIZES[name])
    else:
        module, inputs, classifier = model_zoo.MODELS[name]()
    return module, inputs, classifier


def dequantized(weight, scheme):
    """The f32 weight the program holds for `weight` quantized with `scheme` (QUANT.md)."""
    parts = scheme.split(":")
    w = weight.detach().numpy().astype(np.float32)
    if w.ndim == 3:  # a grouped_mm's experts [E, N, K]: tern quantizes them as [E N, K]
        w = w.reshape(-1, w.shape[-1])
    if parts[0] == "nf4":
        block = 64
        for p in parts[1:]:
            if p.startswith("block="):
                block = int(p[6:])
        return ref_nf4_weight(w, block, double="double" in parts)
    fmt = "e4m3" if parts[0] == "fp8_e4m3" else "e5m2"
    gran = parts[1] if len(parts) > 1 else "per_channel"
    return ref_fp8_quantize(w, fmt, gran)[2]


def float64(module):
    """`module` in float64; a mixture of experts' grouped_mm has no float64 kernel, so its
    experts run transformers' eager loop over the experts (the same products)."""
    for sub in module.modules():
        cfg = getattr(sub, "config", None)
        if cfg is not None and getattr(cfg, "_experts_implementation", None) == "grouped_mm":
            cfg._experts_implementation = "eager"
    return module.double()


def reference_module(module, quantized_names, scheme):
    """A float64 copy of `module` whose quantized weights are their QUANT.md dequantizations."""
    m = copy.deepcopy(module)
    params = dict(m.named_parameters())
    missing = [n for n in quantized_names if n not in params]
    if missing:
        raise AssertionError("quantized weights %s are not parameters of the module" % missing)
    with torch.no_grad():
        for name in quantized_names:
            p = params[name]
            p.copy_(torch.from_numpy(dequantized(p, scheme).reshape(p.shape)))
    return float64(m)


def run_torch(module, feeds):
    outs = []
    with torch.no_grad():
        for feed in feeds:
            args = tuple(x.double() if x.is_floating_point() else x for x in feed)
            outs.append([o.numpy() for o in tern_export.flatten_outputs(module(*args))])
    return outs


def quantized_program(module, feeds, scheme, backend, path, graph_dir, keep=None):
    """Exports `module` with quantize=scheme for `backend` to `path` and returns what was
    quantized (ExportResult.quantization). The capture is the slow part, so it happens once per
    model: the model's first combination goes through tern_export.export(quantize=...), which
    keeps its graph.json in graph_dir; the others only run `tern compile --quantize` on it."""
    backends = () if backend == "portable" else (backend,)
    graph_path = os.path.join(graph_dir, "graph.json")
    if not os.path.exists(graph_path):
        quantize = scheme if keep is None else {keep: "none", "*": scheme}
        return tern_export.export(module, feeds[0], path, backends=backends, quantize=quantize,
                                  keep_graph=graph_dir, verbose=False).quantization
    extra = [] if keep is None else ["--quantize-weight", keep + "=none"]
    report = tern_export.quantize.run_compile(graph_path, path, tern_export.find_tern(),
                                              backends, ["--quantize", scheme] + extra)
    return tern_export.quantize.parse_report(report)


def check(name, scheme, backend, module, feeds, f32_refs, classifier, work, ref_cache):
    path = os.path.join(work, "%s_%s_%s.pte" % (name, scheme.replace(":", "_"), backend))
    graph_dir = os.path.join(work, name + ".graph")
    quantization = quantized_program(module, feeds, scheme, backend, path, graph_dir,
                                     KEEP_F32.get(name))
    names = [w["name"] for w in quantization["weights"]]
    if not names:
        raise AssertionError("nothing was quantized")
    # The reference depends on the scheme and the quantized weights, not on the backend: made
    # once per (scheme, weights) and shared by the portable and cpu programs.
    key = (scheme, tuple(sorted(names)))
    if key not in ref_cache:
        ref_cache[key] = run_torch(reference_module(module, names, scheme), feeds)
    q_refs = ref_cache[key]
    if backend != "portable":
        # The quantized experts run in the backend's delegate (`tern inspect` lists them only
        # as its fallback), else this would test the portable kernels twice.
        hist = subprocess.run([tern_export.find_tern(), "inspect", path], capture_output=True,
                              text=True, check=True).stdout
        if re.search(r"^\s*tern::grouped_linear\s+\d+$", hist, re.M):
            raise AssertionError("grouped_linear left on the portable kernels by " + backend)
    got = [tern_export.run(path, feed) for feed in feeds]
    os.remove(path)

    max_err = max_ref = 0.0
    se = sf = 0.0
    max_rel = 0.0
    agree = total = 0
    for g, q, f in zip(got, q_refs, f32_refs):
        for go, qo, fo in zip(g, q, f):
            go = go.astype(np.float64)
            max_err = max(max_err, float(np.max(np.abs(go - qo))))
            max_ref = max(max_ref, float(np.max(np.abs(qo))))
            se += float(np.sum((go - fo) ** 2))
            sf += float(np.sum(fo ** 2))
            max_rel = max(max_rel, float(np.max(np.abs(go - fo)) / np.max(np.abs(fo))))
        if classifier:
            agree += int(np.sum(g[0].argmax(-1) == f[0].argmax(-1)))
            total += g[0].shape[0]
    nmse = se / sf if sf else 0.0
    before, after = quantization["quantized_bytes"]
    exact = max_err <= TOLERANCE * max_ref
    family = scheme.split(":")[0]
    good = nmse <= NMSE_CEILING[family] and (not classifier or agree * 2 >= total)
    line = ("%s %s %s: %d weights %d -> %d B; vs QUANT.md dequantized weights: max abs err %.3g "
            "(max |ref| %.3g) %s; vs f32: NMSE %.3g, max rel err %.3g" % (
                name, scheme, backend, len(names), before, after, max_err, max_ref,
                "ok" if exact else "FAIL (tolerance %g * max |ref|)" % TOLERANCE, nmse, max_rel))
    if classifier:
        line += ", top-1 agreement %d/%d" % (agree, total)
    if not good:
        line += " FAIL (NMSE ceiling %g, top-1 >= 50%%)" % NMSE_CEILING[family]
    print(line)
    sys.stdout.flush()
    return exact and good


def main():
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="*", default=list(MODELS))
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--scheme", action="append", choices=SCHEMES)
    p.add_argument("--backend", action="append", choices=("portable", "cpu", "vulkan"))
    a = p.parse_args()
    try:
        tern_export.find_tern()
    except Exception as e:  # noqa: BLE001
        print("skipped: %s" % e)
        return 77
    if "moe" in a.models:
        try:
            MoeBlock()
        except (ImportError, AttributeError, TypeError) as e:
            a.models = [m for m in a.models if m != "moe"]
            print("skipped moe: %s" % e)
    if not a.models:
        return 77
    if "mobilenet_v2" in a.models:
        try:
            import torchvision  # noqa: F401
        except ImportError:
            a.models = [m for m in a.models if m != "mobilenet_v2"]
            print("skipped mobilenet_v2: no torchvision")
    work = tempfile.mkdtemp(prefix="tern_quant_models_")
    passed = failed = 0
    try:
        for name in a.models:
            module, inputs, classifier = build(name)
            torch.manual_seed(1)
            feeds = [tuple(inputs)] + [tuple(torch.randn_like(x) for x in inputs)
                                       for _ in range(a.samples - 1)]
            f32_refs = run_torch(float64(copy.deepcopy(module)), feeds)
            ref_cache = {}
            for scheme in a.scheme or SCHEMES:
                for backend in a.backend or ("portable", "cpu"):
                    try:
                        ok = check(name, scheme, backend, module, feeds, f32_refs, classifier,
                                   work, ref_cache)
                    except Exception as e:  # noqa: BLE001 - report and go on
                        print("%s %s %s: FAIL %s: %s" % (name, scheme, backend,
                                                         type(e).__name__, e))
                        ok = False
                    passed, failed = passed + ok, failed + (not ok)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
