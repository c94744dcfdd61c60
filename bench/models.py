"""The benchmark models (docs/BENCH.md "Models for benchmarks"): factories and example inputs.

Every model has random weights from a fixed seed; convolutional nets get batch-norm statistics
calibrated on random batches so that outputs are not ~0.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def _calibrate_bn(model, shape, batches=4, batch=8):
    """Running statistics from random batches (cumulative average), then eval()."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch, *shape[1:]))
    return model.eval()


def _torchvision(name, size=224, **kwargs):
    import torchvision
    model = getattr(torchvision.models, name)(weights=None, **kwargs)
    return _calibrate_bn(model, (1, 3, size, size), batches=2 if size > 224 or name == "maxvit_t" else 4)


class GPTBlock(nn.Module):
    """A GPT-2 style decoder block: pre-norm causal self-attention and a GELU MLP."""

    def __init__(self, d_model=512, n_head=8, mlp_ratio=4):
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, mlp_ratio * d_model)
        self.out = nn.Linear(mlp_ratio * d_model, d_model)

    def forward(self, x):
        b, t, c = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(c, dim=2)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class LinearStack(nn.Module):
    """Large linear layers at batch 1: weight-bandwidth bound, like a decode step."""

    def __init__(self, width=2048, depth=6):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x))
        return x


def _encoder():
    return nn.TransformerEncoderLayer(d_model=512, nhead=8, batch_first=True).eval()


def _model_zoo():
    """tests/models/model_zoo.py, the builders and wrappers the model tests share."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "models"))
    import model_zoo
    return model_zoo


def _hf_outputs(model, input_names, output_names):
    """The model zoo's wrapper: called with the inputs in order, returns the named outputs as a
    tuple."""
    return _model_zoo().HFOutputs(model, input_names, output_names)


def _transformers():
    import os
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # random configs: nothing is downloaded
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import transformers
    return transformers


def _bert_base():
    """BERT-base's shape (12 layers, hidden 768, 12 heads, MLP 3072) from a config, random
    weights, eager attention; input ids, an attention mask (the last 16 positions padding)
    and token types."""
    tf = _transformers()
    model = tf.BertModel(tf.BertConfig(attn_implementation="eager"))
    return _hf_outputs(model.eval(), ["input_ids", "attention_mask", "token_type_ids"],
                      ["last_hidden_state", "pooler_output"]).eval()


def _bert_base_sdpa():
    """_bert_base with transformers' default attention (torch's scaled_dot_product_attention,
    which reads the padding mask as a bool tensor made from attention_mask): how BERT loads
    unless a user asks for eager attention."""
    tf = _transformers()
    model = tf.BertModel(tf.BertConfig(attn_implementation="sdpa"))
    return _hf_outputs(model.eval(), ["input_ids", "attention_mask", "token_type_ids"],
                      ["last_hidden_state", "pooler_output"]).eval()


def _bert_inputs(seq=128):
    ids = torch.randint(0, 30522, (1, seq))
    mask = torch.ones(1, seq, dtype=torch.int64)
    mask[0, seq - 16:] = 0
    types = torch.zeros(1, seq, dtype=torch.int64)
    types[0, seq // 2:] = 1
    return ids, mask, types


def _gpt2():
    """GPT-2 small's shape (12 layers, hidden 768, 12 heads, vocab 50257, tied LM head) from a
    config, random weights, eager attention, no KV cache: logits for a whole sequence."""
    tf = _transformers()
    model = tf.GPT2LMHeadModel(tf.GPT2Config(use_cache=False, attn_implementation="eager"))
    return _hf_outputs(model.eval(), ["input_ids"], ["logits"]).eval()


def _wav2vec2_base():
    """wav2vec2-base's shape (7 conv feature layers of 512 channels, the first with a group
    norm; 12 layers, hidden 768), random weights, eager attention; 1 s of 16 kHz audio."""
    tf = _transformers()
    model = tf.Wav2Vec2Model(tf.Wav2Vec2Config(attn_implementation="eager"))
    return _hf_outputs(model.eval(), ["input_values"], ["last_hidden_state"]).eval()


def _whisper_tiny_encoder():
    """Whisper-tiny's encoder (conv stem k3 on 80 mel bins, 4 layers, d 384, 6 heads), random
    weights, eager attention; 30 s of features [1, 80, 3000]."""
    tf = _transformers()
    cfg = tf.WhisperConfig(d_model=384, encoder_layers=4, encoder_attention_heads=6,
                           encoder_ffn_dim=1536, decoder_layers=4, decoder_attention_heads=6,
                           decoder_ffn_dim=1536, num_mel_bins=80, attn_implementation="eager")
    model = tf.WhisperModel(cfg).get_encoder()
    return _hf_outputs(model.eval(), ["input_features"], ["last_hidden_state"]).eval()


def _convnext_v2_tiny():
    """ConvNeXt V2-tiny's shape (depths 3, 3, 9, 3; widths 96..768; GRN), random weights."""
    tf = _transformers()
    model = tf.ConvNextV2Model(tf.ConvNextV2Config())
    return _hf_outputs(model.eval(), ["pixel_values"], ["pooler_output"]).eval()


