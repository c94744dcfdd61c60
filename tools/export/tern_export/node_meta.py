"""What an FX node's metadata says about its output."""
import torch


def node_shape(n):
    """The output shape of FX node `n` as a list of ints, from torch.export's "val" or make_fx's
    "tensor_meta"; None when neither gives one (not a node, a tuple output, a symbolic size)."""
    if not isinstance(n, torch.fx.Node):
        return None
    for key in ("val", "tensor_meta"):
        shape = getattr(n.meta.get(key), "shape", None)
        if shape is not None:
            try:
                return [int(d) for d in shape]
            except Exception:  # noqa: BLE001 - a symbolic size (an unbacked one raises its guard)
                return None
    return None


def node_dtype(n):
    """The dtype of FX node `n`'s output from torch.export's "val" or make_fx's "tensor_meta";
    None when neither gives one."""
    if not isinstance(n, torch.fx.Node):
        return None
    for key in ("val", "tensor_meta"):
        dtype = getattr(n.meta.get(key), "dtype", None)
        if dtype is not None:
            return dtype
    return None
