"""The vision tower of a multimodal config, read into a `VisionTower` (models/vision.py).

Gemma 3 carries a SigLIP encoder, Llama 4 its own ViT with a pixel-shuffle adapter, Mistral 3 a
Pixtral encoder; each with the projector that maps image features into the text model's
width. Shapes follow transformers' modeling_siglip.py, modeling_llama4.py and
modeling_pixtral.py / modeling_mistral3.py. Keys a vision_config leaves out take the vision
config class's defaults.
"""

from __future__ import annotations

from ffn_cli.configs.reader import ConfigReader
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.vision import VisionPart, VisionTower

__all__ = ["llama4_tower", "pixtral_tower", "siglip_tower"]


def _linear(n_in: int, n_out: int, bias: bool) -> int:
    return n_in * n_out + (n_out if bias else 0)


def _heads(r: ConfigReader, h: int) -> int:
    heads = r.integer("num_attention_heads")
    if h % heads:
        raise FFNError(r.key("num_attention_heads"), heads, _("must divide the vision hidden_size ({h})").format(h=h))
    return heads


def _image_grid(r: ConfigReader, image_default: int, patch_default: int) -> tuple[int, int]:
    image, patch = r.integer("image_size", image_default), r.integer("patch_size", patch_default)
    return image, patch


def siglip_tower(r: ConfigReader, text_d: int) -> VisionTower:
    """SiglipVisionModel (Conv2d patches with bias, learned positions, pre-norm layers, post
    LayerNorm, optional attention-pooling head) + Gemma 3's projector (a (h, d) matrix after an RMSNorm)."""
    h, f, layers = r.integer("hidden_size", 768), r.integer("intermediate_size", 3072), r.integer("num_hidden_layers", 12)
    _heads(r, h)
    channels = r.integer("num_channels", 3)
    image, patch = _image_grid(r, 224, 16)
    mlp = _linear(h, f, True) + _linear(f, h, True)
    parts = [
        VisionPart(
            N_("patch embedding"),
            Message(N_("Conv2d {channels}→{h}, {patch}×{patch}, bias"), channels=channels, h=f"{h:,}", patch=patch),
            channels * patch * patch * h + h,
        ),
        VisionPart(N_("position embeddings"), f"({(image // patch) ** 2:,}, {h:,})", (image // patch) ** 2 * h),
        VisionPart(
            N_("vision layers"),
            Message(N_("attention 4 × ({h}, {h}) + biases, MLP d_ff {f}, 2 LayerNorms"), h=h, f=f"{f:,}"),
            4 * _linear(h, h, True) + mlp + 4 * h,
            layers,
        ),
        VisionPart(N_("post norm"), "LayerNorm", 2 * h),
    ]
    if r.flag("vision_use_head", True):
        head = h + 3 * h * h + 3 * h + _linear(h, h, True) + 2 * h + mlp
        parts.append(VisionPart(N_("pooling head"), Message(N_("probe + attention + LayerNorm + MLP")), head))
    parts.append(VisionPart(N_("projector"), f"RMSNorm + ({h}, {text_d})", h + h * text_d))
    return VisionTower(Message(N_("{name}, {layers} layers, d {h}"), name="SigLIP", layers=layers, h=f"{h:,}"), tuple(parts))


def llama4_tower(r: ConfigReader, text_d: int) -> VisionTower:
    """Llama4VisionModel (unfolded patches through a Linear, class and position embeddings,
    LayerNorms, biased layers, pixel-shuffle MLP) + the projector Linear(vision_output_dim, d)."""
    h, f, layers = r.integer("hidden_size", 768), r.integer("intermediate_size", 5632), r.integer("num_hidden_layers", 34)
    heads = _heads(r, h)
    q = heads * (h // heads)
    channels = r.integer("num_channels", 3)
    image, patch = _image_grid(r, 448, 14)
    positions = (image // patch) ** 2 + 1
    p_in, p_out = r.integer("projector_input_dim", 4096), r.integer("projector_output_dim", 4096)
    out = r.integer("vision_output_dim", 7680)
    attention = 3 * _linear(h, q, True) + _linear(q, h, True)
    parts = [
        VisionPart(N_("patch embedding"), f"Linear {channels * patch * patch:,}→{h:,}", channels * patch * patch * h),
        VisionPart(N_("class + position embeddings"), f"{h:,} + ({positions}, {h})", h + positions * h),
        VisionPart(N_("pre and post norms"), "2 × LayerNorm", 4 * h),
        VisionPart(
            N_("vision layers"),
            Message(N_("attention {heads} heads + biases, MLP d_ff {f}, 2 LayerNorms"), heads=heads, f=f"{f:,}"),
            attention + _linear(h, f, True) + _linear(f, h, True) + 4 * h,
            layers,
        ),
        VisionPart(N_("pixel-shuffle MLP"), f"({f}→{p_in}), ({p_out}→{p_out})", f * p_in + p_out * p_out),
        VisionPart(N_("projector"), f"({out}, {text_d})", out * text_d),
    ]
    return VisionTower(Message(N_("{name}, {layers} layers, d {h}"), name="Llama 4 vision", layers=layers, h=f"{h:,}"), tuple(parts))


def pixtral_tower(r: ConfigReader, text_d: int, *, merge: int, feature_layers: int, projector_bias: bool) -> VisionTower:
    """PixtralVisionModel (Conv2d patches without bias, RMSNorms, gated MLP, no biases) +
    Mistral 3's projector (RMSNorm, patch merger, two Linears)."""
    h, f, layers = r.integer("hidden_size", 1024), r.integer("intermediate_size", 4096), r.integer("num_hidden_layers", 24)
    _heads(r, h)
    channels, patch = r.integer("num_channels", 3), r.integer("patch_size", 16)
    parts = [
        VisionPart(N_("patch embedding"), f"Conv2d {channels}→{h:,}, {patch}×{patch}", channels * patch * patch * h),
        VisionPart(N_("pre norm"), "RMSNorm", h),
        VisionPart(
            N_("vision layers"),
            Message(N_("attention 4 × ({h}, {h}), gated MLP d_ff {f}, 2 RMSNorms"), h=h, f=f"{f:,}"),
            4 * h * h + 3 * h * f + 2 * h,
            layers,
        ),
        VisionPart(
            N_("projector"),
            Message(
                N_("RMSNorm, merger ({merged}→{h}), ({features}→{d}), ({d}→{d})"),
                merged=h * merge * merge,
                h=h,
                features=h * feature_layers,
                d=text_d,
            ),
            h + h * merge * merge * h + _linear(h * feature_layers, text_d, projector_bias) + _linear(text_d, text_d, projector_bias),
        ),
    ]
    return VisionTower(Message(N_("{name}, {layers} layers, d {h}"), name="Pixtral", layers=layers, h=f"{h:,}"), tuple(parts))
