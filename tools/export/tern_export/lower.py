"""Lowering a captured ATen FX graph to a tern method (graph_writer.MethodBuilder).

Every live node is evaluated in PyTorch on the example inputs (so each value has a concrete
dtype and shape) and then:
- folded to a constant when none of its inputs depends on a method input (weights, buffers,
  literals and earlier folded values only), or when its result depends only on shapes
  (sym_size, zeros_like, ...);
- otherwise mapped by the explicit table in ops_table.py to one or more tern nodes.
A node without a mapping is recorded; after the whole graph is seen, UnsupportedOpError names
the first one with its source location and lists the model's ATen operators.
"""
import operator
import os
import re

import torch
import torch.fx

from . import (branch_convs, clamp_affine, complex_ops, erf_gelu, gqa, high_rank_dims,
               interleave, ops_table, row_views, star_relu)
from .complex_ops import CVal
from .errors import ExportError, Unsupported, UnsupportedOpError
from .node_meta import node_shape
from .graph_writer import tern_dtype
from .values import POISON, Const, Multi, Poison, TVal, Unavailable

_VIEW_OPS = tuple(getattr(torch.ops.aten, name).default for name in ("view", "_unsafe_view")
                  if hasattr(torch.ops.aten, name))


def op_name(target):
    """"aten.add.Tensor" for an OpOverload; the Python name for other callables."""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    mod = getattr(target, "__module__", None) or ""
    return "%s.%s" % (mod, getattr(target, "__name__", repr(target)))


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def source_location(node):
    """(file, line, function, code) of the frame of node.meta['stack_trace'] that is the
    model's own code: the innermost frame outside PyTorch's package (else the innermost
    frame), or None when the capture recorded no stack trace."""
    trace = node.meta.get("stack_trace") if hasattr(node, "meta") else None
    if not trace:
        return None
    lines = trace.rstrip().splitlines()
    frames = []
    for i, line in enumerate(lines):
        m = _FRAME.search(line)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.search(
                lines[i + 1]) else ""
            frames.append((m.group(1), int(m.group(2)), m.group(3), code))
    if not frames:
        return None
    for f in reversed(frames):
        if not os.path.abspath(f[0]).startswith(_TORCH_DIR):
            return f
    return frames[-1]


def module_path(node):
    stack = node.meta.get("nn_module_stack") if hasattr(node, "meta") else None
    if not stack:
        return None
    last = list(stack.values())[-1]
    path = last[0] if isinstance(last, (tuple, list)) else str(last)
    return path or None


def _flat(x):
    if isinstance(x, (list, tuple)):
        for y in x:
            yield from _flat(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _flat(y)
    else:
        yield x


def _map(x, fn):
    if isinstance(x, tuple):
        return tuple(_map(y, fn) for y in x)
    if isinstance(x, list):
        return [_map(y, fn) for y in x]
    if isinstance(x, dict):
        return {k: _map(v, fn) for k, v in x.items()}
    return fn(x)


def _last_dim(node):
    shape = node_shape(node)
    return shape[-1] if shape else None


_PRODUCTS = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default)


def _through_channel_views(x):
    """The product a batch norm's input `x` comes from through views that keep the last dim,
    when the batch norm's channels are that last dim (a 2-D input [rows, C]): a linear's output
    flattened for BatchNorm1d (LeViT's LinearNorm: linear -> flatten(0, 1) -> bn -> reshape;
    the linear an mm, addmm or a bmm by an expanded weight), whose channels are the product's
    output features. None when x is no such view. The product and each view read once."""
    if x.target not in ops_table.VIEW_OPS:
        return None
    shape = node_shape(x)
    if shape is None or len(shape) != 2:
        return None
    c = shape[-1]
    src = x
    while (isinstance(src, torch.fx.Node) and src.op == "call_function"
           and src.target in ops_table.VIEW_OPS and len(src.users) == 1
           and _last_dim(src) == c):
        src = src.args[0]
    if (not isinstance(src, torch.fx.Node) or src.op != "call_function"
            or src.target not in _PRODUCTS or len(src.users) != 1 or _last_dim(src) != c):
        return None
    return src


