"""Bounded-dynamic dimensions for tern_export (docs/dynamic-shapes.md, docs/export.md).

The user names dynamic input dims with their bounds:
- PyTorch >= 2.1: `dynamic_shapes` in torch.export's form, e.g. {"x": {1: Dim("seq", max=128)}}
  (by forward() argument name) or a tuple with one entry per input. torch.export.export checks
  the spec and the bounds are read from the exported program's range_constraints.
- PyTorch 1.13 (no torch.export): `dynamic_dims={"x": {1: ("seq", 128)}}` (or by input index,
  {0: {1: ("seq", 128)}}; a 3-tuple ("seq", min, max) gives a minimum too).

The model is then lowered at the upper bound of every symbol, and once more per symbol with
that symbol one smaller ("probe"). Lowering is deterministic, so both give the same values
and nodes; every tensor dim, int and int-list item that is the bound in the first and the probe
size in the second follows the symbol; any other difference (a dim derived from the symbol such
as 2*seq or seq+1, a constant that depends on it, a changed graph) is an ExportError naming the
value, since format 1.1 only has dims equal to a symbol.
"""
import inspect
import math

import torch

from .errors import ExportError


class Symbol:
    def __init__(self, name, lo, hi):
        self.name, self.min, self.max = name, int(lo), int(hi)

    def to_json(self):
        return {"name": self.name, "min": self.min, "max": self.max}


