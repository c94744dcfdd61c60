#!/usr/bin/env python3
"""Tests of tern_export (tools/export): small modules exported, compiled, run with `tern run` and
compared with PyTorch eager; error paths. Runs under either PyTorch line (Debian 1.13 via
make_fx, the .venv 2.x via torch.export). Prints one line per failure and "N passed, M failed";
exits 1 on failure, 77 (skipped) without torch.

  TERN=build/tern python3 tests/export/test_export.py [name-substring...]
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

import tern_export  # noqa: E402
from tern_export import compiler, graph_writer, safetensors_io  # noqa: E402
from tern_export.capture import torch_version  # noqa: E402

WORK = tempfile.mkdtemp(prefix="tern_export_test_")


def _path(name):
    return os.path.join(WORK, name)


def export_and_run(module, inputs, name, **kw):
    pte = _path(name + ".pte")
    result = tern_export.export(module, inputs, pte, keep_graph=_path(name + "_graph"), **kw)
    return result, tern_export.run(pte, inputs)


def assert_close(got, ref, rtol=1e-5, what="output"):
    ref = ref.detach().numpy() if hasattr(ref, "detach") else ref
    assert got.shape == ref.shape, "%s: shape %s, expected %s" % (what, got.shape, ref.shape)
    assert got.dtype == ref.dtype, "%s: dtype %s, expected %s" % (what, got.dtype, ref.dtype)
    if ref.dtype.kind in "biu":
        assert np.array_equal(got, ref), "%s: values differ" % what
        return
    err = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    assert err <= 1e-6 + rtol * scale, "%s: max abs error %.3g (max |ref| %.3g)" % (
        what, err, scale)


def graph_nodes(result):
    with open(os.path.join(result.graph_dir, "graph.json")) as f:
        return json.load(f)["methods"][0]["nodes"]


def expect_raises(exc_type, fn):
    try:
        fn()
    except exc_type as e:
        return e
    raise AssertionError("expected %s" % exc_type.__name__)


# Models --------------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class ConvBnRelu(nn.Module):
    def __init__(self, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=bias)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class ConvBnShared(nn.Module):
    """The conv output has a second user: the batch norm cannot be folded."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        y = self.conv(x)
        return self.bn(y) + y


class LinearBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 6)
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn(self.fc(x))


class LinearNormTokens(nn.Module):
    """LeViT's LinearNorm: a linear over tokens [B, N, C], BatchNorm1d over its output
    features on the tokens flattened to [B * N, C], reshaped back (a second batch norm over
    dim 1 of a 3-D input: its channels are not the linear's features, so it stays)."""
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 6, bias=False)
        self.bn = nn.BatchNorm1d(6)
        self.fc2 = nn.Linear(6, 4)
        self.bn2 = nn.BatchNorm1d(5)

    def forward(self, x):
        y = self.fc(x)
        y = self.bn(y.flatten(0, 1)).reshape_as(y)
        return self.bn2(self.fc2(y))


class LinearNormBmm(nn.Module):
    """LinearNorm whose linear is x @ W by a parameter expanded to a batch of one (the bmm
    the exporter makes a linear, as LeViT's reach it), and a batch norm straight after a bmm
    of the same kind, over its tokens (dim 1 of [1, 5, 6]): that one stays."""
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(12, 6) * 0.3)
        self.bn = nn.BatchNorm1d(6)
        self.w2 = nn.Parameter(torch.randn(6, 6) * 0.3)
        self.bn2 = nn.BatchNorm1d(5)

    def forward(self, x):
        y = torch.bmm(x, self.w.unsqueeze(0))
        y = self.bn(y.flatten(0, 1)).reshape_as(y)
        return self.bn2(torch.bmm(y, self.w2.unsqueeze(0)))


class MultiIO(nn.Module):
    def forward(self, x, y):
        return {"sum": x + y, "pair": (x * y, x - y), "last": [F.relu(x)]}


