"""Builds a graph.json document (docs/graph-format.md): values, nodes, inputs and outputs of one
method, plus the constant tensors that go to the safetensors file."""
import json
import math

from .safetensors_io import DTYPES


def tern_dtype(torch_dtype):
    """The tern dtype name of a torch dtype ("f32", ...); ValueError if tern has none."""
    if torch_dtype not in DTYPES:
        raise ValueError("dtype %s has no tern equivalent" % torch_dtype)
    return DTYPES[torch_dtype][1]


def _double(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


class MethodBuilder:
    """Values and nodes of one method. Value ids are positions in `values`."""

    def __init__(self, name="forward", share_scalars=True):
        self.name = name
        # Equal scalar attributes share one value, except in the lowerings of a dynamic export
        # (dynamic.py), whose values must line up one to one across sizes.
        self.share_scalars = share_scalars
        self.symbols = []          # [{"name", "min", "max"}]: dynamic dims (docs/dynamic-shapes.md)
        self.values = []
        self.nodes = []
        self.inputs = []
        self.outputs = []
        self.weights = {}          # safetensors name -> torch.Tensor (contiguous)
        self._scalars = {}         # (type, repr) -> id, so equal attributes share a value
        self._weight_ids = {}      # id(tensor) -> value id
        self._names = set()

    def _unique(self, name):
        base, n = name, 1
        while name in self._names:
            n += 1
            name = "%s_%d" % (base, n)
        self._names.add(name)
        return name

    def _add(self, v):
        self.values.append(v)
        return len(self.values) - 1

    # Tensors -------------------------------------------------------------------------------

    def tensor(self, name, dtype, shape):
        """A new activation tensor value; returns its id."""
        return self._add({"type": "tensor", "name": self._unique(name), "dtype": tern_dtype(dtype),
                          "shape": [int(d) for d in shape]})

    def input(self, name, dtype, shape):
        vid = self.tensor(name, dtype, shape)
        self.inputs.append(vid)
        return vid

    def weight(self, name, t):
        """A constant tensor value whose bytes go to the safetensors file under a unique name
        derived from `name`. The same tensor object given twice gives the same value."""
        key = id(t)
        if key in self._weight_ids:
            return self._weight_ids[key][0]
        original = t
        t = t.detach().contiguous()
        name = self._unique(name)
        vid = self._add({"type": "tensor", "name": name, "dtype": tern_dtype(t.dtype),
                         "shape": list(t.shape), "weight": name})
        self.weights[name] = t
        self._weight_ids[key] = (vid, original)  # keeps the keyed object alive: ids stay unique
        return vid

    def state(self, name, t, shared=None):
        """A state tensor value (persists across executions, docs/graph-format.md) holding `t`
        at first: zero-initialised when t is all zeros, else from a weight of its bytes.
        `shared`: the program-level name under which the methods of one program share it."""
        t = t.detach().contiguous()
        name = self._unique(name)
        v = {"type": "tensor", "name": name, "dtype": tern_dtype(t.dtype),
             "shape": list(t.shape), "state": True}
        if t.numel() > 0 and bool((t != 0).any()):
            init = self._unique(name + ".init")
            self.weights[init] = t
            v["init"] = init
        if shared:
            v["shared"] = shared
        return self._add(v)

    # Scalars -------------------------------------------------------------------------------

    def _scalar(self, kind, value):
        key = (kind, json.dumps(value))
        if not self.share_scalars:
            key = (kind, json.dumps(value), len(self.values))
        if key not in self._scalars:
            v = {"type": kind}
            if kind != "none":
                v["value"] = value
            self._scalars[key] = self._add(v)
        return self._scalars[key]

    def int(self, v):
        return self._scalar("int", int(v))

    def double(self, v):
        return self._scalar("double", _double(v))

    def bool(self, v):
        return self._scalar("bool", bool(v))

    def int_list(self, v):
        return self._scalar("int_list", [int(x) for x in v])

    def double_list(self, v):
        return self._scalar("double_list", [_double(x) for x in v])

    def string(self, v):
        return self._scalar("string", str(v))

    def none(self):
        return self._scalar("none", None)

    def tensor_list(self, ids):
        return self._add({"type": "tensor_list", "value": list(ids)})

    # Nodes ---------------------------------------------------------------------------------

    def node(self, op, args, outputs, name=None, source=None):
        n = {"op": op, "args": list(args), "outputs": list(outputs)}
        if name:
            n["name"] = name
        if source:
            n["source"] = source
        self.nodes.append(n)

    def to_json(self):
        doc = {"name": self.name, "values": self.values, "inputs": self.inputs,
               "outputs": self.outputs, "nodes": self.nodes}
        if self.symbols:
            doc["symbols"] = self.symbols
        return doc

    def is_defined_by_node(self, vid):
        return any(vid in n["outputs"] for n in self.nodes)


def program_json(methods, producer, source_model, metadata, weights_file):
    """The graph.json document of `methods` (MethodBuilders, in order); weights_file: the
    safetensors file name, or None when there are no weights."""
    if isinstance(methods, MethodBuilder):
        methods = [methods]
    # Version 2 adds dynamic shapes; a static program stays a version-1 document.
    dynamic = any(m.symbols for m in methods)
    doc = {"format": "tern-graph", "version": 2 if dynamic else 1, "producer": producer,
           "source_model": source_model, "metadata": {k: str(v) for k, v in metadata.items()}}
    if weights_file:
        doc["weights"] = weights_file
    doc["methods"] = [m.to_json() for m in methods]
    return doc
