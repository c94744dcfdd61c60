#!/usr/bin/env python3
"""coverage_probe.py [NAME...]: which architectures beyond the test zoo export and match PyTorch.

Not a ctest test: a survey to run by hand after exporter changes (docs/models.md, *Coverage
probe*). Each entry builds a tiny random-weight model — Hugging Face `transformers` classes
from small configs (nothing is downloaded), torchvision segmentation and video models, timm's
image models and Ultralytics' detectors (the package comes with bench/setup-venv.sh: run the
probe with bench/.venv/bin/python for those) — and run_model.py's check exports it, compiles it
for the portable kernels and the cpu backend and compares with PyTorch eager in float64 (same
1e-4 * max|ref| bound). Prints one line per model (PASS, FAIL with the error, or ERROR with the
exporter's message) and a closing count.

  TERN=build/tern .venv/bin/python tests/models/coverage_probe.py [--backend B] [NAME...]

--backend B (vulkan, cuda, ...) checks the portable program and B's instead of the cpu
backend's and counts B's regions (a backend this tern build lacks is reported skipped).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import model_zoo  # noqa: E402
import run_model  # noqa: E402
from model_zoo import HFOutputs, _hf, _transformers  # noqa: E402

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


PROBE = {
    # Encoders (text)
    "distilbert": text("DistilBertModel", "DistilBertConfig", vocab_size=128, dim=64, n_layers=2,
                       n_heads=4, hidden_dim=128),
    "roberta": text("RobertaModel", "RobertaConfig", vocab_size=128, **SMALL),
    "xlm_roberta": text("XLMRobertaModel", "XLMRobertaConfig", vocab_size=128, **SMALL),
    "albert": text("AlbertModel", "AlbertConfig", vocab_size=128, embedding_size=32, **SMALL),
    "electra": text("ElectraModel", "ElectraConfig", vocab_size=128, embedding_size=32, **SMALL),
    "mobilebert": text("MobileBertModel", "MobileBertConfig", vocab_size=128, hidden_size=64,
                       num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                       embedding_size=32, intra_bottleneck_size=32, true_hidden_size=32),
    "deberta_v2": text("DebertaV2Model", "DebertaV2Config", vocab_size=128, **SMALL),
    "convbert": text("ConvBertModel", "ConvBertConfig", vocab_size=128, embedding_size=64,
                     **SMALL),
    "funnel": text("FunnelBaseModel", "FunnelConfig", vocab_size=128, d_model=64, n_head=4,
                   d_head=16, d_inner=128, block_sizes=[1, 1]),
    "clip_text": text("CLIPTextModel", "CLIPTextConfig", vocab_size=128, **SMALL),
    "t5_encoder": text("T5EncoderModel", "T5Config", vocab_size=128, d_model=64, d_kv=16,
                       d_ff=128, num_layers=2, num_heads=4),
    "bart_encoder": text("BartModel", "BartConfig", encoder=True, max_position_embeddings=64,
                         **SEQ2SEQ),
    "marian_encoder": text("MarianModel", "MarianConfig", encoder=True,
                           max_position_embeddings=64, **SEQ2SEQ),
    # Decoders (no cache: one forward over the prompt)
    "llama": text("LlamaModel", "LlamaConfig", **DECODER),
    "mistral": text("MistralModel", "MistralConfig", **DECODER),
    "qwen2": text("Qwen2Model", "Qwen2Config", **DECODER),
    "phi3": text("Phi3Model", "Phi3Config", pad_token_id=0, **DECODER),
    "gemma": text("GemmaModel", "GemmaConfig", head_dim=16, **DECODER),
    "mixtral": text("MixtralModel", "MixtralConfig", num_local_experts=4, num_experts_per_tok=2,
                    **DECODER),
    "qwen2_moe": text("Qwen2MoeModel", "Qwen2MoeConfig", num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=64, shared_expert_intermediate_size=96, **DECODER),
    "olmoe": text("OlmoeModel", "OlmoeConfig", num_experts=4, num_experts_per_tok=2, **DECODER),
    "gpt_neox": text("GPTNeoXModel", "GPTNeoXConfig", vocab_size=128, use_cache=False, **SMALL),
    "gptj": text("GPTJModel", "GPTJConfig", vocab_size=128, n_embd=64, n_layer=2, n_head=4,
                 rotary_dim=8, use_cache=False),
    "falcon": text("FalconModel", "FalconConfig", vocab_size=128, hidden_size=64,
                   num_hidden_layers=2, num_attention_heads=4, use_cache=False),
    "bloom": text("BloomModel", "BloomConfig", vocab_size=128, hidden_size=64, n_layer=2,
                  n_head=4, use_cache=False),
    "opt": text("OPTModel", "OPTConfig", vocab_size=128, hidden_size=64, num_hidden_layers=2,
                num_attention_heads=4, ffn_dim=128, word_embed_proj_dim=64, use_cache=False),
    "mamba": text("MambaModel", "MambaConfig", vocab_size=128, hidden_size=64,
                  num_hidden_layers=2, state_size=8, use_cache=False),
    # Vision (transformers)
    "deit": vision("DeiTModel", "DeiTConfig", image_size=32, patch_size=8, **SMALL),
    "beit": vision("BeitModel", "BeitConfig", image_size=32, patch_size=8, **SMALL),
    "dinov2": vision("Dinov2Model", "Dinov2Config", image_size=32, patch_size=8, **SMALL),
    "clip_vision": vision("CLIPVisionModel", "CLIPVisionConfig", image_size=32, patch_size=8,
                          **SMALL),
    "siglip_vision": vision("SiglipVisionModel", "SiglipVisionConfig", image_size=32,
                            patch_size=8, **SMALL),
    "owlvit_vision": vision("OwlViTVisionModel", "OwlViTVisionConfig", image_size=32,
                            patch_size=8, **SMALL),
    "vit_msn": vision("ViTMSNModel", "ViTMSNConfig", image_size=32, patch_size=8, **SMALL),
    "yolos": vision("YolosModel", "YolosConfig", image_size=[32, 32], patch_size=8,
                    num_detection_tokens=4, **SMALL),
    "dpt": vision("DPTModel", "DPTConfig", image_size=32, patch_size=8, **SMALL),
    "swin": vision("SwinModel", "SwinConfig", image_size=32, patch_size=4, embed_dim=32,
                   depths=[1, 1], num_heads=[2, 4], window_size=4),
    "hiera": vision("HieraModel", "HieraConfig", size=64, image_size=[64, 64], embed_dim=32,
                    depths=[1, 1, 1, 1], num_heads=[1, 2, 4, 8]),
    "focalnet": vision("FocalNetModel", "FocalNetConfig", size=64, image_size=64, embed_dim=32,
                       depths=[1, 1], focal_levels=[2, 2]),
    "pvt": vision("PvtModel", "PvtConfig", size=64, image_size=64),
    "pvt_v2": vision("PvtV2Model", "PvtV2Config", size=64, image_size=64),
    "levit": vision("LevitModel", "LevitConfig", size=64, bn=True, image_size=64),
    "mobilevit": vision("MobileViTModel", "MobileViTConfig", size=64, bn=True, image_size=64),
    "segformer": vision("SegformerModel", "SegformerConfig", size=64),
    "glpn": vision("GLPNModel", "GLPNConfig", size=64),
    "poolformer": vision("PoolFormerModel", "PoolFormerConfig", size=64),
    "cvt": vision("CvtModel", "CvtConfig", size=64, bn=True),
    "swiftformer": vision("SwiftFormerModel", "SwiftFormerConfig", size=64, bn=True),
    "convnext_v2": vision("ConvNextV2Model", "ConvNextV2Config", size=64),
    "resnet_hf": vision("ResNetModel", "ResNetConfig", size=64, bn=True),
    "regnet_hf": vision("RegNetModel", "RegNetConfig", size=64, bn=True),
    "bit": vision("BitModel", "BitConfig", size=64, bn=True),
    "efficientnet_hf": vision("EfficientNetModel", "EfficientNetConfig", size=64, bn=True,
                              image_size=64),
    "mobilenet_v2_hf": vision("MobileNetV2Model", "MobileNetV2Config", size=64, bn=True,
                              image_size=64),
    # Audio and video
    "wav2vec2": tensor_in("Wav2Vec2Model", "Wav2Vec2Config", (1, 1600), key="input_values",
                          **AUDIO),
    "hubert": tensor_in("HubertModel", "HubertConfig", (1, 1600), key="input_values", **AUDIO),
    "data2vec_audio": tensor_in("Data2VecAudioModel", "Data2VecAudioConfig", (1, 1600),
                                key="input_values", **AUDIO),
    "whisper_encoder": tensor_in("WhisperModel", "WhisperConfig", (1, 16, 64),
                                 key="input_features", encoder=True, num_mel_bins=16,
                                 max_source_positions=32, **SEQ2SEQ),
    "videomae": tensor_in("VideoMAEModel", "VideoMAEConfig", (1, 4, 3, 32, 32), image_size=32,
                          patch_size=8, num_frames=4, tubelet_size=2, **SMALL),
    "timesformer": tensor_in("TimesformerModel", "TimesformerConfig", (1, 4, 3, 32, 32),
                             image_size=32, patch_size=8, num_frames=4, **SMALL),
    # torchvision beyond the zoo
    "lraspp_mobilenet_v3": segmentation("lraspp_mobilenet_v3_large"),
    "deeplabv3_mobilenet_v3": segmentation("deeplabv3_mobilenet_v3_large"),
    "fcn_resnet50": segmentation("fcn_resnet50"),
    "mc3_18": video("mc3_18"),
    # The second batch (2026-12-03, twenty-third session).
    "gemma2": text("Gemma2Model", "Gemma2Config", head_dim=16, **DECODER),
    "gemma3_text": text("Gemma3TextModel", "Gemma3TextConfig", head_dim=16, **DECODER),
    "starcoder2": text("Starcoder2Model", "Starcoder2Config", **DECODER),
    "stablelm": text("StableLmModel", "StableLmConfig", **DECODER),
    "qwen3": text("Qwen3Model", "Qwen3Config", head_dim=16, **DECODER),
    "olmo2": text("Olmo2Model", "Olmo2Config", **DECODER),
    "cohere": text("CohereModel", "CohereConfig", **DECODER),
    "granite": text("GraniteModel", "GraniteConfig", **DECODER),
    "phi": text("PhiModel", "PhiConfig", **DECODER),
    "gpt2": text("GPT2Model", "GPT2Config", vocab_size=128, n_embd=64, n_layer=2, n_head=4,
                 use_cache=False),
    "gpt_bigcode": text("GPTBigCodeModel", "GPTBigCodeConfig", vocab_size=128, n_embd=64,
                        n_layer=2, n_head=4, use_cache=False),
    "codegen": text("CodeGenModel", "CodeGenConfig", vocab_size=128, n_embd=64, n_layer=2,
                    n_head=4, rotary_dim=8, use_cache=False),
    "mpt": text("MptModel", "MptConfig", vocab_size=128, d_model=64, n_heads=4, n_layers=2,
                use_cache=False),
    "xglm": text("XGLMModel", "XGLMConfig", vocab_size=128, d_model=64, num_layers=2,
                 attention_heads=4, ffn_dim=128, use_cache=False),
    "mamba2": text("Mamba2Model", "Mamba2Config", vocab_size=128, hidden_size=64,
                   num_hidden_layers=2, num_heads=4, head_dim=32, n_groups=1, state_size=16,
                   expand=2, chunk_size=16, use_cache=False),
    "squeezebert": text("SqueezeBertModel", "SqueezeBertConfig", vocab_size=128,
                        embedding_size=64, q_groups=2, k_groups=2, v_groups=2,
                        post_attention_groups=2, intermediate_groups=2, output_groups=2, **SMALL),
    "roformer": text("RoFormerModel", "RoFormerConfig", vocab_size=128, embedding_size=64,
                     **SMALL),
    "mpnet": text("MPNetModel", "MPNetConfig", vocab_size=128, **SMALL),
    "esm": text("EsmModel", "EsmConfig", vocab_size=128, pad_token_id=1, **SMALL),
    "rembert": text("RemBertModel", "RemBertConfig", vocab_size=128, input_embedding_size=32,
                    output_embedding_size=32, **SMALL),
    "megatron_bert": text("MegatronBertModel", "MegatronBertConfig", vocab_size=128, **SMALL),
    "ernie": text("ErnieModel", "ErnieConfig", vocab_size=128, **SMALL),
    "xlnet": text("XLNetModel", "XLNetConfig", vocab_size=128, d_model=64, n_layer=2, n_head=4,
                  d_inner=128),
    "m2m100_encoder": text("M2M100Model", "M2M100Config", encoder=True, **SEQ2SEQ),
    "pegasus_encoder": text("PegasusModel", "PegasusConfig", encoder=True, **SEQ2SEQ),
    "mbart_encoder": text("MBartModel", "MBartConfig", encoder=True, **SEQ2SEQ),
    "wavlm": tensor_in("WavLMModel", "WavLMConfig", (1, 1600), key="input_values", **AUDIO),
    "sew": tensor_in("SEWModel", "SEWConfig", (1, 1600), key="input_values", **AUDIO),
    "unispeech_sat": tensor_in("UniSpeechSatModel", "UniSpeechSatConfig", (1, 1600),
                               key="input_values", **AUDIO),
    "ast": tensor_in("ASTModel", "ASTConfig", (1, 64, 16), key="input_values", num_mel_bins=16,
                     max_length=64, patch_size=16, frequency_stride=10, time_stride=10, **SMALL),
    "mobilevitv2": vision("MobileViTV2Model", "MobileViTV2Config", size=64, bn=True,
                          image_size=64),
    "convnext": vision("ConvNextModel", "ConvNextConfig", size=64),
    "vitdet": vision("VitDetModel", "VitDetConfig", image_size=32, patch_size=8,
                     pretrain_image_size=32, **SMALL),
    "dinov2_registers": vision("Dinov2WithRegistersModel", "Dinov2WithRegistersConfig",
                               image_size=32, patch_size=8, **SMALL),
    "ijepa": vision("IJepaModel", "IJepaConfig", image_size=32, patch_size=8, **SMALL),
    "textnet": vision("TextNetModel", "TextNetConfig", size=64, bn=True),
    # Added 2026-12-04: encoder-decoders whole, more decoders and vision / audio / time-series
    # families, torchvision classifiers outside the zoo.
    "t5": inputs("T5Model", "T5Config", {"input_ids": _ids(), "decoder_input_ids": _ids(8)},
                 vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4),
    "bart": inputs("BartModel", "BartConfig", {"input_ids": _ids(), "decoder_input_ids": _ids(8)},
                   max_position_embeddings=64, **SEQ2SEQ),
    "fnet": text("FNetModel", "FNetConfig", vocab_size=128, **SMALL),
    "canine": text("CanineModel", "CanineConfig", **SMALL),
    "bigbird": text("BigBirdModel", "BigBirdConfig", vocab_size=128,
                    attention_type="original_full", **SMALL),
    "deberta": text("DebertaModel", "DebertaConfig", vocab_size=128, **SMALL),
    "splinter": text("SplinterModel", "SplinterConfig", vocab_size=128, **SMALL),
    "luke": text("LukeModel", "LukeConfig", vocab_size=128, entity_vocab_size=16,
                 entity_emb_size=16, **SMALL),
    "layoutlm": inputs("LayoutLMModel", "LayoutLMConfig", {"input_ids": _ids(), "bbox": _boxes},
                       vocab_size=128, **SMALL),
    "rwkv": text("RwkvModel", "RwkvConfig", vocab_size=128, hidden_size=64, num_hidden_layers=2,
                 attention_hidden_size=64, intermediate_size=128, context_length=32,
                 rescale_every=0),
    "recurrent_gemma": text("RecurrentGemmaModel", "RecurrentGemmaConfig", vocab_size=128,
                            hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                            num_key_value_heads=2, intermediate_size=128, lru_width=64,
                            attention_window_size=8, head_dim=16),
    "jamba": text("JambaModel", "JambaConfig", vocab_size=128, hidden_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=128, num_experts=2, num_experts_per_tok=1,
                  attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2,
                  expert_layer_offset=1, mamba_d_state=8, mamba_expand=2,
                  use_mamba_kernels=False, use_cache=False),
    "falcon_mamba": text("FalconMambaModel", "FalconMambaConfig", vocab_size=128,
                         hidden_size=64, num_hidden_layers=2, state_size=8, use_cache=False),
    "persimmon": text("PersimmonModel", "PersimmonConfig", vocab_size=128, hidden_size=64,
                      num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                      use_cache=False),
    "nemotron": text("NemotronModel", "NemotronConfig", **DECODER),
    "olmo": text("OlmoModel", "OlmoConfig", **DECODER),
    "deepseek_v3": text("DeepseekV3Model", "DeepseekV3Config", vocab_size=128, hidden_size=64,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                        intermediate_size=128, moe_intermediate_size=32, n_routed_experts=4,
                        num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=1,
                        q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8,
                        v_head_dim=16, use_cache=False),
    "granitemoe": text("GraniteMoeModel", "GraniteMoeConfig", num_local_experts=4,
                       num_experts_per_tok=2, **DECODER),
    "glm": text("GlmModel", "GlmConfig", head_dim=16, pad_token_id=0, **DECODER),
    "helium": text("HeliumModel", "HeliumConfig", head_dim=16, **DECODER),
    "exaone4": text("Exaone4Model", "Exaone4Config", head_dim=16, **DECODER),
    "smollm3": text("SmolLM3Model", "SmolLM3Config", pad_token_id=0, **DECODER),
    "clip": inputs("CLIPModel", "CLIPConfig",
                   {"input_ids": _ids(), "pixel_values": lambda: torch.randn(1, 3, 32, 32)},
                   outs=("logits_per_image",), text_config=dict(vocab_size=128, **SMALL),
                   vision_config=dict(image_size=32, patch_size=8, **SMALL)),
    "swinv2": vision("Swinv2Model", "Swinv2Config", image_size=32, patch_size=4, embed_dim=32,
                     depths=[2, 2], num_heads=[2, 4], window_size=4),
    "swin2sr": tensor_in("Swin2SRModel", "Swin2SRConfig", (1, 3, 16, 16), image_size=16,
                         embed_dim=32, depths=[2, 2], num_heads=[2, 2], window_size=4),
    "mobilenet_v1_hf": vision("MobileNetV1Model", "MobileNetV1Config", size=64, bn=True,
                              depth_multiplier=0.25),
    "owlv2_vision": vision("Owlv2VisionModel", "Owlv2VisionConfig", image_size=32,
                           patch_size=8, **SMALL),
    "sam_vision": tensor_in("SamVisionModel", "SamVisionConfig", (1, 3, 64, 64), hidden_size=32,
                            num_hidden_layers=2, num_attention_heads=2, image_size=64,
                            patch_size=16, output_channels=16, window_size=2,
                            global_attn_indexes=[1], mlp_dim=64),
    "vivit": tensor_in("VivitModel", "VivitConfig", (1, 4, 3, 32, 32), image_size=32,
                       num_frames=4, tubelet_size=[2, 8, 8], **SMALL),
    "depth_anything": inputs(
        "DepthAnythingForDepthEstimation", "DepthAnythingConfig",
        {"pixel_values": lambda: torch.randn(1, 3, 28, 28)}, outs=("predicted_depth",),
        backbone_config=dict(model_type="dinov2", image_size=28, patch_size=14, hidden_size=32,
                             num_hidden_layers=4, num_attention_heads=2,
                             out_indices=[1, 2, 3, 4], reshape_hidden_states=False),
        neck_hidden_sizes=[16, 16, 32, 32], fusion_hidden_size=16, reassemble_hidden_size=32,
        head_hidden_size=8),
    "upernet": inputs("UperNetForSemanticSegmentation", "UperNetConfig",
                      {"pixel_values": lambda: torch.randn(1, 3, 64, 64)}, outs=("logits",),
                      backbone_config=dict(model_type="convnext", hidden_sizes=[16, 32, 64, 128],
                                           depths=[1, 1, 1, 1],
                                           out_features=["stage1", "stage2", "stage3",
                                                         "stage4"]),
                      hidden_size=32, auxiliary_in_channels=64, use_auxiliary_head=False),
    "detr": inputs("DetrModel", "DetrConfig", {"pixel_values": lambda: torch.randn(1, 3, 64, 64)},
                   use_timm_backbone=False, use_pretrained_backbone=False,
                   backbone_config=dict(model_type="resnet", depths=[1, 1, 1, 1],
                                        hidden_sizes=[16, 32, 64, 128], embedding_size=16,
                                        out_features=["stage4"]),
                   d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                   decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                   num_queries=10),
    "mask2former": inputs(
        "Mask2FormerModel", "Mask2FormerConfig",
        {"pixel_values": lambda: torch.randn(1, 3, 64, 64)},
        outs=("transformer_decoder_last_hidden_state",),
        backbone_config=dict(model_type="swin", image_size=64, patch_size=4, embed_dim=16,
                             depths=[1, 1, 1, 1], num_heads=[1, 1, 2, 2], window_size=4,
                             out_features=["stage1", "stage2", "stage3", "stage4"]),
        hidden_dim=32, feature_size=32, mask_feature_size=32, encoder_layers=1,
        decoder_layers=2, num_attention_heads=4, dim_feedforward=64, num_queries=10,
        encoder_feedforward_dim=64),
    "sew_d": tensor_in("SEWDModel", "SEWDConfig", (1, 1600), key="input_values", **AUDIO),
    "unispeech": tensor_in("UniSpeechModel", "UniSpeechConfig", (1, 1600), key="input_values",
                           **AUDIO),
    "dac": inputs("DacModel", "DacConfig", {"input_values": lambda: torch.randn(1, 1, 1024)},
                  outs=("audio_values",), encoder_hidden_size=8, decoder_hidden_size=32,
                  hidden_size=32, n_codebooks=2, codebook_size=64, codebook_dim=8),
    "patchtst": tensor_in("PatchTSTModel", "PatchTSTConfig", (1, 64, 3), key="past_values",
                          num_input_channels=3, context_length=64, patch_length=8,
                          patch_stride=8, d_model=32, num_attention_heads=4,
                          num_hidden_layers=2, ffn_dim=64),
    "patchtsmixer": tensor_in("PatchTSMixerModel", "PatchTSMixerConfig", (1, 64, 3),
                              key="past_values", num_input_channels=3, context_length=64,
                              patch_length=8, patch_stride=8, d_model=32, num_layers=2),
    # The fourth batch (2026-12-04, twenty-seventh session): detection transformers, a
    # conformer, more decoders and hybrids.
    "conditional_detr": inputs(
        "ConditionalDetrModel", "ConditionalDetrConfig",
        {"pixel_values": lambda: torch.randn(1, 3, 64, 64)}, use_timm_backbone=False,
        use_pretrained_backbone=False,
        backbone_config=dict(model_type="resnet", depths=[1, 1, 1, 1],
                             hidden_sizes=[16, 32, 64, 128], embedding_size=16,
                             out_features=["stage4"]),
        d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10),
    "table_transformer": inputs(
        "TableTransformerModel", "TableTransformerConfig",
        {"pixel_values": lambda: torch.randn(1, 3, 64, 64)}, use_timm_backbone=False,
        use_pretrained_backbone=False,
        backbone_config=dict(model_type="resnet", depths=[1, 1, 1, 1],
                             hidden_sizes=[16, 32, 64, 128], embedding_size=16,
                             out_features=["stage4"]),
        d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10),
    "deformable_detr": inputs(
        "DeformableDetrModel", "DeformableDetrConfig",
        {"pixel_values": lambda: torch.randn(1, 3, 64, 64)}, use_timm_backbone=False,
        use_pretrained_backbone=False,
        backbone_config=dict(model_type="resnet", depths=[1, 1, 1, 1],
                             hidden_sizes=[16, 32, 64, 128], embedding_size=16,
                             out_features=["stage2", "stage3", "stage4"]),
        d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10,
        num_feature_levels=3, encoder_n_points=2, decoder_n_points=2),
    "wav2vec2_conformer": tensor_in("Wav2Vec2ConformerModel", "Wav2Vec2ConformerConfig",
                                    (1, 1600), key="input_values",
                                    position_embeddings_type="rotary",
                                    conv_depthwise_kernel_size=7, **AUDIO),
    "data2vec_vision": vision("Data2VecVisionModel", "Data2VecVisionConfig", image_size=32,
                              patch_size=8, **SMALL),
    "blip_vision": vision("BlipVisionModel", "BlipVisionConfig", image_size=32, patch_size=8,
                          **SMALL),
    "biogpt": text("BioGptModel", "BioGptConfig", vocab_size=128, **SMALL),
    "gpt_neo": text("GPTNeoModel", "GPTNeoConfig", vocab_size=128, hidden_size=64,
                    num_layers=2, num_heads=4, attention_types=[[["global", "local"], 1]],
                    window_size=8),
    "xlm": text("XLMModel", "XLMConfig", vocab_size=128, emb_dim=64, n_layers=2, n_heads=4),
    # Configs the generic builders did not give (thirtieth session): multi-head latent
    # attention (DeepSeek-V2, MiniCPM3), a Mamba2 / shared-attention hybrid (Zamba2), an MoE
    # with a shared expert and dense first layer (dots1), language adapters written back by a
    # constant boolean mask (X-MOD).
    "deepseek_v2": text("DeepseekV2Model", "DeepseekV2Config", vocab_size=128, hidden_size=64,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                        intermediate_size=128, moe_intermediate_size=32, n_routed_experts=4,
                        num_experts_per_tok=2, first_k_dense_replace=1, kv_lora_rank=16,
                        q_lora_rank=None, qk_rope_head_dim=8, qk_nope_head_dim=8,
                        v_head_dim=16, use_cache=False),
    "minicpm3": text("MiniCPM3Model", "MiniCPM3Config", vocab_size=128, hidden_size=64,
                     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                     intermediate_size=128, kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8,
                     qk_nope_head_dim=8, v_head_dim=16, use_cache=False),
    "zamba2": text("Zamba2Model", "Zamba2Config", vocab_size=128, hidden_size=64,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                   mamba_d_state=16, mamba_headdim=16, n_mamba_heads=8,
                   layers_block_type=["mamba", "hybrid"], use_cache=False),
    "dots1": text("Dots1Model", "Dots1Config", n_routed_experts=4, num_experts_per_tok=2,
                  moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1,
                  **DECODER),
    "xmod": text("XmodModel", "XmodConfig", vocab_size=128, default_language="en_XX", **SMALL),
    # Its attention mask ANDs integer masks (tern's bitwise_and on integers).
    "cpmant": text("CpmAntModel", "CpmAntConfig", vocab_size=128, hidden_size=64,
                   num_hidden_layers=2, num_attention_heads=4, dim_head=16, dim_ff=128,
                   prompt_length=4, use_cache=False),
    "qwen3_moe": text("Qwen3MoeModel", "Qwen3MoeConfig", num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=32, **DECODER),
    "bamba": text("BambaModel", "BambaConfig", vocab_size=128, hidden_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=128, attn_layer_indices=[1], mamba_n_heads=4,
                  mamba_d_head=32, mamba_n_groups=1, mamba_d_state=16, mamba_chunk_size=8,
                  use_cache=False),
    "lfm2": text("Lfm2Model", "Lfm2Config", vocab_size=128, hidden_size=64, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
                 full_attn_idxs=[1], use_cache=False),
    "efficientnet_b0": classifier("efficientnet_b0"),
    "regnet_y_400mf": classifier("regnet_y_400mf"),
    "swin_t": classifier("swin_t"),
    "swin_v2_t": classifier("swin_v2_t"),
    "maxvit_t": classifier("maxvit_t", size=224),
    # The sixth batch (2026-12-04, twenty-eighth session): Hugging Face architectures outside
    # the probe, generic small configs.
    "olmo3": text("Olmo3Model", "Olmo3Config", head_dim=16, **DECODER),
    "apertus": text("ApertusModel", "ApertusConfig", head_dim=16, **DECODER),
    "arcee": text("ArceeModel", "ArceeConfig", head_dim=16, **DECODER),
    "bitnet": text("BitNetModel", "BitNetConfig", head_dim=16, **DECODER),
    "cohere2": text("Cohere2Model", "Cohere2Config", head_dim=16, **DECODER),
    "diffllama": text("DiffLlamaModel", "DiffLlamaConfig", head_dim=16, **DECODER),
    "doge": text("DogeModel", "DogeConfig", head_dim=16, **DECODER),
    "hunyuan_v1_dense": text("HunYuanDenseV1Model", "HunYuanDenseV1Config",
                             head_dim=16, **DECODER),
    "ministral": text("MinistralModel", "MinistralConfig", head_dim=16, **DECODER),
    "seed_oss": text("SeedOssModel", "SeedOssConfig", head_dim=16, **DECODER),
    "vaultgemma": text("VaultGemmaModel", "VaultGemmaConfig", head_dim=16, **DECODER),
    "ernie4_5": text("Ernie4_5Model", "Ernie4_5Config", head_dim=16, **DECODER),
    "gpt_oss": text("GptOssModel", "GptOssConfig", head_dim=16, **DECODER),
    "phimoe": text("PhimoeModel", "PhimoeConfig", head_dim=16, **DECODER),
    "nemotron_h": text("NemotronHModel", "NemotronHConfig", head_dim=16, **DECODER),
    "falcon_h1": text("FalconH1Model", "FalconH1Config", head_dim=16, **DECODER),
    "qwen3_next": text("Qwen3NextModel", "Qwen3NextConfig", head_dim=16, **DECODER),
    "xlstm": text("xLSTMModel", "xLSTMConfig", head_dim=16, **DECODER),
    "minimax": text("MiniMaxModel", "MiniMaxConfig", head_dim=16, **DECODER),
    "granitemoeshared": text("GraniteMoeSharedModel", "GraniteMoeSharedConfig",
                             head_dim=16, **DECODER),
    "granitemoehybrid": text("GraniteMoeHybridModel", "GraniteMoeHybridConfig",
                             head_dim=16, **DECODER),
    "ctrl": text("CTRLModel", "CTRLConfig", head_dim=16, **DECODER),
    "openai_gpt": text("OpenAIGPTModel", "OpenAIGPTConfig", head_dim=16, **DECODER),
    "gpt_neox_japanese": text("GPTNeoXJapaneseModel", "GPTNeoXJapaneseConfig",
                              head_dim=16, **DECODER),
    "mellum": text("MellumModel", "MellumConfig", head_dim=16, **DECODER),
    "nanochat": text("NanoChatModel", "NanoChatConfig", head_dim=16, **DECODER),
    "hunyuan_v1_moe": text("HunYuanMoEV1Model", "HunYuanMoEV1Config", head_dim=16, **DECODER),
    "ernie4_5_moe": text("Ernie4_5_MoeModel", "Ernie4_5_MoeConfig", head_dim=16, **DECODER),
    "glm4_moe": text("Glm4MoeModel", "Glm4MoeConfig", head_dim=16, **DECODER),
    "exaone_moe": text("ExaoneMoeModel", "ExaoneMoeConfig", head_dim=16, **DECODER),
    "solar_open": text("SolarOpenModel", "SolarOpenConfig", head_dim=16, **DECODER),
    "glm4": text("Glm4Model", "Glm4Config", pad_token_id=0, head_dim=16, **DECODER),
    "eurobert": text("EuroBertModel", "EuroBertConfig", pad_token_id=0, head_dim=16, **DECODER),
    "olmo_hybrid": text("OlmoHybridModel", "OlmoHybridConfig",
                        pad_token_id=0, head_dim=16, **DECODER),
    "kimi_linear": text("KimiLinearModel", "KimiLinearConfig",
                        pad_token_id=0, head_dim=16, **DECODER),
    "ibert": text("IBertModel", "IBertConfig", vocab_size=128, **SMALL),
    "nomic_bert": text("NomicBertModel", "NomicBertConfig", vocab_size=128, **SMALL),
    "roberta_prelayernorm": text("RobertaPreLayerNormModel", "RobertaPreLayerNormConfig",
                                 vocab_size=128, **SMALL),
    "camembert": text("CamembertModel", "CamembertConfig", vocab_size=128, **SMALL),
    "data2vec_text": text("Data2VecTextModel", "Data2VecTextConfig", vocab_size=128, **SMALL),
    "flaubert": text("FlaubertModel", "FlaubertConfig", vocab_size=128, **SMALL),
    "mra": text("MraModel", "MraConfig", vocab_size=128, **SMALL),
    "gte": text("GteModel", "GteConfig", vocab_size=128, **SMALL),
    "ultrabert": text("UltrabertModel", "UltrabertConfig", vocab_size=128, **SMALL),
    "bert_generation": text("BertGenerationEncoder", "BertGenerationConfig",
                            vocab_size=128, **SMALL),
    "roc_bert": text("RoCBertModel", "RoCBertConfig", vocab_size=128, **SMALL),
    "tapas": text("TapasModel", "TapasConfig", vocab_size=128, **SMALL),
    "markuplm": text("MarkupLMModel", "MarkupLMConfig", vocab_size=128, **SMALL),
    "jina_embeddings_v3": text("JinaEmbeddingsV3Model", "JinaEmbeddingsV3Config",
                               vocab_size=128, **SMALL),
    "yoso": text("YosoModel", "YosoConfig", vocab_size=128, **SMALL),
    "modernbert": text("ModernBertModel", "ModernBertConfig",
                       pad_token_id=0, vocab_size=128, **SMALL),
    "modernbert_decoder": text("ModernBertDecoderModel", "ModernBertDecoderConfig",
                               pad_token_id=0, vocab_size=128, **SMALL),
    "mt5": text("MT5Model", "MT5Config", encoder=True, **SEQ2SEQ),
    "umt5": text("UMT5Model", "UMT5Config", encoder=True, **SEQ2SEQ),
    # ... and (its second part) encoder-decoders' encoders and vision towers; ViTMAE with its
    # masking noise as an input (drawn inside forward, it is refused: docs/export.md, Errors).
    "plbart": text("PLBartModel", "PLBartConfig", encoder=True, **SEQ2SEQ),
    "blenderbot": text("BlenderbotModel", "BlenderbotConfig", encoder=True, **SEQ2SEQ),
    "blenderbot_small": text("BlenderbotSmallModel", "BlenderbotSmallConfig",
                             encoder=True, **SEQ2SEQ),
    "fsmt": text("FSMTModel", "FSMTConfig", encoder=True, **SEQ2SEQ),
    "mvp": text("MvpModel", "MvpConfig", encoder=True, **SEQ2SEQ),
    "bigbird_pegasus": text("BigBirdPegasusModel", "BigBirdPegasusConfig",
                            encoder=True, **SEQ2SEQ),
    "pegasus_x": text("PegasusXModel", "PegasusXConfig", encoder=True, **SEQ2SEQ),
    "dinov3_vit": vision("DINOv3ViTModel", "DINOv3ViTConfig",
                         image_size=32, patch_size=8, **SMALL),
    "dinov3_convnext": vision("DINOv3ConvNextModel", "DINOv3ConvNextConfig",
                              image_size=32, patch_size=8, **SMALL),
    "aimv2_vision": vision("Aimv2VisionModel", "Aimv2VisionConfig",
                           image_size=32, patch_size=8, **SMALL),
    "mlcd_vision": vision("MLCDVisionModel", "MLCDVisionConfig",
                          image_size=32, patch_size=8, **SMALL),
    "pixio": vision("PixioModel", "PixioConfig", image_size=32, patch_size=8, **SMALL),
    "radio": vision("RadioModel", "RadioConfig", image_size=32, patch_size=8, **SMALL),
    "vit_mae": inputs("ViTMAEModel", "ViTMAEConfig",
                      {"pixel_values": lambda: torch.randn(1, 3, 32, 32),
                       "noise": lambda: torch.rand(1, 16)},
                      image_size=32, patch_size=8, **SMALL),
    # The fifth batch (2026-12-04, twenty-eighth session): torchvision's families outside the
    # zoo that export (its detection models fail inside torch.export: docs/models.md).
    "alexnet": classifier("alexnet", size=224),
    "squeezenet1_0": classifier("squeezenet1_0", size=224),
    "swin3d_t": video("swin3d_t"),
    "mvit_v2_s": video_at("mvit_v2_s", (1, 3, 16, 224, 224)),
    "s3d": video_at("s3d", (1, 3, 16, 224, 224)),
    "raft_small": optical_flow("raft_small"),
    # The sixth batch (2026-12-05, thirty-first session): configs written for architectures the
    # generic builders did not give. HGNet-V2's aggregation cats a depthwise conv's output that
    # a 1x1 conv also reads (it found a cpu-backend fusion bug: docs/models.md).
    "funnel_decoder": text("FunnelModel", "FunnelConfig", vocab_size=128, block_sizes=[1, 1],
                           d_model=64, n_head=4, d_head=16, d_inner=128, num_decoder_layers=1),
    "prophetnet": text("ProphetNetModel", "ProphetNetConfig", encoder=True, vocab_size=128,
                       hidden_size=64, encoder_ffn_dim=128, decoder_ffn_dim=128,
                       num_encoder_layers=2, num_decoder_layers=1, num_encoder_attention_heads=4,
                       num_decoder_attention_heads=4, ngram=2, pad_token_id=0),
    "reformer": text("ReformerModel", "ReformerConfig", vocab_size=128, hidden_size=64,
                     num_attention_heads=4, attention_head_size=16, attn_layers=["local", "local"],
                     axial_pos_shape=[4, 4], axial_pos_embds_dim=[32, 32], feed_forward_size=128,
                     local_attn_chunk_length=8, is_decoder=False, pad_token_id=0,
                     max_position_embeddings=16),
    "hgnet_v2": hgnet_v2(),
    # LiLT's layout embeddings split the hidden size in six; SigLIP2's vision tower takes
    # patchified pixels, their mask and each image's patch grid (its positional-embedding resize
    # multiplies the grid's sides: tern::prod).
    "lilt": inputs("LiltModel", "LiltConfig", {"input_ids": _ids(), "bbox": _boxes},
                   vocab_size=128, hidden_size=96, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=128),
    # DeepSeek-V3.2 (multi-head latent attention with its sparse-attention indexer) and
    # LongCat-Flash (MLA, zero-computation experts) with their RoPE dims written out.
    "deepseek_v32": text("DeepseekV32Model", "DeepseekV32Config", vocab_size=128, hidden_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                         intermediate_size=128, moe_intermediate_size=32, n_routed_experts=4,
                         num_experts_per_tok=2, first_k_dense_replace=1, kv_lora_rank=16,
                         q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16,
                         use_cache=False, n_group=1, topk_group=1, index_n_heads=4,
                         index_head_dim=16, index_topk=8),
    "longcat_flash": text("LongcatFlashModel", "LongcatFlashConfig", vocab_size=128,
                          hidden_size=64, num_layers=2, num_attention_heads=4,
                          num_key_value_heads=4, ffn_hidden_size=128, expert_ffn_hidden_size=32,
                          n_routed_experts=4, moe_topk=2, zero_expert_num=2, kv_lora_rank=16,
                          q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, head_dim=8,
                          v_head_dim=16, use_cache=False),
    "siglip2_vision": inputs("Siglip2VisionModel", "Siglip2VisionConfig",
                             {"pixel_values": lambda: torch.randn(1, 16, 48),
                              "pixel_attention_mask": lambda: torch.ones(1, 16, dtype=torch.long),
                              "spatial_shapes": lambda: torch.tensor([[4, 4]])},
                             hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=128, patch_size=4, num_patches=16),
    # Added 2026-12-06 (forty-third session): LongT5's encoder, local and transient-global
    # attention. Without an attention_mask its encoder reads the mask's shape off None, so the
    # probe passes one (all ones, an input like the ids).
    "longt5_local": inputs("LongT5Model", "LongT5Config",
                           {"input_ids": _ids(), "attention_mask": _ones()}, encoder=True,
                           encoder_attention_type="local", local_radius=4, **T5_SMALL),
    "longt5_tglobal": inputs("LongT5Model", "LongT5Config",
                             {"input_ids": _ids(), "attention_mask": _ones()}, encoder=True,
                             encoder_attention_type="transient-global", local_radius=4,
                             global_block_size=4, **T5_SMALL),
}
# timm (2026-12-05, thirty-second session): the smallest model of each of timm's architecture
# modules (test_* models left out; the few with inputs of 512 and more at a smaller size),
# then the mobile and edge models a module's smallest does not cover (MobileNetV4, MobileOne,
# RepVGG, GhostNet V2/V3, MixNet, LCNet, TinyNet, MobileViT V2, FBNetV3, EfficientNet-Lite, ...).
TIMM = {
    "timm_beit_base_patch16_224": timm_model("beit_base_patch16_224"),
    "timm_halonet_h1": timm_model("halonet_h1"),
    "timm_mobileone_s1": timm_model("mobileone_s1"),
    "timm_cait_xxs24_224": timm_model("cait_xxs24_224"),
    "timm_coat_tiny": timm_model("coat_tiny"),
    "timm_convit_tiny": timm_model("convit_tiny"),
    "timm_convmixer_768_32": timm_model("convmixer_768_32"),
    "timm_convnext_zepto_rms": timm_model("convnext_zepto_rms"),
    "timm_cpubone_nano": timm_model("cpubone_nano"),
    "timm_crossvit_tiny_240": timm_model("crossvit_tiny_240"),
    "timm_csatv2": timm_model("csatv2", size=256),
    "timm_cs3darknet_focus_s": timm_model("cs3darknet_focus_s"),
    "timm_cspnext_tiny": timm_model("cspnext_tiny"),
    "timm_davit_tiny": timm_model("davit_tiny"),
    "timm_deepseek_vit_412m": timm_model("deepseek_vit_412m", img_size=224, size=224),
    "timm_deit_tiny_patch16_224": timm_model("deit_tiny_patch16_224"),
    "timm_densenet121": timm_model("densenet121"),
    "timm_dla46x_c": timm_model("dla46x_c"),
    "timm_dpn48b": timm_model("dpn48b"),
    "timm_edgenext_xx_small": timm_model("edgenext_xx_small"),
    "timm_efficientformer_l1": timm_model("efficientformer_l1"),
    "timm_efficientformerv2_s0": timm_model("efficientformerv2_s0"),
    "timm_mobilenetv2_035": timm_model("mobilenetv2_035"),
    "timm_efficientvim_m1": timm_model("efficientvim_m1"),
    "timm_efficientvit_b0": timm_model("efficientvit_b0"),
    "timm_efficientvit_m0": timm_model("efficientvit_m0"),
    "timm_vit_tiny_patch16_dinov3_qkvb": timm_model("vit_tiny_patch16_dinov3_qkvb"),
    "timm_fasternet_t0": timm_model("fasternet_t0"),
    "timm_fastvit_t8": timm_model("fastvit_t8"),
    "timm_focalnet_tiny_srf": timm_model("focalnet_tiny_srf"),
    "timm_gcvit_xxtiny": timm_model("gcvit_xxtiny"),
    "timm_gemma4_vit_167m": timm_model("gemma4_vit_167m", img_size=224, size=224),
    "timm_ghostnet_050": timm_model("ghostnet_050"),
    "timm_hardcorenas_b": timm_model("hardcorenas_b"),
    "timm_hgnetv2_b0": timm_model("hgnetv2_b0"),
    "timm_hiera_tiny_224": timm_model("hiera_tiny_224"),
    "timm_sam2_hiera_tiny": timm_model("sam2_hiera_tiny", size=256),
    "timm_hrnet_w18_small": timm_model("hrnet_w18_small"),
    "timm_iformer_t": timm_model("iformer_t"),
    "timm_inception_next_atto": timm_model("inception_next_atto"),
    "timm_inception_resnet_v2": timm_model("inception_resnet_v2"),
    "timm_inception_v3": timm_model("inception_v3"),
    "timm_inception_v4": timm_model("inception_v4"),
    "timm_lcnetv2_small": timm_model("lcnetv2_small"),
    "timm_levit_128s": timm_model("levit_128s"),
    "timm_lowformer_b0": timm_model("lowformer_b0"),
    "timm_mambaout_femto": timm_model("mambaout_femto"),
    "timm_maxvit_pico_rw_256": timm_model("maxvit_pico_rw_256"),
    "timm_poolformerv2_s12": timm_model("poolformerv2_s12"),
    "timm_gmlp_ti16_224": timm_model("gmlp_ti16_224"),
    "timm_mobilenetv3_small_050": timm_model("mobilenetv3_small_050"),
    "timm_mobilenetv5_base": timm_model("mobilenetv5_base"),
    "timm_mobilevit_xxs": timm_model("mobilevit_xxs"),
    "timm_mvitv2_tiny": timm_model("mvitv2_tiny"),
    "timm_naflexvit_base_patch16_parfac_gap": timm_model("naflexvit_base_patch16_parfac_gap",
                                                         img_size=224, size=224),
    "timm_nasnetalarge": timm_model("nasnetalarge"),
    "timm_nest_tiny": timm_model("nest_tiny"),
    "timm_nextvit_small": timm_model("nextvit_small"),
    "timm_nf_regnet_b0": timm_model("nf_regnet_b0"),
    "timm_pit_ti_224": timm_model("pit_ti_224"),
    "timm_pnasnet5large": timm_model("pnasnet5large"),
    "timm_pvt_v2_b0": timm_model("pvt_v2_b0"),
    "timm_qwen3_vit_88m": timm_model("qwen3_vit_88m", img_size=224, size=224),
    "timm_rdnet_tiny": timm_model("rdnet_tiny"),
    "timm_regnetx_002": timm_model("regnetx_002"),
    "timm_repghostnet_050": timm_model("repghostnet_050"),
    "timm_repvit_m1": timm_model("repvit_m1"),
    "timm_res2next50": timm_model("res2next50"),
    "timm_resnest14d": timm_model("resnest14d"),
    "timm_resnet10t": timm_model("resnet10t"),
    "timm_resnetv2_18": timm_model("resnetv2_18"),
    "timm_rexnet_100": timm_model("rexnet_100"),
    "timm_selecsls42": timm_model("selecsls42"),
    "timm_legacy_seresnet18": timm_model("legacy_seresnet18"),
    "timm_sequencer2d_s": timm_model("sequencer2d_s"),
    "timm_shvit_s1": timm_model("shvit_s1"),
    "timm_skresnet18": timm_model("skresnet18"),
    "timm_starnet_s050": timm_model("starnet_s050"),
    "timm_swiftformer_xs": timm_model("swiftformer_xs"),
    "timm_swin_tiny_patch4_window7_224": timm_model("swin_tiny_patch4_window7_224"),
    "timm_swinv2_tiny_window8_256": timm_model("swinv2_tiny_window8_256"),
    "timm_swinv2_cr_tiny_224": timm_model("swinv2_cr_tiny_224"),
    "timm_tiny_vit_5m_224": timm_model("tiny_vit_5m_224"),
    "timm_tnt_s_legacy_patch16_224": timm_model("tnt_s_legacy_patch16_224"),
    "timm_tresnet_m": timm_model("tresnet_m"),
    "timm_twins_svt_small": timm_model("twins_svt_small"),
    "timm_vgg11": timm_model("vgg11"),
    "timm_visformer_tiny": timm_model("visformer_tiny"),
    "timm_vit_tiny_patch16_224": timm_model("vit_tiny_patch16_224"),
    "timm_vit_tiny_r_s16_p8_224": timm_model("vit_tiny_r_s16_p8_224"),
    "timm_vit_srelpos_small_patch16_224": timm_model("vit_srelpos_small_patch16_224"),
    "timm_samvit_base_patch16_224": timm_model("samvit_base_patch16_224"),
    "timm_vitamin_small_224": timm_model("vitamin_small_224"),
    "timm_volo_d1_224": timm_model("volo_d1_224"),
    "timm_ese_vovnet19b_slim_dw": timm_model("ese_vovnet19b_slim_dw"),
    "timm_legacy_xception": timm_model("legacy_xception"),
    "timm_xception41p": timm_model("xception41p"),
    "timm_xcit_nano_12_p8_224": timm_model("xcit_nano_12_p8_224"),
    "timm_mobilenetv4_conv_small": timm_model("mobilenetv4_conv_small"),
    "timm_mobilenetv4_hybrid_medium": timm_model("mobilenetv4_hybrid_medium"),
    "timm_mobileone_s0": timm_model("mobileone_s0"),
    "timm_repvgg_a0": timm_model("repvgg_a0"),
    "timm_ghostnetv2_100": timm_model("ghostnetv2_100"),
    "timm_ghostnetv3_050": timm_model("ghostnetv3_050"),
    "timm_mixnet_s": timm_model("mixnet_s"),
    "timm_lcnet_050": timm_model("lcnet_050"),
    "timm_tinynet_e": timm_model("tinynet_e"),
    "timm_mobilevitv2_050": timm_model("mobilevitv2_050"),
    "timm_fbnetv3_b": timm_model("fbnetv3_b"),
    "timm_efficientnet_lite0": timm_model("efficientnet_lite0"),
    "timm_mnasnet_small": timm_model("mnasnet_small"),
    "timm_regnety_002": timm_model("regnety_002"),
    "timm_mobilenetv1_100": timm_model("mobilenetv1_100"),
    "timm_convnextv2_atto": timm_model("convnextv2_atto"),
    "timm_efficientnet_b0": timm_model("efficientnet_b0"),
    "timm_resnet50d": timm_model("resnet50d"),
    "timm_coatnet_nano_cc_224": timm_model("coatnet_nano_cc_224"),
    "timm_levit_conv_128s": timm_model("levit_conv_128s"),
    "timm_fastvit_mci0": timm_model("fastvit_mci0"),
    "timm_mobilenetv3_large_100": timm_model("mobilenetv3_large_100"),
    "timm_vit_small_patch16_224": timm_model("vit_small_patch16_224"),
    "timm_resnet18": timm_model("resnet18"),
    # Attention in ResNet bottlenecks (2026-12-05): lambda layers (a (r, r, 1) conv3d over the
    # values), bottleneck transformers, halo attention.
    "timm_lambda_resnet26t": timm_model("lambda_resnet26t"),
    "timm_botnet26t_256": timm_model("botnet26t_256"),
    "timm_halonet26t": timm_model("halonet26t"),
    # DarkNet and CSPDarkNet (YOLO's backbones): conv + batch norm + leaky ReLU everywhere.
    "timm_darknet17": timm_model("darknet17"),
    "timm_cspdarknet53": timm_model("cspdarknet53"),
}
PROBE.update(TIMM)


def ultralytics(config, size=640):
    """An Ultralytics detector from its package config (model_zoo.ultralytics_model): random
    weights, 640 x 640 as the models are trained, the raw predictions compared."""
    def build():
        return model_zoo.ultralytics_model(config, size), (torch.rand(1, 3, size, size),), False
    return build


# Ultralytics' detectors (the common edge deployment), each family's smallest scale. Not here:
# RT-DETR ("rtdetr-l.yaml" exports, two cpu regions), whose raw output with random weights is
# not a comparison at all: its query selection takes the top 300 of near-equal scores, so
# PyTorch's own float32 output moves by 72 of 79 when the input moves by 1e-6 (docs/models.md).
ULTRALYTICS = {
    "yolov5nu": ultralytics("yolov5nu.yaml"),
    "yolov8n": ultralytics("yolov8n.yaml"),
    "yolov8n_seg": ultralytics("yolov8n-seg.yaml"),
    "yolov8n_pose": ultralytics("yolov8n-pose.yaml"),
    "yolov10n": ultralytics("yolov10n.yaml"),
    "yolo11n": ultralytics("yolo11n.yaml"),
}
PROBE.update(ULTRALYTICS)


def detector(name, size):
    """A torchvision detector up to its raw head outputs (model_zoo.detector_heads)."""
    def build():
        return model_zoo.detector_heads(name, size), (torch.rand(1, 3, size, size),), False
    return build


# torchvision's detectors: SSD and SSDlite at their own sizes; RetinaNet, FCOS and the R-CNNs
# at 512 x 512 (their transform resizes to 800 and more; a deployment fixes a smaller size).
DETECTORS = {
    "ssdlite320_mobilenet_v3": detector("ssdlite320_mobilenet_v3_large", 320),
    "ssd300_vgg16": detector("ssd300_vgg16", 300),
    "retinanet_resnet50_fpn": detector("retinanet_resnet50_fpn", 512),
    "retinanet_resnet50_fpn_v2": detector("retinanet_resnet50_fpn_v2", 512),
    "fcos_resnet50_fpn": detector("fcos_resnet50_fpn", 512),
    "fasterrcnn_mobilenet_v3_rpn": detector("fasterrcnn_mobilenet_v3_large_320_fpn", 320),
    "fasterrcnn_resnet50_fpn_rpn": detector("fasterrcnn_resnet50_fpn", 512),
}
PROBE.update(DETECTORS)
TORCHVISION = {"lraspp_mobilenet_v3", "deeplabv3_mobilenet_v3", "fcn_resnet50", "mc3_18",
               "efficientnet_b0", "regnet_y_400mf", "swin_t", "swin_v2_t", "maxvit_t",
               "alexnet", "squeezenet1_0", "swin3d_t", "mvit_v2_s", "s3d", "raft_small"} | \
    set(DETECTORS)


def main(args):
    backend = "cpu"
    if args[:1] == ["--backend"] and len(args) >= 2:
        backend, args = args[1], args[2:]
    names = args or list(PROBE)
    unknown = [n for n in names if n not in PROBE]
    if unknown:
        print("unknown: %s; known: %s" % (unknown, ", ".join(PROBE)))
        return 2
    model_zoo.MODELS.update(PROBE)
    tern = run_model.tern_export.find_tern()
    counts = {"PASS": 0, "FAIL": 0, "ERROR": 0}
    for name in names:
        why = (timm_missing() if name in TIMM else
               model_zoo.ultralytics_missing() if name in ULTRALYTICS else
               None if name in TORCHVISION else model_zoo.transformers_missing())
        if why:
            print("%-24s SKIP %s" % (name, why))
            continue
        t0 = time.time()
        try:
            r = run_model.check_model(name, 1, tern, ("portable", backend))
            verdict = "PASS" if r["pass"] else "FAIL"
            worst = max(b.get("max_rel_err", 0.0) for b in r["backends"].values())
            b = r["backends"].get(backend, {})
            detail = "%d nodes, max rel %.1e, %s %s region(s)" % (
                r["nodes"], worst, b.get("delegates", b.get("skipped", "-")), backend)
        except Exception as e:  # noqa: BLE001 - a survey: report and go on
            verdict = "ERROR"
            detail = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:300])
        counts[verdict] += 1
        print("%-24s %-5s %5.1f s  %s" % (name, verdict, time.time() - t0, detail))
        sys.stdout.flush()
    print("torch %s: %d PASS, %d FAIL, %d ERROR" % (torch.__version__, counts["PASS"],
                                                    counts["FAIL"], counts["ERROR"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
