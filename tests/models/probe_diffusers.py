"""The coverage probe's diffusers models (coverage_probe.py; docs/models.md, "diffusers"): the
denoisers, autoencoders and control networks of the image, audio and video generation families
(Stable Diffusion 1.x / XL, SD3, Flux 1/2, PixArt, Sana, DiT, Wan, LTX-Video, Stable Audio, ...)
from tiny configs with random weights (nothing is downloaded), each called the way its pipeline
calls it for one denoising step (the timestep an input tensor) or one encode / decode. Needs
the `diffusers` package (bench/setup-venv.sh installs it into bench/.venv)."""
import inspect

import torch
import torch.nn as nn

from probe_builders import _unzeroed


class DiffusersOut(nn.Module):
    """A diffusers model (or one of its methods) called with its tensor inputs by name and
    fixed non-tensor arguments; returns its first output, or pick(output) when given."""
    def __init__(self, model, names, method=None, fixed=None, pick=None):
        super().__init__()
        self.model = model
        self.names = list(names)
        self.method = method
        self.fixed = dict(fixed or {})
        self.pick = pick

    def forward(self, *args):
        kw = dict(self.fixed)
        for name, x in zip(self.names, args):
            outer, _, inner = name.partition(".")  # "added_cond_kwargs.text_embeds"
            if inner:
                kw.setdefault(outer, {})[inner] = x
            else:
                kw[name] = x
        fn = getattr(self.model, self.method) if self.method else self.model
        # (A module's own signature is its __call__'s (*args, **kwargs): ask its forward.)
        called = getattr(self.model, self.method or "forward")
        if "return_dict" in inspect.signature(called).parameters:
            kw["return_dict"] = False
        out = fn(**kw)
        if self.pick is not None:
            return self.pick(out)
        return out[0] if isinstance(out, (tuple, list)) else out


def diffusers_model(cls, feeds, method=None, fixed=None, pick=None, **config):
    """A diffusers model class built from `config` (zero-initialised parameters randomised:
    diffusers zeroes many output projections and adaLN modulations), called with the inputs
    `feeds` makes (name -> maker; "outer.inner" names go into a dict argument `outer`)."""
    def build():
        import diffusers
        model = getattr(diffusers, cls)(**config).eval()
        _unzeroed(model)
        names = list(feeds)
        return (DiffusersOut(model, names, method, fixed, pick).eval(),
                tuple(feeds[k]() for k in names), False)
    return build


def _t(value=500.0):
    return lambda: torch.tensor([value])


def _x(*shape):
    return lambda: torch.randn(*shape)


def _ids(n, high=4, cols=3):
    """Flux-style position ids: n rows of `cols` small integer coordinates, as floats."""
    return lambda: torch.randint(0, high, (n, cols)).float()


def _mean(out):
    return out[0].mean


UNET_SMALL = dict(block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8)
VAE_SMALL = dict(in_channels=3, out_channels=3, latent_channels=4,
                 down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                 up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), **UNET_SMALL)
SD_UNET = dict(sample_size=16, in_channels=4, out_channels=4, cross_attention_dim=32,
               attention_head_dim=8, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
               up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), **UNET_SMALL)
TINY_VAE = dict(encoder_block_out_channels=(16, 16, 16, 16),
                decoder_block_out_channels=(16, 16, 16, 16),
                num_encoder_blocks=(1, 1, 1, 1), num_decoder_blocks=(1, 1, 1, 1))
LATENT = _x(1, 4, 16, 16)
TEXT = _x(1, 8, 32)

