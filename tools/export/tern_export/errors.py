"""Errors raised by tern_export."""


class ExportError(Exception):
    """Base class: the model could not be exported. The message says what and where."""


class CaptureError(ExportError):
    """PyTorch could not capture the model as a graph (torch.export / make_fx failed)."""


class UnsupportedOpError(ExportError):
    """The graph uses an ATen operator tern has no mapping for.

    Attributes: `op` (the first unsupported operator, e.g. "aten.foo.default"), `unsupported`
    (every unsupported operator of the model) and `model_ops` (every ATen operator of the graph).
    """

    def __init__(self, message, op=None, unsupported=(), model_ops=()):
        super().__init__(message)
        self.op = op
        self.unsupported = list(unsupported)
        self.model_ops = list(model_ops)


class CompileError(ExportError):
    """`tern compile` refused the graph. `stderr` holds its output; `graph_dir` the kept files."""

    def __init__(self, message, stderr="", graph_dir=None):
        super().__init__(message)
        self.stderr = stderr
        self.graph_dir = graph_dir


class TernNotFoundError(ExportError, FileNotFoundError):
    """No `tern` executable was found; the message lists every place that was tried."""


class Unsupported(Exception):
    """Raised by an operator handler (ops_table.py) or by the Lowerer: this node cannot be
    lowered (the message says why). Internal to lowering: the Lowerer catches it and reports
    every such node in one UnsupportedOpError. Lives here, not in lower.py, so that ops_table
    (which lower imports) never imports lower back."""