def _deit_small():
    """DeiT-small's shape (12 layers, d 384, 6 heads; class and distillation tokens), random
    weights, eager attention, patch 16 at 224."""
    tf = _transformers()
    cfg = tf.DeiTConfig(hidden_size=384, num_attention_heads=6, intermediate_size=1536,
                        attn_implementation="eager")
    return _hf_outputs(tf.DeiTModel(cfg, add_pooling_layer=False).eval(), ["pixel_values"],
                       ["last_hidden_state"]).eval()


# name -> (factory, input shape or a function returning the inputs, description)
def _video(name):
    import torchvision.models.video as video
    model = getattr(video, name)(weights=None)
    return _calibrate_bn(model, (1, 3, 16, 112, 112), batches=2, batch=2)


def _lraspp():
    import torchvision.models.segmentation as seg
    model = seg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
    model = _calibrate_bn(model, (1, 3, 512, 512), batches=2, batch=2)
    return _hf_outputs_dict(model, "out")


def _hf_outputs_dict(model, key):
    """A module whose forward returns a dict: its `key` entry as the one output."""
    class Out(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, x):
            return self.inner(x)[key]
    return Out().eval()


def _segformer_b0():
    """SegFormer-B0 (widths 32..256, depths 2, 2, 2, 2, decoder 256), random weights, eager."""
    tf = _transformers()
    cfg = tf.SegformerConfig(hidden_sizes=[32, 64, 160, 256], depths=[2, 2, 2, 2],
                             decoder_hidden_size=256, num_labels=150, attn_implementation="eager")
    model = tf.SegformerForSemanticSegmentation(cfg).eval()
    return _hf_outputs(model, ["pixel_values"], ["logits"]).eval()


def _mobilevit_small():
    """MobileViT-small (hidden 144, 192, 240; neck 640), random weights, eager attention."""
    tf = _transformers()
    cfg = tf.MobileViTConfig(image_size=256, attn_implementation="eager")
    return _hf_outputs(tf.MobileViTModel(cfg).eval(), ["pixel_values"], ["pooler_output"]).eval()


def _mobilevitv2():
    """MobileViTV2-1.0 (width multiplier 1.0: its separable linear self-attention), random
    weights."""
    tf = _transformers()
    cfg = tf.MobileViTV2Config(image_size=256)
    return _hf_outputs(tf.MobileViTV2Model(cfg).eval(), ["pixel_values"],
                       ["pooler_output"]).eval()


def _deeplabv3():
    import torchvision.models.segmentation as seg
    model = seg.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False)
    model = _calibrate_bn(model, (1, 3, 512, 512), batches=2, batch=2)
    return _hf_outputs_dict(model, "out")