# Not here: Lumina 2 (Lumina2Transformer2DModel) fails inside torch.export itself: it turns the
# caption mask's lengths into Python ints (a data-dependent size).
DIFFUSERS = {
    "df_unet2d_ddpm": diffusers_model(
        "UNet2DModel", {"sample": _x(1, 3, 32, 32), "timestep": _t()},
        sample_size=32, in_channels=3, out_channels=3, attention_head_dim=8,
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"), **UNET_SMALL),
    "df_unet2d_sd": diffusers_model(
        "UNet2DConditionModel",
        {"sample": LATENT, "timestep": _t(), "encoder_hidden_states": TEXT}, **SD_UNET),
    "df_unet2d_sdxl": diffusers_model(
        "UNet2DConditionModel",
        {"sample": LATENT, "timestep": _t(), "encoder_hidden_states": TEXT,
         "added_cond_kwargs.text_embeds": _x(1, 16),
         "added_cond_kwargs.time_ids": lambda: torch.tensor([[64., 64, 0, 0, 64, 64]])},
        addition_embed_type="text_time", addition_time_embed_dim=8,
        projection_class_embeddings_input_dim=16 + 6 * 8,
        transformer_layers_per_block=(1, 2), **SD_UNET),
    "df_controlnet": diffusers_model(
        "ControlNetModel",
        {"sample": LATENT, "timestep": _t(), "encoder_hidden_states": TEXT,
         "controlnet_cond": _x(1, 3, 128, 128)},
        pick=lambda out: out[1],  # the mid-block residual; out[0] are the down residuals
        in_channels=4, cross_attention_dim=32, attention_head_dim=8,
        conditioning_embedding_out_channels=(8, 16, 32, 32),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), **UNET_SMALL),
    "df_vae_kl_encoder": diffusers_model(
        "AutoencoderKL", {"x": _x(1, 3, 32, 32)}, method="encode", pick=_mean, **VAE_SMALL),
    "df_vae_kl_decoder": diffusers_model(
        "AutoencoderKL", {"z": _x(1, 4, 8, 8)}, method="decode", **VAE_SMALL),
    "df_vae_tiny_encoder": diffusers_model(
        "AutoencoderTiny", {"x": _x(1, 3, 64, 64)}, method="encode", **TINY_VAE),
    "df_vae_tiny_decoder": diffusers_model(
        "AutoencoderTiny", {"x": _x(1, 4, 8, 8)}, method="decode", **TINY_VAE),
    "df_vq": diffusers_model(
        "VQModel", {"sample": _x(1, 3, 32, 32)}, in_channels=3, out_channels=3,
        latent_channels=4, num_vq_embeddings=16, norm_num_groups=8, block_out_channels=(16, 32),
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D")),
    "df_dc_ae_decoder": diffusers_model(
        "AutoencoderDC", {"z": _x(1, 8, 4, 4)}, method="decode", in_channels=3,
        latent_channels=8, attention_head_dim=8,
        encoder_block_types=("ResBlock", "EfficientViTBlock"),
        decoder_block_types=("ResBlock", "EfficientViTBlock"),
        encoder_block_out_channels=(16, 32), decoder_block_out_channels=(16, 32),
        encoder_layers_per_block=(1, 1), decoder_layers_per_block=(1, 1),
        encoder_qkv_multiscales=((), (5,)), decoder_qkv_multiscales=((), (5,)),
        decoder_norm_types="rms_norm", decoder_act_fns="silu"),
    "df_dit": diffusers_model(
        "DiTTransformer2DModel",
        {"hidden_states": _x(1, 4, 8, 8), "timestep": _t(),
         "class_labels": lambda: torch.tensor([3])},
        num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8,
        num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=10, norm_num_groups=8),
    "df_pixart": diffusers_model(
        "PixArtTransformer2DModel",
        {"hidden_states": _x(1, 4, 8, 8), "encoder_hidden_states": _x(1, 8, 16),
         "timestep": _t()},
        fixed={"added_cond_kwargs": {"resolution": None, "aspect_ratio": None}},
        num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8,
        num_layers=2, sample_size=8, patch_size=2, cross_attention_dim=32,
        caption_channels=16, norm_num_groups=8),
    "df_sd3": diffusers_model(
        "SD3Transformer2DModel",
        {"hidden_states": _x(1, 4, 8, 8), "encoder_hidden_states": TEXT,
         "pooled_projections": _x(1, 16), "timestep": _t()},
        sample_size=8, patch_size=2, in_channels=4, out_channels=4, num_layers=2,
        attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
        caption_projection_dim=32, pooled_projection_dim=16, pos_embed_max_size=16),
    "df_flux": diffusers_model(
        "FluxTransformer2DModel",
        {"hidden_states": _x(1, 16, 16), "encoder_hidden_states": TEXT,
         "pooled_projections": _x(1, 16), "timestep": _t(0.5), "img_ids": _ids(16),
         "txt_ids": lambda: torch.zeros(8, 3)},
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
        attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
        pooled_projection_dim=16, axes_dims_rope=(4, 6, 6)),
    "df_flux2": diffusers_model(
        "Flux2Transformer2DModel",
        {"hidden_states": _x(1, 16, 16), "encoder_hidden_states": TEXT, "timestep": _t(0.5),
         "img_ids": _ids(16, cols=4), "txt_ids": lambda: torch.zeros(8, 4),
         "guidance": _t(3.5)},
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
        attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
        timestep_guidance_channels=32, axes_dims_rope=(4, 4, 4, 4)),
    "df_chroma": diffusers_model(
        "ChromaTransformer2DModel",
        {"hidden_states": _x(1, 16, 16), "encoder_hidden_states": TEXT, "timestep": _t(0.5),
         "img_ids": _ids(16), "txt_ids": lambda: torch.zeros(8, 3)},
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
        attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
        axes_dims_rope=(4, 6, 6), approximator_num_channels=8, approximator_hidden_dim=32,
        approximator_layers=1),
    "df_sana": diffusers_model(
        "SanaTransformer2DModel",
        {"hidden_states": _x(1, 4, 8, 8), "encoder_hidden_states": _x(1, 8, 16),
         "timestep": _t()},
        in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=16,
        num_layers=2, num_cross_attention_heads=2, cross_attention_head_dim=16,
        cross_attention_dim=32, caption_channels=16, sample_size=8),
    "df_auraflow": diffusers_model(
        "AuraFlowTransformer2DModel",
        {"hidden_states": _x(1, 4, 8, 8), "encoder_hidden_states": TEXT, "timestep": _t()},
        sample_size=8, patch_size=2, in_channels=4, num_mmdit_layers=1,
        num_single_dit_layers=1, attention_head_dim=16, num_attention_heads=2,
        joint_attention_dim=32, caption_projection_dim=32, out_channels=4,
        pos_embed_max_size=64),
    "df_hunyuan_dit": diffusers_model(
        "HunyuanDiT2DModel",
        {"hidden_states": _x(1, 4, 8, 8), "timestep": _t(), "encoder_hidden_states": TEXT,
         "text_embedding_mask": lambda: torch.ones(1, 8),
         "encoder_hidden_states_t5": _x(1, 8, 32),
         "text_embedding_mask_t5": lambda: torch.ones(1, 8),
         "image_meta_size": lambda: torch.tensor([[64., 64, 64, 64, 0, 0]]),
         "style": lambda: torch.tensor([0])},
        fixed={"image_rotary_emb": None},
        num_attention_heads=2, attention_head_dim=16, in_channels=4, patch_size=2,
        sample_size=8, hidden_size=32, num_layers=2, cross_attention_dim=32,
        cross_attention_dim_t5=32, pooled_projection_dim=16, text_len=8, text_len_t5=8),
    "df_cogview4": diffusers_model(
        "CogView4Transformer2DModel",
        {"hidden_states": _x(1, 4, 8, 8), "encoder_hidden_states": TEXT, "timestep": _t(),
         "original_size": lambda: torch.tensor([[64., 64]]),
         "target_size": lambda: torch.tensor([[64., 64]]),
         "crop_coords": lambda: torch.tensor([[0., 0]])},
        patch_size=2, in_channels=4, out_channels=4, num_layers=1, attention_head_dim=16,
        num_attention_heads=2, text_embed_dim=32, time_embed_dim=16, condition_dim=8,
        pos_embed_max_size=16, sample_size=8, rope_axes_dim=(16, 16)),
    "df_qwen_image": diffusers_model(
        "QwenImageTransformer2DModel",
        {"hidden_states": _x(1, 16, 16), "encoder_hidden_states": TEXT,
         "encoder_hidden_states_mask": lambda: torch.ones(1, 8), "timestep": _t(0.5)},
        fixed={"img_shapes": [(1, 4, 4)]},
        patch_size=2, in_channels=16, out_channels=4, num_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, axes_dims_rope=(4, 6, 6)),
    "df_unet1d": diffusers_model(
        "UNet1DModel", {"sample": _x(1, 2, 64), "timestep": _t(0.5)},
        sample_size=64, in_channels=2, out_channels=2, extra_in_channels=64,
        block_out_channels=(32, 32, 64), norm_num_groups=8),
    "df_oobleck_decoder": diffusers_model(
        "AutoencoderOobleck", {"z": _x(1, 8, 16)}, method="decode",
        encoder_hidden_size=8, downsampling_ratios=[2, 4], channel_multiples=[1, 2],
        decoder_channels=8, decoder_input_channels=8, audio_channels=2),
    "df_stable_audio_dit": diffusers_model(
        "StableAudioDiTModel",
        {"hidden_states": _x(1, 8, 16), "timestep": _t(), "encoder_hidden_states": _x(1, 6, 16),
         "global_hidden_states": _x(1, 1, 32)},
        sample_size=16, in_channels=8, num_layers=2, attention_head_dim=16,
        num_attention_heads=2, num_key_value_attention_heads=1, out_channels=8,
        cross_attention_dim=32, time_proj_dim=16, global_states_input_dim=32,
        cross_attention_input_dim=16),
    "df_wan": diffusers_model(
        "WanTransformer3DModel",
        {"hidden_states": _x(1, 4, 2, 8, 8), "timestep": _t(), "encoder_hidden_states": TEXT},
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=16, in_channels=4,
        out_channels=4, text_dim=32, freq_dim=16, ffn_dim=64, num_layers=2, rope_max_seq_len=32),
    "df_wan_vae_decoder": diffusers_model(
        "AutoencoderKLWan", {"z": _x(1, 4, 2, 4, 4)}, method="decode", base_dim=8, z_dim=4,
        dim_mult=[1, 2], num_res_blocks=1, temperal_downsample=[True],
        latents_mean=[0.0] * 4, latents_std=[1.0] * 4),
    "df_ltx_video": diffusers_model(
        "LTXVideoTransformer3DModel",
        {"hidden_states": _x(1, 32, 8), "encoder_hidden_states": TEXT, "timestep": _t(),
         "encoder_attention_mask": lambda: torch.ones(1, 8)},
        fixed={"num_frames": 2, "height": 4, "width": 4},
        in_channels=8, out_channels=8, num_attention_heads=2, attention_head_dim=16,
        cross_attention_dim=32, num_layers=2, caption_channels=32),
    "df_uvit2d": diffusers_model(
        "UVit2DModel",
        {"input_ids": lambda: torch.randint(0, 32, (1, 8, 8)), "encoder_hidden_states": TEXT,
         "pooled_text_emb": _x(1, 16), "micro_conds": lambda: torch.tensor([[64., 64, 0, 0, 6]])},
        hidden_size=32, cond_embed_dim=16, micro_cond_encode_dim=4, micro_cond_embed_dim=20,
        encoder_hidden_size=32, vocab_size=40, codebook_size=32, in_channels=16,
        block_out_channels=32, num_res_blocks=1, block_num_heads=2, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=64, sample_size=8),
}


# The second batch (same session): video UNets and VAEs, control networks of the DiTs, the
# Kandinsky prior, AudioLDM 2, and more diffusion transformers. Not here: Mochi
# (MochiTransformer3DModel), whose attention drops the padded text tokens with `nonzero` (a
# data-dependent size).
DIFFUSERS.update({
    "df_svd_unet": diffusers_model(
        "UNetSpatioTemporalConditionModel",
        {"sample": _x(1, 2, 8, 8, 8), "timestep": _t(), "encoder_hidden_states": _x(1, 1, 32),
         "added_time_ids": lambda: torch.tensor([[6.0, 127.0, 0.02]])},
        sample_size=8, in_channels=8, out_channels=4,
        down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
        up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"),
        block_out_channels=(32, 64), addition_time_embed_dim=8,
        projection_class_embeddings_input_dim=24, layers_per_block=1, cross_attention_dim=32,
        num_attention_heads=(2, 4)),
    "df_svd_vae_decoder": diffusers_model(
        "AutoencoderKLTemporalDecoder", {"z": _x(2, 4, 8, 8)}, method="decode",
        fixed={"num_frames": 2}, in_channels=3, out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        block_out_channels=(32, 64), latent_channels=4),
    "df_unet3d": diffusers_model(
        "UNet3DConditionModel",
        {"sample": _x(1, 4, 2, 16, 16), "timestep": _t(), "encoder_hidden_states": TEXT},
        sample_size=16, in_channels=4, out_channels=4,
        down_block_types=("CrossAttnDownBlock3D", "DownBlock3D"),
        up_block_types=("UpBlock3D", "CrossAttnUpBlock3D"), block_out_channels=(32, 64),
        layers_per_block=1, norm_num_groups=8, cross_attention_dim=32, attention_head_dim=8),
    "df_cogvideox": diffusers_model(
        "CogVideoXTransformer3DModel",
        {"hidden_states": _x(1, 2, 4, 8, 8), "encoder_hidden_states": TEXT, "timestep": _t()},
        num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4,
        time_embed_dim=16, text_embed_dim=32, num_layers=2, sample_width=8, sample_height=8,
        sample_frames=5, patch_size=2, temporal_compression_ratio=4, max_text_seq_length=8),
    "df_cogvideox_vae_decoder": diffusers_model(
        "AutoencoderKLCogVideoX", {"z": _x(1, 4, 2, 4, 4)}, method="decode",
        down_block_types=("CogVideoXDownBlock3D", "CogVideoXDownBlock3D"),
        up_block_types=("CogVideoXUpBlock3D", "CogVideoXUpBlock3D"), block_out_channels=(8, 16),
        latent_channels=4, layers_per_block=1, norm_num_groups=4, temporal_compression_ratio=2),
    "df_hunyuan_video": diffusers_model(
        "HunyuanVideoTransformer3DModel",
        {"hidden_states": _x(1, 4, 2, 8, 8), "timestep": _t(), "encoder_hidden_states": TEXT,
         "encoder_attention_mask": lambda: torch.ones(1, 8), "pooled_projections": _x(1, 16),
         "guidance": _t(3.5)},
        in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=16,
        num_layers=1, num_single_layers=1, num_refiner_layers=1, patch_size=2, patch_size_t=1,
        text_embed_dim=32, pooled_projection_dim=16, rope_axes_dim=(4, 6, 6)),
    "df_sd3_controlnet": diffusers_model(
        "SD3ControlNetModel",
        {"hidden_states": _x(1, 4, 8, 8), "controlnet_cond": _x(1, 4, 8, 8),
         "encoder_hidden_states": TEXT, "pooled_projections": _x(1, 16), "timestep": _t()},
        pick=lambda out: torch.cat(list(out[0]), 1),  # the per-layer residuals
        sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, caption_projection_dim=32,
        pooled_projection_dim=16, out_channels=4, pos_embed_max_size=16),
    "df_flux_controlnet": diffusers_model(
        "FluxControlNetModel",
        {"hidden_states": _x(1, 16, 16), "controlnet_cond": _x(1, 16, 16),
         "encoder_hidden_states": TEXT, "pooled_projections": _x(1, 16), "timestep": _t(0.5),
         "img_ids": _ids(16), "txt_ids": lambda: torch.zeros(8, 3)},
        pick=lambda out: torch.cat(list(out[0]) + list(out[1]), 1),
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
        attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
        pooled_projection_dim=16, axes_dims_rope=[4, 6, 6]),
    "df_kandinsky_prior": diffusers_model(
        "PriorTransformer",
        {"hidden_states": _x(1, 32), "timestep": _t(), "proj_embedding": _x(1, 32),
         "encoder_hidden_states": _x(1, 8, 32)},
        num_attention_heads=2, attention_head_dim=16, num_layers=2, embedding_dim=32,
        num_embeddings=8, additional_embeddings=4),
    "df_audioldm2_unet": diffusers_model(
        "AudioLDM2UNet2DConditionModel",
        {"sample": LATENT, "timestep": _t(), "encoder_hidden_states": TEXT,
         "encoder_hidden_states_1": _x(1, 6, 16)},
        sample_size=16, in_channels=4, out_channels=4, cross_attention_dim=[[None, 32, 16], [None, 32, 16]],
        attention_head_dim=8, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), **UNET_SMALL),
    "df_latte": diffusers_model(
        "LatteTransformer3DModel",
        {"hidden_states": _x(1, 4, 2, 8, 8), "timestep": _t(), "encoder_hidden_states": TEXT},
        num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8,
        num_layers=1, cross_attention_dim=32, sample_size=8, patch_size=2,
        num_embeds_ada_norm=1000, norm_type="ada_norm_single", norm_elementwise_affine=False,
        caption_channels=32, video_length=2),
    "df_cogview3plus": diffusers_model(
        "CogView3PlusTransformer2DModel",
        {"hidden_states": _x(1, 4, 8, 8), "encoder_hidden_states": TEXT, "timestep": _t(),
         "original_size": lambda: torch.tensor([[64., 64]]),
         "target_size": lambda: torch.tensor([[64., 64]]),
         "crop_coords": lambda: torch.tensor([[0., 0]])},
        patch_size=2, in_channels=4, num_layers=1, attention_head_dim=16, num_attention_heads=2,
        out_channels=4, text_embed_dim=32, time_embed_dim=16, condition_dim=8,
        pos_embed_max_size=16, sample_size=8),
    "df_qwen_image_vae_decoder": diffusers_model(
        "AutoencoderKLQwenImage", {"z": _x(1, 4, 1, 4, 4)}, method="decode", base_dim=8,
        z_dim=4, dim_mult=[1, 2], num_res_blocks=1, temperal_downsample=[False],
        latents_mean=[0.0] * 4, latents_std=[1.0] * 4),
    "df_ltx_vae_decoder": diffusers_model(
        "AutoencoderKLLTXVideo", {"z": _x(1, 8, 2, 4, 4)}, method="decode", in_channels=3,
        out_channels=3, latent_channels=8, block_out_channels=(8, 16),
        decoder_block_out_channels=(8, 16), layers_per_block=(1, 1, 1),
        decoder_layers_per_block=(1, 1, 1), spatio_temporal_scaling=(True, False),
        decoder_spatio_temporal_scaling=(True, False),
        decoder_inject_noise=(False, False, False),
        down_block_types=("LTXVideoDownBlock3D", "LTXVideoDownBlock3D"),
        upsample_residual=(False, False), upsample_factor=(1, 1)),
    "df_hunyuan_video_vae_decoder": diffusers_model(
        "AutoencoderKLHunyuanVideo", {"z": _x(1, 4, 2, 4, 4)}, method="decode",
        latent_channels=4, block_out_channels=(8, 8, 16), layers_per_block=1,
        norm_num_groups=4, down_block_types=("HunyuanVideoDownBlock3D",) * 3,
        up_block_types=("HunyuanVideoUpBlock3D",) * 3, spatial_compression_ratio=4,
        temporal_compression_ratio=4),
})


def diffusers_missing():
    """None when the `diffusers` package can build its models here, else why not."""
    try:
        import diffusers  # noqa: F401
    except ImportError as e:
        return "%s (bench/setup-venv.sh installs diffusers into bench/.venv)" % e
    return None
