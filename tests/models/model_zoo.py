"""The models of the end-to-end tests (tests/models/run_model.py) and of `make demo`.

Every factory returns (module in eval mode, example inputs, is_classifier). Weights are random
(seeded by the caller); batch-norm running statistics are calibrated by running a few random
batches in train mode, so eval-mode outputs are not ~0. The Hugging Face models (BERT, GPT-2,
ViT) are built from tiny configs with random weights: nothing is downloaded, and the hub is set
offline before transformers is imported.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def calibrate_bn(model, shape, batches=4):
    """Sets BN running stats from random batches (momentum None: cumulative average)."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return model.eval()
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(*shape))
    return model.eval()


def _torchvision(name, size=224, calibration=(4, 4), **kwargs):
    """torchvision's `name` at size x size; BN calibrated on `calibration` = (batches, batch
    size) random batches."""
    import torchvision
    ctor = getattr(torchvision.models, name)
    try:
        model = ctor(weights=None, **kwargs)
    except TypeError:  # torchvision < 0.13
        model = ctor(pretrained=False, **kwargs)
    batches, batch = calibration
    calibrate_bn(model, (batch, 3, size, size), batches=batches)
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


# Llama-style decoder block -------------------------------------------------------------------

class RMSNorm(nn.Module):
    """Written out (not nn.RMSNorm, absent before PyTorch 2.4), as Llama's reference code."""
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary_tables(head_dim, max_len, theta=10000.0):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    ang = torch.outer(torch.arange(max_len).float(), inv)      # [T, hd/2]
    return torch.cos(ang), torch.sin(ang)


