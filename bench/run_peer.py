"""One step for one peer, in its own process (compare.py starts one per step):

  run_peer.py prepare PEER MODEL OUTDIR [BACKEND]   -> prints {"artifact": {...}} or {"error": ...}
  run_peer.py run PEER ARTIFACT_JSON INPUT_NPYS THREADS RUNS WARMUP OUT_JSON

INPUT_NPYS: one .npy per model input, comma-separated.

Only the peer's own imports happen in a `run` process, so its RSS is that runtime's.
"""
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    action, peer = argv[1], argv[2]
    module = __import__("peer_" + peer)
    if action == "prepare":
        name, outdir = argv[3], argv[4]
        import torch
        import models
        torch.set_num_threads(max(1, os.cpu_count() or 1))
        model, examples = models.build(name) if name != "fc" else (models.fc_layer(), None)
        if examples is None:
            torch.manual_seed(1)
            examples = (torch.randn(models.FC_SHAPE["batch"], models.FC_SHAPE["in"]),)
        kwargs = {"backend": argv[5]} if len(argv) > 5 else {}
        return {"artifact": module.prepare(name, model, examples, outdir, **kwargs)}
    if action == "run":
        artifact = json.loads(argv[3])
        input_npy, threads, runs, warmup = argv[4], int(argv[5]), int(argv[6]), int(argv[7])
        if peer == "tern":
            return {"result": module.run(artifact, input_npy, threads, runs, warmup, argv[8])}
        import numpy as np
        xs = [np.load(p) for p in input_npy.split(",")]
        return {"result": module.run(artifact, xs, threads, runs, warmup)}
    raise SystemExit("unknown action " + action)


if __name__ == "__main__":
    try:
        out = main(sys.argv)
    except BaseException as e:  # noqa: BLE001 - every failure becomes a reported row
        traceback.print_exc()
        msg = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1] if str(e).strip() else "")
        out = {"error": msg[:300]}
    sys.stdout.flush()
    print("@@RESULT " + json.dumps(out))
