#!/usr/bin/env python3
"""run_models_cuda.py OUT_DIR [MODEL...]: the models of docs/models.md, exported once, compiled
for the portable kernels and for `--backend cuda`, run with `tern run`, compared with PyTorch
eager (tests/models/run_model.py's check). Keeps each model's files in OUT_DIR/<model>/ and
records, from `tern run`'s log, which path the cuda delegate took (device or fallback).
Prints one line per model and a closing "N passed, M failed"; exit 1 on any failure."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))

import run_model  # noqa: E402
import torch  # noqa: E402
import model_zoo  # noqa: E402
import tern_export  # noqa: E402


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or list(model_zoo.MODELS)
    tern = tern_export.find_tern()
    passed = failed = 0
    for name in names:
        why = run_model.missing_dependency(name)
        if why:
            print("skipped %s: %s" % (name, why))
            continue
        work = os.path.join(out, name)
        os.makedirs(work, exist_ok=True)
        torch.manual_seed(0)
        module, inputs, classifier = model_zoo.MODELS[name]()
        samples = 2 if classifier else 1
        try:
            r = run_model._check(name, module, inputs, classifier, samples, tern,
                                 ("portable", "cuda"), work)
        except Exception as e:  # report and go on
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
            continue
        pte = os.path.join(work, "%s_cuda.pte" % name)
        run = subprocess.run([tern, "run", pte], capture_output=True, text=True)
        r["cuda_run_log"] = (run.stdout + run.stderr)[-2000:]
        if run.returncode != 0:
            r["cuda_path"] = "unknown (tern run exit %d)" % run.returncode
        else:
            r["cuda_path"] = "fallback" if "fallback" in run.stderr else "device"
        print(run_model.describe(r))
        print("%s: %s (cuda delegate ran on the %s)" % (name, "PASS" if r["pass"] else "FAIL",
                                                       r["cuda_path"]))
        with open(os.path.join(out, "models.jsonl"), "a") as f:
            f.write(json.dumps(r) + "\n")
        ok = r["pass"] and r["cuda_path"] == "device"
        passed += ok
        failed += not ok
        sys.stdout.flush()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