def apply_rotary(x, cos, sin):
    """Interleaved rotary embedding (Llama's pairs (x0, x1), (x2, x3), ...), in real
    arithmetic: the rotated pairs are put back together with torch.stack."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class LlamaAttention(nn.Module):
    def __init__(self, d_model, n_head, n_kv_head, max_len):
        super().__init__()
        self.n_head, self.n_kv_head = n_head, n_kv_head
        self.hd = d_model // n_head
        self.wq = nn.Linear(d_model, n_head * self.hd, bias=False)
        self.wk = nn.Linear(d_model, n_kv_head * self.hd, bias=False)
        self.wv = nn.Linear(d_model, n_kv_head * self.hd, bias=False)
        self.wo = nn.Linear(n_head * self.hd, d_model, bias=False)
        cos, sin = rotary_tables(self.hd, max_len)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def forward(self, x):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.n_head, self.hd).transpose(1, 2)
        k = self.wk(x).view(b, t, self.n_kv_head, self.hd).transpose(1, 2)
        v = self.wv(x).view(b, t, self.n_kv_head, self.hd).transpose(1, 2)
        cos, sin = self.cos[:t], self.sin[:t]
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        rep = self.n_head // self.n_kv_head                       # grouped-query attention
        k = k[:, :, None].expand(b, self.n_kv_head, rep, t, self.hd).reshape(b, self.n_head, t, self.hd)
        v = v[:, :, None].expand(b, self.n_kv_head, rep, t, self.hd).reshape(b, self.n_head, t, self.hd)
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # PyTorch < 2.0: masked softmax
            att = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
            att = att.masked_fill(~self.causal[:t, :t], float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.wo(y.transpose(1, 2).reshape(b, t, self.n_head * self.hd))


class SwiGLU(nn.Module):
    def __init__(self, d_model, hidden):
        super().__init__()
        self.w1 = nn.Linear(d_model, hidden, bias=False)
        self.w3 = nn.Linear(d_model, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    """Pre-norm decoder block: RMSNorm, rotary causal attention (grouped-query), SwiGLU."""
    def __init__(self, d_model=128, n_head=4, n_kv_head=2, hidden=352, max_len=64):
        super().__init__()
        self.attention_norm = RMSNorm(d_model)
        self.attention = LlamaAttention(d_model, n_head, n_kv_head, max_len)
        self.ffn_norm = RMSNorm(d_model)
        self.feed_forward = SwiGLU(d_model, hidden)

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))


def llama_block():
    return LlamaBlock().eval(), (torch.randn(1, 32, 128),), False


# Hugging Face transformers (random tiny configs; nothing is downloaded) -----------------------

def _offline():
    # Models are built from configs (random weights): nothing needs the hub, and nothing may
    # try to reach it.
    import os
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def transformers_missing():
    """None when `transformers` can build PyTorch models here, else why not."""
    _offline()
    try:
        import transformers
    except ImportError as e:
        return "%s (scripts/setup-venv.sh installs transformers into .venv)" % e
    if not transformers.is_torch_available():
        return ("transformers %s does not support torch %s (it disables its PyTorch models)"
                % (transformers.__version__, torch.__version__))
    return None


def _transformers():
    _offline()
    import transformers
    return transformers


def _hf(cls, config):
    try:
        return cls(config, attn_implementation="eager")
    except TypeError:  # older releases take it in the config only
        return cls(config)


class HFOutputs(nn.Module):
    """Calls a transformers model with keyword arguments and returns its tensors as a tuple."""
    def __init__(self, model, input_names, output_names):
        super().__init__()
        self.model = model
        self.input_names = input_names
        self.output_names = output_names

    def forward(self, *args):
        out = self.model(**dict(zip(self.input_names, args)), return_dict=True)
        return tuple(getattr(out, k) for k in self.output_names)


def bert_tiny():
    tf = _transformers()
    cfg = tf.BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=64,
                        attn_implementation="eager")
    model = _hf(tf.BertModel, cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 11:] = 0  # the second sequence is padded
    types = torch.zeros(2, 16, dtype=torch.int64)
    types[:, 8:] = 1
    m = HFOutputs(model, ["input_ids", "attention_mask", "token_type_ids"],
                  ["last_hidden_state", "pooler_output"])
    return m.eval(), (ids, mask, types), False


def gpt2_tiny():
    tf = _transformers()
    cfg = tf.GPT2Config(vocab_size=512, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                        bos_token_id=0, eos_token_id=0, use_cache=False,
                        attn_implementation="eager")
    model = _hf(tf.GPT2LMHeadModel, cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 16))
    return HFOutputs(model, ["input_ids"], ["logits"]).eval(), (ids,), False


def vit_tiny():
    tf = _transformers()
    cfg = tf.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64,
                       num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                       attn_implementation="eager")
    model = _hf(tf.ViTModel, cfg).eval()
    return (HFOutputs(model, ["pixel_values"], ["last_hidden_state", "pooler_output"]).eval(),
            (torch.randn(1, 3, 32, 32),), False)


def convnext_tiny():
    """torchvision's convnext_tiny at 64x64 (its stages downsample by 32: 2x2 at the end).
    The layer scales (1e-6 at init) are set to 0.5, so the blocks count in the output."""
    model, inputs, classifier = _torchvision("convnext_tiny", size=64)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layer_scale"):
                p.fill_(0.5)
    return model, inputs, classifier


def t5_encoder_tiny():
    """transformers' T5EncoderModel (relative position bias added to the attention scores as a
    float mask computed from a parameter; RMS-style T5 layer norm; ReLU feed-forward)."""
    tf = _transformers()
    cfg = tf.T5Config(vocab_size=512, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
                      relative_attention_num_buckets=8, relative_attention_max_distance=16)
    model = _hf(tf.T5EncoderModel, cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 16))
    return HFOutputs(model, ["input_ids"], ["last_hidden_state"]).eval(), (ids,), False


MODELS.update({
    "convnext_tiny": convnext_tiny,
    "t5_encoder_tiny": t5_encoder_tiny,
    "llama_block": llama_block,
    "bert_tiny": bert_tiny,
    "gpt2_tiny": gpt2_tiny,
    "vit_tiny": vit_tiny,
})
TORCHVISION.add("convnext_tiny")
TRANSFORMERS = {"bert_tiny", "gpt2_tiny", "vit_tiny", "t5_encoder_tiny"}


# The broader torchvision zoo (issue 16): the smallest model of every classification family, at
# the smallest input each allows (ctest label "zoo"). Pure CNNs run at 64x64 (their features
# downsample by 32: 2x2 at the end); inception_v3 needs >= 75x75; swin_t at 64x64 pads its
# 16x16 and 8x8 stages to its 7x7 windows and shifts them (the later stages are one window, no
# shift); maxvit_t needs every stage divisible by its 7x7 partitions, so 224x224 (its smallest).
ZOO = {
    "resnext50_32x4d": 64, "wide_resnet50_2": 64, "efficientnet_b0": 64, "efficientnet_v2_s": 64,
    "regnet_x_400mf": 64, "regnet_y_400mf": 64, "mnasnet0_5": 64, "googlenet": 64,
    "inception_v3": 75, "densenet121": 64, "swin_t": 64, "maxvit_t": 224,
}
# Auxiliary classifiers (used in train mode only) off: they do not fit the small inputs.
# maxvit_t's BN is calibrated on 2 batches of 2 (a train-mode pass at 224x224 takes seconds on
# 1.13; its last stage still gives 2 x 7 x 7 values per channel and batch).
_ZOO_KWARGS = {"googlenet": {"aux_logits": False, "init_weights": True},
               "inception_v3": {"aux_logits": False, "init_weights": True},
               "maxvit_t": {"calibration": (2, 2)}}


def _zoo(name):
    return lambda: _torchvision(name, size=ZOO[name], **_ZOO_KWARGS.get(name, {}))


MODELS.update({name: _zoo(name) for name in ZOO})
TORCHVISION.update(ZOO)


# Video classifiers (torchvision.models.video): 3-D convolutions over 1 x 3 x 4 x 32 x 32 clips
# (4 frames; r3d_18's stages halve depth and size: 4 -> 4, 2, 1, 1 frames, 32 -> 2 pixels at
# the end); BN calibrated on 4 batches of 2 clips. r2plus1d_18 factors each 3x3x3 conv into a
# 1x3x3 spatial and a 3x1x1 temporal one.
VIDEO = {"r3d_18", "r2plus1d_18"}


def _video(name):
    def build():
        import torchvision.models.video as video
        ctor = getattr(video, name)
        try:
            model = ctor(weights=None)
        except TypeError:  # torchvision < 0.13
            model = ctor(pretrained=False)
        calibrate_bn(model, (2, 3, 4, 32, 32), batches=4)
        return model, (torch.randn(1, 3, 4, 32, 32),), True
    return build


MODELS.update({name: _video(name) for name in VIDEO})
TORCHVISION.update(VIDEO)


# Recurrent models, as edge speech and OCR models use them: nn.LSTM / nn.GRU, which
# torch.export unrolls into their cells over the time steps (a bidirectional layer with flips of
# the sequence) and 1.13's make_fx into the same cells with split gates.
class LSTMKeywordSpotter(nn.Module):
    """40 MFCCs x 20 frames -> 2-layer bidirectional LSTM (hidden 64) -> the last step's
    features -> 12 keywords."""
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(40, 64, num_layers=2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(128, 12)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


class CRNN(nn.Module):
    """A text-line recognizer: 1 x 32 x 48 image -> two conv + BN + ReLU + pool stages ->
    columns as a sequence of 12 steps -> bidirectional GRU (hidden 32) -> 20 classes a step (a
    CTC head)."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        self.gru = nn.GRU(32 * 8, 32, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(64, 20)

    def forward(self, x):
        y = self.conv(x)                       # [N, 32, 8, 12]
        y = y.flatten(1, 2).transpose(1, 2)    # [N, 12, 256]
        y, _ = self.gru(y)
        return self.fc(y).log_softmax(-1)


