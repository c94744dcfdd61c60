"""tern_export: exports a PyTorch nn.Module to a tern program (.pte).

    import tern_export
    result = tern_export.export(model, (torch.randn(1, 3, 224, 224),), "model.pte")

The model is captured as an ATen graph (torch.export on PyTorch >= 2.1, make_fx with
functionalization on older releases), lowered to tern operators (docs/ops.md) with constant
folding and batch-norm folding, written as graph.json + weights.safetensors
(docs/graph-format.md) and compiled with `tern compile`. See docs/export.md.
"""
import importlib
import json
import os
import shutil
import tempfile

import torch
import torch.utils._pytree as pytree

from .capture import capture, torch_version
from .compiler import UNKNOWN_BACKEND_MARK, find_tern, run_compile
from .errors import (CaptureError, CompileError, ExportError, TernNotFoundError,
                     UnsupportedOpError)
from .graph_writer import MethodBuilder, program_json
from .lower import Lowerer
from .ops_table import KEEP
from . import dynamic as _dynamic
from . import quantize as _quantize
from .runner import RunError, arena_report, run
from .safetensors_io import write_safetensors

__version__ = "0.1"
__all__ = ["export", "export_graph", "ExportResult", "ExportError", "CaptureError",
           "UnsupportedOpError", "CompileError", "TernNotFoundError", "RunError", "find_tern",
           "run", "arena_report", "flatten_outputs", "DEFAULT_BACKENDS"]

WEIGHTS_FILE = "weights.safetensors"
# The default backends. Passed explicitly, "cpu" must be in the tern compiler's build; left as
# the default, a build without it falls back to the portable kernels (ExportResult.backends).
DEFAULT_BACKENDS = ("cpu",)