class Lowerer:
    """Lowers one captured graph into `mb` (a MethodBuilder)."""

    def __init__(self, captured, example_inputs, mb, fold_repeat_kv=True):
        self.fold_repeat_kv = fold_repeat_kv  # gqa.fold_repeat_kv before lowering
        self.cap = captured
        self.gm = captured.gm
        self.mb = mb
        self.inputs = list(example_inputs)
        self.env = {}        # fx.Node -> LVal
        self.real = {}       # fx.Node -> real value
        self.unsupported = []  # (node, op name, reason)
        self.node = None     # the node being lowered
        self.bn_folds = {}   # conv/addmm/mm node -> batch-norm node folded into it
        self.folded_bn = set()
        self.states = {}     # buffer name -> state value id (buffers the module updates)
        self.in_place = {}   # fx node -> state value id it writes in place (its new value)
        self.float64_nodes = []  # "node (file:line)" of float64 results computed in float32

    # Helpers used by the handlers ------------------------------------------------------------

    def tensor_id(self, lv, what="argument"):
        """The value id of a tensor LVal (a constant tensor becomes a weight)."""
        if isinstance(lv, TVal):
            return lv.vid
        if isinstance(lv, Const) and isinstance(lv.value, torch.Tensor):
            return self.weight(lv)
        raise Unsupported("%s is %r, expected a tensor" % (what, getattr(lv, "value", lv)))

    def weight(self, lv, name=None):
        """The value id of the constant tensor lv (f64 constants are stored as f32)."""
        t = lv.value
        if t.dtype == torch.float64:
            t = t.to(torch.float32)
        try:
            tern_dtype(t.dtype)
        except ValueError as e:
            raise Unsupported("constant %s: %s" % (lv.name or "tensor", e))
        return self.mb.weight(name or lv.name or ("const_" + self.node.name), t)

    def scalar_id(self, v, as_float=None):
        """An Int/Double/Bool value for a Python scalar (bool -> Bool unless as_float is set)."""
        if isinstance(v, Const):
            v = v.value
        if isinstance(v, torch.Tensor):
            raise Unsupported("expected a scalar, found a tensor")
        if as_float is True:
            return self.mb.double(v)
        if isinstance(v, bool):
            return self.mb.bool(v)
        if isinstance(v, int):
            return self.mb.int(v) if not as_float else self.mb.double(v)
        if isinstance(v, float):
            return self.mb.double(v)
        raise Unsupported("expected a number, found %r" % (v,))

    def opt_double(self, v):
        v = v.value if isinstance(v, Const) else v
        return self.mb.none() if v is None else self.mb.double(v)

    def emit(self, op, args, real, name=None):
        """Emits tern::<op>(args) whose output(s) have the real value(s) `real` (a tensor, or a
        list of tensors for a multi-output op). Returns the TVal (or list of TVals)."""
        reals = real if isinstance(real, (list, tuple)) else [real]
        target = self.in_place.get(self.node)
        if target is not None and not isinstance(real, (list, tuple)):
            # The new value of a state tensor, written straight into it (_plan_in_place).
            self.mb.node("tern::" + op, args, [target], name=self.node_label(),
                         source=self.node_source())
            return TVal(target, real)
        outs = []
        base = self.node.name
        for i, r in enumerate(reals):
            try:
                tern_dtype(r.dtype)
            except ValueError as e:
                raise Unsupported("result %d: %s" % (i, e))
            vid = self.mb.tensor(base if len(reals) == 1 else "%s.%d" % (base, i), r.dtype,
                                 r.shape)
            outs.append(TVal(vid, r))
        self.mb.node("tern::" + op, args, [o.vid for o in outs], name=self.node_label(),
                     source=self.node_source())
        return outs if isinstance(real, (list, tuple)) else outs[0]

    def cast(self, lv, dtype):
        """lv converted to dtype: constants in torch, activations with tern::cast (float64
        activations are float32: _as_float32)."""
        if dtype == torch.float64 and not isinstance(lv, Const):
            dtype = torch.float32
        if isinstance(lv, Const):
            if isinstance(lv.value, torch.Tensor) and lv.value.dtype != dtype:
                return Const(lv.value.to(dtype), lv.name)
            return lv
        if lv.dtype == dtype:
            return lv
        return self.emit("cast", [lv.vid], lv.real.to(dtype))

    def node_label(self):
        path = module_path(self.node)
        return path if path else self.node.name

    def node_source(self):
        loc = source_location(self.node)
        if not loc:
            return None
        return "%s:%d" % (os.path.basename(loc[0]), loc[1])

    # Driver -----------------------------------------------------------------------------------

    def _live_nodes(self, graph):
        out = [n for n in graph.nodes if n.op == "output"]
        out += [v for _, v in self.cap.mutations if isinstance(v, torch.fx.Node)]
        live = set(out)
        stack = list(out)
        while stack:
            n = stack.pop()
            for m in n.all_input_nodes:
                if m not in live:
                    live.add(m)
                    stack.append(m)
        return live

    def _plan_bn_folds(self, live):
        for n in self.gm.graph.nodes:
            if n not in live or n.op != "call_function" or n.target not in ops_table.BN_OPS:
                continue
            if n.target is ops_table.NATIVE_BN and n.args[5]:
                continue  # training-mode batch norm: reported by its handler
            src = n.args[0]
            if not isinstance(src, torch.fx.Node) or src.op != "call_function":
                continue
            through_views = _through_channel_views(src)
            if through_views is not None:
                self.bn_folds[through_views] = n
                continue
            if src.target not in ops_table.BN_FOLDABLE or len(src.users) != 1:
                continue
            self.bn_folds[src] = n

    def _plan_in_place(self, placeholders):
        """Which state updates can write the state directly: an index_copy of the state's own
        placeholder (a KV cache written at its positions) that every other reader of the old
        value precedes. The other updates are copied into the state at the end (_write_states)."""
        order = {n: i for i, n in enumerate(self.gm.graph.nodes)}
        by_name = {desc[1]: n for n, desc in zip(placeholders, self.cap.placeholders)
                   if desc[0] == "state"}
        for name, new in self.cap.mutations:
            p = by_name.get(name)
            if (p is None or not isinstance(new, torch.fx.Node) or new.op != "call_function"
                    or new.target is not torch.ops.aten.index_copy.default or new.args[0] is not p):
                continue
            if all(u is new or order[u] < order[new] for u in p.users):
                self.in_place[new] = self.states[name]

    def _write_states(self):
        """Copies each state's new value into it, after every other node, unless its update
        already wrote it in place."""
        for name, new in self.cap.mutations:
            vid = self.states[name]
            if isinstance(new, torch.fx.Node) and self.in_place.get(new) == vid:
                continue
            lv = self.env[new] if isinstance(new, torch.fx.Node) else Const(new)
            if isinstance(lv, Poison):
                continue  # reported with the unsupported operators
            self.node = new if isinstance(new, torch.fx.Node) else self.node
            src = self.tensor_id(lv, "the new value of buffer '%s'" % name)
            if src != vid:
                self.mb.node("tern::clone", [src], [vid], name="update " + name)

    def run(self):
        graph = self.gm.graph
        if self.fold_repeat_kv:
            gqa.fold_repeat_kv(self.gm)
        row_views.fold_row_views(self.gm)
        interleave.fold_interleaves(self.gm)
        high_rank_dims.fold_high_rank_permutes(self.gm)
        high_rank_dims.fold_high_rank_elementwise(self.gm)
        erf_gelu.fold_erf_gelus(self.gm)
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        constants = {n: desc[2] for n, desc in zip(placeholders, self.cap.placeholders)
                     if desc[0] == "const" and isinstance(desc[2], torch.Tensor)}
        branch_convs.fold_branch_convs(self.gm, constants)
        clamp_affine.fold_clamp_affines(self.gm, constants)
        star_relu.fold_star_relus(self.gm, constants)
        live = self._live_nodes(graph)
        self._plan_bn_folds(live)
        if len(placeholders) != len(self.cap.placeholders):
            raise ExportError("captured graph has %d placeholders, expected %d"
                              % (len(placeholders), len(self.cap.placeholders)))
        for n, desc in zip(placeholders, self.cap.placeholders):
            self.node = n
            if desc[0] == "const":
                t = desc[2]
                # Detached: PyTorch picks some kernels by whether an operand requires grad (a
                # float attention mask from a parameter sends SDPA down its math path, whose
                # output layout differs from the traced one), and the trace saw no grad.
                self.real[n] = t.detach() if isinstance(t, torch.Tensor) else t
                self.env[n] = Const(t.detach(), desc[1])
            elif desc[0] == "state":
                t = desc[2]
                self.real[n] = t
                try:
                    vid = self.mb.state(desc[1], t)
                except ValueError as e:
                    raise ExportError("buffer '%s' is updated in place (a state tensor): %s"
                                      % (desc[1], e))
                self.states[desc[1]] = vid
                self.env[n] = TVal(vid, t)
            else:
                x = self.inputs[desc[1]]
                self.real[n] = x
                try:
                    vid = self.mb.input(desc[2], x.dtype, x.shape)
                except ValueError as e:
                    hint = (": tern has no float64 kernels; pass the input as float32 (float64 "
                            "arithmetic inside the model runs in float32, docs/export.md)"
                            if x.dtype == torch.float64 else "")
                    raise ExportError("input '%s': %s%s" % (desc[2], e, hint))
                self.env[n] = TVal(vid, x)
        self._plan_in_place(placeholders)
        for n in graph.nodes:
            if n.op in ("placeholder", "output") or n not in live:
                continue
            self.node = n
            if n.op == "get_attr":
                t = self._get_attr(n.target)
                self.real[n] = t
                self.env[n] = Const(t.detach() if isinstance(t, torch.Tensor) else t, n.target)
            elif n.op == "call_function":
                self._call(n)
            else:
                raise ExportError("unexpected FX node %s (%s) in the captured graph"
                                  % (n.name, n.op))
        if self.unsupported:
            self._raise_unsupported()
        self._write_states()
        out_node = [n for n in graph.nodes if n.op == "output"][0]
        self.node = out_node
        return self._outputs(out_node)

    def _get_attr(self, target):
        obj = self.gm
        for part in target.split("."):
            obj = getattr(obj, part)
        return obj

    @staticmethod
    def _evaluate(n, real_args, real_kwargs):
        """The node's value on the example inputs, computed by PyTorch. A `view` whose input's
        real strides differ from the traced ones is taken as a `reshape` (the same values; tern's
        tensors are contiguous, so its reshape is a view either way): an eager kernel may lay
        out its output otherwise than its meta function said it would (CPU SDPA with a mask
        that requires grad: [B, H, S, D] in memory where the trace had [B, S, H, D], so T5's
        transpose + view after attention failed before constants were detached)."""
        try:
            return n.target(*real_args, **real_kwargs)
        except RuntimeError:
            if n.target not in _VIEW_OPS or not isinstance(real_args[0], torch.Tensor):
                raise
            return real_args[0].reshape(*real_args[1:], **real_kwargs)

    def _call(self, n):
        args = _map(n.args, lambda a: self.env[a] if isinstance(a, torch.fx.Node) else Const(a))
        kwargs = _map(n.kwargs, lambda a: self.env[a] if isinstance(a, torch.fx.Node) else Const(a))
        # The real value, computed by PyTorch.
        real_args = _map(n.args, lambda a: self.real[a] if isinstance(a, torch.fx.Node) else a)
        real_kwargs = _map(n.kwargs, lambda a: self.real[a] if isinstance(a, torch.fx.Node) else a)

        if n.target is operator.getitem:
            self.real[n] = real_args[0][real_args[1]]
            self.env[n] = self._getitem(n, args[0], real_args[1])
            return
        try:
            real = self._evaluate(n, real_args, real_kwargs)
        except Exception as e:
            raise ExportError("evaluating %s (node '%s') on the example inputs failed: %s"
                              % (op_name(n.target), n.name, e)) from e
        self.real[n] = real
        flat = list(_flat(args)) + list(_flat(kwargs))
        if any(isinstance(a, Poison) for a in flat):
            # Downstream of an unsupported operator: nothing is emitted, but an operator
            # without a mapping is still reported.
            if ops_table.handler_for(n.target) is None and n.target not in ops_table.SHAPE_ONLY:
                self.unsupported.append((n, op_name(n.target), None))
            self.env[n] = POISON
            return
        if n.target in ops_table.RANDOM:
            self.unsupported.append((n, op_name(n.target), ops_table.RANDOM_REASON))
            self.env[n] = POISON
            return
        if n.target in ops_table.SHAPE_ONLY:
            self.env[n] = Const(self._materialize(real))
            return
        if not any(isinstance(a, (TVal, Multi, CVal)) for a in flat):
            self.env[n] = self._fold(n, real, flat)
            return
        real = self._as_float32(n, real)
        self.real[n] = real
        if complex_ops.involves_complex(real, flat):
            try:
                self.env[n] = complex_ops.lower(self, n, ops_table.bind(n.target, args, kwargs),
                                                real)
            except Unsupported as e:
                self.unsupported.append((n, op_name(n.target), str(e)))
                self.env[n] = POISON
            return
        handler = ops_table.handler_for(n.target)
        if handler is None:
            self.unsupported.append((n, op_name(n.target), None))
            self.env[n] = POISON
            return
        try:
            self.env[n] = handler(self, n, ops_table.bind(n.target, args, kwargs), real)
        except Unsupported as e:
            self.unsupported.append((n, op_name(n.target), str(e)))
            self.env[n] = POISON

    def _as_float32(self, n, real):
        """A float64 result computed from activations, as float32: tern has no f64 kernels, so
        the model's float64 arithmetic on activations (RoPE tables in float64, as Flux's) runs
        in float32 and the node is recorded (Lowerer.float64_nodes; export warns). Constant
        float64 work is folded in float64 and stored as f32 like every f64 constant."""
        reals = real if isinstance(real, (list, tuple)) else [real]
        if not any(isinstance(r, torch.Tensor) and r.dtype == torch.float64 for r in reals):
            return real
        loc = source_location(n)
        self.float64_nodes.append("%s (%s)" % (n.name, "%s:%d" % (os.path.basename(loc[0]),
                                                                  loc[1]) if loc else "no source"))
        fixed = [r.float() if isinstance(r, torch.Tensor) and r.dtype == torch.float64 else r
                 for r in reals]
        return type(real)(fixed) if isinstance(real, (list, tuple)) else fixed[0]

    def _materialize(self, real):
        if isinstance(real, torch.Tensor) and self.node.target in ops_table.UNINITIALIZED:
            return torch.zeros_like(real)
        return real

    def _fold(self, n, real, flat):
        if isinstance(real, torch.Tensor):
            real = real.detach()
        names = [a.name for a in flat if isinstance(a, Const) and a.name
                 and isinstance(a.value, torch.Tensor)]
        return Const(real, names[0] if len(names) == 1 else None)

    def _getitem(self, n, src, index):
        if isinstance(src, Poison):
            return POISON
        if isinstance(src, Const):
            return Const(src.value[index], src.name)
        if isinstance(src, Multi):
            item = src.get(index)
            if isinstance(item, Unavailable):
                self.unsupported.append(
                    (n, op_name(item.op), "output %d of %s is used, but tern computes only "
                     "the first output of this operator" % (item.index, op_name(item.op))))
                return POISON
            return item
        raise ExportError("getitem on %s (node '%s')" % (type(src).__name__, n.name))

    def _outputs(self, out_node):
        results = out_node.args[0]
        if not isinstance(results, (list, tuple)):
            results = [results]
        out_ids = []
        input_ids = set(self.mb.inputs)
        for i, r in enumerate(results):
            lv = self.env[r] if isinstance(r, torch.fx.Node) else Const(r)
            self.node = r if isinstance(r, torch.fx.Node) else out_node
            if isinstance(lv, Const) and not isinstance(lv.value, torch.Tensor):
                raise ExportError("output %d is the Python value %r; tern methods return tensors"
                                  % (i, lv.value))
            if isinstance(lv, Const):
                vid = self.weight(lv, name="output%d_const" % i)
                lv = TVal(vid, lv.value)
            if isinstance(lv, CVal):
                raise ExportError("output %d is a complex tensor; tern methods return real "
                                  "tensors (return torch.view_as_real(z), or z.real and z.imag)"
                                  % i)
            if not isinstance(lv, TVal):
                raise ExportError("output %d (%s) is not a tensor" % (i, type(lv).__name__))
            vid = lv.vid
            if vid in input_ids or vid in out_ids or not self.mb.is_defined_by_node(vid):
                self.node = out_node
                vid = self.emit("clone", [vid], lv.real).vid
            out_ids.append(vid)
        self.mb.outputs = out_ids
        return out_ids

    def graph_ops(self):
        ops = []
        for n in self.gm.graph.nodes:
            if n.op == "call_function" and n.target is not operator.getitem:
                name = op_name(n.target)
                if name not in ops:
                    ops.append(name)
        return sorted(ops)

    def _raise_unsupported(self):
        first, op, reason = self.unsupported[0]
        bad = []
        for _, name, _ in self.unsupported:
            if name not in bad:
                bad.append(name)
        where = "node '%s'" % first.name
        path = module_path(first)
        if path:
            where += " in module '%s'" % path
        loc = source_location(first)
        if loc:
            where += ", %s:%d in %s: %s" % loc
        msg = "tern_export: unsupported operator %s (%s)" % (op, where)
        if reason:
            msg += ": " + reason
        if len(bad) > 1:
            msg += "\nother unsupported operators: " + ", ".join(b for b in bad if b != op)
        all_ops = self.graph_ops()
        for b in bad:
            if b not in all_ops:
                all_ops.append(b)
        msg += "\nATen operators in this model (* = unsupported): " + ", ".join(
            ("*" + o) if o in bad else o for o in sorted(all_ops))
        raise UnsupportedOpError(msg, op=op, unsupported=bad, model_ops=sorted(all_ops))
