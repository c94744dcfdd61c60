"""ONNX Runtime (CPU): export with torch.onnx.export, run with intra_op_num_threads = T."""
import os


def prepare(name, model, examples, outdir):
    import torch
    path = os.path.join(outdir, name + ".onnx")
    kwargs = dict(input_names=["x%d" % i for i in range(len(examples))], opset_version=18)
    try:
        # torch >= 2.5: the dynamo exporter (needs onnxscript); external data off for one file,
        # unless the weights pass protobuf's 2 GB limit (a .onnx.data file beside it then).
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        torch.onnx.export(model, tuple(examples), path, dynamo=True,
                          external_data=weights > 1800 * 2**20, **kwargs)
    except TypeError:
        torch.onnx.export(model, tuple(examples), path, **kwargs)
    return {"path": path}


def run(artifact, xs, threads, runs, warmup):
    import onnxruntime as ort
    from peer_common import measure
    state = {}

    def load_and_first():
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(artifact["path"], opts, providers=["CPUExecutionProvider"])
        state["sess"] = sess
        state["feed"] = {i.name: x for i, x in zip(sess.get_inputs(), xs)}
        sess.run(None, state["feed"])

    def call():
        state["sess"].run(None, state["feed"])

    result = measure(load_and_first, call, runs, warmup)
    result["version"] = ort.__version__
    return result
