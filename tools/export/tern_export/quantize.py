"""Weight quantization for export(quantize=...): which weights of a written graph.json are
eligible (linear weights, matmul-with-constant weights, embedding tables: constant f32 rank-2
tensors), the `tern compile` arguments that quantize them, and the summary of what `tern
compile` quantized (docs/quantization.md)."""
import fnmatch
import json
import re

from . import compiler

SCHEME_KINDS = ("none", "nf4", "fp8_e4m3", "fp8_e5m2")

# Which argument of which op is a quantizable weight (tools/compiler/quantize.cpp decides the
# same; it also leaves out weights that some other op reads).
_WEIGHT_SLOTS = {"tern::linear": 1, "tern::matmul": 1, "tern::embedding": 0,
                 "tern::grouped_mm": 1}


def check_scheme(scheme, what="quantize"):
    """A scheme string as `tern compile --quantize` takes it (the compiler checks the options);
    None and False mean "none"."""
    if scheme is None or scheme is False:
        return "none"
    if not isinstance(scheme, str) or scheme.split(":")[0] not in SCHEME_KINDS:
        raise ValueError("tern_export: %s: %r is not a quantization scheme (expected "
                         "'nf4[:block=N][:double]', 'fp8_e4m3[:per_channel|:per_tensor|:block=R]', "
                         "'fp8_e5m2[...]' or 'none')" % (what, scheme))
    return scheme


def check_quantize(quantize):
    """Validates export()'s quantize= argument: None, a scheme string, a dict {layer-name
    pattern: scheme} or a callable(layer_name) -> scheme (None/False: keep f32)."""
    if quantize is None or callable(quantize):
        return quantize
    if isinstance(quantize, str):
        return check_scheme(quantize)
    if isinstance(quantize, dict):
        for pattern, scheme in quantize.items():
            if not isinstance(pattern, str) or not pattern:
                raise TypeError("tern_export: quantize: dict keys must be layer-name patterns "
                                "(strings), found %r" % (pattern,))
            check_scheme(scheme, "quantize[%r]" % pattern)
        return quantize
    raise TypeError("tern_export: quantize must be None, a scheme string such as 'nf4', a dict "
                    "{layer-name pattern: scheme} or a callable(layer_name) -> scheme, found %s"
                    % type(quantize).__name__)


def eligible_weights(graph_path):
    """[(weight value name, layer name)] of the graph's quantizable weights, in value order. The
    exporter names a weight after its parameter ("layers.0.fc1.weight"), so the layer name is
    that name without a trailing ".weight" (the module path, "layers.0.fc1"), the same on both
    capture paths."""
    with open(graph_path) as f:
        doc = json.load(f)
    out = []
    for method in doc["methods"]:
        values = method["values"]
        by_name = {v.get("name"): i for i, v in enumerate(values) if v.get("name")}
        read = {}  # value -> the rank its reader quantizes (a grouped_mm's experts: 3)
        for node in method["nodes"]:
            slot = _WEIGHT_SLOTS.get(node["op"])
            args = node.get("args", [])
            if slot is not None and slot < len(args):
                ref = args[slot]
                ref = ref if isinstance(ref, int) else by_name.get(ref, -1)
                read[ref] = 3 if node["op"] == "tern::grouped_mm" else 2
        for i, v in enumerate(values):
            if (i in read and v.get("type") == "tensor" and "weight" in v and
                    v.get("dtype") == "f32" and len(v.get("shape", [])) == read[i] and
                    "quant" not in v):
                name = v.get("name", "")
                entry = (name, re.sub(r"\.weight$", "", name))
                if entry not in out:
                    out.append(entry)
    return out


def compile_args(graph_path, quantize):
    """The `tern compile` arguments for quantize= (validated by check_quantize): a string is
    --quantize SCHEME for every eligible weight; a dict or a callable is resolved here per layer
    into --quantize-weight NAME=SCHEME for each weight that gets a scheme. Returns
    (args, {weight name: scheme})."""
    if quantize is None:
        return [], {}
    if isinstance(quantize, str):
        return (["--quantize", quantize] if quantize != "none" else []), {}
    chosen = {}
    for name, layer in eligible_weights(graph_path):
        scheme = "none"
        if isinstance(quantize, dict):
            for pattern, s in quantize.items():
                if (fnmatch.fnmatchcase(layer, pattern) or fnmatch.fnmatchcase(name, pattern)):
                    scheme = check_scheme(s, "quantize[%r]" % pattern)
                    break
        else:
            scheme = check_scheme(quantize(layer), "quantize(%r)" % layer)
        if scheme != "none":
            chosen[name] = scheme
    args = []
    for name, scheme in chosen.items():
        args += ["--quantize-weight", "%s=%s" % (name, scheme)]
    return args, chosen


def run_compile(graph_json, out_path, tern, backends, extra_args):
    """`tern compile graph_json -o out_path [--backend B ...] EXTRA` (compiler.run_compile with
    extra arguments); returns stdout, raises CompileError with tern's stderr."""
    return compiler.run_compile(graph_json, out_path, tern, backends, extra_args)


_WEIGHT_LINE = re.compile(r"^  (?:(\S+): )?(\S+) \[([0-9, ]*)\] (\S+) \((.*?)\): (\d+) -> (\d+) bytes")
_TOTAL_LINE = re.compile(r"^  (quantized|all) weights: (\d+) -> (\d+) bytes")


def parse_report(report):
    """What `tern compile` printed about quantization: {"weights": [{"name", "shape", "scheme",
    "ops", "bytes_before", "bytes_after"}], "left_f32": [reasons], "quantized_bytes": (before,
    after), "all_weight_bytes": (before, after)}; None when it quantized nothing."""
    if "quantized " not in report:
        return None
    info = {"weights": [], "left_f32": [], "quantized_bytes": None, "all_weight_bytes": None}
    for line in report.splitlines():
        m = _WEIGHT_LINE.match(line)
        if m:
            info["weights"].append({
                "name": m.group(2), "shape": [int(d) for d in m.group(3).split(",") if d.strip()],
                "scheme": m.group(4), "ops": m.group(5).split(", ")[0].split(","),
                "transposed": "transposed" in m.group(5),
                "bytes_before": int(m.group(6)), "bytes_after": int(m.group(7))})
            continue
        m = _TOTAL_LINE.match(line)
        if m:
            key = "quantized_bytes" if m.group(1) == "quantized" else "all_weight_bytes"
            info[key] = (int(m.group(2)), int(m.group(3)))
        elif line.startswith("  left f32: "):
            info["left_f32"].append(line[len("  left f32: "):])
    return info


def summary(info):
    """The lines export() prints: each quantized weight, what stayed f32, the sizes."""
    if info is None:
        return ["tern_export: quantize: no weight was quantized"]
    lines = ["tern_export: quantized %d weight%s:" % (len(info["weights"]),
                                                        "" if len(info["weights"]) == 1 else "s")]
    for w in info["weights"]:
        lines.append("  %s %s %s: %d -> %d bytes" % (w["name"], w["shape"], w["scheme"],
                                                     w["bytes_before"], w["bytes_after"]))
    for s in info["left_f32"]:
        lines.append("  left f32: " + s)
    if info["all_weight_bytes"]:
        before, after = info["all_weight_bytes"]
        lines.append("  weights: %d -> %d bytes (%.2fx smaller)" % (
            before, after, before / float(after) if after else 1.0))
    return lines