def _input_index(module, key, num_inputs):
    if isinstance(key, int):
        if not 0 <= key < num_inputs:
            raise ExportError("dynamic dims: input %d out of range (%d inputs)" % (key, num_inputs))
        return key
    params = [p for p in inspect.signature(module.forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [p.name for p in params][:num_inputs]
    if key not in names:
        raise ExportError("dynamic dims: '%s' is not an input of %s.forward (inputs: %s)"
                          % (key, type(module).__name__, ", ".join(names)))
    return names.index(key)


def _per_input(module, spec, num_inputs):
    """{input index: {dim: value}} from a dict (by name or index) or a tuple/list per input."""
    out = {}
    if isinstance(spec, (tuple, list)):
        if len(spec) != num_inputs:
            raise ExportError("dynamic dims: %d entries for %d inputs" % (len(spec), num_inputs))
        items = enumerate(spec)
    elif isinstance(spec, dict):
        items = ((_input_index(module, k, num_inputs), v) for k, v in spec.items())
    else:
        raise ExportError("dynamic dims: expected a dict or a tuple, found %s"
                          % type(spec).__name__)
    for index, dims in items:
        if dims is None:
            continue
        if not isinstance(dims, dict):
            raise ExportError("dynamic dims of input %d: expected {dim: ...}, found %r"
                              % (index, dims))
        out[index] = dims
    return out


def symbols_from_torch_export(module, args, dynamic_shapes):
    """[(input index, dim, Symbol)] for torch.export `dynamic_shapes`; bounds come from the
    exported program's range constraints."""
    try:
        ep = torch.export.export(module, tuple(args), dynamic_shapes=dynamic_shapes)
    except Exception as e:
        from .errors import CaptureError
        raise CaptureError("torch.export.export with dynamic_shapes failed: %s: %s"
                           % (type(e).__name__, e)) from e
    per_input = _per_input(module, dynamic_shapes, len(args))
    user = [n for n in ep.graph.nodes if n.op == "placeholder"]
    sig = ep.graph_signature
    user_names = list(getattr(sig, "user_inputs", []) or [])
    if user_names:
        user = [n for n in user if n.name in user_names]
    else:
        user = user[-len(args):]
    found = []
    by_name = {}
    for index, dims in sorted(per_input.items()):
        val = user[index].meta.get("val")
        for dim, d in sorted(dims.items()):
            name = getattr(d, "__name__", None) or str(d)
            size = val.shape[dim] if val is not None else None
            expr = getattr(getattr(size, "node", None), "expr", None)
            if expr is None or expr not in ep.range_constraints:
                raise ExportError("dynamic dim %d of input %d ('%s'): torch.export specialized it "
                                  "to %s; it is not dynamic" % (dim, index, name, size))
            r = ep.range_constraints[expr]
            hi = r.upper
            if hi is None or not math.isfinite(float(hi)) or int(hi) > 2 ** 31:
                raise ExportError("dynamic dim %d of input %d ('%s') has no upper bound; give "
                                  "torch.export.Dim(%r, max=N)" % (dim, index, name, name))
            sym = by_name.get(name)
            if sym is None:
                # torch may allow 0; tern's kernels are not tested on empty dynamic tensors.
                sym = by_name[name] = Symbol(name, max(1, int(r.lower)), int(hi))
            found.append((index, dim, sym))
    return found


def symbols_from_bounds(module, args, dynamic_dims):
    """[(input index, dim, Symbol)] for the explicit form {"x": {1: ("seq", 128)}} (or
    ("seq", min, max))."""
    found = []
    by_name = {}
    for index, dims in sorted(_per_input(module, dynamic_dims, len(args)).items()):
        for dim, d in sorted(dims.items()):
            if not (isinstance(d, (tuple, list)) and len(d) in (2, 3) and isinstance(d[0], str)):
                raise ExportError("dynamic dim %d of input %d: expected (name, max) or "
                                  "(name, min, max), found %r" % (dim, index, d))
            name, lo, hi = (d[0], 1, d[1]) if len(d) == 2 else tuple(d)
            if not (0 <= int(lo) <= int(hi) and int(hi) >= 1):
                raise ExportError("dynamic dim '%s': bounds [%s, %s] are invalid" % (name, lo, hi))
            sym = by_name.get(name)
            if sym is None:
                sym = by_name[name] = Symbol(name, lo, hi)
            elif (sym.min, sym.max) != (int(lo), int(hi)):
                raise ExportError("dynamic dim '%s' is given bounds [%d, %d] and [%s, %s]"
                                  % (name, sym.min, sym.max, lo, hi))
            found.append((index, dim, sym))
    return found


def _resize(t, dim, size):
    """`t` with dim `dim` cut or repeated to `size` (keeps token ids and such valid)."""
    if dim < 0 or dim >= t.dim():
        raise ExportError("dynamic dim %d of a rank-%d input is out of range" % (dim, t.dim()))
    n = t.shape[dim]
    if n == 0:
        shape = list(t.shape)
        shape[dim] = size
        return torch.zeros(shape, dtype=t.dtype)
    if n < size:
        t = torch.cat([t] * ((size + n - 1) // n), dim)
    return t.narrow(dim, 0, size).contiguous()


def inputs_at(args, dims, sizes):
    """`args` with each dynamic dim resized to sizes[symbol name]."""
    out = list(args)
    for index, dim, sym in dims:
        out[index] = _resize(out[index], dim, sizes[sym.name])
    return tuple(out)


def _where(v, i):
    return "value %d ('%s')" % (i, v.get("name", ""))


def merge(base, probes, symbols, base_weights=None, probe_weights=None):
    """Tags base (the method JSON lowered at every bound) with the symbols: probes[k] is the
    method JSON lowered with symbols[k] at max - 1. Raises ExportError on any difference that
    is not a symbol's (max, max - 1).

    A constant whose dims follow a symbol (`arange(seq)`, a causal mask of [seq, seq]) is kept
    when the probe's constant is the bound's cut to the probe size along those dims (a prefix
    table): it is stored at the bound and read through `tern::slice` nodes ending at the
    symbol (prefix_constants below). base_weights / probe_weights[k]: the constants' tensors by
    name (without them such a constant is an error). Returns the names of those constants."""
    prefix = {}  # value id -> {dim: symbol name}
    for k, probe in enumerate(probes):
        sym = symbols[k]
        lo, hi = sym.max - 1, sym.max
        if [n["op"] for n in base["nodes"]] != [n["op"] for n in probe["nodes"]] or \
                len(base["values"]) != len(probe["values"]) or \
                [n["args"] for n in base["nodes"]] != [n["args"] for n in probe["nodes"]]:
            raise ExportError("the lowered graph changes with dynamic dim '%s' (at %d and %d): "
                              "the model's structure depends on it, which tern cannot express"
                              % (sym.name, hi, lo))
        for i, (v, p) in enumerate(zip(base["values"], probe["values"])):
            if v["type"] != p["type"]:
                raise ExportError("%s changes type with dynamic dim '%s'" % (_where(v, i), sym.name))
            if v["type"] == "tensor":
                if "weight" in v and v["shape"] != p["shape"]:
                    dims = _prefix_dims(v, p, sym, base_weights,
                                        probe_weights[k] if probe_weights else None)
                    if dims is not None:
                        prefix.setdefault(i, {}).update({d: sym.name for d in dims})
                        continue
                    raise ExportError(
                        "%s is a constant computed from dynamic dim '%s' (shape %s at %d, %s at "
                        "%d), e.g. a mask or position table built from the input's size; tern "
                        "cannot make constants dynamic: pass it as an input or build it with "
                        "ops on the input" % (_where(v, i), sym.name, v["shape"], hi,
                                               p["shape"], lo))
                _tag(v, p, "shape", "dim_symbols", k, sym, i)
            elif v["type"] == "int":
                if v["value"] != p["value"]:
                    _check_pair(v["value"], p["value"], sym, i, v)
                    v["symbol"] = sym.name
            elif v["type"] == "int_list":
                _tag(v, p, "value", "symbols", k, sym, i)
            elif v.get("value") != p.get("value"):
                raise ExportError("%s (%s) changes with dynamic dim '%s': %r at %d, %r at %d"
                                  % (_where(v, i), v["type"], sym.name, v.get("value"), hi,
                                     p.get("value"), lo))
    names = {base["values"][vid]["weight"] for vid in prefix}
    prefix_constants(base, prefix)
    return names


def _prefix_dims(v, p, sym, base_weights, probe_weights):
    """The dims of constant v (shape at the bound) that are the probe's cut to max - 1, when
    the probe's tensor equals the bound's tensor cut there; else None."""
    if base_weights is None or probe_weights is None or len(v["shape"]) != len(p["shape"]):
        return None
    dims = [d for d, (x, y) in enumerate(zip(v["shape"], p["shape"])) if x != y]
    if any((v["shape"][d], p["shape"][d]) != (sym.max, sym.max - 1) for d in dims):
        return None
    t, other = base_weights.get(v["weight"]), probe_weights.get(p.get("weight"))
    if t is None or other is None:
        return None
    cut = t
    for d in dims:
        cut = cut.narrow(d, 0, sym.max - 1)
    if cut.shape != other.shape or not torch.equal(cut, other):
        return None
    return dims


def prefix_constants(method, prefix):
    """Rewrites method (JSON) so that every reader of a prefix constant (value id -> {dim:
    symbol}) reads it through slice nodes [0, symbol) along those dims, added at the front."""
    renamed = {}
    front = []
    values = method["values"]
    for vid, dims in sorted(prefix.items()):
        src = vid
        shape = list(values[vid]["shape"])
        tags = [None] * len(shape)
        for d, name in sorted(dims.items()):
            tags[d] = name
            out = {"type": "tensor", "name": "%s.prefix%d" % (values[vid]["name"], d),
                   "dtype": values[vid]["dtype"], "shape": list(shape),
                   "dim_symbols": list(tags)}
            ints = []
            for value in (d, 0, shape[d], 1):
                values.append({"type": "int", "value": value})
                ints.append(len(values) - 1)
            values[ints[2]]["symbol"] = name  # end = the symbol's size
            values.append(out)
            front.append({"op": "tern::slice", "args": [src] + ints, "outputs": [len(values) - 1],
                          "name": values[vid]["name"]})
            src = len(values) - 1
        renamed[vid] = src
    for n in method["nodes"]:
        n["args"] = [renamed.get(a, a) for a in n["args"]]
    for v in values:
        if v["type"] == "tensor_list":
            v["value"] = [renamed.get(a, a) for a in v["value"]]
    method["outputs"] = [renamed.get(a, a) for a in method["outputs"]]
    method["nodes"] = front + method["nodes"]


def check_weights(base, probes, symbols, prefixed=()):
    """Raises ExportError when a constant's values change with a symbol (a same-shaped constant
    computed from the input's size, such as 1/sqrt(seq) folded into a tensor). `prefixed`:
    constants merge() accepted as prefix tables (checked there)."""
    for probe, sym in zip(probes, symbols):
        for name, t in base.items():
            if name in prefixed:
                continue
            other = probe.get(name)
            if other is None or other.shape != t.shape or not torch.equal(other, t):
                raise ExportError(
                    "constant '%s' changes with dynamic dim '%s' (at %d and %d): it is computed "
                    "from the input's size; tern cannot make constants dynamic: pass it as an "
                    "input or compute it with ops on the input" % (name, sym.name, sym.max,
                                                                    sym.max - 1))


def _check_pair(a, b, sym, i, v):
    if (a, b) != (sym.max, sym.max - 1):
        raise ExportError(
            "%s is %r at %s = %d and %r at %s = %d: a size derived from the dynamic dim (such as "
            "2*%s or %s+1), which tern's format 1.1 cannot express (only dims equal to a "
            "symbol)" % (_where(v, i), a, sym.name, sym.max, b, sym.name, sym.max - 1, sym.name,
                         sym.name))


def _tag(v, p, key, tag_key, k, sym, i):
    a, b = v[key], p[key]
    if len(a) != len(b):
        raise ExportError("%s changes rank with dynamic dim '%s'" % (_where(v, i), sym.name))
    tags = v.get(tag_key) or [None] * len(a)
    for d, (x, y) in enumerate(zip(a, b)):
        if x != y:
            _check_pair(x, y, sym, i, v)
            tags[d] = sym.name
    if any(t is not None for t in tags):
        v[tag_key] = tags