class ConstFold(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.register_buffer("scale", torch.full((4,), 0.5))

    def forward(self, x):
        w = (self.w * 2.0 + 1.0).t() * self.scale  # all constant: folded
        mask = torch.ones(4, 4).tril()             # literal: folded
        return (x @ w) * mask[1] + x.shape[0]


class Unsupported(nn.Module):
    def forward(self, x):
        return torch.lgamma(x) + 1


class VisionOps(nn.Module):
    """Resampling, padding, pooling, conv1d, transposed convs (2-D and 1-D), group norm."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 6, 3, padding=1)
        self.ct = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
        self.ct1 = nn.ConvTranspose1d(4, 6, 4, stride=3, padding=1, output_padding=2, groups=2,
                                      dilation=2)
        self.gn = nn.GroupNorm(2, 4)

    def forward(self, x):
        return (F.interpolate(x, scale_factor=2, mode="nearest"),
                F.interpolate(x, size=(10, 12), mode="bilinear", align_corners=False),
                F.pad(x, (1, 2, 0, 1)), F.pad(x, (1, 1, 1, 1), mode="reflect"),
                F.pad(x, (0, 0, 1, -1)), F.pad(x, (-2, 1, 0, -3), value=0.5),
                F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
                self.ct(self.gn(x)), self.c1(x.flatten(2)[:, :, :7]),
                F.adaptive_avg_pool2d(x, (2, 3)), self.ct1(x.flatten(2)))


class ElementwiseOps(nn.Module):
    """Activations, comparisons, reductions, indexing and data movement."""
    def forward(self, x, idx):
        y = F.silu(x) + F.elu(x) - F.leaky_relu(x, 0.2) * F.softplus(x, beta=2)
        y = y.clamp(-0.5, 0.7) + torch.where(x > 0, x, x * 0.1) + x.masked_fill(x < -1, 3.0)
        z = torch.cumsum(x, dim=1) + F.log_softmax(x, -1) + x.abs().sqrt() + torch.tanh(x).exp()
        m, i = x.max(dim=1)
        parts = x.split([2, 3], dim=1)
        w = torch.cat([parts[1], parts[0]], 1)[:, 1:4] + x[0, 2] + x.select(1, 3).unsqueeze(1)
        g = torch.gather(x, 1, idx.view(1, -1).expand(4, -1) % 5)
        return (y, z, m, i, w, x.unbind(0)[1], F.embedding(idx, x), g, x.argmin(), x.sum(),
                x.mean(0, keepdim=True), x.pow(2) / 3, x.triu(1), x.repeat(2, 1),
                torch.index_select(x, 1, idx % 5), (x * 100).round(), x.floor() // 2,
                x.transpose(0, 1).contiguous(), x.permute(1, 0).reshape(-1), -x % 1.5)


def calibrated(module, shape):
    module.train()
    with torch.no_grad():
        for _ in range(3):
            module(torch.randn(*shape))
    return module.eval()


# Tests ---------------------------------------------------------------------------------------

def test_mlp():
    m = MLP().eval()
    x = torch.randn(3, 16)
    result, (got,) = export_and_run(m, (x,), "mlp")
    assert_close(got, m(x))
    assert result.ops == {"tern::linear": 2, "tern::relu": 1}, result.ops


def test_conv_bn_relu_folded():
    for bias in (False, True):
        m = calibrated(ConvBnRelu(bias), (4, 3, 10, 10))
        x = torch.randn(2, 3, 10, 10)
        result, (got,) = export_and_run(m, (x,), "convbn%d" % bias)
        assert "tern::batch_norm" not in result.ops, result.ops
        assert result.ops == {"tern::conv2d": 1, "tern::relu": 1}, result.ops
        conv = graph_nodes(result)[0]
        assert conv["op"] == "tern::conv2d"
        assert_close(got, m(x), rtol=1e-5)


def test_conv_bn_not_folded_when_shared():
    m = calibrated(ConvBnShared(), (4, 3, 6, 6))
    x = torch.randn(1, 3, 6, 6)
    result, (got,) = export_and_run(m, (x,), "convbn_shared")
    assert result.ops.get("tern::batch_norm") == 1, result.ops
    assert_close(got, m(x))


def test_linear_bn_folded():
    m = calibrated(LinearBn(), (8, 12))
    x = torch.randn(5, 12)
    result, (got,) = export_and_run(m, (x,), "linearbn")
    assert result.ops == {"tern::linear": 1}, result.ops
    assert_close(got, m(x))


def test_linear_bn_over_flattened_tokens_folded():
    # Each module's first batch norm folds into its linear through the views; the second (over
    # the 5 tokens of a [b, 5, n] input, not the features) stays.
    for module, shape, name in ((LinearNormTokens, (2, 5, 12), "linearbn_tokens"),
                                (LinearNormBmm, (1, 5, 12), "linearbn_bmm")):
        m = calibrated(module(), shape)
        x = torch.randn(*shape)
        result, (got,) = export_and_run(m, (x,), name)
        assert result.ops.get("tern::batch_norm") == 1, (name, result.ops)
        assert result.ops.get("tern::linear") == 2, (name, result.ops)
        assert_close(got, m(x), rtol=1e-5)


def test_multiple_inputs_and_dict_outputs():
    m = MultiIO()
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    result, got = export_and_run(m, (x, y), "multi_io")
    ref = tern_export.flatten_outputs(m(x, y))
    assert len(got) == 4 == len(ref), "%d outputs" % len(got)
    # Order: dict values in insertion order, nested tuples/lists in order.
    for i, (g, r) in enumerate(zip(got, [x + y, x * y, x - y, F.relu(x)])):
        assert_close(g, r, what="output %d" % i)
    for g, r in zip(got, ref):
        assert_close(g, r)


def test_input_returned_and_repeated_output():
    class M(nn.Module):
        def forward(self, x):
            y = x * 2
            return x, y, y
    m = M()
    x = torch.randn(4)
    _, got = export_and_run(m, (x,), "passthrough")
    for g, r in zip(got, m(x)):
        assert_close(g, r)


def test_constant_folding():
    torch.manual_seed(1)
    m = ConstFold().eval()
    x = torch.randn(3, 4)
    result, (got,) = export_and_run(m, (x,), "constfold")
    assert_close(got, m(x))
    # Only the activation path remains: x @ w (mm with a constant -> linear), * mask, + 3.
    ops = [n["op"] for n in graph_nodes(result)]
    assert ops == ["tern::linear", "tern::mul", "tern::add"], ops
    weights = safetensors_io.read_safetensors(os.path.join(result.graph_dir,
                                                           "weights.safetensors"))
    assert len(weights) == 2, list(weights)  # folded weight and mask row


def test_scalar_ops_and_casts():
    class M(nn.Module):
        def forward(self, x, i):
            return (x * 3 - 1) / 2, (i + 2) * i, x.sum(dim=1, keepdim=True), 1 - x
    m = M()
    x, i = torch.randn(3, 5), torch.randint(-5, 5, (3, 5))
    _, got = export_and_run(m, (x, i), "scalars")
    for k, (g, r) in enumerate(zip(got, m(x, i))):
        assert_close(g, r, what="output %d" % k)


def test_unsupported_op_names_it():
    e = expect_raises(tern_export.UnsupportedOpError,
                      lambda: tern_export.export(Unsupported(), (torch.randn(3),),
                                                 _path("unsupported.pte")))
    msg = str(e)
    assert "aten.lgamma.default" in msg, msg
    assert "*aten.lgamma.default" in msg and "aten.add.Tensor" in msg, msg
    assert e.op == "aten.lgamma.default" and e.unsupported == ["aten.lgamma.default"], e.unsupported
    if torch_version() >= (2, 1):
        # torch.export records stack traces: the model's own line is named.
        assert "test_export.py" in msg, msg


def test_missing_weight_is_a_compile_error():
    m = MLP().eval()
    d = _path("missing_weight")
    graph, _ = tern_export.export_graph(m, (torch.randn(1, 16),), d)
    st = os.path.join(d, "weights.safetensors")
    weights = safetensors_io.read_safetensors(st)
    assert "fc2.bias" in weights, list(weights)
    del weights["fc2.bias"]
    safetensors_io.write_safetensors(st, {k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    e = expect_raises(tern_export.CompileError,
                      lambda: compiler.run_compile(graph, _path("missing.pte")))
    assert "fc2.bias" in e.stderr and "not found" in e.stderr, e.stderr


def test_shape_mismatch_at_run():
    m = MLP().eval()
    pte = _path("mlp_shape.pte")
    tern_export.export(m, (torch.randn(2, 16),), pte)
    e = expect_raises(tern_export.RunError, lambda: tern_export.run(pte, [torch.randn(3, 16)]))
    assert "input 0" in e.stderr and "[2, 16]" in e.stderr and "[3, 16]" in e.stderr, e.stderr


def test_backends():
    m = MLP().eval()
    x = (torch.randn(1, 16),)
    # A backend the compiler does not have: tern compile names the ones it has.
    e = expect_raises(tern_export.CompileError,
                      lambda: tern_export.export(m, x, _path("b.pte"), backends=("xnnpack",)))
    assert "'xnnpack'" in e.stderr and "registered" in e.stderr, e.stderr
    r = tern_export.export(m, x, _path("portable.pte"), backends=("portable",))
    assert r.backends == () and "0 delegates" in r.compile_report, r.compile_report
    # The default ("cpu",) uses the cpu backend when the compiler has it, else portable only.
    r = tern_export.export(m, x, _path("default.pte"))
    assert r.backends in ((), ("cpu",)), r.backends
    if r.backends == ():
        e = expect_raises(tern_export.CompileError,
                          lambda: tern_export.export(m, x, _path("c.pte"), backends=("cpu",)))
        assert "'cpu'" in e.stderr and "registered" in e.stderr, e.stderr


def test_tern_not_found_lists_what_was_tried():
    saved = dict(os.environ), compiler._CHECKOUT
    try:
        os.environ["TERN"] = "/nonexistent/tern"
        os.environ["PATH"] = WORK
        compiler._CHECKOUT = WORK
        e = expect_raises(tern_export.TernNotFoundError, compiler.find_tern)
        msg = str(e)
        assert "/nonexistent/tern" in msg and "PATH" in msg and \
            os.path.join(WORK, "build", "tern") in msg, msg
    finally:
        os.environ.clear()
        os.environ.update(saved[0])
        compiler._CHECKOUT = saved[1]


def test_safetensors_round_trip():
    tensors = {"a": torch.randn(2, 3), "b": torch.arange(5), "c": torch.tensor([True, False]),
               "d": torch.zeros(0, 4), "e": torch.randn(3, 4).t()}  # e: not contiguous
    p = _path("rt.safetensors")
    safetensors_io.write_safetensors(p, tensors)
    back = safetensors_io.read_safetensors(p)
    assert list(back) == list(tensors)
    for k, t in tensors.items():
        assert np.array_equal(back[k], t.numpy()), k
    with open(p, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    assert n % 8 == 0
    # The bytes ordered by decreasing element size: each tensor starts at a multiple of its
    # element size (tern compile maps such tensors in place), the header in the given order.
    assert list(header) == list(tensors)
    assert header["b"]["data_offsets"][0] == 0
    assert header["a"]["data_offsets"][0] == 40
    assert header["d"]["data_offsets"] == [64, 64]
    assert header["e"]["data_offsets"] == [64, 112]
    assert header["c"]["data_offsets"] == [112, 114]


def test_weight_dedupe_survives_temporaries():
    # Weights are deduplicated by tensor identity; temporaries (folded constants) must not be
    # confused when Python reuses a freed object's id.
    mb = graph_writer.MethodBuilder()
    ids = [mb.weight("w", torch.full((2,), float(i))) for i in range(64)]
    assert len(set(ids)) == 64
    assert [float(t[0]) for t in mb.weights.values()] == [float(i) for i in range(64)]


def test_op_coverage():
    cases = [(VisionOps().eval(), (torch.randn(2, 4, 5, 6),)),
             (ElementwiseOps(), (torch.randn(4, 5), torch.tensor([0, 3, 2])))]
    for k, (m, inputs) in enumerate(cases):
        result, got = export_and_run(m, inputs, "coverage%d" % k)
        ref = tern_export.flatten_outputs(m(*inputs))
        assert len(got) == len(ref)
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_close(g, r, what="%s output %d" % (type(m).__name__, i))


def test_attention_masks():
    if not hasattr(F, "scaled_dot_product_attention"):
        return  # PyTorch < 2.0 has no F.scaled_dot_product_attention

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("keep", torch.rand(6, 6) > 0.3)
            self.register_buffer("bias", torch.randn(6, 6))

        def forward(self, q, k, v):
            keep = self.keep | torch.eye(6, dtype=torch.bool)  # folded constant
            return (F.scaled_dot_product_attention(q, k, v, attn_mask=keep),
                    F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias, scale=0.3),
                    F.scaled_dot_product_attention(q, k, v, is_causal=True))
    m = Attn()
    inputs = tuple(torch.randn(2, 3, 6, 8) for _ in range(3))
    result, got = export_and_run(m, inputs, "attention")
    assert result.ops.get("tern::scaled_dot_product_attention") == 3, result.ops
    for i, (g, r) in enumerate(zip(got, m(*inputs))):
        assert_close(g, r, what="output %d" % i)


def test_attention_mask_from_the_inputs_is_additive():
    # BERT with attention_mask: a bool padding mask made from an input, read by every layer's
    # attention. The exporter writes it once as PyTorch's SDPA does (0 where true, -inf where
    # false) so that attention reads an f32 activation, which the cpu delegate's fused
    # attention takes: one region for the layers and their attention, not attention on the
    # portable kernels (BERT 3 cpu regions -> 1).
    if not hasattr(F, "scaled_dot_product_attention"):
        return  # PyTorch < 2.0 has no F.scaled_dot_product_attention

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.ModuleList(nn.Linear(16, 48) for _ in range(2))
            self.out = nn.ModuleList(nn.Linear(16, 16) for _ in range(2))

        def forward(self, x, attention_mask):
            b, s, _ = x.shape
            keep = attention_mask.bool()[:, None, None, :]   # [B, 1, 1, S]
            for qkv, out in zip(self.qkv, self.out):
                q, k, v = qkv(x).view(b, s, 3, 2, 8).permute(2, 0, 3, 1, 4)
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
                x = x + out(y.transpose(1, 2).reshape(b, s, 16))
            return x
    m = Encoder().eval()
    x = torch.randn(2, 6, 16)
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, 4:] = 0  # the second sequence is padded
    result, got = export_and_run(m, (x, mask), "input_mask")
    with torch.no_grad():
        assert_close(got[0], m(x, mask), what="encoder")
    ops = _ops(result)
    assert ops.count("tern::where") == 1 and ops.count("tern::scaled_dot_product_attention") == 2, \
        ops
    assert result.backends == () or _cpu_delegate_calls(result.path) == 1, result.compile_report


def test_float_to_bool_is_a_comparison_with_zero():
    # Hunyuan-DiT's text mask: a float input cast to bool picks between the text and a learned
    # padding. x.bool() is x != 0 (NaN and -0.0 as PyTorch: true, false), a comparison the cpu
    # delegate fuses into the select that reads it, where a cast to bool is no op it takes.
    class PadFill(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.pad = nn.Parameter(torch.randn(8))

        def forward(self, x, maskf):
            return self.fc(torch.where(maskf.bool()[..., None], self.fc(x), self.pad))
    m = PadFill().eval()
    x = torch.randn(1, 6, 8)
    maskf = torch.tensor([[1.0, 0.0, float("nan"), -0.0, 2.5, 0.0]])
    result, got = export_and_run(m, (x, maskf), "float_to_bool")
    with torch.no_grad():
        assert_close(got[0], m(x, maskf), what="pad fill")
    ops = _ops(result)
    assert "tern::ne" in ops and "tern::cast" not in ops, ops
    assert result.backends == () or _cpu_delegate_calls(result.path) == 1, result.compile_report


def has_grouped_attention():
    """Whether this PyTorch's attention takes enable_gqa (>= 2.5)."""
    try:
        return "enable_gqa" in str(torch.ops.aten.scaled_dot_product_attention.default._schema)
    except (AttributeError, RuntimeError):  # PyTorch 1.13: no such operator
        return False


def test_grouped_query_attention():
    """F.scaled_dot_product_attention(..., enable_gqa=True) (torch >= 2.5): 6 query heads over
    2 key/value heads, with masks of 1 head and of 6 heads and causal, against PyTorch; K and V
    are read in place (no expand or copy of them is exported)."""
    if not has_grouped_attention():
        return  # PyTorch < 2.5: no grouped attention

    class Gqa(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("bias", torch.randn(1, 6, 5, 7))

        def forward(self, q, k, v, keep):
            return (F.scaled_dot_product_attention(q, k, v, attn_mask=keep, enable_gqa=True),
                    F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias, scale=0.3,
                                                   enable_gqa=True),
                    F.scaled_dot_product_attention(q, k[..., :5, :], v[..., :5, :],
                                                   is_causal=True, enable_gqa=True))
    m = Gqa()
    inputs = (torch.randn(2, 6, 5, 8), torch.randn(2, 2, 7, 8), torch.randn(2, 2, 7, 4),
              torch.rand(2, 1, 5, 7) > 0.3)
    result, got = export_and_run(m, inputs, "gqa")
    assert result.ops.get("tern::scaled_dot_product_attention") == 3, result.ops
    assert "tern::expand" not in result.ops and "tern::clone" not in result.ops, result.ops
    for i, (g, r) in enumerate(zip(got, m(*inputs))):
        assert_close(g, r, what="output %d" % i)


def _ops(result):
    return [n["op"] for n in graph_nodes(result)]


def test_stack():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("c", torch.randn(3, 4))

        def forward(self, x, y):
            return (torch.stack([x, y, x * 2]), torch.stack((x, self.c), dim=-1),
                    torch.stack([x.sum(1), y.sum(1)], dim=1))
    m = M()
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    result, got = export_and_run(m, (x, y), "stack")
    assert "tern::stack" not in result.ops and result.ops.get("tern::cat") == 3, result.ops
    for i, (g, r) in enumerate(zip(got, m(x, y))):
        assert_close(g, r, what="output %d" % i)


def test_as_strided_views_and_copies():
    class M(nn.Module):
        def forward(self, x):
            y = x + 1  # contiguous [4, 6]
            return (torch.as_strided(y, (6, 4), (4, 1)),       # every element in order: view
                    torch.as_strided(y, (2, 5), (5, 1), 3),    # a contiguous run: slice
                    torch.as_strided(y, (6, 4), (1, 6)),       # a transpose: permute
                    torch.as_strided(y, (5, 4), (2, 1)),       # overlapping windows: gather
                    torch.as_strided(y, (1, 24, 1), (7, 1, 3)))  # size-1 dims: any stride
    m = M()
    x = torch.randn(4, 6)
    result, got = export_and_run(m, (x,), "as_strided")
    for i, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, what="output %d" % i)
    ops = _ops(result)
    assert "tern::index_select" in ops and "tern::permute" in ops and "tern::slice" in ops, ops
    assert ops.count("tern::index_select") == 1 and ops.count("tern::permute") == 1, ops


