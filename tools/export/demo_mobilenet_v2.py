#!/usr/bin/env python3
"""demo_mobilenet_v2.py OUT_DIR: the exporter part of `make demo`.

Builds torchvision's mobilenet_v2 (random weights, batch-norm statistics calibrated on random
batches), exports it with tern_export, runs it with `tern run` and compares the logits with
PyTorch eager (max abs/rel error, top-1). TERN names the tern executable (default: found by
tern_export). Exits 1 if the error exceeds 1e-4 * max |reference|."""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import model_zoo  # noqa: E402
import tern_export  # noqa: E402


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    model, (x,), _ = model_zoo.MODELS["mobilenet_v2"]()
    pte = os.path.join(out_dir, "mobilenet_v2.pte")
    t0 = time.time()
    r = tern_export.export(model, (x,), pte, keep_graph=os.path.join(out_dir, "mobilenet_v2"),
                           source_model="torchvision.models.mobilenet_v2 (random weights)")
    print("exported with %s in %.1f s: %d nodes (%s)" % (
        r.capture, time.time() - t0, sum(r.ops.values()),
        ", ".join("%s x%d" % (k.replace("tern::", ""), v) for k, v in sorted(r.ops.items()))))
    sys.stdout.write(r.compile_report)
    tern = tern_export.find_tern()
    np.save(os.path.join(out_dir, "mobilenet_input.npy"), x.numpy())
    print("== tern run %s" % pte)
    sys.stdout.flush()
    subprocess.run([tern, "run", pte, "--input", os.path.join(out_dir, "mobilenet_input.npy"),
                    "--output-dir", os.path.join(out_dir, "mobilenet_outputs")], check=True)
    got = np.load(os.path.join(out_dir, "mobilenet_outputs", "output_0.npy"))
    with torch.no_grad():
        ref = model(x).numpy()
    err = float(np.max(np.abs(got - ref)))
    scale = float(np.max(np.abs(ref)))
    print("== compare with PyTorch %s eager: max abs error %.3g, max |ref| %.3g, max rel error "
          "%.3g, top-1 %s (tern %d, torch %d)" % (
              torch.__version__, err, scale, err / scale,
              "agrees" if got.argmax() == ref.argmax() else "DIFFERS", got.argmax(), ref.argmax()))
    if err > 1e-4 * scale:
        print("mobilenet_v2 output differs from PyTorch beyond 1e-4 * max |ref|")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
