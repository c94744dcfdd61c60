"""Running a .pte with `tern run` from Python (for tests, the demo and quick checks)."""
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

from .compiler import find_tern
from .errors import ExportError


class RunError(ExportError):
    """`tern run` failed; `stderr` holds its output."""

    def __init__(self, message, stderr=""):
        super().__init__(message)
        self.stderr = stderr


def _to_numpy(x):
    if hasattr(x, "detach"):
        x = x.detach().cpu().contiguous().numpy()
    return np.ascontiguousarray(x)


def _outputs_in(folder):
    files = sorted((f for f in os.listdir(folder) if f.startswith("output_")),
                   key=lambda f: int(re.findall(r"\d+", f)[0]))
    return [np.load(os.path.join(folder, f)) for f in files]


def run(pte, inputs, method=None, tern=None, repeat=1):
    """Runs method `method` (default: forward) of `pte` on `inputs` (tensors or arrays, in
    order) with `tern run`; returns the outputs as numpy arrays, in order. With repeat > 1 the
    method executes that many times in one process (state tensors such as a KV cache carry
    over) on the same inputs, or, when `inputs` is a list of `repeat` input lists, on one list
    per run (a token and its position per decode step); the result is then a list with each
    run's outputs. Raises RunError with tern's stderr when it fails."""
    tern = tern or find_tern()
    d = tempfile.mkdtemp(prefix="tern_run_")
    try:
        cmd = [tern, "run", pte, "--output-dir", os.path.join(d, "out")]
        if method:
            cmd += ["--method", method]
        if repeat != 1:
            cmd += ["--repeat", str(int(repeat))]
        per_run = repeat != 1 and len(inputs) == repeat and all(
            isinstance(x, (list, tuple)) for x in inputs)
        flat = [x for step in inputs for x in step] if per_run else list(inputs)
        for i, x in enumerate(flat):
            p = os.path.join(d, "input_%d.npy" % i)
            np.save(p, _to_numpy(x))
            cmd += ["--input", p]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if r.returncode != 0:
            raise RunError("tern run %s failed:\n%s" % (pte, r.stderr.strip()), r.stderr)
        if repeat != 1:
            return [_outputs_in(os.path.join(d, "out", "run_%d" % k)) for k in range(repeat)]
        return _outputs_in(os.path.join(d, "out"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def arena_report(pte, tern=None):
    """[(arena bytes, lower bound bytes)] of every arena, from `tern inspect`."""
    tern = tern or find_tern()
    r = subprocess.run([tern, "inspect", pte], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        raise RunError("tern inspect %s failed:\n%s" % (pte, r.stderr.strip()), r.stderr)
    return [(int(a), int(b)) for a, b in
            re.findall(r"(\d+) bytes, lower bound (\d+)", r.stdout)]
