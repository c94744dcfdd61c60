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
import warnings

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
from .llm import export_llm
from .runner import RunError, arena_report, run
from .safetensors_io import write_safetensors

__version__ = "0.1"
__all__ = ["export", "export_methods", "export_llm", "Method", "export_graph",
           "export_graph_methods", "ExportResult", "ExportError", "CaptureError",
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
    "all_weight_bytes": (before, after)}); float64_as_float32: the nodes ("node (file:line)")
    where float64 arithmetic on activations runs in float32 (docs/export.md, *Mapping*)."""

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


def _lower(module, args, share_scalars=True, name="forward", grouped_attention=True):
    captured = capture(module, args, KEEP)
    mb = MethodBuilder(name, share_scalars=share_scalars)
    lowerer = Lowerer(captured, args, mb, fold_repeat_kv=grouped_attention)
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


class Method:
    """One method of a program for export_methods(): `module` called on `example_inputs`, with
    optional bounded-dynamic dims (dynamic_shapes / dynamic_dims as in export())."""

    def __init__(self, module, example_inputs, dynamic_shapes=None, dynamic_dims=None):
        self.module = module
        self.example_inputs = example_inputs
        self.dynamic_shapes = dynamic_shapes
        self.dynamic_dims = dynamic_dims


def _lower_method(name, method, grouped_attention=True):
    """(captured, MethodBuilder, Lowerer) of one method; a dynamic one is lowered at its
    bounds and probed one below each (dynamic.py). grouped_attention: see
    export_graph_methods."""
    module = method.module
    args = _example_inputs(method.example_inputs)
    dims = _dynamic_symbols(module, args, method.dynamic_shapes, method.dynamic_dims)
    if not dims:
        return _lower(module, args, name=name, grouped_attention=grouped_attention)
    symbols = []
    for _, _, sym in dims:
        if sym not in symbols:
            symbols.append(sym)
    for sym in symbols:
        if sym.max < 2:
            raise ExportError("dynamic dim '%s': the bound must be at least 2, found %d"
                              % (sym.name, sym.max))
    bounds = {sym.name: sym.max for sym in symbols}
    # Lowered at every bound (what the planner plans for), then once per symbol at bound - 1
    # to see which dims and ints follow it (dynamic.py).
    captured, mb, lowerer = _lower(module, _dynamic.inputs_at(args, dims, bounds), False, name,
                                   grouped_attention)
    probes = []
    for sym in symbols:
        sizes = dict(bounds)
        sizes[sym.name] = sym.max - 1
        _, probe_mb, _ = _lower(module, _dynamic.inputs_at(args, dims, sizes), False, name,
                                grouped_attention)
        probes.append(probe_mb)
    doc = mb.to_json()
    prefixed = _dynamic.merge(doc, [p.to_json() for p in probes], symbols, mb.weights,
                              [p.weights for p in probes])
    _dynamic.check_weights(mb.weights, [p.weights for p in probes], symbols, prefixed)
    mb.values, mb.nodes, mb.outputs = doc["values"], doc["nodes"], doc["outputs"]
    mb.symbols = [sym.to_json() for sym in symbols]
    return captured, mb, lowerer


def _buffers(module):
    return [b for _, b in module.named_buffers()] if isinstance(module, torch.nn.Module) else []


def export_graph(module, example_inputs, graph_dir, source_model=None, dynamic_shapes=None,
                 dynamic_dims=None, grouped_attention=True):
    """Captures and lowers `module` and writes graph_dir/graph.json and
    graph_dir/weights.safetensors, without compiling. Returns (graph.json path, Lowerer info
    dict with 'ops', 'aten_ops', 'capture', 'num_outputs'). dynamic_shapes / dynamic_dims: see
    export(); grouped_attention: see export_graph_methods (False for a graph meant for the cuda
    backend)."""
    methods = {"forward": Method(module, example_inputs, dynamic_shapes, dynamic_dims)}
    return export_graph_methods(methods, graph_dir, source_model, grouped_attention)


def export_graph_methods(methods, graph_dir, source_model=None, grouped_attention=True):
    """export_graph() for several methods ({name: Method}, in order) in one graph.json: their
    weights are written once (a tensor two methods read is one safetensors entry), and a
    buffer that two methods of one module update in place is one shared state tensor
    (docs/graph-format.md "shared"). Info: 'ops', 'aten_ops', 'capture', 'num_outputs' summed
    or of the first method, plus 'methods' ({name: info}) and 'shared_state' (names).
    grouped_attention: attention on K/V repeated to the query's heads (transformers' repeat_kv)
    reads the K/V heads in place instead (gqa.py); export_methods turns it off for programs
    that name the cuda backend, whose attention takes K/V with the query's heads only (with
    the repeats, the copies run inside its delegates)."""
    if not methods:
        raise TypeError("tern_export: no methods to export")
    built = []
    per_method = {}
    for name, method in methods.items():
        if not isinstance(method, Method):
            raise TypeError("tern_export: method '%s' must be a tern_export.Method, found %s"
                            % (name, type(method).__name__))
        # Lowering evaluates the graph on the example inputs; the module's buffers (a KV
        # cache) must hold the same initial values for every method.
        saved = [b.detach().clone() for b in _buffers(method.module)]
        try:
            captured, mb, lowerer = _lower_method(name, method, grouped_attention)
        finally:
            with torch.no_grad():
                for b, v in zip(_buffers(method.module), saved):
                    b.copy_(v)
        ops = {}
        for n in mb.nodes:
            ops[n["op"]] = ops.get(n["op"], 0) + 1
        per_method[name] = {"ops": ops, "aten_ops": lowerer.graph_ops(),
                            "capture": captured.method, "num_outputs": len(mb.outputs),
                            "float64_as_float32": list(lowerer.float64_nodes)}
        if lowerer.float64_nodes:
            shown = lowerer.float64_nodes[:5]
            more = len(lowerer.float64_nodes) - len(shown)
            warnings.warn("tern_export: method '%s': %d operator(s) compute float64 values from "
                          "the inputs; tern has no float64 kernels, so they run in float32: %s%s"
                          % (name, len(lowerer.float64_nodes), ", ".join(shown),
                             " and %d more" % more if more else ""), stacklevel=3)
        built.append((method, mb))
    shared = _share_state(built) if len(built) > 1 else []
    weights = _merge_weights([mb for _, mb in built])
    first_method, first = built[0]
    module = first_method.module
    source = source_model or type(module).__module__ + "." + type(module).__qualname__
    producer = "tern_export %s (torch %s)" % (__version__, torch.__version__)
    metadata = {"exporter": "tern_export " + __version__, "torch": torch.__version__,
                "capture": per_method[first.name]["capture"]}
    os.makedirs(graph_dir, exist_ok=True)
    graph_path = os.path.join(graph_dir, "graph.json")
    with open(graph_path, "w") as f:
        json.dump(program_json([mb for _, mb in built], producer, source, metadata,
                               WEIGHTS_FILE if weights else None), f, indent=1)
    if weights:
        write_safetensors(os.path.join(graph_dir, WEIGHTS_FILE), weights)
    info = dict(per_method[first.name])
    if len(built) > 1:
        ops = {}
        for m in per_method.values():
            for k, v in m["ops"].items():
                ops[k] = ops.get(k, 0) + v
        info["ops"] = ops
    info["methods"] = per_method
    info["shared_state"] = shared
    return graph_path, info


def _share_state(built):
    """Marks the state tensors that several methods of one module hold (same module object,
    same buffer name) as shared under that name; returns the shared names."""
    owners = {}  # state name -> (module id, [values])
    for method, mb in built:
        for v in mb.values:
            if v.get("type") == "tensor" and v.get("state"):
                key = owners.setdefault(v["name"], (id(method.module), []))
                if key[0] != id(method.module):
                    raise ExportError(
                        "methods of different modules both have a state tensor '%s'; export the "
                        "methods that share a KV cache from one module object" % v["name"])
                key[1].append(v)
    shared = []
    for name, (_, values) in owners.items():
        if len(values) > 1:
            for v in values:
                v["shared"] = name
            shared.append(name)
    return shared


def _merge_weights(mbs):
    """One {name: tensor} for all methods: a name two methods give the same tensor (the same
    parameter) is kept once; a name that means different bytes in two methods (a constant
    folded per method) is renamed in the later method."""
    merged = {}
    for mb in mbs:
        rename = {}
        for name, t in mb.weights.items():
            if name not in merged:
                merged[name] = t
                continue
            u = merged[name]
            same = u.dtype == t.dtype and u.shape == t.shape and (
                u.data_ptr() == t.data_ptr() or torch.equal(u, t))
            if same:
                continue
            new, n = "%s.%s" % (mb.name, name), 1
            while new in merged or new in mb.weights:
                n += 1
                new = "%s.%s_%d" % (mb.name, name, n)
            rename[name] = new
            merged[new] = t
        for v in mb.values:
            for key in ("weight", "init"):
                if v.get(key) in rename:
                    v[key] = rename[v[key]]
    return merged


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
    methods = {"forward": Method(module, example_inputs, dynamic_shapes, dynamic_dims)}
    return export_methods(methods, path, backends, quantize, keep_graph, source_model, verbose)


def export_methods(methods, path, backends=DEFAULT_BACKENDS, quantize=None, keep_graph=None,
                   source_model=None, verbose=True):
    """Exports several methods into one program `path`: `methods` is {name: Method(module,
    example_inputs, dynamic_shapes=None, dynamic_dims=None)} in order (e.g. "prefill" and
    "decode" of one language model). Weights that several methods read are stored once (equal
    bytes share one segment), and a buffer that methods of the same module object update in
    place (a KV cache) becomes one shared state tensor: what one method writes, the others
    read (docs/llm-decoding.md). Other options and errors as export(); ExportResult.methods
    holds each method's info and .shared_state the shared names."""
    names = _check_options(backends, quantize)
    lenient = backends is DEFAULT_BACKENDS
    tern = find_tern()
    graph_dir = keep_graph or tempfile.mkdtemp(prefix="tern_export_")
    try:
        # The cuda backend's attention takes q, k and v of one batch shape only: a program for
        # it keeps K/V repeated per query head (vulkan and the cpu/portable kernels broadcast).
        cuda = any(n.split(":")[0] == "cuda" for n in names)
        graph_path, info = export_graph_methods(methods, graph_dir, source_model,
                                                grouped_attention=not cuda)
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