class ExportResult:
    """What export() produced.

    path: the .pte file; graph_dir: the folder holding graph.json and weights.safetensors when
    kept (else None); ops: tern operator -> node count; aten_ops: the graph's ATen operators;
    capture: which capture path ran; compile_report: `tern compile`'s stdout (arena sizes and
    delegate counts); num_outputs: flattened output count; backends: the backends the program
    was partitioned for (() = portable kernels only); quantization: None without quantize=,
    else what `tern compile` quantized ({"weights": [{"name", "shape", "scheme", "ops",
    "bytes_before", "bytes_after"}], "left_f32": [...], "quantized_bytes": (before, after),
    "all_weight_bytes": (before, after)})."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return "ExportResult(path=%r, ops=%r)" % (self.path, self.ops)


def _check_options(backends, quantize):
    """The backend names to pass to `tern compile` (without "portable"), in priority order."""
    if isinstance(backends, str):
        backends = (backends,)
    names = []
    for b in backends:
        if not isinstance(b, str) or not b:
            raise TypeError("tern_export: backends must be backend names such as \"cpu\" or "
                            "\"portable\", found %r" % (b,))
        if b != "portable" and b not in names:
            names.append(b)
    _quantize.check_quantize(quantize)
    return tuple(names)


def _example_inputs(example_inputs):
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    args = tuple(example_inputs)
    for i, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            raise TypeError("tern_export: example input %d is %s; only tensors are supported as "
                            "inputs" % (i, type(a).__name__))
    return args


def _lower(module, args, share_scalars=True):
    captured = capture(module, args, KEEP)
    mb = MethodBuilder("forward", share_scalars=share_scalars)
    lowerer = Lowerer(captured, args, mb)
    lowerer.run()
    return captured, mb, lowerer


def _dynamic_symbols(module, args, dynamic_shapes, dynamic_dims):
    """[(input index, dim, Symbol)] from either form (docs/dynamic-shapes.md), or []."""
    if dynamic_shapes is not None and dynamic_dims is not None:
        raise TypeError("tern_export: give dynamic_shapes (torch.export.Dim, torch >= 2.1) or "
                        "dynamic_dims (explicit bounds), not both")
    if dynamic_shapes is not None:
        if torch_version() < (2, 1):
            raise ExportError("dynamic_shapes needs torch.export (PyTorch >= 2.1; this is %s); "
                              "give dynamic_dims={'x': {1: ('seq', 128)}} instead"
                              % torch.__version__)
        importlib.import_module("torch.export")  # a submodule, not always imported by torch
        return _dynamic.symbols_from_torch_export(module, args, dynamic_shapes)
    if dynamic_dims is not None:
        return _dynamic.symbols_from_bounds(module, args, dynamic_dims)
    return []


def export_graph(module, example_inputs, graph_dir, source_model=None, dynamic_shapes=None,
                 dynamic_dims=None):
    """Captures and lowers `module` and writes graph_dir/graph.json and
    graph_dir/weights.safetensors, without compiling. Returns (graph.json path, Lowerer info
    dict with 'ops', 'aten_ops', 'capture', 'num_outputs'). dynamic_shapes / dynamic_dims: see
    export()."""
    args = _example_inputs(example_inputs)
    dims = _dynamic_symbols(module, args, dynamic_shapes, dynamic_dims)
    if not dims:
        captured, mb, lowerer = _lower(module, args)
    else:
        symbols = []
        for _, _, sym in dims:
            if sym not in symbols:
                symbols.append(sym)
        for sym in symbols:
            if sym.max < 2:
                raise ExportError("dynamic dim '%s': the bound must be at least 2, found %d"
                                  % (sym.name, sym.max))
        bounds = {sym.name: sym.max for sym in symbols}
        # Lowered at every bound (what the planner plans for), then once per symbol at
        # bound - 1 to see which dims and ints follow it (dynamic.py).
        captured, mb, lowerer = _lower(module, _dynamic.inputs_at(args, dims, bounds), False)
        probes = []
        for sym in symbols:
            sizes = dict(bounds)
            sizes[sym.name] = sym.max - 1
            _, probe_mb, _ = _lower(module, _dynamic.inputs_at(args, dims, sizes), False)
            probes.append(probe_mb)
        method = mb.to_json()
        _dynamic.merge(method, [p.to_json() for p in probes], symbols)
        _dynamic.check_weights(mb.weights, [p.weights for p in probes], symbols)
        mb.values = method["values"]
        mb.symbols = [sym.to_json() for sym in symbols]
    ops = {}
    for n in mb.nodes:
        ops[n["op"]] = ops.get(n["op"], 0) + 1
    source = source_model or type(module).__module__ + "." + type(module).__qualname__
    producer = "tern_export %s (torch %s)" % (__version__, torch.__version__)
    metadata = {"exporter": "tern_export " + __version__, "torch": torch.__version__,
                "capture": captured.method}
    os.makedirs(graph_dir, exist_ok=True)
    graph_path = os.path.join(graph_dir, "graph.json")
    with open(graph_path, "w") as f:
        json.dump(program_json(mb, producer, source, metadata, WEIGHTS_FILE), f, indent=1)
    if mb.weights:
        write_safetensors(os.path.join(graph_dir, WEIGHTS_FILE), mb.weights)
    info = {"ops": ops, "aten_ops": lowerer.graph_ops(), "capture": captured.method,
            "num_outputs": len(mb.outputs)}
    return graph_path, info


def export(module, example_inputs, path, backends=DEFAULT_BACKENDS, quantize=None,
           keep_graph=None, source_model=None, verbose=True, dynamic_shapes=None,
           dynamic_dims=None):
    """Exports `module` called on `example_inputs` (a tensor or tuple of tensors) to the tern
    program `path`.

    backends: backend names, highest priority first, passed to `tern compile --backend`: "cpu"
    (XNNPACK), "cuda", "vulkan" as the compiler's build has them; "portable" means none (the
    portable kernels, which are always kept as every delegate's fallback). A name the compiler
    does not have raises CompileError naming the ones it has — except the default ("cpu",),
    which falls back to the portable kernels on such a build.
    quantize (docs/quantization.md): None (f32 weights); a scheme for every linear, matmul-with-
    constant and embedding weight: "nf4[:block=N][:double]", "fp8_e4m3[:per_channel|
    :per_tensor|:block=R]" or "fp8_e5m2[...]"; a dict {layer-name pattern: scheme} (fnmatch
    patterns over the layer name, e.g. "layers.0.fc1" or "layers.*", or the weight name; first
    match wins; unmatched layers stay f32); or a callable(layer_name) -> scheme or None. Other
    weights (biases, convolutions, norms) stay f32. With verbose, prints which weights were
    quantized and the weight bytes before/after (also in ExportResult.quantization).
    keep_graph: a folder to keep graph.json and weights.safetensors in (else a temporary folder,
    removed afterwards). Outputs are the pytree leaves of the module's return value, in order
    (tuple/list elements in order, dict values in insertion order, recursively).
    dynamic_shapes (PyTorch >= 2.1): torch.export's form, e.g. {"x": {1: torch.export.Dim(
    "seq", max=128)}}; dynamic_dims (any PyTorch, 1.13 included): explicit bounds, e.g.
    {"x": {1: ("seq", 128)}} or ("seq", min, max). The program then accepts any size of those
    dims within the bounds, planned at the bound (docs/dynamic-shapes.md); only dims equal to
    a symbol are supported (not 2*seq), and nodes on dynamic values run on the portable kernels.

    Raises CaptureError (PyTorch could not trace the module), UnsupportedOpError (an ATen
    operator without a tern mapping; names the op, its source and the model's op list),
    CompileError (`tern compile` failed; carries its stderr), TernNotFoundError."""
    names = _check_options(backends, quantize)
    lenient = backends is DEFAULT_BACKENDS
    tern = find_tern()
    graph_dir = keep_graph or tempfile.mkdtemp(prefix="tern_export_")
    try:
        graph_path, info = export_graph(module, example_inputs, graph_dir, source_model,
                                        dynamic_shapes, dynamic_dims)
        out_dir = os.path.dirname(os.path.abspath(path))
        os.makedirs(out_dir, exist_ok=True)
        quant_args, _ = _quantize.compile_args(graph_path, quantize)

        def compile_for(backend_names):
            if not quant_args:
                return run_compile(graph_path, path, tern, backend_names)
            return _quantize.run_compile(graph_path, path, tern, backend_names, quant_args)
        try:
            try:
                report = compile_for(names)
            except CompileError as e:
                if not (lenient and UNKNOWN_BACKEND_MARK in (e.stderr or "")):
                    raise
                names = ()  # the default "cpu" is not in this build: portable kernels only
                report = compile_for(names)
        except CompileError as e:
            if not keep_graph:
                e.graph_dir = None
            raise
    finally:
        if not keep_graph:
            shutil.rmtree(graph_dir, ignore_errors=True)
    quantization = _quantize.parse_report(report) if quantize is not None else None
    if quantize is not None and verbose:
        print("\n".join(_quantize.summary(quantization)))
    return ExportResult(path=path, graph_dir=keep_graph, compile_report=report, backends=names,
                        quantization=quantization, **info)


def flatten_outputs(outputs):
    """The module outputs flattened the way export() orders the program's outputs."""
    return [o for o in pytree.tree_flatten(outputs)[0]]