def test_unfold_windows():
    # Tensor.unfold: PatchTST's patches (time windows, step = size), overlapping frames
    # (step < size) and windows of a middle dim with a remainder dropped (step > size).
    class M(nn.Module):
        def forward(self, x):
            y = x * 2  # contiguous [2, 12, 5]
            return (y.unfold(1, 4, 4),        # non-overlapping patches: [2, 3, 5, 4]
                    y.unfold(1, 5, 2),        # overlapping windows: [2, 4, 5, 5]
                    y.unfold(-1, 2, 3),       # last dim, gaps between windows: [2, 12, 2, 2]
                    y.unfold(0, 2, 1) + 1)    # the whole first dim: [1, 12, 5, 2]
    m = M()
    x = torch.randn(2, 12, 5)
    result, got = export_and_run(m, (x,), "unfold")
    for i, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, what="output %d" % i)
    assert "aten.unfold.default" in result.aten_ops, result.aten_ops


def test_scatter():
    # DeepSeek-V3's group mask (scatter_ of a value at topk indices), scatter of a src larger
    # than the index (only its leading part is read), scatter_add with repeated indices and
    # scatter_reduce "sum".
    class M(nn.Module):
        def forward(self, x, counts_index):
            scores = x.softmax(-1)
            top = scores.topk(2, dim=-1)[1]
            mask = torch.zeros_like(scores)
            mask.scatter_(1, top, 1)
            src = x * 3
            placed = torch.scatter(x, 1, top, src)
            counts = torch.zeros(3, 6).scatter_add(1, counts_index, torch.ones(3, 4))
            summed = x.scatter_reduce(1, counts_index, src[:, :4], "sum")
            return scores * mask, placed, counts, summed
    m = M()
    x = torch.randn(3, 6)
    counts_index = torch.tensor([[0, 0, 5, 2], [1, 1, 1, 1], [3, 4, 3, 0]])
    result, got = export_and_run(m, (x, counts_index), "scatter")
    for i, (g, r) in enumerate(zip(got, m(x, counts_index))):
        assert_close(g, r, what="output %d" % i)
    assert _ops(result).count("tern::scatter") == 4, _ops(result)


def test_grid_sample():
    # A spatial transformer's warp (affine_grid + grid_sample) and a nearest lookup with
    # border padding; bicubic is refused by name.
    class M(nn.Module):
        def forward(self, x, theta):
            grid = F.affine_grid(theta, [2, 3, 6, 5], align_corners=False)
            return (F.grid_sample(x, grid, align_corners=False),
                    F.grid_sample(x, grid * 1.2, mode="nearest", padding_mode="border",
                                  align_corners=True))
    m = M()
    x, theta = torch.randn(2, 3, 7, 8), torch.randn(2, 2, 3) * 0.5
    result, got = export_and_run(m, (x, theta), "grid_sample")
    for i, (g, r) in enumerate(zip(got, m(x, theta))):
        assert_close(g, r, what="output %d" % i)

    class Bicubic(nn.Module):
        def forward(self, x, grid):
            return F.grid_sample(x, grid, mode="bicubic", align_corners=False)
    e = expect_raises(tern_export.UnsupportedOpError, lambda: tern_export.export(
        Bicubic(), (x, torch.rand(2, 4, 4, 2)), _path("grid_bicubic.pte")))
    assert "bicubic is not" in str(e), str(e)


def test_adaptive_avg_pool_sizes():
    # A pyramid-pooling head's bins (UperNet, PSPNet): 1x1 stays one op (or PyTorch's mean); an output of the
    # input's size is the input; divisible sizes are an average pool; others (3x3 and 6x6 of
    # 8x8, 6x6 of 2x2, 5x3 of 7x9: windows of unequal lengths that overlap) are one constant
    # linear over the plane. The expected values are PyTorch's own adaptive pooling.
    class M(nn.Module):
        def forward(self, x, small, odd):
            y = x * 2
            return (F.adaptive_avg_pool2d(y, 1), F.adaptive_avg_pool2d(y, (8, 8)) + 1,
                    F.adaptive_avg_pool2d(y, 2), F.adaptive_avg_pool2d(y, (4, 8)),
                    F.adaptive_avg_pool2d(y, 3), F.adaptive_avg_pool2d(y, 6),
                    F.adaptive_avg_pool2d(small + 1, 6), F.adaptive_avg_pool2d(odd * 3, (5, 3)))
    m = M()
    args = (torch.randn(1, 5, 8, 8), torch.randn(2, 3, 2, 2), torch.randn(1, 4, 7, 9))
    result, got = export_and_run(m, args, "adaptive_pool")
    for i, (g, r) in enumerate(zip(got, m(*args))):
        assert_close(g, r, what="output %d" % i)
    ops = _ops(result)
    assert ops.count("tern::adaptive_avg_pool2d") + ops.count("tern::mean") == 1, ops
    assert ops.count("tern::avg_pool2d") == 2, ops
    assert ops.count("tern::linear") == 4, ops


def _cpu_delegate_calls(pte):
    info = subprocess.run([tern_export.find_tern(), "inspect", pte], stdout=subprocess.PIPE,
                          universal_newlines=True).stdout
    calls = re.search(r"delegate:cpu\s+(\d+)", info)
    return int(calls.group(1)) if calls else 0


def _check_high_ranks_folded(result):
    """No value of eight dims left, the one of seven kept on purpose, one cpu region (the
    torch.export line: make_fx graphs of the 1.13 line carry no shapes, nothing is folded)."""
    if not hasattr(torch, "export"):
        return
    with open(os.path.join(result.graph_dir, "graph.json")) as f:
        values = json.load(f)["methods"][0]["values"]
    ranks = sorted(len(v.get("shape", [])) for v in values if v.get("type") == "tensor")
    assert ranks.count(8) == 0 and ranks.count(7) >= 1, ranks
    assert _cpu_delegate_calls(result.path) == 1, result.compile_report