def _t5_small_encoder():
    """T5-small's encoder (6 layers, d 512, 8 heads, relative position buckets), random weights."""
    tf = _transformers()
    cfg = tf.T5Config(d_model=512, d_ff=2048, num_layers=6, num_heads=8,
                      attn_implementation="eager")
    return _hf_outputs(tf.T5EncoderModel(cfg).eval(), ["input_ids"], ["last_hidden_state"]).eval()


def _timm(name):
    """A timm model (random weights, nothing downloaded) with calibrated batch norms."""
    import timm
    model = timm.create_model(name, pretrained=False)
    side = tuple(model.pretrained_cfg["input_size"][1:])
    return _calibrate_bn(model, (1, 3) + side, batches=2, batch=4)


def _yolos_tiny():
    """YOLOS-tiny's shape (12 layers, d 192, 3 heads, 100 detection tokens), random weights, at
    512x512."""
    tf = _transformers()
    cfg = tf.YolosConfig(hidden_size=192, num_hidden_layers=12, num_attention_heads=3,
                         intermediate_size=768, image_size=[512, 512], num_detection_tokens=100,
                         attn_implementation="eager")
    return _hf_outputs(tf.YolosForObjectDetection(cfg).eval(), ["pixel_values"],
                       ["logits", "pred_boxes"]).eval()


class LSTMKeywordSpotter(nn.Module):
    """Keyword spotting as on microcontrollers and phones: 49 frames x 40 MFCCs (1 s of audio in
    20 ms hops), a 2-layer bidirectional LSTM (hidden 128), the last step's features to 12
    keywords."""
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(40, 128, num_layers=2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(256, 12)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


class CRNN(nn.Module):
    """Text-line recognition (CRNN, Shi et al.): a 1x32x128 grey crop through a VGG-style conv
    stack with batch norm to one row of 32 columns x 256 features, a 2-layer bidirectional LSTM
    (hidden 128), 37 classes a column (CTC)."""
    def __init__(self):
        super().__init__()
        def block(cin, cout, pool):
            layers = [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]
            return layers + ([nn.MaxPool2d(pool)] if pool else [])
        self.conv = nn.Sequential(*block(1, 64, 2), *block(64, 128, 2), *block(128, 256, None),
                                  *block(256, 256, (2, 1)), *block(256, 256, (4, 1)))
        self.lstm = nn.LSTM(256, 128, num_layers=2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(256, 37)

    def forward(self, x):
        y = self.conv(x).squeeze(2).transpose(1, 2)  # [N, 32, 256]
        y, _ = self.lstm(y)
        return self.fc(y).log_softmax(-1)


def _crnn():
    return _calibrate_bn(CRNN(), (1, 1, 32, 128))


class UNet(nn.Module):
    """The original U-Net's shape at a small width (Ronneberger et al.; the common
    segmentation-on-device form): four levels of two 3x3 conv + BN + ReLU (32, 64, 128, 256
    channels, 512 at the bottom), 2x2 max pooling down, 2x2 stride-2 transposed convs up, skip
    concatenations, a 1x1 head to 2 classes."""

    def __init__(self, widths=(32, 64, 128, 256, 512), classes=2):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                 nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
        self.down = nn.ModuleList()
        cin = 3
        for w in widths:
            self.down.append(block(cin, w))
            cin = w
        self.up = nn.ModuleList(nn.ConvTranspose2d(widths[i + 1], widths[i], 2, stride=2)
                                for i in reversed(range(len(widths) - 1)))
        self.merge = nn.ModuleList(block(2 * widths[i], widths[i])
                                   for i in reversed(range(len(widths) - 1)))
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x)
            if i < len(self.down) - 1:
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([skips.pop(), up(x)], 1))
        return self.head(x)


def _unet():
    return _calibrate_bn(UNet(), (1, 3, 256, 256))


def _ultralytics(config):
    """An Ultralytics detector from its package config, 640 x 640, random weights (the shared
    builder in tests/models/model_zoo.py: calibrated batch norms, raw predictions out)."""
    return _model_zoo().ultralytics_model(config)


