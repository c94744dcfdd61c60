"""python3 -m tern_export --module FILE.py:FACTORY --input-shape 1x3x224x224 -o OUT.pte

FACTORY is a callable in FILE.py (a class or a function) returning the nn.Module; it is called
without arguments. One --input-shape per model input (in order); --input-dtype gives each
input's dtype (one value for all, or one per input; default f32). Example inputs are random
normal (floats) or zeros (integers)."""
import argparse
import importlib.util
import os
import sys

import torch

from . import DEFAULT_BACKENDS, export
from .errors import ExportError

_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
           "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8,
           "u8": torch.uint8, "bool": torch.bool}


def _load_factory(spec):
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise SystemExit("tern_export: --module expects FILE.py:FACTORY, got %r" % spec)
    if not os.path.isfile(path):
        raise SystemExit("tern_export: --module: no such file %s" % path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    mod_spec = importlib.util.spec_from_file_location("_tern_export_model", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    if not hasattr(mod, name):
        raise SystemExit("tern_export: %s has no attribute %r" % (path, name))
    return getattr(mod, name)


def _shape(text):
    try:
        dims = [int(d) for d in text.lower().split("x")] if text not in ("", "scalar") else []
    except ValueError:
        raise argparse.ArgumentTypeError("bad shape %r (expected e.g. 1x3x224x224)" % text)
    if any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError("bad shape %r (negative size)" % text)
    return dims


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m tern_export",
                                description="Export a PyTorch module to a tern program.")
    p.add_argument("--module", required=True, help="FILE.py:FACTORY returning the nn.Module")
    p.add_argument("--input-shape", action="append", type=_shape, required=True,
                   help="shape of one input, e.g. 1x3x224x224 (repeat per input)")
    p.add_argument("--input-dtype", action="append", choices=sorted(_DTYPES),
                   help="dtype of the inputs (one for all, or one per input; default f32)")
    p.add_argument("-o", "--output", required=True, help="the .pte to write")
    p.add_argument("--keep-graph", metavar="DIR",
                   help="keep graph.json and weights.safetensors in DIR")
    p.add_argument("--backend", action="append",
                   help="delegate to this backend (repeat, highest priority first): cpu, cuda, "
                        "vulkan, or portable for none (default: cpu when the compiler has it)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random example inputs")
    a = p.parse_args(argv)

    dtypes = a.input_dtype or ["f32"]
    if len(dtypes) == 1:
        dtypes = dtypes * len(a.input_shape)
    if len(dtypes) != len(a.input_shape):
        p.error("%d --input-dtype for %d --input-shape" % (len(dtypes), len(a.input_shape)))
    torch.manual_seed(a.seed)
    inputs = []
    for shape, dt in zip(a.input_shape, dtypes):
        t = _DTYPES[dt]
        inputs.append(torch.randn(shape).to(t) if t.is_floating_point else torch.zeros(shape, dtype=t))
    module = _load_factory(a.module)()
    try:
        backends = tuple(a.backend) if a.backend else DEFAULT_BACKENDS
        r = export(module, tuple(inputs), a.output, backends=backends,
                   keep_graph=a.keep_graph, source_model=a.module)
    except (ExportError, NotImplementedError) as e:
        print(str(e), file=sys.stderr)
        return 1
    sys.stdout.write(r.compile_report)
    print("tern_export: wrote %s (%s; %d nodes: %s)" % (
        a.output, r.capture, sum(r.ops.values()),
        ", ".join("%s x%d" % (k.replace("tern::", ""), v) for k, v in sorted(r.ops.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