def test_window_permutes_of_eight_dims():
    # Video Swin's window partition and its reverse (torchvision swin3d): views into eight dims
    # around a permute. high_rank_dims.py merges the dims that move together (and drops
    # those of size 1), so no value has more than six dims and the cpu delegate takes it all;
    # a permute of seven dims read by an add stays as it is. Expected values: PyTorch's.
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x, y):
            b, t, h, w, c = x.shape
            v = (x * 2).view(b, t // 2, 2, h // 4, 4, w // 4, 4, c)
            win = v.permute(0, 1, 3, 5, 2, 4, 6, 7).reshape(-1, 32, c)
            win = self.fc(win)
            back = win.view(b, t // 2, h // 4, w // 4, 2, 4, 4, c).permute(0, 1, 4, 2, 5, 3, 6, 7)
            seven = (y + 1).view(2, 1, 3, 2, 2, 1, 2).permute(6, 5, 4, 3, 2, 1, 0) + 1
            return back.reshape(b, t, h, w, c), seven
    torch.manual_seed(0)
    m = M().eval()
    args = (torch.randn(1, 4, 8, 8, 6), torch.randn(2, 3, 8))
    result, got = export_and_run(m, args, "window_permutes", backends=("cpu",))
    for i, (g, r) in enumerate(zip(got, m(*args))):
        assert_close(g, r, what="output %d" % i)
    # The window attention whole in one region; the rank-7 permute on the portable kernels.
    _check_high_ranks_folded(result)


def test_pixel_shuffle_3d_of_eight_dims():
    # LTX-Video's VAE upsampler: a 3-D pixel shuffle through [B, C, 2, 2, 2, F, H, W] permuted
    # (0, 1, 5, 2, 6, 3, 7, 4). Merging leaves seven dims ([C, 2, 2, 2, F, H, W] -> [C, F, 2,
    # H, 2, W, 2]), so high_rank_dims.py splits it into two permutes of at most six merged dims
    # each; no value has more than six dims and the cpu delegate takes it all. Expected values:
    # PyTorch's.
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(16, 16, 1)

        def forward(self, x):
            b, c, f, h, w = x.shape
            y = self.conv(x).reshape(b, c // 8, 2, 2, 2, f, h, w)
            y = y.permute(0, 1, 5, 2, 6, 3, 7, 4).flatten(6, 7).flatten(4, 5).flatten(2, 3)
            return y + 1
    torch.manual_seed(0)
    m = M().eval()
    x = torch.randn(1, 16, 3, 4, 5)
    result, got = export_and_run(m, (x,), "pixel_shuffle_3d", backends=("cpu",))
    assert_close(got[0], m(x), what="output")
    if hasattr(torch, "export"):
        with open(os.path.join(result.graph_dir, "graph.json")) as f:
            values = json.load(f)["methods"][0]["values"]
        ranks = [len(v.get("shape", [])) for v in values if v.get("type") == "tensor"]
        assert max(ranks) <= 6, ranks
        assert _cpu_delegate_calls(result.path) == 1, result.compile_report
    assert tern_export.high_rank_dims.split_permute([2, 2, 2, 2, 3, 4, 5],
                                                    [0, 4, 1, 5, 2, 6, 3]) is not None


def test_instance_norm():
    # Instance norm (RAFT's feature encoder): torch.export gives batch norm by the batch's own
    # statistics over [1, N*C, H, W] (_native_batch_norm_legit.no_stats), the 1.13 line
    # native_batch_norm in training mode without running statistics; both become a group norm
    # of one group per channel. Expected values: PyTorch's.
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.plain = nn.InstanceNorm2d(3)
            self.affine = nn.InstanceNorm2d(3, affine=True)
            self.seq = nn.InstanceNorm1d(4, affine=True)
            with torch.no_grad():
                self.affine.weight.uniform_(0.5, 1.5)
                self.affine.bias.uniform_(-1, 1)
                self.seq.weight.uniform_(0.5, 1.5)

        def forward(self, x, y, z):
            return (self.plain(x * 2), self.affine(x + 1), self.seq(y), F.instance_norm(z - 1),
                    F.batch_norm(z, None, None, training=True, eps=1e-3))
    torch.manual_seed(0)
    m = M().eval()
    args = (torch.randn(2, 3, 5, 6), torch.randn(3, 4, 7), torch.randn(1, 2, 3, 4, 5))
    result, got = export_and_run(m, args, "instance_norm")
    for i, (g, r) in enumerate(zip(got, m(*args))):
        assert_close(g, r, rtol=1e-5, what="output %d" % i)
    assert "tern::group_norm" in _ops(result), _ops(result)


def test_pool3d():
    # MViT's and S3D's 3-D pools, as two 2-D pools (the window is a box: separable). Padding,
    # strides, dilation, an average without the padding, an unbatched input. Expected values:
    # PyTorch's 3-D pools.
    class M(nn.Module):
        def forward(self, x, u):
            y = x * 2
            return (F.max_pool3d(y, (1, 3, 3), (1, 2, 2), (0, 1, 1)),
                    F.max_pool3d(y, 3, 1, 1), F.max_pool3d(y, 2, 2),
                    F.max_pool3d(y, (2, 2, 3), (1, 2, 1), (1, 1, 1), dilation=(2, 1, 2)),
                    F.avg_pool3d(y, (2, 5, 5), 1),
                    F.avg_pool3d(y, 3, 2, 1, count_include_pad=False),
                    F.avg_pool3d(y, 3, 2, 1), F.max_pool3d(u + 1, (3, 1, 1), (2, 1, 1)))
    m = M()
    args = (torch.randn(2, 3, 5, 7, 6), torch.randn(4, 5, 3, 3))
    result, got = export_and_run(m, args, "pool3d")
    for i, (g, r) in enumerate(zip(got, m(*args))):
        assert_close(g, r, what="output %d" % i)
    ops = _ops(result)
    assert "tern::max_pool2d" in ops and "tern::avg_pool2d" in ops, ops


def test_relative_positions_of_eight_dims():
    # MViT's decomposed relative positions: einsums over operands unsqueezed to seven dims
    # (torch.export decomposes them into permutes of permutes), and three terms added broadcast
    # over eight dims, the sum viewed back to four. high_rank_dims.py merges the dims so no value
    # has more than six and the cpu delegate takes it whole; a broadcast add of seven dims whose
    # reader is no reshape stays as it is. Expected values: PyTorch's.
    class M(nn.Module):
        def forward(self, attn, q, rh, rw, rt, odd):
            b, n, t, h, w, c = q.shape
            rel_h = torch.einsum("bythwc,hkc->bythwk", q, rh)
            rel_w = torch.einsum("bythwc,wkc->bythwk", q, rw)
            rel_t = torch.einsum("bythwc,tkc->bythwk", q, rt)
            kt, kh, kw = rt.shape[1], rh.shape[1], rw.shape[1]
            a = attn.view(b, n, t, h, w, kt, kh, kw)
            a = (a + rel_h[:, :, :, :, :, None, :, None] + rel_w[:, :, :, :, :, None, None, :]
                 + rel_t[:, :, :, :, :, :, None, None])
            seven = odd.view(1, 2, 1, 3, 1, 2, 1) + odd.view(1, 2, 1, 3, 1, 1, 2)
            return a.view(b, n, t * h * w, kt * kh * kw) * 2, seven
    torch.manual_seed(0)
    m = M()
    b, n, t, h, w, c, kt, kh, kw = 1, 2, 2, 3, 4, 5, 2, 3, 2
    args = (torch.randn(b, n, t * h * w, kt * kh * kw), torch.randn(b, n, t, h, w, c),
            torch.randn(h, kh, c), torch.randn(w, kw, c), torch.randn(t, kt, c),
            torch.randn(2, 3, 2))
    result, got = export_and_run(m, args, "rel_pos", backends=("cpu",))
    for i, (g, r) in enumerate(zip(got, m(*args))):
        assert_close(g, r, what="output %d" % i)
    _check_high_ranks_folded(result)


def test_var_std_and_tensor_clamps():
    # var / std (xLSTM's multi-head norm) as mean, sub, mul, sum and div; clamp by tensor
    # bounds (PhiMoE's router) as maximum then minimum. Expected values: PyTorch's.
    class M(nn.Module):
        def forward(self, x, lo, hi):
            return (x.var(-1, keepdim=True), x.var(dim=(0, 2), unbiased=False),
                    torch.var(x, dim=1, correction=0), x.std(-1), x.std(),
                    torch.clamp(x, lo, hi), torch.clamp(x, min=lo), x.clamp(max=hi * 0.5),
                    torch.clamp_min(x, lo) + 1)
    torch.manual_seed(0)
    m = M()
    args = (torch.randn(3, 4, 5), torch.full((5,), -0.5), torch.rand(4, 1) + 0.1)
    result, got = export_and_run(m, args, "var_clamp")
    for i, (g, r) in enumerate(zip(got, m(*args))):
        assert_close(g, r, rtol=1e-5, what="output %d" % i)
    ops = _ops(result)
    assert "tern::maximum" in ops and "tern::minimum" in ops and "tern::sqrt" in ops, ops


def test_more_unary_math():
    # expm1 and log1p (Apertus' xIELU, xLSTM), acos (YOSO's LSH similarity), asin, atan:
    # tern's own ops, exact near 0 where exp(x) - 1 would not be. Expected values: PyTorch's.
    class M(nn.Module):
        def forward(self, x):
            t = torch.tanh(x)
            return (torch.expm1(x * 1e-6), torch.log1p(x.abs() * 1e-6), torch.acos(t),
                    torch.asin(t), torch.atan(x * 3))
    m = M()
    x = torch.randn(4, 6)
    result, got = export_and_run(m, (x,), "unary_more")
    for i, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, rtol=2e-6, what="output %d" % i)
    ops = _ops(result)
    for op in ("expm1", "log1p", "acos", "asin", "atan"):
        assert "tern::" + op in ops, ops


def test_random_ops_are_refused():
    # A draw inside forward (ViTMAE's random masking, even in eval mode) would be frozen into the
    # program as a constant: refused, naming the operator and the way out.
    class M(nn.Module):
        def forward(self, x):
            noise = torch.rand(x.shape[0], 4)
            keep = torch.argsort(noise, dim=1)
            return x[:, :2] * 2, keep
    e = expect_raises(tern_export.UnsupportedOpError,
                      lambda: tern_export.export(M(), (torch.randn(3, 4),), _path("rand.pte")))
    assert "draws random numbers" in str(e) and "aten.rand" in str(e), str(e)

    class N(nn.Module):
        def forward(self, x):
            return x + torch.randn_like(x)
    e = expect_raises(tern_export.UnsupportedOpError,
                      lambda: tern_export.export(N(), (torch.randn(3, 4),), _path("randn.pte")))
    assert "draws random numbers" in str(e), str(e)


def test_float64_arithmetic_on_activations_runs_in_float32():
    # Flux's RoPE: positions from an input times float64 frequencies, cos/sin, back to float32.
    # tern has no f64 kernels: the float64 part runs in float32, export warns naming where
    # float64 enters, and the result still matches PyTorch's float64 computation.
    class Rope(nn.Module):
        def forward(self, x, pos):
            freqs = 1.0 / (10000 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8))
            angles = pos.double()[:, None] * freqs
            return x * angles.cos().float() + x.flip(-1) * angles.sin().float()
    m = Rope()
    x, pos = torch.randn(6, 4), torch.arange(6).float() * 7
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, got = export_and_run(m, (x, pos), "float64_rope")
    assert_close(got[0], m(x.double(), pos.double()).float(), rtol=1e-5)
    said = [str(w.message) for w in caught if "float64" in str(w.message)]
    assert len(said) == 1 and "run in float32" in said[0], [str(w.message) for w in caught]
    # pos.double() and the product with the float64 frequencies, both on this file's line.
    where = result.float64_as_float32
    # (make_fx, the 1.13 line, records no source lines.)
    source = "test_export.py" if torch_version() >= (2, 1) else "no source"
    assert len(where) == 2 and all(source in w for w in where), where
    assert all(w in said[0] for w in where), said[0]
    # A float32 model reports none.
    result, _ = export_and_run(MLP(), (torch.randn(2, 16),), "float32_only")
    assert result.float64_as_float32 == [], result.float64_as_float32
    # A float64 input is refused, naming it and the way out.
    e = expect_raises(tern_export.ExportError, lambda: tern_export.export(
        MLP().double(), (torch.randn(2, 16, dtype=torch.float64),), _path("f64_input.pte")))
    assert "input 'x'" in str(e) and "pass the input as float32" in str(e), str(e)


def test_as_strided_outside_the_input_is_refused():
    class M(nn.Module):
        def forward(self, x):
            y = (x + 1)[:, 1:]  # a view: its storage also holds column 0
            return torch.as_strided(y, (2, 3), (6, 1), 0) * 2  # reads column 0
    m = M()
    x = torch.randn(3, 6)
    e = expect_raises(tern_export.UnsupportedOpError,
                      lambda: tern_export.export(m, (x,), _path("as_strided_bad.pte")))
    msg = str(e)
    assert e.op in ("aten.as_strided.default", "aten.as_strided_copy.default"), msg
    assert "reads memory outside its input" in msg, msg


def test_index_tensor():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("keep", torch.tensor([True, False, True, True]))
            self.register_buffer("perm", torch.tensor([4, 0, 3, 1, 2]))
            self.register_buffer("rows", torch.tensor([[2, 0], [1, 1]]))

        def forward(self, x, i, j):
            return (x[:, self.keep],          # constant boolean mask
                    x[:, :, self.perm],       # constant indices
                    x[self.rows],             # constant 2-D indices
                    x[i],                     # input indices (with a negative one)
                    x[:, j],                  # input indices on dim 1
                    x[i, j],                  # two input indices, broadcast
                    x[i[:2], :, j[None, :2]],  # indexed dims apart: index dims first
                    x[self.rows[0], j[:2]],   # a constant and an input index
                    x.view(3, 2, 2, 5)[:, j[1:2], :, i[:1]])
    m = M()
    x = torch.randn(3, 4, 5)
    i = torch.tensor([2, -1, 0])
    j = torch.tensor([3, 0, -2])
    result, got = export_and_run(m, (x, i, j), "index")
    for k, (g, r) in enumerate(zip(got, m(x, i, j))):
        assert_close(g, r, what="output %d" % k)
    assert "aten.index.Tensor" in result.aten_ops, result.aten_ops


def test_index_by_constant_ranges_is_sliced():
    # Falcon's qkv[:, :, :, [-2]] (a one-element index list keeping the dim) and other constant
    # index lists that are a range with a step: slices (aliases for step 1), not a gather by an
    # element map (index_select, which the cpu backend does not take).
    class M(nn.Module):
        def forward(self, x):
            y = x * 1.0
            return (y[:, :, [-2]],            # one element of dim 2
                    y[:, [0, 2], 1:4],        # a range with step 2 on dim 1, a slice on dim 2
                    y[..., [1, 2, 3]],        # a contiguous range on the last dim
                    y[[3, 1]])                # descending: not a box (a gather)
    m = M()
    x = torch.randn(4, 3, 6)
    result, got = export_and_run(m, (x,), "index_box")
    for k, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, what="output %d" % k)
    ops = [node["op"] for node in graph_nodes(result)]
    assert ops.count("tern::index_select") == 1, ops  # the descending pick alone


