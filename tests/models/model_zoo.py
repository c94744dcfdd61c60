"""The models of the end-to-end tests (tests/models/run_model.py) and of `make demo`.

Every factory returns (module in eval mode, example inputs, is_classifier). Weights are random
(seeded by the caller); batch-norm running statistics are calibrated by running a few random
batches in train mode, so eval-mode outputs are not ~0.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def calibrate_bn(model, shape, batches=4):
    """Sets BN running stats from random batches (momentum None: cumulative average)."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(*shape))
    return model.eval()


def _torchvision(name, size=224):
    import torchvision
    ctor = getattr(torchvision.models, name)
    try:
        model = ctor(weights=None)
    except TypeError:  # torchvision < 0.13
        model = ctor(pretrained=False)
    calibrate_bn(model, (4, 3, size, size))
    return model, (torch.randn(1, 3, size, size),), True


class MLP(nn.Module):
    def __init__(self, d_in=64, hidden=256, d_out=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, d_out)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, max_len):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len))
                             .view(1, 1, max_len, max_len))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        hd = c // self.n_head
        q = q.view(b, t, self.n_head, hd).transpose(1, 2)
        k = k.view(b, t, self.n_head, hd).transpose(1, 2)
        v = v.view(b, t, self.n_head, hd).transpose(1, 2)
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # PyTorch < 2.0: masked softmax
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            att = att.masked_fill(self.causal[:, :, :t, :t] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class GPTBlock(nn.Module):
    def __init__(self, d_model=256, n_head=8, max_len=128):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, max_len)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def mlp():
    return MLP().eval(), (torch.randn(4, 64),), False


def transformer_encoder_layer():
    layer = nn.TransformerEncoderLayer(512, 8, batch_first=True).eval()
    return layer, (torch.randn(1, 128, 512),), False


def gpt_block():
    return GPTBlock().eval(), (torch.randn(1, 128, 256),), False


MODELS = {
    "mlp": mlp,
    "resnet18": lambda: _torchvision("resnet18"),
    "mobilenet_v2": lambda: _torchvision("mobilenet_v2"),
    "mobilenet_v3_small": lambda: _torchvision("mobilenet_v3_small"),
    "squeezenet1_1": lambda: _torchvision("squeezenet1_1"),
    "shufflenet_v2_x0_5": lambda: _torchvision("shufflenet_v2_x0_5"),
    "transformer_encoder_layer": transformer_encoder_layer,
    "gpt_block": gpt_block,
}
TORCHVISION = {"resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1",
               "shufflenet_v2_x0_5"}
