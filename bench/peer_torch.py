"""PyTorch eager (CPU), torch.set_num_threads(T), under inference_mode.

The "file" is the whole pickled module (torch.save), so load time is unpickling plus the first
forward.
"""
import os


def prepare(name, model, examples, outdir):
    import torch
    path = os.path.join(outdir, name + ".torch.pt")
    torch.save(model, path)
    return {"path": path}


def run(artifact, xs, threads, runs, warmup):
    import torch
    import models  # noqa: F401  - classes the pickle refers to
    from peer_common import measure
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    state = {"x": [torch.from_numpy(x) for x in xs]}

    def load_and_first():
        state["model"] = torch.load(artifact["path"], weights_only=False).eval()
        with torch.inference_mode():
            state["model"](*state["x"])

    def call():
        with torch.inference_mode():
            state["model"](*state["x"])

    result = measure(load_and_first, call, runs, warmup)
    result["version"] = torch.__version__
    return result