def test_index_with_an_input_mask_is_refused():
    class M(nn.Module):
        def forward(self, x):
            return x[x > 0] * 2
    e = expect_raises(tern_export.UnsupportedOpError,
                      lambda: tern_export.export(M(), (torch.randn(3, 4),), _path("mask.pte")))
    assert e.op == "aten.index.Tensor" and "boolean mask" in str(e), str(e)


def test_roll():
    # torch.roll (Swin's cyclic window shift): kept whole by 1.13's make_fx, decomposed by
    # 2.x; lowered to slices + cat.
    class M(nn.Module):
        def forward(self, x):
            y = x * 2
            return (torch.roll(y, shifts=(-3, 3), dims=(1, 2)),  # Swin's shift and its reverse
                    torch.roll(y, 9, 2),                         # more than the size (mod 5)
                    torch.roll(y, 2),                            # no dims: the flat tensor
                    torch.roll(y, (0, 4), (0, -1)))              # a zero shift; negative dim
    m = M()
    x = torch.randn(2, 7, 5, 3)
    result, got = export_and_run(m, (x,), "roll")
    for k, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, what="output %d" % k)
    if "aten.roll.default" in result.aten_ops:
        assert result.ops.get("tern::cat") == 5, result.ops


def test_flip_and_recurrent_layers():
    # torch.flip, and the recurrent layers: torch.export decomposes nn.LSTM / GRU / RNN into
    # their cells unrolled over time, a bidirectional one with flips of the sequence (tern's
    # flip); 1.13's make_fx splits the gates with unsafe_split and indexes the reverse
    # direction instead. Expected values: PyTorch's own modules on the same inputs.
    class Flips(nn.Module):
        def forward(self, x):
            y = x + 1
            return torch.flip(y, [1]), torch.flip(y, (0, -1)), torch.flip(y, [])

    x = torch.randn(2, 5, 3)
    m = Flips()
    result, got = export_and_run(m, (x,), "flip")
    for k, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, rtol=0.0, what="flip output %d" % k)

    class Recurrent(nn.Module):
        def __init__(self, cell, **kw):
            super().__init__()
            self.rnn = cell(6, 8, batch_first=True, **kw)

        def forward(self, x):
            y, h = self.rnn(x)
            return y, h[0] if isinstance(h, tuple) else h

    torch.manual_seed(0)
    for name, cell, kw in [("lstm", nn.LSTM, {}), ("bilstm2", nn.LSTM,
                                                   dict(bidirectional=True, num_layers=2)),
                           ("bigru", nn.GRU, dict(bidirectional=True)),
                           ("rnn_relu", nn.RNN, dict(nonlinearity="relu"))]:
        m = Recurrent(cell, **kw).eval()
        x = torch.randn(1, 7, 6)
        result, got = export_and_run(m, (x,), name)
        with torch.no_grad():
            want = m(x)
        for k, (g, r) in enumerate(zip(got, want)):
            assert_close(g, r, rtol=1e-5, what="%s output %d" % (name, k))
        if "aten.flip.default" in result.aten_ops:
            assert result.ops.get("tern::flip"), result.ops


def test_exact_gelu_written_out_is_one_gelu():
    # ESM's and Google BERT's hand-written exact GELU, x * 0.5 * (1 + erf(x / sqrt(2))), in the
    # forms erf_gelu.py takes: one tern::gelu each, no erf left; compared with PyTorch's own
    # evaluation of the written-out chain. A chain whose intermediate has another reader, or
    # with another constant, stays as written.
    import math

    class M(nn.Module):
        def forward(self, x):
            a = x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))           # ESM
            b = 0.5 * x * (torch.erf(x * (1.0 / math.sqrt(2.0))) + 1.0)   # operands swapped
            c = x * (1.0 + torch.erf(x / math.sqrt(2.0))) / 2.0           # halved at the end
            e = torch.erf(x / math.sqrt(2.0))
            d = x * 0.5 * (1.0 + e)                                       # e read twice
            f = x * 0.5 * (1.0 + torch.erf(x / 1.5))                      # not sqrt(2)
            return a, b, c, d + e, f

    m = M()
    x = torch.randn(2, 7, 16) * 3
    result, got = export_and_run(m, (x,), "erf_gelu")
    for k, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, rtol=1e-5, what="output %d" % k)
    assert result.ops.get("tern::gelu") == 3, result.ops
    assert result.ops.get("tern::erf") == 2, result.ops


def test_index_select_by_a_constant_run_is_a_slice():
    # XLNet's relative shift: index_select(x, 3, arange(klen)) by a constant index that is a run
    # start, start + step, ... is a slice; any other constant index (descending, repeated,
    # irregular) stays an index_select. Expected: PyTorch's own.
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            for name, v in (("run", [0, 1, 2, 3, 4]), ("strided", [1, 3, 5]),
                            ("last", [6]), ("irregular", [0, 2, 3]),
                            ("descending", [4, 3, 2]), ("repeated", [2, 2])):
                self.register_buffer(name, torch.tensor(v))

        def forward(self, x):
            y = x * 2
            return tuple(torch.index_select(y, 2, getattr(self, k)) for k in
                         ("run", "strided", "last", "irregular", "descending", "repeated"))

    m = M()
    x = torch.randn(2, 3, 7)
    result, got = export_and_run(m, (x,), "index_select_run")
    for k, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, rtol=0.0, what="output %d" % k)
    assert result.ops.get("tern::index_select") == 3, result.ops
    assert result.ops.get("tern::slice") == 3, result.ops


