"""ExecuTorch (CPU, XNNPACK): torch.export -> to_edge_transform_and_lower(XnnpackPartitioner)
-> to_executorch(), run through executorch.runtime with its threadpool sized to T.

Its Python bindings import torch, so its RSS includes torch's (the C++ runner would not).
"""
import os


def prepare(name, model, examples, outdir):
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    path = os.path.join(outdir, name + ".et.pte")
    exported = torch.export.export(model, tuple(examples))
    program = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()]).to_executorch()
    with open(path, "wb") as f:
        f.write(program.buffer)
    return {"path": path}


def run(artifact, xs, threads, runs, warmup):
    import torch
    from executorch.extension.pybindings import portable_lib
    from executorch.runtime import Runtime
    from peer_common import measure
    portable_lib._unsafe_reset_threadpool(threads)
    state = {"x": [torch.from_numpy(x) for x in xs]}

    def load_and_first():
        program = Runtime.get().load_program(artifact["path"])
        state["method"] = program.load_method("forward")
        state["program"] = program
        state["method"].execute(state["x"])

    def call():
        state["method"].execute(state["x"])

    result = measure(load_and_first, call, runs, warmup)
    result["threads"] = portable_lib._threadpool_get_thread_count()
    try:
        from executorch.version import __version__ as version
    except ImportError:
        version = "?"
    result["version"] = version
    return result
