#!/usr/bin/env python3
"""same_graph.py: the two capture paths (make_fx on PyTorch 1.13, torch.export on 2.x) must
give the same tern graph for the same model. Exports each model below under both interpreters
(the ones given on the command line, default Debian's /usr/bin/python3 and the checkout's
.venv/bin/python) and compares the graphs: op sequence, every argument's kind, dtype, shape or
scalar value (value names and weights' names are free). Exits 77 unless two interpreters
with torch are available.

  python3 tests/export/same_graph.py [PYTHON_A PYTHON_B]
  python3 tests/export/same_graph.py --dump MODEL OUT.json   (one side; used internally)
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

MODELS = ["mlp", "conv_bn_relu", "residual", "mobile_block", "norm_mlp", "rotary_swiglu"]


def build(name):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
            self.b1 = nn.BatchNorm2d(8)
            self.c2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
            self.b2 = nn.BatchNorm2d(8)

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)), inplace=True)
            y = self.b2(self.c2(y))
            y += x
            return F.max_pool2d(F.relu(y), 2)

    class MobileBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
            self.bn = nn.BatchNorm2d(8)
            self.se = nn.Conv2d(8, 8, 1)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            y = F.relu6(self.bn(self.dw(x)))
            s = F.hardsigmoid(self.se(F.adaptive_avg_pool2d(y, 1)))
            y = F.hardswish(y * s)
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))

    class NormMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(16)
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 16)

        def forward(self, x):
            return x + self.fc2(F.gelu(self.fc1(self.ln(x)))).softmax(-1)

    class RotarySwiGLU(nn.Module):
        """RMSNorm, an interleaved rotary embedding (torch.stack) and a SwiGLU MLP."""
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(16))
            self.register_buffer("cos", torch.randn(5, 8))
            self.register_buffer("sin", torch.randn(5, 8))
            self.w1 = nn.Linear(16, 32, bias=False)
            self.w3 = nn.Linear(16, 32, bias=False)
            self.w2 = nn.Linear(32, 16, bias=False)

        def forward(self, x):
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
            x0, x1 = x[..., 0::2], x[..., 1::2]
            x = torch.stack((x0 * self.cos - x1 * self.sin, x0 * self.sin + x1 * self.cos),
                            dim=-1).flatten(-2)
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    if name == "mlp":
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)), (1, 8)
    if name == "conv_bn_relu":
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()), (1, 3, 8, 8)
    if name == "residual":
        return Residual(), (1, 8, 8, 8)
    if name == "mobile_block":
        return MobileBlock(), (1, 8, 8, 8)
    if name == "norm_mlp":
        return NormMLP(), (2, 5, 16)
    if name == "rotary_swiglu":
        return RotarySwiGLU(), (2, 5, 16)
    raise KeyError(name)


def canonical(graph):
    m = graph["methods"][0]
    values = m["values"]

    def desc(ref):
        v = values[ref]
        if v["type"] == "tensor":
            kind = "weight" if "weight" in v else ("input" if ref in m["inputs"] else "act")
            return [kind, v["dtype"], v["shape"]]
        if v["type"] == "tensor_list":
            return ["tensor_list", [desc(r) for r in v["value"]]]
        return [v["type"], v.get("value")]
    return {"nodes": [[n["op"], [desc(a) for a in n["args"]], [desc(o) for o in n["outputs"]]]
                      for n in m["nodes"]],
            "inputs": [desc(i) for i in m["inputs"]], "outputs": [desc(o) for o in m["outputs"]]}


def dump(name, out):
    sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
    import torch
    import tern_export
    torch.manual_seed(0)
    module, shape = build(name)
    d = tempfile.mkdtemp()
    graph, _ = tern_export.export_graph(module.eval(), (torch.randn(*shape),), d)
    with open(graph) as f:
        doc = json.load(f)
    with open(out, "w") as f:
        json.dump({"torch": torch.__version__, "graph": canonical(doc)}, f)


def has_torch(py):
    return os.path.exists(py) and subprocess.run(
        [py, "-c", "import torch, numpy"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0


def main(argv):
    if argv[:1] == ["--dump"]:
        dump(argv[1], argv[2])
        return 0
    pythons = argv or ["/usr/bin/python3", os.path.join(ROOT, ".venv", "bin", "python")]
    pythons = [p for p in pythons if has_torch(p)]
    if len(pythons) < 2:
        print("skipped: needs two interpreters with torch (found %s)" % pythons)
        return 77
    work = tempfile.mkdtemp(prefix="tern_same_graph_")
    passed = failed = 0
    for name in MODELS:
        dumps = []
        for i, py in enumerate(pythons[:2]):
            out = os.path.join(work, "%s_%d.json" % (name, i))
            r = subprocess.run([py, os.path.abspath(__file__), "--dump", name, out],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
            if r.returncode != 0:
                dumps.append(None)
                print("FAIL %s under %s:\n%s" % (name, py, r.stderr[-3000:]))
                continue
            with open(out) as f:
                dumps.append(json.load(f))
        if None in dumps:
            failed += 1
            continue
        a, b = dumps
        if a["graph"] == b["graph"]:
            passed += 1
            continue
        failed += 1
        print("FAIL %s: torch %s and torch %s give different graphs" % (name, a["torch"],
                                                                       b["torch"]))
        na, nb = a["graph"]["nodes"], b["graph"]["nodes"]
        for i in range(max(len(na), len(nb))):
            x = na[i] if i < len(na) else None
            y = nb[i] if i < len(nb) else None
            if x != y:
                print("  node %d:\n    %s\n    %s" % (i, x, y))
                break
        if a["graph"]["outputs"] != b["graph"]["outputs"]:
            print("  outputs: %s vs %s" % (a["graph"]["outputs"], b["graph"]["outputs"]))
    print("same graph across PyTorch lines: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