def test_fold():
    # F.fold (aten.col2im; PyTorch's decomposition is an index_put with accumulate, which tern
    # does not take): blocks that tile the output (MobileViTV2's patch folding) are a view +
    # permute + view, with zeros where they stop short of the output's edge; overlapping,
    # strided, padded and dilated blocks a grouped transposed convolution with one-hot weights.
    # The expected values are PyTorch's fold of the same input.
    cases = [  # (input shape, output_size, kernel, dilation, padding, stride)
        ((2, 3 * 4, 12), (6, 8), (2, 2), 1, 0, (2, 2)),     # tiles exactly
        ((1, 2 * 6, 6), (5, 9), (2, 3), 1, 0, (2, 3)),      # stops short: zero rows/cols
        ((3 * 4, 12), (6, 8), (2, 2), 1, 0, (2, 2)),        # unbatched
        ((2, 3 * 9, 49), (7, 7), (3, 3), 1, 1, (1, 1)),     # overlapping, padded (= unfold's)
        ((1, 4 * 4, 12), (8, 9), (2, 2), (2, 1), (1, 0), (2, 3)),  # dilated, strided, padded
        ((1, 2 * 6, 9), (6, 8), (2, 3), 1, 0, (2, 2)),      # stride under the kernel, a short
    ]                                                       # last column (output_padding)
    for k, (shape, size, kernel, dil, pad, stride) in enumerate(cases):
        class M(nn.Module):
            def forward(self, x):
                return F.fold(x * 2, size, kernel, dilation=dil, padding=pad, stride=stride)
        m = M()
        x = torch.randn(*shape)
        result, (got,) = export_and_run(m, (x,), "fold%d" % k)
        assert_close(got, m(x), rtol=1e-5, what="fold case %d" % k)
        assert "tern::index_put" not in result.ops, result.ops
        if k < 3:
            assert "tern::conv_transpose2d" not in result.ops, result.ops
        else:
            assert result.ops.get("tern::conv_transpose2d") == 1, result.ops


def test_view_of_attention_output_laid_out_otherwise_than_traced():
    # T5's attention (transformers 5: SDPA with a float mask computed from its relative-position
    # bias parameter) is followed by transpose + contiguous + view. The meta function lays out
    # SDPA's output as [B, S, H, D] in memory, so the trace drops the contiguous() and keeps a
    # view; with a mask that requires grad (a parameter not detached) the CPU kernel returns it
    # contiguous, on which the exporter's own evaluation of the view failed ("view size is not
    # compatible with input tensor's size and stride").
    if not hasattr(F, "scaled_dot_product_attention"):
        return  # PyTorch < 2.0

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.randn(1, 4, 16, 16))

        def forward(self, x):
            q, k, v = x, x * 0.5, x + 1.0  # [B, S, H, D]
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               v.transpose(1, 2), attn_mask=self.bias * 2.0)
            return o.transpose(1, 2).contiguous().view(1, 16, 64)
    m = M().eval()
    x = torch.randn(1, 16, 4, 16)
    _, got = export_and_run(m, (x,), "attention_view")
    assert_close(got[0], m(x), what="output")


def test_mixture_of_experts_routing():
    """The routing of a mixture-of-experts layer (Hugging Face's grouped experts): topk of the
    router's probabilities (values and indices), a sort of the expert ids (values and
    positions), histc of the tokens per expert, their running ends, the inverse permutation by
    index assignment and the tokens gathered in expert order, against PyTorch."""
    class Routing(nn.Module):
        def forward(self, logits, x):
            p = torch.softmax(logits, -1)
            w, idx = torch.topk(p, 2, dim=-1)
            flat = idx.reshape(-1)
            ids, perm = torch.sort(flat)
            counts = torch.histc(ids.float(), bins=4, min=0, max=3)
            ends = torch.cumsum(counts, 0).to(torch.int64)
            inv = torch.empty_like(perm)
            inv[perm] = torch.arange(perm.numel())
            rows = x[perm // 2]
            return w, idx, ids, counts, ends, inv, rows
    m = Routing()
    inputs = (torch.randn(6, 4), torch.randn(6, 3))
    result, got = export_and_run(m, inputs, "moe_routing")
    for op in ("tern::topk_indices", "tern::argsort", "tern::histc", "tern::index_copy"):
        assert op in result.ops, (op, result.ops)
    ref = m(*inputs)
    # The ids are a stable sort here; PyTorch's unstable one may order equal ids otherwise, so
    # only the sorted ids, not the permutation, are compared (inv and rows follow tern's own).
    for i, (g, r) in enumerate(zip(got, ref)):
        if i == 5:
            perm = torch.sort(ref[1].reshape(-1), stable=True).indices
            r = torch.empty_like(perm)
            r[perm] = torch.arange(perm.numel())
        if i == 6:
            perm = torch.sort(ref[1].reshape(-1), stable=True).indices
            r = inputs[1][perm // 2]
        assert_close(g, r, what="output %d" % i)


def test_mixtral_experts():
    """transformers' Mixtral (4 experts, 2 per token): its grouped experts (sort, histc,
    grouped_mm_fallback, the inverse permutation) exported whole, against PyTorch."""
    try:
        import transformers as tf
    except ImportError:
        return  # transformers is installed in .venv only
    sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
    from model_zoo import HFOutputs, _hf
    cfg = tf.MixtralConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
                           num_local_experts=4, num_experts_per_tok=2, use_cache=False)
    torch.manual_seed(0)
    m = HFOutputs(_hf(tf.MixtralModel, cfg).eval(), ["input_ids"], ["last_hidden_state"]).eval()
    ids = torch.randint(0, 100, (1, 16))
    result, got = export_and_run(m, (ids,), "mixtral", backends=("cpu",))
    for op in ("tern::grouped_mm", "tern::topk_indices", "tern::argsort", "tern::histc"):
        assert op in result.ops, (op, result.ops)
    assert_close(got[0], m(ids)[0], what="last_hidden_state")


def test_slice_and_select_assignment():
    # In-place slice / element assignment inside a model (Funnel's relative attention shifts;
    # hand-written models): functionalized to slice_scatter / select_scatter, lowered to slices
    # + cat (step 1) or an index_copy at constant positions (step > 1).
    class M(nn.Module):
        def forward(self, x, y):
            z = x * 1.0
            z[:, 1:3] = y[:, :2] * 2.0            # step 1, inside
            z[..., ::2] = -z[..., ::2]            # step 2 along the last dim
            z[:, -1] = y[:, 0] + 1.0              # select (negative index)
            z[0] = 0.5                            # select of dim 0, a constant source
            w = torch.zeros(2, 4, 5)
            w[:, :, 3:] = x[:, :, :2]             # a constant tensor written into
            return z, w
    m = M()
    x, y = torch.randn(2, 4, 5), torch.randn(2, 3, 5)
    result, got = export_and_run(m, (x, y), "scatter")
    for k, (g, r) in enumerate(zip(got, m(x, y))):
        assert_close(g, r, what="output %d" % k)


def test_strided_assignments_that_fill_a_tensor_are_an_interleave():
    # Wan's rotary embedding: out = empty_like(x); out[..., 0::2] = a; out[..., 1::2] = b. The
    # assignments overwrite every element: one stack + view (a cat the cpu delegate takes), not
    # two index_copy nodes. Three-way along a middle dim too; a partly written tensor that is
    # read elsewhere keeps the index_copy that makes it.
    class Rope(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(8, 8)
            self.register_buffer("c", torch.randn(5, 4))
            self.register_buffer("s", torch.randn(5, 4))

        def forward(self, x):
            x1, x2 = self.q(x).unflatten(-1, (-1, 2)).unbind(-1)
            out = torch.empty_like(x)
            out[..., 0::2] = x1 * self.c - x2 * self.s
            out[..., 1::2] = x1 * self.s + x2 * self.c
            return out.type_as(x)

    class ThreeWay(nn.Module):
        def forward(self, x):
            out = torch.zeros(2, 6, 4)
            out[:, 2::3] = x * 3.0
            out[:, 0::3] = x + 1.0
            out[:, 1::3] = -x
            return out

    class Partial(nn.Module):
        def forward(self, x, y):
            out = x * 2.0
            out[..., 0::2] = y
            seen = out * 1.0       # the intermediate is read
            out[..., 1::2] = -y
            return out, seen

    rope = Rope()
    x = torch.randn(1, 2, 5, 8)
    result, got = export_and_run(rope, (x,), "interleave_rope")
    assert_close(got[0], rope(x), what="rope")
    ops = _ops(result)
    assert "tern::index_copy" not in ops and "tern::cat" in ops, ops
    assert result.backends == () or _cpu_delegate_calls(result.path) == 1, \
        result.compile_report

    three = ThreeWay()
    x = torch.randn(2, 2, 4)
    result, got = export_and_run(three, (x,), "interleave_three")
    assert_close(got[0], three(x), what="three-way")
    assert "tern::index_copy" not in _ops(result), _ops(result)

    part = Partial()
    x, y = torch.randn(3, 6), torch.randn(3, 3)
    result, got = export_and_run(part, (x, y), "interleave_partial")
    for k, (g, r) in enumerate(zip(got, part(x, y))):
        assert_close(g, r, what="partial output %d" % k)
    assert _ops(result).count("tern::index_copy") == 1, _ops(result)


def test_bmm_by_a_constant_is_a_linear():
    # LeViT / SwiftFormer: x [1, T, C] @ W with W a parameter expanded to a batch of one reaches
    # the exporter as bmm(x, constant [1, C, N]): emitted as a linear (packed weights on the
    # backends); a bmm of two activations stays a bmm.
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(12, 20))

        def forward(self, x):
            y = torch.bmm(x, self.w.unsqueeze(0))
            return y, torch.bmm(y, y.transpose(1, 2))
    m = M().eval()
    x = torch.randn(1, 7, 12)
    result, got = export_and_run(m, (x,), "bmm_const")
    for k, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, what="output %d" % k)
    assert result.ops.get("tern::linear") == 1, result.ops
    assert result.ops.get("tern::bmm") == 1, result.ops

    # A batch of 5 times one matrix expanded over it (torch.export's GRU projects every time
    # step so): a linear too, the matrix stored once; a constant whose batch entries differ,
    # even by the sign of one zero, stays a bmm.
    class Batched(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(12, 20))
            d = self.w.detach().expand(5, 12, 20).clone()
            d[:, 0, 0] = 0.0
            d[3, 0, 0] = -0.0  # the only difference between the batch entries
            self.register_buffer("d", d)

        def forward(self, x):
            return (torch.bmm(x, self.w.unsqueeze(0).expand(5, 12, 20)),
                    torch.bmm(x, self.d))
    m = Batched().eval()
    x = torch.randn(5, 7, 12)
    result, got = export_and_run(m, (x,), "bmm_const_batched")
    for k, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, what="batched output %d" % k)
    assert result.ops.get("tern::linear") == 1, result.ops
    assert result.ops.get("tern::bmm") == 1, result.ops
    with open(os.path.join(result.graph_dir, "graph.json")) as f:
        shapes = [v["shape"] for v in json.load(f)["methods"][0]["values"] if v.get("weight")]
    assert sorted(shapes) == [[5, 12, 20], [20, 12]], shapes


