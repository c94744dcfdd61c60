"""What an FX node lowers to, during lowering (see lower.py)."""


class TVal:
    """A tern tensor value: its id in the method and the real (example) value PyTorch computed
    for it, which gives its dtype and shape."""
    __slots__ = ("vid", "real")

    def __init__(self, vid, real):
        self.vid = vid
        self.real = real

    @property
    def dtype(self):
        return self.real.dtype

    @property
    def shape(self):
        return list(self.real.shape)


class Const:
    """A value known at export time: a tensor (a parameter, buffer, lifted constant or the
    result of constant folding) or a Python value (int, float, bool, list, None, dtype...).
    `name` is where it came from (a parameter's name), for the safetensors file."""
    __slots__ = ("value", "name")

    def __init__(self, value, name=None):
        self.value = value
        self.name = name


class Multi:
    """The result of a multi-output operator: items are LVals, or callables that emit the item
    on first use (returning an LVal), or Unavailable."""

    def __init__(self, items):
        self.items = list(items)

    def get(self, i):
        item = self.items[i]
        if callable(item):
            item = item()
            self.items[i] = item
        return item


class Unavailable:
    """An output of a multi-output ATen op that tern does not compute (e.g. the mean and rstd of
    native_layer_norm). Using it is an error naming the op and the output index."""

    def __init__(self, op, index):
        self.op = op
        self.index = index


class Poison:
    """Depends on an unsupported operator; nothing is emitted for it (the export fails at the
    end, listing every unsupported operator)."""
    __slots__ = ()


POISON = Poison()
