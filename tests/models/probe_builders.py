"""The coverage probe's model builders (coverage_probe.py): each returns a function that makes
(module, example inputs, whether the output is a classifier's) for run_model.check_model —
transformers classes from small configs, torchvision, timm and Ultralytics models with random
weights (nothing is downloaded), batch-norm statistics calibrated where a model has them."""
import torch
import torch.nn as nn

import model_zoo
from model_zoo import HFOutputs, _hf, _transformers

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
DECODER = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, intermediate_size=128, use_cache=False)
AUDIO = dict(SMALL, conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3),
             num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
T5_SMALL = dict(vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
SEQ2SEQ = dict(vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=1,
               encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
               decoder_ffn_dim=128, pad_token_id=0, bos_token_id=0, eos_token_id=0,
               decoder_start_token_id=0)


def _calibrated(model, shape, key=None):
    """Batch-norm statistics from 3 random batches of 2 (train mode), then eval."""
    model.train()
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(2, *shape[1:])
            model(**{key: x}) if key else model(x)
    return model.eval()


def text(cls, cfg, encoder=False, **kw):
    def build():
        tf = _transformers()
        model = _hf(getattr(tf, cls), getattr(tf, cfg)(**kw)).eval()
        if encoder:
            model = model.get_encoder()
        ids = torch.randint(0, 100, (1, 16))
        return HFOutputs(model, ["input_ids"], ["last_hidden_state"]).eval(), (ids,), False
    return build


# Mixture-of-experts sizes for decoder(): the defaults of newer configs (64-256 experts) make a
# "tiny" model of 50-140 M parameters.
MOE_SMALL = dict(num_experts=4, n_routed_experts=4, num_local_experts=4, num_experts_per_tok=2,
                 moe_intermediate_size=64, n_group=1, topk_group=1, n_shared_experts=1,
                 num_shared_experts=1, shared_expert_intermediate_size=64,
                 moe_num_experts=4)

# Multi-head latent attention's sizes (DeepSeek-V2's family): the RoPE and non-RoPE parts of a
# query / key head and the compressed KV and query ranks, written out for decoder().
MLA_SMALL = dict(num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8,
                 qk_nope_head_dim=8, v_head_dim=16)


def decoder(cls, cfg, **kw):
    """text() of a decoder from the generic DECODER sizes (head_dim 16; pad, bos and eos ids 0,
    inside the tiny vocabulary), with the MOE_SMALL sizes the config has, and parameters the
    model initialises to zeros randomised (_unzeroed: an all-zero router ties every expert,
    and a tie's pick is not a defined order)."""
    def build():
        tf = _transformers()
        config_cls = getattr(tf, cfg)
        defaults = config_cls()
        args = dict(DECODER, head_dim=16, pad_token_id=0, bos_token_id=0, eos_token_id=0)
        args.update({k: v for k, v in MOE_SMALL.items() if hasattr(defaults, k)})
        args.update(kw)
        model = _hf(getattr(tf, cls), config_cls(**args)).eval()
        _unzeroed(model)
        ids = torch.randint(0, 100, (1, 16))
        return HFOutputs(model, ["input_ids"], ["last_hidden_state"]).eval(), (ids,), False
    return build


def tensor_in(cls, cfg, shape, key="pixel_values", bn=False, encoder=False, **kw):
    def build():
        tf = _transformers()
        model = _hf(getattr(tf, cls), getattr(tf, cfg)(**kw))
        if encoder:
            model = model.get_encoder()
        model = _calibrated(model, shape, key) if bn else model.eval()
        return (HFOutputs(model, [key], ["last_hidden_state"]).eval(), (torch.randn(*shape),),
                False)
    return build


def vision(cls, cfg, size=32, bn=False, **kw):
    return tensor_in(cls, cfg, (1, 3, size, size), bn=bn, **kw)


def segmentation(name, size=64):
    def build():
        import torchvision.models.segmentation as seg

        class Out(nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x):
                return self.m(x)["out"]
        m = getattr(seg, name)(weights=None, weights_backbone=None, num_classes=5)
        return Out(_calibrated(m, (1, 3, size, size))).eval(), (torch.randn(1, 3, size, size),), \
            False
    return build


def inputs(cls, cfg, feeds, outs=("last_hidden_state",), encoder=False, **kw):
    """A transformers model (or its encoder) called with several named inputs (feeds: name ->
    maker)."""
    def build():
        tf = _transformers()
        model = _hf(getattr(tf, cls), getattr(tf, cfg)(**kw)).eval()
        if encoder:
            model = model.get_encoder()
        names = list(feeds)
        return (HFOutputs(model, names, list(outs)).eval(), tuple(feeds[k]() for k in names),
                False)
    return build


def classifier(name, size=64):
    """A torchvision classification model at size x size (batch-norm statistics calibrated)."""
    def build():
        import torchvision.models as tvm
        shape = (1, 3, size, size)
        return _calibrated(getattr(tvm, name)(weights=None), shape), (torch.randn(*shape),), True
    return build


def _ids(length=16):
    return lambda: torch.randint(0, 100, (1, length))


def _ones(length=16):
    return lambda: torch.ones(1, length, dtype=torch.long)


def _boxes():
    return torch.sort(torch.randint(0, 1000, (1, 16, 4)), -1)[0]


def video(name):
    def build():
        import torchvision.models.video as v
        m = _calibrated(getattr(v, name)(weights=None), (1, 3, 4, 32, 32))
        return m, (torch.randn(1, 3, 4, 32, 32),), True
    return build


def video_at(name, shape):
    """A torchvision video model at its own input size (MViT's relative positions and S3D's
    last pool fix it)."""
    def build():
        import torchvision.models.video as v
        m = _calibrated(getattr(v, name)(weights=None), shape)
        return m, (torch.randn(*shape),), True
    return build


def optical_flow(name, size=128, updates=2):
    """A torchvision optical-flow model (RAFT) on two frames, `updates` refinement steps; the
    last flow estimate is the output."""
    def build():
        import torchvision.models.optical_flow as f

        class LastFlow(nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, a, b):
                return self.m(a, b, num_flow_updates=updates)[-1]
        frames = (torch.rand(1, 3, size, size), torch.rand(1, 3, size, size))
        return LastFlow(getattr(f, name)(weights=None).eval()), frames, True
    return build


def timm_model(name, size=None, **kw):
    """A timm classifier, random weights (nothing is downloaded), at its own input size or at
    size x size; batch-norm statistics calibrated."""
    def build():
        import timm
        model = timm.create_model(name, pretrained=False, **kw)
        _unzeroed(model)
        side = (size, size) if size else tuple(model.pretrained_cfg["input_size"][1:])
        shape = (1, 3) + side
        return _calibrated(model, shape), (torch.randn(*shape),), True
    return build


def _unzeroed(model):
    """Parameters timm initialises to zeros (classifier heads, the last norm of residual
    branches, layer scales) get random values, so the comparison exercises every layer rather
    than matching zeros (a zero head makes every logit its bias)."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.is_floating_point() and not name.endswith("bias") and not p.any():
                if p.dim() == 1:
                    p.copy_(torch.rand(p.shape, generator=gen) + 0.5)
                else:
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.02)


def timm_missing():
    """None when timm can build models here, else why not."""
    try:
        import timm  # noqa: F401
    except ImportError as e:
        return "%s (scripts/setup-venv.sh installs timm into .venv)" % e
    return None


def hgnet_v2():
    """HGNet-V2 (RT-DETR's backbone) as a classifier: a stem with a padded max-pool branch, a
    plain and a light (1x1 conv -> depthwise) stage, each aggregating its layers by a cat."""
    def build():
        tf = _transformers()
        cfg = tf.HGNetV2Config(stem_channels=[3, 8, 16], stage_in_channels=[16, 16],
                               stage_mid_channels=[8, 16], stage_out_channels=[16, 32],
                               stage_num_blocks=[1, 1], stage_downsample=[False, True],
                               stage_light_block=[False, True], stage_kernel_size=[3, 5],
                               stage_numb_of_layers=[2, 2], depths=[1, 1], hidden_sizes=[16, 32],
                               num_labels=5)
        model = _calibrated(_hf(tf.HGNetV2ForImageClassification, cfg), (1, 3, 64, 64),
                            "pixel_values")
        return (HFOutputs(model, ["pixel_values"], ["logits"]).eval(),
                (torch.randn(1, 3, 64, 64),), True)
    return build


def ultralytics(config, size=640):
    """An Ultralytics detector from its package config (model_zoo.ultralytics_model): random
    weights, 640 x 640 as the models are trained, the raw predictions compared."""
    def build():
        return model_zoo.ultralytics_model(config, size), (torch.rand(1, 3, size, size),), False
    return build


def detector(name, size):
    """A torchvision detector up to its raw head outputs (model_zoo.detector_heads)."""
    def build():
        return model_zoo.detector_heads(name, size), (torch.rand(1, 3, size, size),), False
    return build