class _Decode(nn.Module):
    """An autoencoder's decode as a module: latents in, image out (the first output)."""

    def __init__(self, vae):
        super().__init__()
        self.vae = vae

    def forward(self, z):
        return self.vae.decode(z, return_dict=False)[0]


def _diffusers_decoder(cls, **config):
    """A diffusers autoencoder's decoder at its released config (bench/setup-venv.sh installs
    diffusers), random weights."""
    import diffusers
    return _Decode(getattr(diffusers, cls)(**config).eval()).eval()


class _Denoise(nn.Module):
    """One denoising step of a diffusers denoiser as a module: (latents, timestep, condition)
    in, the prediction out — the condition passed as `condition_arg` (text embeddings to a
    UNet, a class label to DiT)."""

    def __init__(self, model, condition_arg):
        super().__init__()
        self.model = model
        self.condition_arg = condition_arg

    def forward(self, latents, timestep, condition):
        return self.model(latents, timestep, **{self.condition_arg: condition},
                          return_dict=False)[0]


def _diffusers_denoiser(cls, condition_arg, **config):
    """A diffusers denoiser at a released config, random weights (the parameters diffusers
    zero-initialises randomised, as in tests/models/probe_diffusers.py)."""
    import diffusers
    _model_zoo()  # puts tests/models on the path
    from probe_builders import _unzeroed
    model = getattr(diffusers, cls)(**config).eval()
    _unzeroed(model)
    return _Denoise(model, condition_arg).eval()


def _timm_reparameterized(name):
    """A timm model with its training-time branches folded by timm itself
    (`timm.utils.reparameterize_model`: RepVGG, MobileOne, RepViT, FastViT, ...), as its
    authors deploy it."""
    import timm.utils
    return timm.utils.reparameterize_model(_timm(name)).eval()


class _Models(dict):
    """The registry below, plus any timm model by name: `timm_<name>` not listed here is built by
    timm at its pretrained config's input size (random weights, batch norms calibrated), and
    `timm_<name>_reparam` is that model re-parameterized by timm before any runtime sees it."""

    def __missing__(self, key):
        if not key.startswith("timm_"):
            raise KeyError(key)
        name, reparam = key[5:], key.endswith("_reparam")
        if reparam:
            name = name[:-len("_reparam")]
        try:
            import timm
            size = tuple(timm.get_pretrained_cfg(name).input_size)
        except Exception as e:  # timm absent, or no such model
            raise KeyError("%s (a timm model? %s)" % (key, e)) from None
        entry = ((lambda n=name: (_timm_reparameterized if reparam else _timm)(n)), (1,) + size,
                 "timm %s%s, 1x%s" % (name, " re-parameterized by timm" if reparam else "",
                                      "x".join(map(str, size))))
        self[key] = entry
        return entry

    def __contains__(self, key):
        if dict.__contains__(self, key):
            return True
        try:
            self[key]
            return True
        except KeyError:
            return False


