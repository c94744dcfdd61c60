#!/usr/bin/env python3
"""test_vulkan_fallback_export.py: a program exported with backends=("vulkan", "cpu") where no
Vulkan device exists.

Each model (model_zoo's mlp, gpt_block and resnet18 at 1x3x64x64; random weights, seed 0) is
exported twice through the public API, `tern_export.export(m, x, path, backends=...)`: once for
("vulkan", "cpu") and once for ("cpu",). Both run with `tern run`:
- with the Vulkan loader pointed at an ICD file that does not exist (VK_ICD_FILENAMES), the
  vulkan program must load, say in a log line why the backend is unavailable (`tern run -v`
  shows the runtime's Info lines), run every vulkan delegate call on
  its portable fallback, and give the cpu program's outputs (the same graph on other kernels:
  max abs difference <= 1e-5 * max |out|) and PyTorch's (<= 1e-4 * max |ref|);
- with lavapipe visible (the ICD the tests use, $TERN_TEST_VULKAN_ICD), the same file must run
  its vulkan delegates on the device (no fallback) with the same outputs.

Exit 1 on a failure, 77 (ctest: skipped) without torch/torchvision.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

try:
    import numpy as np
    import torch
    import torchvision  # noqa: F401
except ImportError as e:
    print("skipped: %s (install python3-torch python3-torchvision)" % e)
    sys.exit(77)

import model_zoo  # noqa: E402
from work_dir import work_root  # noqa: E402
import tern_export  # noqa: E402

MODELS = ("mlp", "gpt_block", "resnet18")
SAME_AS_CPU = 1e-5   # the same graph on the portable kernels vs XNNPACK / tern's cpu kernels
VS_PYTORCH = 1e-4
NO_ICD = "/nonexistent/tern_no_icd.json"


def _model(name):
    torch.manual_seed(0)
    if name == "resnet18":
        m = model_zoo.calibrate_bn(torchvision.models.resnet18(num_classes=10), (2, 3, 64, 64))
        return m, (torch.randn(1, 3, 64, 64),)
    m, inputs, _ = model_zoo.MODELS[name]()
    return m, inputs


def _run(tern, pte, inputs, out_dir, icd):
    """`tern run -v` (the runtime's log lines too) with the loader pointed at `icd`: (outputs,
    what each delegate call ran on, the whole console output)."""
    env = dict(os.environ, VK_ICD_FILENAMES=icd)
    r = subprocess.run([tern, "run", pte, "-v"] + sum([["--input", p] for p in inputs], []) +
                       ["--output-dir", out_dir], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("tern run %s (VK_ICD_FILENAMES=%s) failed:\n%s" % (pte, icd, r.stderr))
    files = sorted((f for f in os.listdir(out_dir) if f.startswith("output_")),
                   key=lambda f: int(re.findall(r"\d+", f)[0]))
    outputs = [np.load(os.path.join(out_dir, f)) for f in files]
    calls = re.findall(r"delegate call \d+: (.*)", r.stdout)
    return outputs, calls, r.stdout + r.stderr


def _max_rel(got, ref):
    err = max(float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64))))
              for g, r in zip(got, ref))
    scale = max(float(np.max(np.abs(r))) for r in ref)
    return err / scale if scale else err


def check(name, tern, work, lavapipe):
    module, inputs = _model(name)
    with torch.no_grad():
        ref = [t.numpy() for t in tern_export.flatten_outputs(module(*inputs))]
    paths = []
    for i, x in enumerate(inputs):
        paths.append(os.path.join(work, "in_%d.npy" % i))
        np.save(paths[-1], x.numpy())
    vk_pte, cpu_pte = os.path.join(work, "vk.pte"), os.path.join(work, "cpu.pte")
    tern_export.export(module, inputs, vk_pte, backends=("vulkan", "cpu"), verbose=False)
    tern_export.export(module, inputs, cpu_pte, backends=("cpu",), verbose=False)
    inspect = subprocess.run([tern, "inspect", vk_pte], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
    vulkan_delegates = len(re.findall(r"^\s+\d+ vulkan: blob", inspect, re.M))
    cpu_out, _, _ = _run(tern, cpu_pte, paths, os.path.join(work, "cpu"), NO_ICD)
    hidden, hidden_calls, hidden_log = _run(tern, vk_pte, paths, os.path.join(work, "hidden"),
                                            NO_ICD)
    problems = []
    if vulkan_delegates < 1:
        problems.append("no vulkan delegate in the program:\n" + inspect)
    if not hidden_calls or any("portable fallback" not in c for c in hidden_calls):
        problems.append("without a device, delegate calls took %s" % hidden_calls)
    # One log line per delegate names the backend, why it is unavailable, and the fallback.
    why = [l for l in hidden_log.splitlines()
           if "backend 'vulkan'" in l and "portable fallback" in l]
    if len(why) != len(hidden_calls) or not all(
            re.search(r"not available: .*no Vulkan [0-9.]* ?(device|driver|loader)", l)
            for l in why):
        problems.append("not one log line per delegate saying why vulkan is unavailable:\n" +
                        hidden_log)
    rel_cpu, rel_torch = _max_rel(hidden, cpu_out), _max_rel(hidden, ref)
    if not rel_cpu <= SAME_AS_CPU:
        problems.append("fallback vs cpu program: %.3g > %g" % (rel_cpu, SAME_AS_CPU))
    if not rel_torch <= VS_PYTORCH:
        problems.append("fallback vs PyTorch: %.3g > %g" % (rel_torch, VS_PYTORCH))
    line = ("%s: %d vulkan delegate(s); no device: %d call(s) on the portable fallback, vs cpu "
            "program %.3g, vs PyTorch %.3g" % (name, vulkan_delegates, len(hidden_calls),
                                               rel_cpu, rel_torch))
    if lavapipe:
        dev, dev_calls, _ = _run(tern, vk_pte, paths, os.path.join(work, "device"), lavapipe)
        if any("portable fallback" in c for c in dev_calls):
            problems.append("with lavapipe, delegate calls took %s" % dev_calls)
        rel_dev = _max_rel(dev, cpu_out)
        if not rel_dev <= SAME_AS_CPU:
            problems.append("lavapipe vs cpu program: %.3g > %g" % (rel_dev, SAME_AS_CPU))
        line += "; on lavapipe: %d call(s) on the device, vs cpu program %.3g" % (
            len(dev_calls), rel_dev)
    print(line + (": PASS" if not problems else ": FAIL\n  " + "\n  ".join(problems)))
    return not problems


def main():
    tern = tern_export.find_tern()
    lavapipe = os.environ.get("TERN_TEST_VULKAN_ICD", "")
    failed = 0
    for name in sys.argv[1:] or MODELS:
        work = tempfile.mkdtemp(prefix="tern_vkfb_%s_" % name, dir=work_root())
        try:
            failed += 0 if check(name, tern, work, lavapipe) else 1
        except Exception as e:  # report and go on
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
            failed += 1
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (len(sys.argv[1:] or MODELS) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
