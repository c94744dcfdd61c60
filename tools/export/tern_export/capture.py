"""Capturing a torch.nn.Module as an ATen-level FX graph, on either PyTorch line.

- PyTorch >= 2.1: torch.export.export(module.eval(), args), then run_decompositions() with the
  core-ATen table minus the operators tern implements directly (they stay whole).
- PyTorch < 2.1 (Debian's 1.13): make_fx over functionalize(f), where f calls the module through
  functional_call with its parameters and buffers as explicit arguments (so they keep their
  names), with the same decomposition rule applied to torch._decomp.decomposition_table.

Both give a `Captured`: a GraphModule whose placeholders are described by `placeholders`
(("const", name, tensor) for a parameter/buffer/constant, ("input", i, name) for the i-th
example input), whose output node returns a flat sequence of the user outputs (pytree leaves in
torch.utils._pytree order), and the example values to propagate.
"""
import torch
import torch.utils._pytree as pytree

from .errors import CaptureError, ExportError


def torch_version():
    parts = torch.__version__.split("+")[0].split(".")
    nums = []
    for p in parts[:2]:
        digits = "".join(c for c in p if c.isdigit())
        nums.append(int(digits or 0))
    return tuple(nums)


class Captured:
    def __init__(self, gm, placeholders, method, out_spec=None):
        self.gm = gm
        self.placeholders = placeholders
        self.method = method
        self.out_spec = out_spec


def _decomposition_table(keep):
    """The core-ATen decomposition table without the operators in `keep`."""
    if hasattr(torch.export, "default_decompositions"):
        table = torch.export.default_decompositions()
    else:
        from torch._decomp import core_aten_decompositions
        table = core_aten_decompositions()
        if isinstance(table, dict):
            table = dict(table)
    for op in keep:
        if op in table:
            table.pop(op)
    return table


def _capture_export(module, args, keep):
    try:
        ep = torch.export.export(module, tuple(args))
    except Exception as e:  # torch's own message says what it could not trace
        raise CaptureError("torch.export.export failed: %s: %s" % (type(e).__name__, e)) from e
    try:
        ep = ep.run_decompositions(_decomposition_table(keep))
    except Exception as e:
        raise CaptureError("run_decompositions failed: %s: %s" % (type(e).__name__, e)) from e

    sig = ep.graph_signature
    constants = dict(getattr(ep, "constants", {}) or {})
    constants.update(getattr(ep, "tensor_constants", {}) or {})
    state = ep.state_dict

    def lookup(target):
        if target in state:
            return state[target]
        if target in constants:
            return constants[target]
        raise ExportError("torch.export graph refers to '%s', which is neither in the "
                          "state_dict nor in the constants" % target)

    placeholders = []
    nodes = [n for n in ep.graph_module.graph.nodes if n.op == "placeholder"]
    user_index = 0
    if hasattr(sig, "input_specs"):
        kinds = []
        for spec in sig.input_specs:
            kind = getattr(spec.kind, "name", str(spec.kind))
            kinds.append((kind, spec.target, getattr(spec.arg, "name", None)))
    else:  # torch 2.1: the older signature fields
        kinds = []
        for n in nodes:
            if n.name in sig.inputs_to_parameters:
                kinds.append(("PARAMETER", sig.inputs_to_parameters[n.name], n.name))
            elif n.name in sig.inputs_to_buffers:
                kinds.append(("BUFFER", sig.inputs_to_buffers[n.name], n.name))
            else:
                kinds.append(("USER_INPUT", None, n.name))
    if len(kinds) != len(nodes):
        raise ExportError("torch.export graph has %d placeholders but its signature lists %d "
                          "inputs" % (len(nodes), len(kinds)))
    for (kind, target, name) in kinds:
        if kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            placeholders.append(("const", target, lookup(target)))
        elif kind == "USER_INPUT":
            placeholders.append(("input", user_index, name))
            user_index += 1
        else:
            raise NotImplementedError("tern_export: graph input kind %s ('%s') is not supported "
                                      "yet" % (kind, target or name))

    if hasattr(sig, "output_specs"):
        for spec in sig.output_specs:
            kind = getattr(spec.kind, "name", str(spec.kind))
            if kind != "USER_OUTPUT":
                raise NotImplementedError(
                    "tern_export: the model mutates %s '%s' (output kind %s); mutable state is "
                    "not supported by the exporter yet" % (
                        "a buffer" if "BUFFER" in kind else "an input", spec.target, kind))
    elif getattr(sig, "buffers_to_mutate", None):
        raise NotImplementedError("tern_export: the model mutates buffers %s; mutable state is "
                                  "not supported by the exporter yet"
                                  % sorted(sig.buffers_to_mutate.values()))
    return Captured(ep.graph_module, placeholders, "torch.export (torch %s)" % torch.__version__)


def _functionalize():
    if hasattr(torch, "func") and hasattr(torch.func, "functionalize"):
        return torch.func.functionalize
    try:
        import functorch
        return functorch.functionalize
    except (ImportError, AttributeError):
        return None


def _functional_call():
    if hasattr(torch, "func") and hasattr(torch.func, "functional_call"):
        return torch.func.functional_call
    from torch.nn.utils.stateless import functional_call
    return functional_call


def _capture_make_fx(module, args, keep):
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch._decomp import decomposition_table

    named = list(module.named_parameters()) + list(module.named_buffers())
    names = [n for n, _ in named]
    # Parameters keep requires_grad and grad stays enabled while tracing: modules with an
    # inference fast path (nn.TransformerEncoderLayer) then take their composite ATen path.
    state = [t.detach().requires_grad_(t.requires_grad) for _, t in named]
    k = len(state)
    call = _functional_call()

    def flat_forward(*flat):
        out = call(module, dict(zip(names, flat[:k])), tuple(flat[k:]))
        return pytree.tree_flatten(out)[0]

    # Decompositions into ATen operators only (torch._decomp); those of torch._refs would
    # lower to prims.* operators.
    table = {op: fn for op, fn in decomposition_table.items()
             if op not in keep and getattr(fn, "__module__", "").startswith("torch._decomp")}
    functionalize = _functionalize()
    example = list(state) + [a.clone() for a in args]
    try:
        # Stage 1 traces the module as is (grad enabled, parameters requiring grad, so the
        # module takes the same path it would in training-capable eager mode); stage 2
        # retraces that graph under functionalization, which removes in-place operators.
        # (functionalize hides requires_grad, so it cannot be applied in one step.)
        with torch.enable_grad():
            gm = make_fx(flat_forward, decomposition_table=table)(*example)
        if functionalize is not None:
            with torch.no_grad():
                gm = make_fx(functionalize(gm), decomposition_table=table)(
                    *[t.detach() for t in example])
    except Exception as e:
        raise CaptureError("make_fx failed: %s: %s" % (type(e).__name__, e)) from e
    placeholders = [("const", n, t.detach()) for n, t in zip(names, state)]
    placeholders += [("input", i, "x" if len(args) == 1 else "x%d" % i) for i in range(len(args))]
    return Captured(gm, placeholders, "make_fx+functionalize (torch %s)" % torch.__version__)


def capture(module, args, keep):
    """Captures `module` called on `args` (a tuple of tensors). `keep`: the ATen operator
    overloads tern maps directly, left out of the decomposition table."""
    module = module.eval()
    if torch_version() >= (2, 1):
        try:
            import torch.export  # noqa: F401  (a submodule, not always imported by torch)
        except ImportError:
            pass
        else:
            return _capture_export(module, args, keep)
    return _capture_make_fx(module, args, keep)