def lstm_kws():
    return LSTMKeywordSpotter().eval(), (torch.randn(1, 20, 40),), True


def crnn():
    model = CRNN()
    calibrate_bn(model, (4, 1, 32, 48))
    return model, (torch.randn(1, 1, 32, 48),), False


MODELS.update({"lstm_kws": lstm_kws, "crnn": crnn})


# Ultralytics YOLO (built from the package's model configs: random weights, nothing downloaded) --

def ultralytics_missing():
    """None when the `ultralytics` package can build its models here, else why not."""
    try:
        import ultralytics  # noqa: F401
    except ImportError as e:
        return "%s (bench/setup-venv.sh installs ultralytics into bench/.venv)" % e
    return None


class FirstOutput(nn.Module):
    """A YOLO detection model's raw predictions: in eval mode it returns (predictions, feature
    maps); deployments (and Ultralytics' own ONNX export) keep the predictions, [N, 4 + classes
    (+ masks or keypoints), anchors], and run non-maximum suppression outside the network."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        y = self.model(x)
        return y[0] if isinstance(y, (tuple, list)) else y


def ultralytics_model(config, size=640):
    """Ultralytics' model `config` (e.g. "yolov8n.yaml", "yolo11n-seg.yaml", "rtdetr-l.yaml")
    at 1 x 3 x size x size, random weights with calibrated batch norms. The heads cache their
    anchor grid per input shape: one eager forward at that shape fills the cache with real
    tensors (were it filled while torch.export traces, a fake tensor would stay in it), which
    the exported program then holds as constants, as Ultralytics' own export does."""
    import ultralytics
    cls = ultralytics.RTDETR if config.startswith("rtdetr") else ultralytics.YOLO
    model = cls(config).model
    calibrate_bn(model, (2, 3, size, size))
    with torch.no_grad():
        model(torch.rand(1, 3, size, size))
    return FirstOutput(model.eval()).eval()


# torchvision's detectors: their forward ends in data-dependent box post-processing (score
# thresholds, non-maximum suppression) that torch.export cannot trace, so deployments export
# the network up to the raw head outputs and decode boxes outside it -------------------------

class DetectorHeads(nn.Module):
    """A torchvision detector from normalised pixels to its head's raw outputs: the
    transform's normalisation (not its resize: the input comes at the model's size), the
    backbone (with its FPN where it has one), then the head's per-anchor outputs (SSD,
    RetinaNet, FCOS: a tuple in the head's key order) or, for a two-stage R-CNN, its region
    proposal network's objectness and box deltas per feature level (the RoI heads consume
    proposals whose count depends on the data)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        t = model.transform
        self.register_buffer("mean", torch.tensor(t.image_mean).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(t.image_std).view(1, 3, 1, 1))

    def forward(self, x):
        features = self.model.backbone((x - self.mean) / self.std)
        features = list(features.values()) if isinstance(features, dict) else [features]
        if hasattr(self.model, "rpn"):
            objectness, deltas = self.model.rpn.head(features)
            return tuple(objectness) + tuple(deltas)
        outputs = self.model.head(features)
        return tuple(outputs.values())


def detector_heads(name, size):
    """torchvision.models.detection's `name` (random weights, batch norms calibrated through
    the wrapped network) at 1 x 3 x size x size."""
    import torchvision.models.detection as detection
    model = DetectorHeads(getattr(detection, name)(weights=None, weights_backbone=None))
    calibrate_bn(model, (2, 3, size, size))
    return model
