#!/usr/bin/env python3
"""run_model_hardening.py NAME... : issue 5's byte-flip check and allocation-failure stress on
exported models.

Each NAME is a model of tests/models/model_zoo.py (exported with tern_export, default backends
("cpu",), random weights seeded 0 as tests/models/run_model.py does) or `demo` (the bundled
examples/mlp program, written by make_mlp.py and compiled with `tern compile`; needs no torch).
The .pte goes to a temporary folder, removed afterwards, and tern_model_hardening
(tests/hardening/model_hardening.cpp) runs on it. Prints the checker's report, then one summary
line per model, then "N passed, M failed".

Exit status: 0 when every model passes, 1 on any failure, 77 (ctest: skipped) when this
interpreter lacks torch (or torchvision for the torchvision models) for every model asked for.

  TERN=build/tern TERN_MODEL_HARDENING=build/tests/hardening/tern_model_hardening \\
    .venv/bin/python tests/hardening/run_model_hardening.py resnet18 demo
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

SKIP = 77
ZOO_NAMES = ["mlp", "resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1",
             "shufflenet_v2_x0_5", "transformer_encoder_layer", "gpt_block"]
TORCHVISION = {"resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1",
               "shufflenet_v2_x0_5"}


def find_checker(tern):
    """$TERN_MODEL_HARDENING, else <dir of tern>/tests/hardening/tern_model_hardening."""
    env = os.environ.get("TERN_MODEL_HARDENING")
    candidates = [env] if env else []
    candidates.append(os.path.join(os.path.dirname(tern), "tests", "hardening",
                                   "tern_model_hardening"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise SystemExit("run_model_hardening: tern_model_hardening not found; tried %s "
                     "(build the target tern_model_hardening)" % ", ".join(candidates))


def find_tern():
    env = os.environ.get("TERN")
    if env and os.path.isfile(env) and os.access(env, os.X_OK):
        return env
    local = os.path.join(ROOT, "build", "tern")
    if os.path.isfile(local):
        return local
    raise SystemExit("run_model_hardening: set TERN to the tern executable")


def missing_torch(name):
    """None when this interpreter can export `name`, else why not."""
    if name == "demo":
        return None
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        return str(e)
    if name in TORCHVISION:
        try:
            import torchvision  # noqa: F401
        except ImportError as e:
            return str(e)
    return None


def write_demo(work, tern):
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "mlp", "make_mlp.py"), work],
                   check=True, stdout=subprocess.DEVNULL)
    pte = os.path.join(work, "demo.pte")
    subprocess.run([tern, "compile", os.path.join(work, "graph.json"), "-o", pte], check=True,
                   stdout=subprocess.DEVNULL)
    return pte


def write_model(name, work):
    import torch
    import model_zoo
    import tern_export
    torch.manual_seed(0)
    module, inputs, _ = model_zoo.MODELS[name]()
    pte = os.path.join(work, name + ".pte")
    tern_export.export(module, inputs, pte, source_model="tests/models:" + name)
    return pte


def check(name, tern, checker, extra):
    """Exports/compiles `name`, runs the checker; returns (passed, summary line)."""
    with tempfile.TemporaryDirectory(prefix="tern_hardening_%s_" % name) as work:
        t0 = time.time()
        pte = write_demo(work, tern) if name == "demo" else write_model(name, work)
        export_s = time.time() - t0
        t0 = time.time()
        proc = subprocess.run([checker, pte, "--name", name] + extra, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)
        check_s = time.time() - t0
    sys.stdout.write(proc.stdout)
    m = re.search(r"^\[model hardening\] \S+: (.*)$", proc.stdout, re.M)
    summary = m.group(1) if m else "no summary from the checker"
    if proc.returncode < 0:
        summary = "FAIL (checker killed by signal %d)" % -proc.returncode
    elif proc.returncode not in (0, 1):
        summary = "ERROR (checker exit %d): %s" % (proc.returncode, summary)
    line = "%s: %s; export %.1f s, check %.1f s" % (name, summary, export_s, check_s)
    return proc.returncode == 0, line


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", default=ZOO_NAMES + ["demo"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--no-fallback", action="store_true",
                   help="do not also run with every backend disabled (portable fallback)")
    a = p.parse_args()
    unknown = [m for m in a.models if m not in ZOO_NAMES and m != "demo"]
    if unknown:
        p.error("unknown model(s) %s; known: %s, demo" % (unknown, ", ".join(ZOO_NAMES)))
    tern = find_tern()
    checker = find_checker(tern)
    extra = ["--threads", str(a.threads)] + (["--no-fallback"] if a.no_fallback else [])
    lines, passed, failed, skipped = [], 0, 0, 0
    for name in a.models:
        why = missing_torch(name)
        if why:
            skipped += 1
            lines.append("%s: skipped (%s)" % (name, why))
            continue
        try:
            ok, line = check(name, tern, checker, extra)
        except Exception as e:  # an export or compile failure: report, go on
            ok, line = False, "%s: ERROR %s: %s" % (name, type(e).__name__, e)
        passed += ok
        failed += not ok
        lines.append(line)
        sys.stdout.flush()
    for line in lines:
        print(line)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    if failed:
        return 1
    return SKIP if skipped and not passed else 0


if __name__ == "__main__":
    sys.exit(main())
