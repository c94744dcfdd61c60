#!/usr/bin/env python3
"""cuda_model_partitions.py REPORT [MODEL...]: how many cuda regions the models of docs/models.md
become, host only (no GPU): each model is exported with tern_export (tests/models/model_zoo.py,
the same inputs as the model tests), and its graph is partitioned for "cuda", "cuda:f16" and
"cuda:bf16" by REPORT (the cuda_region_report tool, tests/backends/cuda), which also checks every
region's blob with the runtime half's blob reader. Fails when a model needs more regions than
MAX_REGIONS allows (the counts the compile half reached: every model one region), when a blob is
refused, or when the tool fails. Exit 77 (ctest: skipped) without torch/torchvision.

The graphs go under /dev/shm when it has room (else $TERN_TEST_TMPDIR or the system's temporary
directory) and are deleted after each model.
"""
import os
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
    import torch
    import torchvision  # noqa: F401
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

import model_zoo  # noqa: E402
from work_dir import work_root  # noqa: E402
import tern_export  # noqa: E402

# Regions per model and backend spec (the same for the three compute dtypes). Each entry covers
# ops the compile half added for it: cat chains and one-part cats (densenet121), pad (swin_t),
# hardswish/hardsigmoid and squeeze-excitation broadcasts (mobilenet_v3_small), cat of a
# constant (vit_tiny), bool masks: cast / logical_and / where (bert_tiny), RMSNorm written out,
# rotary stack and grouped-query expand (llama_block), channel shuffle (shufflenet), flip (a
# bidirectional LSTM / GRU on torch.export: lstm_kws, crnn).
MAX_REGIONS = {
    "mlp": 1, "resnet18": 1, "mobilenet_v3_small": 1, "squeezenet1_1": 1,
    "shufflenet_v2_x0_5": 1, "gpt_block": 1, "llama_block": 1, "swin_t": 1, "densenet121": 1,
    "bert_tiny": 1, "vit_tiny": 1, "lstm_kws": 1, "crnn": 1,
    # The coverage probe's Mixtral (transformers' grouped experts): its routing (top-k,
    # argsort, histc, the int64 index work) stays portable, so regions lie between; the expert
    # products (grouped_mm: GroupedMatmul, blob version 5) must be taken (checked below).
    "mixtral": 5,
}
DEFAULT = ["mlp", "resnet18", "mobilenet_v3_small", "squeezenet1_1", "shufflenet_v2_x0_5",
           "gpt_block", "llama_block", "swin_t", "densenet121", "bert_tiny", "vit_tiny",
           "lstm_kws", "crnn", "mixtral"]
# Models of tests/models/coverage_probe.py (transformers 5) rather than the zoo, and ops that
# must not be among the refused ones.
PROBE_MODELS = {"mixtral"}
MUST_TAKE = {"mixtral": ("tern::grouped_mm",)}
SPECS = ("cuda", "cuda:f16", "cuda:bf16")


def regions(report, graph, spec):
    r = subprocess.run([report, graph, spec], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        raise AssertionError("%s %s failed (%d): %s%s" % (report, spec, r.returncode, r.stdout,
                                                          r.stderr))
    for line in r.stdout.splitlines():
        if line.startswith("regions "):
            return int(line.split()[1]), r.stdout
    raise AssertionError("no 'regions' line in:\n" + r.stdout)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    report = sys.argv[1]
    names = sys.argv[2:] or DEFAULT
    failed = skipped = checked = 0
    for name in names:
        if ((name in model_zoo.TRANSFORMERS or name in PROBE_MODELS) and
                model_zoo.transformers_missing()):
            print("skipped %s: %s" % (name, model_zoo.transformers_missing()))
            skipped += 1
            continue
        torch.manual_seed(0)
        t0 = time.time()
        if name in PROBE_MODELS:
            import coverage_probe
            module, inputs, _ = coverage_probe.PROBE[name]()
        else:
            module, inputs, _ = model_zoo.MODELS[name]()
        work = tempfile.mkdtemp(prefix="tern_cuda_parts_%s_" % name, dir=work_root(1 << 30))
        try:
            # As export(backends=("cuda", ...)) lowers it: attention on K/V repeated to the
            # query's heads kept (the cuda attention takes K/V with the query's heads only).
            graph, _ = tern_export.export_graph(module, inputs, os.path.join(work, "graph"),
                                                source_model="tests/models:" + name,
                                                grouped_attention=False)
            for spec in SPECS:
                n, out = regions(report, graph, spec)
                limit = MAX_REGIONS.get(name, 1)
                refused = [op for op in MUST_TAKE.get(name, ()) if " x %s:" % op in out]
                ok = n <= limit and not refused
                if refused:
                    print("%s %s: refused %s" % (name, spec, ", ".join(refused)))
                print("%s %s: %d region(s) (at most %d) %s" % (name, spec, n, limit,
                                                               "ok" if ok else "FAIL"))
                if not ok:
                    print(out)
                    failed += 1
            checked += 1
        except Exception as e:  # noqa: BLE001 - report and go on
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
            failed += 1
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print("  %s: %.1f s" % (name, time.time() - t0))
        sys.stdout.flush()
    print("torch %s: %d models checked, %d failures, %d skipped" % (torch.__version__, checked,
                                                                   failed, skipped))
    if failed:
        return 1
    return 77 if checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