MODELS = _Models({
    "resnet18": (lambda: _torchvision("resnet18"), (1, 3, 224, 224), "torchvision resnet18, 1x3x224x224"),
    "mobilenet_v2": (lambda: _torchvision("mobilenet_v2"), (1, 3, 224, 224), "torchvision mobilenet_v2, 1x3x224x224"),
    "mobilenet_v3_small": (lambda: _torchvision("mobilenet_v3_small"), (1, 3, 224, 224),
                           "torchvision mobilenet_v3_small, 1x3x224x224"),
    "efficientnet_b0": (lambda: _torchvision("efficientnet_b0"), (1, 3, 224, 224),
                        "torchvision efficientnet_b0, 1x3x224x224 (SiLU, squeeze-excitation)"),
    "mnasnet0_5": (lambda: _torchvision("mnasnet0_5"), (1, 3, 224, 224), "torchvision mnasnet0_5, 1x3x224x224"),
    "regnet_x_400mf": (lambda: _torchvision("regnet_x_400mf"), (1, 3, 224, 224),
                       "torchvision regnet_x_400mf, 1x3x224x224 (grouped convs)"),
    # The rest of the torchvision zoo of issue 16 (one model per family, smallest size), at the
    # input size the family is trained at.
    "resnext50_32x4d": (lambda: _torchvision("resnext50_32x4d"), (1, 3, 224, 224), "torchvision resnext50_32x4d, 1x3x224x224"),
    "wide_resnet50_2": (lambda: _torchvision("wide_resnet50_2"), (1, 3, 224, 224), "torchvision wide_resnet50_2, 1x3x224x224"),
    "efficientnet_v2_s": (lambda: _torchvision("efficientnet_v2_s", 384), (1, 3, 384, 384),
                          "torchvision efficientnet_v2_s, 1x3x384x384"),
    "regnet_y_400mf": (lambda: _torchvision("regnet_y_400mf"), (1, 3, 224, 224), "torchvision regnet_y_400mf, 1x3x224x224"),
    "googlenet": (lambda: _torchvision("googlenet", aux_logits=False, init_weights=True), (1, 3, 224, 224),
                  "torchvision googlenet, 1x3x224x224"),
    "inception_v3": (lambda: _torchvision("inception_v3", 299, aux_logits=False, init_weights=True),
                     (1, 3, 299, 299), "torchvision inception_v3, 1x3x299x299"),
    "densenet121": (lambda: _torchvision("densenet121"), (1, 3, 224, 224), "torchvision densenet121, 1x3x224x224"),
    "convnext_tiny": (lambda: _torchvision("convnext_tiny"), (1, 3, 224, 224), "torchvision convnext_tiny, 1x3x224x224"),
    "swin_t": (lambda: _torchvision("swin_t"), (1, 3, 224, 224), "torchvision swin_t, 1x3x224x224"),
    "maxvit_t": (lambda: _torchvision("maxvit_t"), (1, 3, 224, 224), "torchvision maxvit_t, 1x3x224x224"),
    "vit_b_16": (lambda: _torchvision("vit_b_16"), (1, 3, 224, 224), "torchvision vit_b_16, 1x3x224x224"),
    "shufflenet_v2_x0_5": (lambda: _torchvision("shufflenet_v2_x0_5"), (1, 3, 224, 224),
                           "torchvision shufflenet_v2_x0_5, 1x3x224x224"),
    "squeezenet1_1": (lambda: _torchvision("squeezenet1_1"), (1, 3, 224, 224), "torchvision squeezenet1_1, 1x3x224x224"),
    "transformer_encoder": (_encoder, (1, 128, 512), "nn.TransformerEncoderLayer(512, 8), seq 128"),
    "gpt_block": (lambda: GPTBlock().eval(), (1, 128, 512), "GPT-2 style block (d 512, 8 heads, MLP 4x), seq 128"),
    "linear_stack": (lambda: LinearStack().eval(), (1, 2048), "6 x Linear(2048, 2048) + relu, batch 1 (96 MiB f32 weights)"),
    # `transformers` models (issue 16 item 3), the families' base sizes, random weights.
    "bert_base": (_bert_base, _bert_inputs,
                  "transformers BertModel at BERT-base's shape, seq 128 (ids, mask with 16 padded, token types)"),
    "bert_base_sdpa": (_bert_base_sdpa, _bert_inputs,
                       "bert_base with transformers' default SDPA attention (a bool padding "
                       "mask), seq 128"),
    "gpt2": (_gpt2, lambda: (torch.randint(0, 50257, (1, 128)),),
             "transformers GPT2LMHeadModel at GPT-2 small's shape, seq 128, logits"),
    # More `transformers` architectures whose pieces the cpu delegate took late (conv1d, GRN,
    # class tokens), at their real sizes.
    "wav2vec2_base": (_wav2vec2_base, (1, 16000),
                      "transformers Wav2Vec2Model at wav2vec2-base's shape, 1 s of 16 kHz audio"),
    "whisper_tiny_encoder": (_whisper_tiny_encoder, (1, 80, 3000),
                             "transformers Whisper encoder at whisper-tiny's shape, 1x80x3000"),
    "convnext_v2_tiny": (_convnext_v2_tiny, (1, 3, 224, 224),
                         "transformers ConvNextV2Model at ConvNeXt V2-tiny's shape, 1x3x224x224"),
    "deit_small": (_deit_small, (1, 3, 224, 224),
                   "transformers DeiTModel at DeiT-small's shape, 1x3x224x224"),
    # Architectures outside image classification and text (video, segmentation, mobile ViTs).
    "r3d_18": (lambda: _video("r3d_18"), (1, 3, 16, 112, 112),
               "torchvision r3d_18 (3-D convs), a clip of 16 frames of 112x112"),
    "r2plus1d_18": (lambda: _video("r2plus1d_18"), (1, 3, 16, 112, 112),
                    "torchvision r2plus1d_18 ((2+1)-D convs), 16 frames of 112x112"),
    "lraspp_mobilenet_v3": (_lraspp, (1, 3, 512, 512),
                            "torchvision lraspp_mobilenet_v3_large (segmentation), 1x3x512x512"),
    "segformer_b0": (_segformer_b0, (1, 3, 512, 512),
                     "transformers SegformerForSemanticSegmentation at SegFormer-B0's shape, 1x3x512x512"),
    "mobilevit_small": (_mobilevit_small, (1, 3, 256, 256),
                        "transformers MobileViTModel at MobileViT-small's shape, 1x3x256x256"),
    "mobilevitv2": (_mobilevitv2, (1, 3, 256, 256),
                    "transformers MobileViTV2Model at MobileViTV2-1.0's shape, 1x3x256x256"),
    "deeplabv3_mobilenet_v3": (_deeplabv3, (1, 3, 512, 512),
                               "torchvision deeplabv3_mobilenet_v3_large (segmentation), 1x3x512x512"),
    "t5_small_encoder": (_t5_small_encoder, lambda: (torch.randint(0, 32128, (1, 128)),),
                         "transformers T5EncoderModel at T5-small's shape, seq 128"),
    "yolos_tiny": (_yolos_tiny, (1, 3, 512, 512),
                   "transformers YolosForObjectDetection at YOLOS-tiny's shape, 1x3x512x512"),
    # timm's mobile models (2026-12-05): MobileNetV4 (conv and hybrid: mobile multi-query
    # attention), FastViT, EfficientViT (MIT), RepViT, EfficientFormer V2, GhostNetV2.
    **{"timm_" + n: ((lambda n=n: _timm(n)), (1, 3, s, s), "timm %s, 1x3x%dx%d" % (n, s, s))
       for n, s in (("mobilenetv4_conv_small", 224), ("mobilenetv4_hybrid_medium", 256),
                    ("fastvit_t8", 256), ("efficientvit_b0", 224), ("repvit_m1_0", 224),
                    ("efficientformerv2_s0", 224), ("ghostnetv2_100", 224))},
    # Recurrent models (nn.LSTM, unrolled over the time steps by the exporters).
    "lstm_kws": (lambda: LSTMKeywordSpotter().eval(), (1, 49, 40),
                 "2-layer bidirectional LSTM (hidden 128) keyword spotter, 49 frames x 40 MFCCs"),
    "unet": (_unet, (1, 3, 256, 256), "U-Net (widths 32-512, 2x2 transposed convs up), 1x3x256x256"),
    "crnn": (_crnn, (1, 1, 32, 128),
             "CRNN text-line recognizer (VGG-style convs + 2-layer bidirectional LSTM), 1x1x32x128"),
    # Ultralytics' detectors (bench/setup-venv.sh installs the package), the raw predictions
    # before non-maximum suppression.
    **{"yolo_" + n.replace("-", "_"): ((lambda n=n: _ultralytics(n + ".yaml")), (1, 3, 640, 640),
                                       "Ultralytics %s (random weights), 1x3x640x640" % n)
       for n in ("yolov5nu", "yolov8n", "yolov8s", "yolov8n-seg", "yolov10n", "yolo11n", "yolo11s")},
    # diffusers' image decoders (2026-12-07): TAESD, the tiny autoencoder edge pipelines use
    # for previews and fast decoding, and Stable Diffusion's VAE decoder, latents to pixels.
    "taesd_decoder": ((lambda: _diffusers_decoder("AutoencoderTiny")), (1, 4, 64, 64),
                      "diffusers AutoencoderTiny (TAESD) decode, latents 1x4x64x64 -> 512x512"),
    "sd_vae_decoder": ((lambda: _diffusers_decoder(
        "AutoencoderKL", block_out_channels=(128, 256, 512, 512),
        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
        layers_per_block=2, latent_channels=4)), (1, 4, 32, 32),
        "diffusers AutoencoderKL at Stable Diffusion's VAE config, decode 1x4x32x32 -> 256x256"),
    # diffusers' denoisers (2026-12-07), one step at 256 x 256 pixels (32 x 32 latents):
    # Stable Diffusion 1.x's UNet (text embeddings of CLIP ViT-L, 77 x 768) and DiT-XL/2
    # (class-conditional diffusion transformer, 256 tokens of 1152).
    "sd_unet": ((lambda: _diffusers_denoiser("UNet2DConditionModel", "encoder_hidden_states",
                                             sample_size=32, cross_attention_dim=768)),
                lambda: (torch.randn(1, 4, 32, 32), torch.tensor([500.0]),
                         torch.randn(1, 77, 768)),
                "diffusers UNet2DConditionModel at Stable Diffusion 1.5's config, one step on "
                "1x4x32x32 latents (256x256), text 1x77x768"),
    "dit_xl2": ((lambda: _diffusers_denoiser("DiTTransformer2DModel", "class_labels")),
                lambda: (torch.randn(1, 4, 32, 32), torch.tensor([500.0]),
                         torch.tensor([207])),
                "diffusers DiTTransformer2DModel at DiT-XL/2's config, one step on 1x4x32x32 "
                "latents (256x256), class label 207"),
    # torchvision's detectors up to their raw head outputs (box decoding and non-maximum
    # suppression outside the network: tests/models/model_zoo.py DetectorHeads).
    **{"tv_" + key: ((lambda n=n, s=s: _model_zoo().detector_heads(n, s)), (1, 3, s, s),
                     "torchvision %s (random weights, raw head outputs), 1x3x%dx%d" % (n, s, s))
       for key, n, s in (("ssdlite320", "ssdlite320_mobilenet_v3_large", 320),
                         ("ssd300_vgg16", "ssd300_vgg16", 300),
                         ("retinanet_r50_fpn", "retinanet_resnet50_fpn", 512),
                         ("fcos_r50_fpn", "fcos_resnet50_fpn", 512),
                         ("fasterrcnn_mbv3_rpn", "fasterrcnn_mobilenet_v3_large_320_fpn", 320))},
})

# The single fully-connected layer for raw XNNPACK against tern's cpu delegate.
FC_SHAPE = {"batch": 1, "in": 4096, "out": 4096}


def fc_layer():
    return nn.Linear(FC_SHAPE["in"], FC_SHAPE["out"]).eval()


def build(name, seed=0):
    """(model in eval mode, tuple of example inputs) for `name`, deterministic for a seed."""
    factory, shape, _ = MODELS[name]
    torch.manual_seed(seed)
    model = factory()
    torch.manual_seed(seed + 1)
    inputs = shape() if callable(shape) else torch.randn(*shape)
    return model, inputs if isinstance(inputs, tuple) else (inputs,)


def weight_bytes(model):
    return sum(p.numel() * p.element_size() for p in model.parameters())
