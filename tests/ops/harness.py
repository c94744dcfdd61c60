"""Operator conformance harness: one tern op against PyTorch.

Each Case names a tern op, its args (tensors become method inputs; scalars are wrapped: I, D, B,
IL, DL, S, NONE, TL) and a reference function computed with PyTorch at test time. The harness
writes a one-node graph.json (docs/graph-format.md), compiles it with `tern compile`, runs it with
`tern run --input ... --output-dir`, and compares every output with the reference:
max |tern - torch| <= atol + rtol * max |torch| (exact for integer and bool outputs).

Run a family:  python3 tests/ops/run_ops.py elementwise  (TERN=path/to/tern, default build/tern)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch


class I:
    kind = "int"
    def __init__(self, v): self.v = int(v)

class D:
    kind = "double"
    def __init__(self, v): self.v = float(v)

class B:
    kind = "bool"
    def __init__(self, v): self.v = bool(v)

class IL:
    kind = "int_list"
    def __init__(self, v): self.v = [int(x) for x in v]

class DL:
    kind = "double_list"
    def __init__(self, v): self.v = [float(x) for x in v]

class S:
    kind = "string"
    def __init__(self, v): self.v = str(v)

class _None:
    kind = "none"
NONE = _None()

class TL:
    """A tensor list: its tensors become method inputs."""
    kind = "tensor_list"
    def __init__(self, tensors): self.v = list(tensors)


_DTYPES = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.int64: "i64",
    torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
    torch.bool: "bool",
}


class Case:
    """One op application. `ref(*args)` gets tensors and plain Python values (I(2) -> 2,
    NONE -> None, TL -> list of tensors) and returns a tensor or a tuple of tensors."""

    def __init__(self, op, args, ref, rtol=1e-5, atol=1e-6, name=None):
        self.op, self.args, self.ref, self.rtol, self.atol = op, list(args), ref, rtol, atol
        self.name = name or op

    def reference(self):
        def plain(a):
            if isinstance(a, torch.Tensor):
                return a
            if isinstance(a, TL):
                return list(a.v)
            if isinstance(a, _None):
                return None
            return a.v
        with torch.no_grad():
            out = self.ref(*[plain(a) for a in self.args])
        return list(out) if isinstance(out, (tuple, list)) else [out]


def _json_number(v):
    """graph.json spells non-finite doubles as "inf", "-inf" and "nan" (docs/graph-format.md)."""
    if isinstance(v, list):
        return [_json_number(x) for x in v]
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return v


def _tensor_value(name, t):
    return {"type": "tensor", "name": name, "dtype": _DTYPES[t.dtype], "shape": list(t.shape)}


def build_graph(case, outputs):
    values, inputs, arg_ids, feeds = [], [], [], []

    def add_input(t):
        vid = len(values)
        values.append(_tensor_value("in%d" % len(feeds), t))
        inputs.append(vid)
        feeds.append(t.contiguous())
        return vid

    for a in case.args:
        if isinstance(a, torch.Tensor):
            arg_ids.append(add_input(a))
        elif isinstance(a, TL):
            ids = [add_input(t) for t in a.v]
            values.append({"type": "tensor_list", "value": ids})
            arg_ids.append(len(values) - 1)
        elif isinstance(a, _None):
            values.append({"type": "none"})
            arg_ids.append(len(values) - 1)
        else:
            values.append({"type": a.kind, "value": _json_number(a.v)})
            arg_ids.append(len(values) - 1)
    out_ids = []
    for i, t in enumerate(outputs):
        values.append(_tensor_value("out%d" % i, t))
        out_ids.append(len(values) - 1)
    graph = {
        "format": "tern-graph", "version": 1, "producer": "tests/ops/harness.py",
        "methods": [{"name": "forward", "values": values, "inputs": inputs, "outputs": out_ids,
                     "nodes": [{"op": case.op, "args": arg_ids, "outputs": out_ids,
                                "name": case.name}]}],
    }
    return graph, feeds


def _to_numpy(t):
    if t.dtype == torch.bfloat16:
        raise ValueError("bf16 tensors cannot be written to .npy")
    return t.detach().cpu().numpy()


def run_case(case, tern, workdir):
    """Returns None on success, or a one-line failure description."""
    try:
        expected = case.reference()
    except Exception as e:  # the case itself is wrong
        return "reference failed: %s" % e
    graph, feeds = build_graph(case, expected)
    d = tempfile.mkdtemp(dir=workdir)
    try:
        with open(os.path.join(d, "graph.json"), "w") as f:
            json.dump(graph, f, allow_nan=False)
        pte = os.path.join(d, "op.pte")
        r = subprocess.run([tern, "compile", os.path.join(d, "graph.json"), "-o", pte],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return "compile: " + r.stderr.strip()
        cmd = [tern, "run", pte, "--output-dir", os.path.join(d, "out")]
        for i, t in enumerate(feeds):
            p = os.path.join(d, "in%d.npy" % i)
            np.save(p, _to_numpy(t))
            cmd += ["--input", p]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return "run: " + r.stderr.strip()
        for i, exp in enumerate(expected):
            got = np.load(os.path.join(d, "out", "output_%d.npy" % i))
            want = _to_numpy(exp)
            if tuple(got.shape) != tuple(want.shape):
                return "output %d: shape %s, expected %s" % (i, got.shape, want.shape)
            if got.dtype != want.dtype:
                return "output %d: dtype %s, expected %s" % (i, got.dtype, want.dtype)
            if want.dtype.kind in "biu":
                bad = np.count_nonzero(got != want)
                if bad:
                    return "output %d: %d of %d elements differ" % (i, bad, want.size)
                continue
            g = got.astype(np.float64)
            w = want.astype(np.float64)
            if not np.array_equal(np.isnan(g), np.isnan(w)):
                return "output %d: NaN positions differ" % i
            finite = ~np.isnan(w)
            if not np.array_equal(g[np.isinf(w)], w[np.isinf(w)]):
                return "output %d: infinities differ" % i
            ok = finite & ~np.isinf(w)
            if ok.any():
                err = np.max(np.abs(g[ok] - w[ok]))
                scale = np.max(np.abs(w[ok]))
                if err > case.atol + case.rtol * scale:
                    return "output %d: max abs error %.3g > %.3g + %.3g * %.3g" % (
                        i, err, case.atol, case.rtol, scale)
        return None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def find_tern():
    tern = os.environ.get("TERN")
    if tern:
        return tern
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "build", "tern")


def run_cases(cases, label):
    """Runs every case; prints one line per failure and the closing count line. Returns 0/1."""
    tern = find_tern()
    torch.manual_seed(0)
    workdir = tempfile.mkdtemp(prefix="tern_ops_")
    failed = 0
    try:
        for c in cases:
            msg = run_case(c, tern, workdir)
            if msg is not None:
                failed += 1
                print("FAIL %s [%s]: %s" % (c.name, label, msg))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("torch %s, %s: %d passed, %d failed" % (torch.__version__, label,
                                                 len(cases) - failed, failed))
    return 1 if failed else 0
