#!/usr/bin/env python3
"""Tests of tern_export's folds into convolutions (docs/export.md, *Lowering* step 3): summed
conv branches (branch_convs.py), a scale and shift after a conv's clamp (clamp_affine.py) and
StarReLU after a conv (star_relu.py). Each module is compared with PyTorch's own output, under
either PyTorch line. Same helpers as test_export.py.

  TERN=build/tern python3 tests/export/test_export_folds.py [name-substring...]
"""
import sys

from test_export import (assert_close, export_and_run, graph_nodes, main, nn,  # noqa: E402
                         torch)


def bn(c):
    """An eval batch norm with statistics and affine parameters away from the identity."""
    b = nn.BatchNorm2d(c)
    b.running_mean.uniform_(-0.5, 0.5)
    b.running_var.uniform_(0.5, 2.0)
    b.weight.data.uniform_(0.5, 1.5)
    b.bias.data.uniform_(-0.5, 0.5)
    return b


def test_summed_conv_branches_are_one_conv():
    # Re-parameterizable blocks exported as trained (branch_convs.py): RepVGG's 3x3 + BN,
    # 1x1 + BN and identity BN, summed; RepViT's depthwise 3x3 + depthwise 1x1 + x, then a batch
    # norm of the sum; MobileOne's k parallel 3x3 depthwise branches, a 1x1 scale branch and a
    # layer scale (mul by a per-channel constant); ACNet's 3x3 + 1x3 + 3x1; a sub of a branch and
    # a constant added. Each sum is one tern::conv2d. Not folded: a stride-2 block with an
    # identity (different shapes: refused by PyTorch anyway, so here 3x3 + 1x1 at stride 2,
    # which does fold, beside a branch whose output is also read elsewhere, which does not) and
    # windows centred differently (a 3x3 with padding 0 beside a 1x1). Expected: PyTorch's own.
    class ConvBn(nn.Sequential):
        def __init__(self, c, o, k, stride=1, groups=1, pad=None, kw=None):
            kw = k if kw is None else kw
            pad = (k // 2, kw // 2) if pad is None else pad
            super().__init__(nn.Conv2d(c, o, (k, kw), stride, pad, groups=groups, bias=False),
                             bn(o))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            c = 8
            self.repvgg = nn.ModuleList([ConvBn(c, c, 3), ConvBn(c, c, 1), bn(c)])
            self.repvit = nn.ModuleList([ConvBn(c, c, 3, groups=c), ConvBn(c, c, 1, groups=c)])
            self.repvit_bn = bn(c)
            self.mobileone = nn.ModuleList([ConvBn(c, c, 3, groups=c) for _ in range(3)]
                                           + [ConvBn(c, c, 1, groups=c)])
            self.layer_scale = nn.Parameter(torch.rand(c, 1, 1) + 0.5)
            self.acnet = nn.ModuleList([ConvBn(c, 16, 3), ConvBn(c, 16, 1, kw=3),
                                        ConvBn(c, 16, 3, kw=1)])
            self.shift = nn.Parameter(torch.randn(1, 16, 1, 1))
            self.strided = nn.ModuleList([ConvBn(16, 16, 3, stride=2), ConvBn(16, 16, 1, stride=2)])
            self.shared = nn.ModuleList([ConvBn(16, 16, 3), ConvBn(16, 16, 1)])
            self.offcentre = nn.ModuleList([ConvBn(16, 16, 3, pad=(0, 0)), ConvBn(16, 16, 1)])

        def forward(self, x):
            x = torch.relu(sum(b(x) for b in self.repvgg))                      # 1 conv
            x = self.repvit_bn(self.repvit[0](x) + self.repvit[1](x) + x)       # 1 conv
            x = x + self.layer_scale * sum(b(x) for b in self.mobileone)        # 1 conv
            y = self.acnet[0](x) + self.acnet[1](x) - self.acnet[2](x) + self.shift  # 1 conv
            z = self.strided[0](y) + self.strided[1](y)                         # 1 conv
            s = self.shared[1](z)
            w = self.shared[0](z) + s                                           # 2 convs
            v = self.offcentre[0](w) + self.offcentre[1](w)[:, :, 1:-1, 1:-1]   # 2 convs
            return v, s

    torch.manual_seed(0)
    m = M().eval()
    x = torch.randn(1, 8, 12, 12)
    result, got = export_and_run(m, (x,), "branch_convs")
    with torch.no_grad():
        want = m(x)
    for k, (g, r) in enumerate(zip(got, want)):
        assert_close(g, r, rtol=1e-5, what="output %d" % k)
    assert result.ops.get("tern::conv2d") == 9, result.ops
    assert not result.ops.get("tern::batch_norm"), result.ops
    # The first sum: RepVGG's three branches in one 3x3 conv, then the relu.
    first = graph_nodes(result)[:2]
    assert [n["op"] for n in first] == ["tern::conv2d", "tern::relu"], first


def test_scaled_shifted_relu_of_a_conv_is_a_conv_and_a_clamp():
    # HGNetV2's learnable affine block after conv + BN + relu, s * relu(z) + b with one-number
    # s and b (clamp_affine.py): one conv and one clamp, no mul / add left; also a negative
    # scale (the bounds swap), relu6 followed by a division and a subtraction from a number, and
    # a chain that a second reader keeps as written. Expected: PyTorch's own.
    class Lab(nn.Module):
        def __init__(self, s, b):
            super().__init__()
            self.scale = nn.Parameter(torch.tensor([s]))
            self.bias = nn.Parameter(torch.tensor([b]))

        def forward(self, x):
            return self.scale * x + self.bias

    def conv_bn(c, o):
        return nn.Sequential(nn.Conv2d(c, o, 3, padding=1, bias=False), bn(o))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.lab_a = conv_bn(4, 8), Lab(1.7, -0.3)
            self.b, self.lab_b = conv_bn(8, 8), Lab(-0.6, 0.2)
            self.c = conv_bn(8, 8)
            self.d, self.lab_d = conv_bn(8, 8), Lab(2.0, 0.5)

        def forward(self, x):
            x = self.lab_a(torch.relu(self.a(x)))                 # conv + clamp
            x = self.lab_b(torch.relu(self.b(x)))                 # conv + clamp (upper)
            x = 1.0 - nn.functional.relu6(self.c(x)) / 4.0        # conv + clamp
            r = torch.relu(self.d(x))
            return self.lab_d(r), r                               # r read twice: as written

    torch.manual_seed(0)
    m = M().eval()
    x = torch.randn(1, 4, 10, 10)
    result, got = export_and_run(m, (x,), "clamp_affine")
    with torch.no_grad():
        want = m(x)
    for k, (g, r) in enumerate(zip(got, want)):
        assert_close(g, r, rtol=1e-5, what="output %d" % k)
    ops = result.ops
    assert ops.get("tern::conv2d") == 4 and ops.get("tern::clamp") == 3, ops
    assert ops.get("tern::mul") == 1 and ops.get("tern::add") == 1, ops  # lab_d only
    assert not ops.get("tern::sub") and not ops.get("tern::div"), ops


def test_star_relu_after_a_conv_folds_into_the_convs():
    # PoolFormerV2's StarReLU, s * relu(fc1(x)) ** 2 + b, then fc2, a 1x1 conv without bias
    # (star_relu.py): sqrt(s) into fc1, b into fc2's bias; no mul / add left. Beside it: a
    # StarReLU read by a padded conv keeps an add of b, and a negative s stays as written.
    # Expected: PyTorch's own.
    class StarReLU(nn.Module):
        def __init__(self, s, b):
            super().__init__()
            self.scale = nn.Parameter(torch.tensor([s]))
            self.bias = nn.Parameter(torch.tensor([b]))

        def forward(self, x):
            return self.scale * torch.relu(x) ** 2 + self.bias

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.act1 = nn.Conv2d(8, 32, 1), StarReLU(0.8, -0.4)
            self.fc2 = nn.Conv2d(32, 8, 1, bias=False)
            self.c3, self.act3 = nn.Conv2d(8, 8, 1), StarReLU(1.3, 0.25)
            self.c4 = nn.Conv2d(8, 8, 3, padding=1)
            self.c5, self.act5 = nn.Conv2d(8, 8, 1), StarReLU(-0.5, 0.1)

        def forward(self, x):
            y = x + self.fc2(self.act1(self.fc1(x)))        # conv, relu, pow, conv
            y = self.c4(self.act3(self.c3(y)))              # conv, relu, pow, add, conv
            return self.act5(self.c5(y))                    # as written

    torch.manual_seed(0)
    m = M().eval()
    x = torch.randn(1, 8, 9, 9)
    result, got = export_and_run(m, (x,), "star_relu")
    with torch.no_grad():
        want = m(x)
    assert_close(got[0], want, rtol=1e-5)
    ops = result.ops
    assert ops.get("tern::conv2d") == 5 and ops.get("tern::pow") == 3, ops
    assert ops.get("tern::mul") == 1, ops                 # act5's
    assert ops.get("tern::add") == 3, ops                 # the residual, act3's b, act5's b


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], globals()))
