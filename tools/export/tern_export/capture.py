"""Capturing a torch.nn.Module as an ATen-level FX graph, on either PyTorch line.

- PyTorch >= 2.1: torch.export.export(module.eval(), args), then run_decompositions() with the
  core-ATen table minus the operators tern implements directly (they stay whole).
- PyTorch < 2.1 (Debian's 1.13): make_fx over functionalize(f), where f calls the module through
  functional_call with its parameters and buffers as explicit arguments (so they keep their
  names), with the same decomposition rule applied to torch._decomp.decomposition_table.

Both give a `Captured`: a GraphModule whose placeholders are described by `placeholders`
(("const", name, tensor) for a parameter/buffer/constant, ("state", name, tensor) for a buffer
the module updates in place, ("input", i, name) for the i-th example input), whose output node
returns a flat sequence of the user outputs (pytree leaves in torch.utils._pytree order), and
`mutations`: [(buffer name, fx node of its new value)] — torch.export's buffer mutation outputs,
or functionalization's copy_ back into a buffer on the make_fx line, both taken out of the graph.
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
    def __init__(self, gm, placeholders, method, out_spec=None, mutations=()):
        self.gm = gm
        self.placeholders = placeholders
        self.method = method
        self.out_spec = out_spec
        self.mutations = list(mutations)


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


def _export_and_decompose(module, args, keep, strict):
    kw = {"strict": True} if strict else {}
    try:
        ep = torch.export.export(module, tuple(args), **kw)
    except Exception as e:  # torch's own message says what it could not trace
        raise CaptureError("torch.export.export%s failed: %s: %s"
                           % (" (strict)" if strict else "", type(e).__name__, e)) from e
    try:
        return ep.run_decompositions(_decomposition_table(keep))
    except Exception as e:
        raise CaptureError("run_decompositions%s failed: %s: %s"
                           % (" (strict)" if strict else "", type(e).__name__, e)) from e


def _capture_export(module, args, keep):
    # Non-strict tracing first (torch.export's default). A tensor the model reaches through a
    # plain Python object rather than a module attribute is lifted as a constant there, and
    # updating it in place fails in run_decompositions; strict tracing (TorchDynamo) sees such
    # tensors as the buffers they are registered as, so it is the second try. Strict tracing
    # holds a clone of every parameter (about 3x the weights at its peak): export_llm's
    # StaticCacheLM reads transformers' cache through its buffers so that non-strict works.
    strict = False
    try:
        ep = _export_and_decompose(module, args, keep, strict=False)
    except CaptureError as first:
        if torch_version() < (2, 3):
            raise
        strict = True
        try:
            ep = _export_and_decompose(module, args, keep, strict=True)
        except CaptureError as second:
            raise CaptureError("%s; retried with strict tracing: %s" % (first, second)) from first

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
    # Buffers the module updates in place (a KV cache, a position counter): state tensors.
    mutated = set()
    if hasattr(sig, "output_specs"):
        for spec in sig.output_specs:
            if getattr(spec.kind, "name", str(spec.kind)) == "BUFFER_MUTATION":
                mutated.add(spec.target)
    elif getattr(sig, "buffers_to_mutate", None):
        mutated = set(sig.buffers_to_mutate.values())
    for (kind, target, name) in kinds:
        if kind == "BUFFER" and target in mutated:
            placeholders.append(("state", target, lookup(target)))
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            placeholders.append(("const", target, lookup(target)))
        elif kind == "USER_INPUT":
            placeholders.append(("input", user_index, name))
            user_index += 1
        else:
            raise NotImplementedError("tern_export: graph input kind %s ('%s') is not supported "
                                      "yet" % (kind, target or name))

    # The output node returns the mutated buffers' new values first, then the user outputs:
    # the former become `mutations`, the output node keeps the latter.
    out_node = [n for n in ep.graph_module.graph.nodes if n.op == "output"][0]
    results = list(out_node.args[0])
    mutations = []
    user = []
    if hasattr(sig, "output_specs"):
        if len(sig.output_specs) != len(results):
            raise ExportError("torch.export graph returns %d values but its signature lists %d "
                              "outputs" % (len(results), len(sig.output_specs)))
        for spec, r in zip(sig.output_specs, results):
            kind = getattr(spec.kind, "name", str(spec.kind))
            if kind == "BUFFER_MUTATION":
                mutations.append((spec.target, r))
            elif kind == "USER_OUTPUT":
                user.append(r)
            else:
                raise NotImplementedError(
                    "tern_export: the model mutates %s '%s' (output kind %s); only buffers "
                    "may be updated in place (they become state tensors)" % (
                        "a parameter" if "PARAMETER" in kind else "an input", spec.target,
                        kind))
    else:  # torch 2.1: buffers_to_mutate maps output names to buffers, outputs first
        by_name = dict(sig.buffers_to_mutate)
        for r in results:
            name = getattr(r, "name", None)
            if name in by_name and len(mutations) < len(by_name):
                mutations.append((by_name[name], r))
            else:
                user.append(r)
    if mutations:
        out_node.args = (tuple(user),)
        ep.graph_module.recompile()
    return Captured(ep.graph_module, placeholders, "torch.export (torch %s, %s)" % (
        torch.__version__, "strict" if strict else "non-strict"), mutations=mutations)


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
    # Buffers are traced as copies: tracing runs the module, and a buffer it updates in place
    # (functionalization copies the new value back) must keep its value, in the model and as
    # the state's initial value. Parameters are not copied (no memory twice for the weights).
    num_params = len(list(module.named_parameters()))
    initial = [t.detach() if i < num_params else t.detach().clone()
               for i, (_, t) in enumerate(named)]
    state = [t.detach().requires_grad_(t.requires_grad) if i < num_params
             else t.detach().clone() for i, (_, t) in enumerate(named)]
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
    # Functionalization writes an updated buffer back with copy_(buffer, new value) at the end:
    # that buffer is state, and the copy_ leaves the graph (the lowering writes the state).
    graph_inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    mutations = []
    mutated = {}
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target is not torch.ops.aten.copy_.default:
            continue
        dst = n.args[0]
        if dst not in graph_inputs:
            continue
        i = graph_inputs.index(dst)
        if i >= k:
            raise NotImplementedError("tern_export: the model updates its input %d in place; "
                                      "only buffers may be (they become state tensors)" % (i - k))
        if i in mutated:
            raise ExportError("buffer '%s' is written back twice by functionalization" % names[i])
        mutated[i] = n.args[1]
        mutations.append((names[i], n.args[1]))
        gm.graph.erase_node(n)
    if mutations:
        gm.recompile()
    placeholders = [("state" if i in mutated else "const", n, t)
                    for i, (n, t) in enumerate(zip(names, initial))]
    placeholders += [("input", i, "x" if len(args) == 1 else "x%d" % i) for i in range(len(args))]
    return Captured(gm, placeholders, "make_fx+functionalize (torch %s)" % torch.__version__,
                    mutations=mutations)


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