def test_reshapes_around_row_ops_are_dropped():
    # Whisper's attention: scores [B*H, L, S] viewed as [B, H, L, S], multiplied by 1.0,
    # softmaxed over the last dim, viewed back for the next bmm (through matmul's expand). The
    # views (torch.export line: row_views.py) and the multiply by one (_binary) are dropped; a
    # view with a second reader stays.
    class M(nn.Module):
        def forward(self, q, k, v):
            s = torch.matmul(q, k.transpose(-1, -2)) * 1.0     # [1, 2, 5, 5]
            p = torch.softmax(s * 0.5 - 1.0, dim=-1)
            return torch.matmul(p, v)

    class Kept(nn.Module):
        def forward(self, x):
            y = x.view(2, 3, 4)
            return torch.softmax(y, dim=-1).view(6, 4), y.sum()
    q, k, v = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    m = M().eval()
    result, got = export_and_run(m, (q, k, v), "row_views")
    assert_close(got[0], m(q, k, v), what="attention")
    assert "tern::mul" in result.ops and result.ops["tern::mul"] == 1, result.ops  # the 0.5 only
    with open(os.path.join(result.graph_dir, "graph.json")) as f:
        method = json.load(f)["methods"][0]
    softmax = [n for n in method["nodes"] if n["op"] == "tern::softmax"]
    assert len(softmax) == 1, softmax
    if hasattr(torch, "export"):  # (make_fx graphs of the 1.13 line carry no shapes to check)
        # On bmm's [B*H, L, S] (after the scalar ops), not on a 4-D view of it.
        assert len(method["values"][softmax[0]["args"][0]]["shape"]) == 3, softmax
    x = torch.randn(6, 4)
    kept = Kept().eval()
    result, got = export_and_run(kept, (x,), "row_views_kept")
    for g, r in zip(got, kept(x)):
        assert_close(g, r, what="kept")


def test_cat_with_empty_parts():
    # Phi-3's rotary embedding: cat(q_rot, q[..., rotary_dim:]) with rotary_dim the head size:
    # the pass-through slice is empty; it is folded to a constant and left out of the cat, and a
    # cat of one part left is that part (no copy, nothing the cpu backend refuses).
    class M(nn.Module):
        def forward(self, x):
            y = x * 2.0
            one = torch.cat([y, x[..., 8:]], dim=-1)
            two = torch.cat([x[:, :0], y, x[:, 5:]], dim=1)
            return one, two + 1.0
    m = M()
    x = torch.randn(2, 3, 8)
    result, got = export_and_run(m, (x,), "cat_empty")
    for k, (g, r) in enumerate(zip(got, m(x))):
        assert_close(g, r, what="output %d" % k)
    assert "tern::cat" not in result.ops and "tern::slice" not in result.ops, result.ops


def test_repeat_by_zero_is_left_out_of_a_cat():
    # LTX-Video's causal pad with a one-frame kernel: x[:, :, :1].repeat(1, 1, 0, 1, 1) is empty;
    # it becomes a constant the cat leaves out, so no repeat or cat is exported.
    class M(nn.Module):
        def forward(self, x):
            y = x * 2.0
            pad = y[:, :, :1].repeat(1, 1, 0, 1)
            return torch.cat([pad, y], dim=2) + 1.0
    m = M()
    x = torch.randn(1, 2, 3, 4)
    result, got = export_and_run(m, (x,), "repeat_zero")
    assert_close(got[0], m(x), what="output")
    assert "tern::repeat" not in result.ops and "tern::cat" not in result.ops, result.ops


def test_bitwise_on_bool_masks():
    class M(nn.Module):
        def forward(self, x, y, keep):
            a, b = x > 0, y < 0.5
            out = (a & b, a | b, ~a, a ^ b, keep & a, torch.where(a & ~b | keep, x, y))
            if torch_version() >= (2, 0):  # 1.13's make_fx cannot trace a Python bool operand
                out += (a & True, b | False)
            return out
    m = M()
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    keep = torch.rand(4, 5) > 0.5
    result, got = export_and_run(m, (x, y, keep), "bitwise")
    for k, (g, r) in enumerate(zip(got, m(x, y, keep))):
        assert_close(g, r, what="output %d" % k)
    assert any(o.startswith("aten.bitwise_and") for o in result.aten_ops), result.aten_ops


def test_index_put_with_a_constant_boolean_mask():
    """x[mask] = values with a constant mask over the leading dims (X-MOD's language adapters:
    zeros_like, then each language's rows written back): an index_copy of the masked rows,
    into a constant and into an activation; against PyTorch."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.tensor([[True, False, True], [False, False, True]]))
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = torch.zeros_like(x)
            y[self.mask] = self.fc(x[self.mask])
            z = x * 2
            z[self.mask] = torch.relu(x[self.mask])
            return y + 1, z
    m = M().eval()
    x = torch.randn(2, 3, 4)
    result, got = export_and_run(m, (x,), "index_put_mask")
    with torch.no_grad():
        for k, (g, r) in enumerate(zip(got, m(x))):
            assert_close(g, r, what="output %d" % k)
    assert "tern::index_copy" in result.ops, result.ops


def test_prod():
    """aten.prod over one dim and over all elements, of floats, integers (into int64) and bools
    (SigLIP2's positional resize multiplies each image's patch grid): tern's prod; against
    PyTorch."""
    class M(nn.Module):
        def forward(self, x, shapes, mask):
            return (x.prod(-1, keepdim=True), x.prod(0), x.prod(), shapes.prod(-1),
                    mask.prod(1), shapes.float().prod(-1, keepdim=True))
    m = M()
    x = torch.rand(3, 5) + 0.5
    shapes = torch.tensor([[4, 4], [3, 7]])
    mask = torch.rand(2, 6) > 0.3
    result, got = export_and_run(m, (x, shapes, mask), "prod")
    for k, (g, r) in enumerate(zip(got, m(x, shapes, mask))):
        assert_close(g, r, what="output %d" % k)
    assert any(o.startswith("aten.prod") for o in result.aten_ops), result.aten_ops


def test_bitwise_on_integers():
    """Integer bitwise operators (CPM-Ant ANDs integer masks): tern's bitwise_* ops, int32
    promoted with int64 as PyTorch does, numbers as operands; against PyTorch, exactly."""
    class M(nn.Module):
        def forward(self, i, j):
            out = ((i & 6) + 1, i | j, i ^ j, ~i, j & i, (i ^ j) & ~j)
            if torch_version() >= (2, 0):  # 1.13's make_fx cannot trace `tensor ^ int`
                out += ((i ^ 3) | 1,)
            return out
    m = M()
    i = torch.arange(-6, 14).reshape(4, 5)
    j = torch.randint(-50, 50, (5,), dtype=torch.int32)
    result, got = export_and_run(m, (i, j), "bitint")
    for k, (g, r) in enumerate(zip(got, m(i, j))):
        assert g.dtype == r.numpy().dtype, "output %d: %s vs %s" % (k, g.dtype, r.dtype)
        assert (g == r.numpy()).all(), "output %d differs" % k
    assert "tern::bitwise_and" in result.ops and "tern::bitwise_not" in result.ops, result.ops


def test_bitwise_on_other_dtypes_is_refused():
    class M(nn.Module):
        def forward(self, i):
            return (i & 6) + 1
    e = expect_raises(tern_export.UnsupportedOpError,
                      lambda: tern_export.export(M(), (torch.arange(5, dtype=torch.uint8),),
                                                 _path("bitand.pte")))
    assert "bitwise_and" in str(e) and "int64" in str(e), str(e)


def test_cli():
    model_py = _path("cli_model.py")
    with open(model_py, "w") as f:
        f.write("import torch.nn as nn\n"
                "def make():\n"
                "    return nn.Sequential(nn.Linear(6, 4), nn.ReLU())\n")
    out = _path("cli.pte")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "tools", "export")
    r = subprocess.run([sys.executable, "-m", "tern_export", "--module", model_py + ":make",
                        "--input-shape", "2x6", "-o", out, "--keep-graph", _path("cli_graph")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert "tern::linear x1" not in r.stdout and "linear x1" in r.stdout, r.stdout
    assert os.path.isfile(out) and os.path.isfile(_path("cli_graph/graph.json"))
    (got,) = tern_export.run(out, [np.ones((2, 6), np.float32)])
    assert got.shape == (2, 4)
    # A usage error names the problem.
    r = subprocess.run([sys.executable, "-m", "tern_export", "--module", model_py,
                        "--input-shape", "2x6", "-o", out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       env=env)
    assert r.returncode != 0 and "FILE.py:FACTORY" in (r.stdout + r.stderr), r.stderr


class QuantMLP(nn.Module):
    """An embedding, a stack of linears and a constant matmul: every quantizable kind."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 64)
        self.layers = nn.ModuleList([nn.Linear(64, 64) for _ in range(3)])
        self.head = nn.Linear(64, 10)

    def forward(self, idx):
        h = self.emb(idx)
        for layer in self.layers:
            h = F.relu(layer(h))
        return self.head(h)


def test_quantize():
    m = QuantMLP().eval()
    idx = (torch.tensor([[1, 5, 19]]),)
    with torch.no_grad():
        want = m(*idx).numpy()
    r32 = tern_export.export(m, idx, _path("q_f32.pte"), backends=("portable",))
    assert r32.quantization is None
    size32 = os.path.getsize(r32.path)
    # With the cpu backend a file holds the weights twice, f32 or quantized: the constants the
    # portable fallback reads and the delegate's packed copy in its blob (docs/quantization.md,
    # "Sizes"); this model is small enough that the headers weigh too, hence the looser bound.
    size32_cpu = os.path.getsize(
        tern_export.export(m, idx, _path("q_f32_cpu.pte"), backends=("cpu",)).path)
    # tol: the output's NMSE against the f32 model (quantization error, not kernel error: the
    # kernels are checked against dequantize-then-op in tests/quant).
    for scheme, ratio, tol in (("nf4", 5.0, 0.05), ("nf4:double", 5.0, 0.05),
                               ("fp8_e4m3", 3.0, 0.005), ("fp8_e5m2:per_tensor", 3.0, 0.02)):
        r = tern_export.export(m, idx, _path("q.pte"), backends=("cpu",), quantize=scheme)
        q = r.quantization
        assert q is not None and len(q["weights"]) == 5, r.compile_report
        names = sorted(w["name"] for w in q["weights"])
        assert names == ["emb.weight", "head.weight", "layers.0.weight", "layers.1.weight",
                         "layers.2.weight"], names
        before, after = q["all_weight_bytes"]
        assert before > ratio * 0.6 * after, (scheme, before, after)
        assert os.path.getsize(r.path) * ratio * 0.4 < size32_cpu, (scheme, os.path.getsize(r.path))
        rp = tern_export.export(m, idx, _path("q_portable.pte"), backends=("portable",),
                                quantize=scheme)
        assert os.path.getsize(rp.path) * ratio * 0.6 < size32, (scheme, os.path.getsize(rp.path))
        (got,) = tern_export.run(r.path, [idx[0].numpy()])
        nmse = float(((got - want) ** 2).sum() / (want ** 2).sum())
        assert nmse < tol, (scheme, nmse)
    # A dict of layer-name patterns: the first match wins, unmatched layers stay f32.
    r = tern_export.export(m, idx, _path("qd.pte"), backends=("portable",),
                           quantize={"layers.0": "fp8_e4m3", "layers.*": "nf4", "emb": None})
    got = {w["name"]: w["scheme"] for w in r.quantization["weights"]}
    assert got == {"layers.0.weight": "fp8_e4m3:per_channel", "layers.1.weight": "nf4:block=64",
                   "layers.2.weight": "nf4:block=64"}, got
    # A predicate per layer name.
    r = tern_export.export(m, idx, _path("qp.pte"), backends=("portable",),
                           quantize=lambda name: "nf4:block=32" if name != "head" else None)
    got = {w["name"]: w["scheme"] for w in r.quantization["weights"]}
    assert sorted(got) == ["emb.weight", "layers.0.weight", "layers.1.weight",
                           "layers.2.weight"] and set(got.values()) == {"nf4:block=32"}, got
    # Bad schemes are errors before anything runs, or tern compile's (naming what is legal).
    e = expect_raises(ValueError, lambda: tern_export.export(m, idx, _path("x.pte"),
                                                             quantize="int4"))
    assert "int4" in str(e) and "nf4" in str(e), str(e)
    e = expect_raises(TypeError, lambda: tern_export.export(m, idx, _path("x.pte"), quantize=4))
    e = expect_raises(tern_export.CompileError,
                      lambda: tern_export.export(m, idx, _path("x.pte"), quantize="nf4:block=48"))
    assert "power of two" in e.stderr, e.stderr


# Dynamic shapes (docs/dynamic-shapes.md) -----------------------------------------------------

class DynBlock(nn.Module):
    """A decoder-ish block on x [1, seq, 16]: RMS norm by hand, q/k/v linears, heads by view +
    transpose, attention (causal sdpa on torch 2.x; plain softmax(q kᵀ) v otherwise), output
    projection, residual, SiLU MLP, mean over seq subtracted, cos."""

    def __init__(self, causal_sdpa):
        super().__init__()
        self.causal_sdpa = causal_sdpa
        self.g = nn.Parameter(1.0 + 0.1 * torch.randn(16))
        self.q, self.k, self.v, self.o = (nn.Linear(16, 16) for _ in range(4))
        self.up = nn.Linear(16, 32)
        self.down = nn.Linear(32, 16)

    def forward(self, x):
        b, s, d = x.shape
        n = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.g
        heads = [p(n).view(b, s, 2, 8).transpose(1, 2) for p in (self.q, self.k, self.v)]
        if self.causal_sdpa:
            a = F.scaled_dot_product_attention(heads[0], heads[1], heads[2], is_causal=True)
        else:
            w = torch.softmax(heads[0] @ heads[1].transpose(-2, -1) * 0.35, dim=-1)
            a = w @ heads[2]
        h = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        h = h + self.down(F.silu(self.up(h)))
        return torch.cos(h - h.mean(1, keepdim=True))


def _check_dynamic_program(pte, model, bound, sizes, cpu_delegates=0):
    """cpu_delegates: the cpu delegate calls the program must hold (its dynamic linears,
    backends/cpu/README.md "Bounded-dynamic rows")."""
    info = subprocess.run([tern_export.find_tern(), "inspect", pte], stdout=subprocess.PIPE,
                          universal_newlines=True).stdout
    assert "[1, seq<=%d, 16]" % bound in info, info
    calls = re.search(r"delegate:cpu\s+(\d+)", info)
    assert (int(calls.group(1)) if calls else 0) == cpu_delegates, info
    for s in sizes:
        x = torch.randn(1, s, 16)
        got = tern_export.run(pte, [x])
        assert_close(got[0], model(x), rtol=1e-4, what="seq %d" % s)
    e = expect_raises(tern_export.RunError, lambda: tern_export.run(pte, [torch.randn(1, bound + 1, 16)]))
    assert "dim 1 ('seq') is %d, beyond its bound %d" % (bound + 1, bound) in e.stderr, e.stderr


def test_dynamic_seq_with_torch_export_dim():
    if torch_version() < (2, 1):
        return  # torch.export.Dim needs PyTorch >= 2.1; test_dynamic_dims_explicit covers 1.13
    import torch.export
    model = DynBlock(causal_sdpa=True).eval()
    seq = torch.export.Dim("seq", min=1, max=32)
    pte = _path("dyn_dim.pte")
    result = tern_export.export(model, (torch.randn(1, 7, 16),), pte, backends=("cpu",),
                                keep_graph=_path("dyn_dim_graph"), dynamic_shapes={"x": {1: seq}})
    with open(os.path.join(result.graph_dir, "graph.json")) as f:
        doc = json.load(f)
    assert doc["version"] == 2
    assert doc["methods"][0]["symbols"] == [{"name": "seq", "min": 1, "max": 32}], doc["methods"][0]["symbols"]
    with torch.no_grad():
        # The norm and q/k/v in one cpu delegate, o, the residuals and the MLP in another.
        _check_dynamic_program(pte, model, 32, [1, 5, 19, 32], cpu_delegates=2)


def test_dynamic_dims_explicit_bounds():
    model = DynBlock(causal_sdpa=False).eval()
    pte = _path("dyn_explicit.pte")
    tern_export.export(model, (torch.randn(1, 4, 16),), pte, backends=("portable",),
                       dynamic_dims={"x": {1: ("seq", 24)}})
    with torch.no_grad():
        _check_dynamic_program(pte, model, 24, [3, 11, 24])
    pte = _path("dyn_explicit_cpu.pte")
    tern_export.export(model, (torch.randn(1, 4, 16),), pte, backends=("cpu",),
                       dynamic_dims={"x": {1: ("seq", 24)}})
    with torch.no_grad():
        _check_dynamic_program(pte, model, 24, [3, 11, 24], cpu_delegates=2)


class Doubler(nn.Module):
    def forward(self, x):
        return torch.cat([x, x], 1) * 2


def test_dynamic_derived_dim_is_refused():
    e = expect_raises(tern_export.ExportError, lambda: tern_export.export(
        Doubler(), (torch.randn(1, 4, 3),), _path("dyn_derived.pte"),
        dynamic_dims={"x": {1: ("seq", 8)}}))
    assert "derived from the dynamic dim" in str(e) and "16 at seq = 8" in str(e), str(e)


class SizeScaled(nn.Module):
    def forward(self, x):
        return x * torch.full((1,), float(x.shape[1]) ** -0.5)


def test_dynamic_size_dependent_constant_is_refused():
    e = expect_raises(tern_export.ExportError, lambda: tern_export.export(
        SizeScaled(), (torch.randn(1, 4, 3),), _path("dyn_const.pte"),
        dynamic_dims={"x": {1: ("seq", 8)}}))
    assert "changes with dynamic dim 'seq'" in str(e), str(e)


class PrefixTables(nn.Module):
    """Constants built from the dynamic size: positions arange(seq) into a table and a causal
    [seq, seq] mask — prefix tables, stored at the bound and sliced to the size."""
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(16, 4))

    def forward(self, x):
        n = x.shape[1]
        causal = torch.ones(n, n).tril()
        return x + self.table[torch.arange(n)], causal @ x[0]


class Spread(nn.Module):
    def forward(self, x):
        return x * torch.linspace(0, 1, x.shape[1]).view(1, -1, 1)


def test_dynamic_prefix_constants_are_sliced():
    model = PrefixTables().eval()
    pte = _path("dyn_prefix.pte")
    result = tern_export.export(model, (torch.randn(1, 5, 4),), pte, backends=("portable",),
                                dynamic_dims={"x": {1: ("seq", 8)}})
    assert result.ops.get("tern::slice", 0) >= 3, result.ops  # table rows, mask rows and columns
    with torch.no_grad():
        for s in (1, 3, 8):
            x = torch.randn(1, s, 4)
            got = tern_export.run(pte, [x])
            for i, (g, w) in enumerate(zip(got, model(x))):
                assert_close(g, w, what="seq %d output %d" % (s, i))
    # A constant that is not a prefix of the bound's (linspace over the size) is still refused.
    e = expect_raises(tern_export.ExportError, lambda: tern_export.export(
        Spread(), (torch.randn(1, 4, 3),), _path("dyn_spread.pte"),
        dynamic_dims={"x": {1: ("seq", 8)}}))
    assert "constant computed from dynamic dim 'seq'" in str(e), str(e)


def main(filters, namespace=None):
    """Runs the test_* functions of `namespace` (default: this module's) whose names contain
    one of `filters` (all without filters)."""
    tests = [(k, v) for k, v in sorted((namespace or globals()).items()) if k.startswith("test_")]
    if filters:
        tests = [(k, v) for k, v in tests if any(f in k for f in filters)]
    passed = failed = 0
    for name, fn in tests:
        torch.manual_seed(0)
        try:
            fn()
            passed += 1
        except Exception:
            failed += 1
            print("FAIL %s [torch %s]:\n%s" % (name, torch.__version__, traceback.format_exc()))
    print("torch %s: %d passed, %d failed" % (torch.__version__, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
