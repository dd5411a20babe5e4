"""One layer of a real model as `ffn trace` and `ffn bench` build it.

(LoadedModel, layer, the options the user gave) → the layer's FFNSpec at its real sizes, the
dtype to run in, and for `--block` the attention, norm and order the block can build. Options
the user gave override the model's values and are listed, as is whatever of the real layer the
built module leaves out, so a header can say plainly what runs. Pure Python (no torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ffn_cli.attention import AnyAttention, AttentionSpec, LatentAttentionSpec
from ffn_cli.configs.source import LoadedModel
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.names import comma_text
from ffn_cli.spec import MAX_DIM, FFNSpec, check_int, spec_options

__all__ = ["FFN_OVERRIDES", "FIXED_BY_MODEL", "LayerChoice", "default_layer", "ffn_overrides", "fixed_by_model", "select_layer"]


def ffn_overrides(spec_class: type[FFNSpec] = FFNSpec) -> dict[str, str]:
    """Option → FFNSpec field, for every FFN option that may override a model layer's value (all
    that the model does not fix; spec.py's Option says which)."""
    return {opt.name: name for name, opt in spec_options(spec_class).items() if not opt.fixed_by_model}


def fixed_by_model(spec_class: type[FFNSpec] = FFNSpec) -> tuple[str, ...]:
    """The FFN options that size an FFN from d_model: a model fixes them all."""
    return tuple(opt.name for opt in spec_options(spec_class).values() if opt.fixed_by_model)


FFN_OVERRIDES = ffn_overrides()
FIXED_BY_MODEL = fixed_by_model()
_EPS_KEYS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon")


@dataclass(frozen=True)
class LayerChoice:
    """The layer to build: its FFN, dtype, block parts, and what differs from the real layer."""

    model: LoadedModel
    layer: int
    ffn: FFNSpec
    dtype: str
    dtype_from: str  # "config", "--dtype" or "default: the config names none"
    overrides: tuple[str, ...]  # the options given, as "--d-ff 1024"
    attention: AnyAttention | None = None  # the block's attention (None without --block)
    norm: str = "rmsnorm"
    pre_norm: bool = True
    eps: float = 1e-5
    not_built: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return "MoE" if self.layer in self.model.spec.moe_layers else "dense"

    @property
    def window(self) -> int | None:
        return self.model.windows[self.layer]

    @property
    def chunk(self) -> int | None:
        return self.model.chunks[self.layer]

    def data(self) -> dict[str, Any]:
        """The choice as JSON: which model and layer, what was overridden, what is not built."""
        spec = self.model.spec
        return {
            "name": spec.name,
            "model_type": spec.model_type,
            "source": self.model.source,
            "layer": self.layer,
            "n_layers": spec.n_layers,
            "layer_kind": self.kind,
            "moe_layers": list(spec.moe_layers),
            "sliding_window": self.window,
            "attention_chunk": self.chunk,
            "dtype": self.dtype,
            "dtype_from": self.dtype_from,
            "overrides": list(self.overrides),
            "not_built": list(self.not_built),
        }


def default_layer(model: LoadedModel) -> int:
    """The first MoE layer if the model has any (what a user times or traces it for), else the
    first layer with an FFN (0 but where layers are one block each)."""
    spec = model.spec
    return spec.moe_layers[0] if spec.moe_layers else spec.ffn_layers[0]


# Flags whose off form is not --no-NAME.
_OFF_FLAGS = {"pre_norm": "--post-norm"}


def _flag(option: str, value: Any) -> str:
    name = "--" + option.replace("_", "-")
    if isinstance(value, bool):
        return name if value else _OFF_FLAGS.get(option, "--no-" + option.replace("_", "-"))
    return f"{name} {_as_typed(value)}"


def _as_typed(value: Any) -> Any:
    """A list option's tuple as its comma text (`--variant relu,swiglu`), any other value as it is."""
    return comma_text(value) if isinstance(value, tuple) else value


def select_layer(
    model: LoadedModel,
    layer: int | None,
    given: Mapping[str, Any],
    *,
    block: bool = False,
    default_dtype: str = "float32",
) -> LayerChoice:
    """The layer's FFN (and block parts) with the options in `given` applied over the model's.

    `given` holds only the options the user set: FFN_OVERRIDES' keys, dtype, and with a block
    n_heads, n_kv_heads, norm and pre_norm. FIXED_BY_MODEL options are refused.
    """
    spec = model.spec
    for option in FIXED_BY_MODEL:
        if option in given:
            raise FFNError(
                option,
                _as_typed(given[option]),
                _("{name} fixes d_model ({d_model:,}) and every width; give --d-ff to resize").format(name=spec.name, d_model=spec.d_model),
            )
    if not spec.ffn_layers:
        raise FFNError("layer", layer, _("{name} has no layer with an FFN").format(name=spec.name))
    index = default_layer(model) if layer is None else layer
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < spec.n_layers:
        raise FFNError("layer", layer, _("{name} has layers 0 to {last}").format(name=spec.name, last=spec.n_layers - 1))
    ffn = spec.ffn_of(index)
    if ffn is None:
        kind = spec.mixer_label(index)
        raise FFNError(
            "layer",
            layer,
            _("layer {index} of {name} is a {kind} block without an FFN; its first FFN is layer {first}").format(
                index=index, name=spec.name, kind=kind, first=default_layer(model)
            ),
        )
    # A layer is one FFN: a --variant list reaches FFNSpec as typed, which refuses it as no variant it knows.
    changes = {FFN_OVERRIDES[k]: _as_typed(v) for k, v in given.items() if k in FFN_OVERRIDES}
    for key in ("variant", "expert_variant"):
        if isinstance(changes.get(key), str):
            changes[key] = changes[key].strip().lower()
    ffn = ffn.with_(**changes)
    overrides = [_flag(k, v) for k, v in given.items() if k in FFN_OVERRIDES or k == "dtype"]
    dtype, dtype_from = _dtype(model, given, default_dtype)
    notes = _ffn_notes(model, ffn, index, renamed="variant" in given or "expert_variant" in given)
    choice = LayerChoice(model, index, ffn, dtype, dtype_from, tuple(overrides), not_built=tuple(notes))
    return _with_block(choice, given) if block else choice


def _dtype(model: LoadedModel, given: Mapping[str, Any], default: str) -> tuple[str, str]:
    if "dtype" in given:
        return str(given["dtype"]), "--dtype"
    if model.dtype is not None:
        return model.dtype, "config"
    return default, "default: the config names none"


def _ffn_notes(model: LoadedModel, ffn: FFNSpec, layer: int, *, renamed: bool) -> list[str]:
    """What the model's FFN has that the built one lacks: an activation the registry has no
    variant for, MoE tensors outside the FFNSpec (a router bias), routing rules."""
    spec = model.spec
    notes = []
    if spec.hidden_act and not renamed:
        notes.append(f"{spec.hidden_act} (run as {ffn.activation})")
    if layer in spec.ffn_note_layers:  # runs beyond its variant (Gemma 3n's activation sparsity)
        notes.append(spec.ffn_note)
    model_ffn = spec.ffn_of(layer)
    if ffn.mixture is not None and model_ffn is not None:  # the model's router tensors and rules, where the built FFN routes too
        notes += [t.name for t in spec.extra_of(model_ffn)]
        if spec.routing_of(model_ffn):
            notes.append(spec.routing_of(model_ffn))
    return notes


def _with_block(choice: LayerChoice, given: Mapping[str, Any]) -> LayerChoice:
    """The attention, norm and order of the model's block, as far as ffn_cli.block builds them."""
    model, spec = choice.model, choice.model.spec
    if choice.layer in spec.no_mixer_layers:
        why = _("layer {index} of {name} is an FFN alone, no attention; drop --block to trace its FFN")
        raise FFNError("block", True, why.format(index=choice.layer, name=spec.name))
    if spec.mixer is not None and choice.layer in spec.mixer.layers:
        raise FFNError(
            "block",
            True,
            _("layer {layer} of {name} mixes tokens with a {kind}, not built here; drop --block to trace its FFN").format(
                layer=choice.layer, name=spec.name, kind=spec.mixer.kind
            ),
        )
    if spec.attention_extra:
        raise FFNError(
            "block",
            True,
            _("{name}'s attention has an output gate, which ffn does not build; drop --block to trace its FFN").format(name=spec.name),
        )
    if choice.layer in spec.kv_shared_layers:
        why = _(
            "layer {layer} of {name} takes its keys and values from an earlier layer, and the block computes its own; "
            "drop --block to trace its FFN"
        )
        raise FFNError("block", True, why.format(layer=choice.layer, name=spec.name))
    layer_attention = spec.attention_of(choice.layer)
    if isinstance(layer_attention, AttentionSpec) and (
        layer_attention.v_width != layer_attention.head_width or layer_attention.values_from_keys
    ):
        why = _("layer {layer} of {name} projects its values unlike ffn's block (narrower than its keys, or taken from them); "
                "drop --block to trace its FFN")  # fmt: skip
        raise FFNError("block", True, why.format(layer=choice.layer, name=spec.name))
    attention = _block_attention(layer_attention, spec.name, given)
    norm = str(given.get("norm", "layernorm" if spec.norm.startswith("layernorm") else "rmsnorm"))
    pre_norm = bool(given.get("pre_norm", model.causal))
    overrides = [*choice.overrides, *(_flag(k, given[k]) for k in ("n_heads", "n_kv_heads", "head_dim", "norm", "pre_norm") if k in given)]
    notes = [*choice.not_built, *_block_notes(choice)]
    return LayerChoice(
        model,
        choice.layer,
        choice.ffn,
        choice.dtype,
        choice.dtype_from,
        tuple(overrides),
        attention,
        norm,
        pre_norm,
        _eps(model),
        tuple(notes),
    )


def _block_attention(a: AnyAttention, name: str, given: Mapping[str, Any]) -> AnyAttention:
    """The model's attention with --n-heads / --n-kv-heads / --head-dim applied: a new head count
    takes the width d_model / heads unless --head-dim says (MLA keeps its head widths); MLA has
    no K/V heads or single head width of its own to set."""
    if isinstance(a, LatentAttentionSpec):
        why = {"n_kv_heads": _("expands one shared latent to every head"), "head_dim": _("has separate q/k and v head widths")}
        for option, reason in why.items():
            if option in given:
                allowed = _("{name}'s multi-head latent attention {reason}; drop --{option}").format(
                    name=name, reason=reason, option=option.replace("_", "-")
                )
                raise FFNError(option, given[option], allowed)
        return replace(a, n_heads=check_int("n_heads", given["n_heads"], maximum=MAX_DIM)) if "n_heads" in given else a
    if not {"n_heads", "n_kv_heads", "head_dim"} & set(given):
        return a
    heads = given.get("n_heads", a.n_heads)
    kv = given.get("n_kv_heads", a.n_kv_heads if "n_heads" not in given else None)
    head_dim = given.get("head_dim", a.head_dim if "n_heads" not in given else None)
    return replace(a, n_heads=heads, n_kv_heads=kv, head_dim=head_dim)


def _block_notes(choice: LayerChoice) -> list[str]:
    """What the real block has that ffn_cli.block does not build."""
    spec, a = choice.model.spec, choice.model.spec.attention
    notes = ["rotary or learned positions"]
    notes.append("the causal mask (the block attends both ways)" if choice.model.causal else "the attention mask")
    if choice.window is not None:
        notes.append(f"the sliding window of {choice.window:,}")
    if choice.chunk is not None:
        notes.append(f"attention in chunks of {choice.chunk:,}")
    if isinstance(a, LatentAttentionSpec) and _yarn_mscale(choice.model.config):
        notes.append("yarn's mscale² on the score scale (values only, no FLOPs)")
    if spec.parallel_block:
        notes.append("attention beside the FFN (run one after the other)")
    if spec.norm == "layernorm_no_affine":
        notes.append("LayerNorm without weights (built with them)")
    if spec.norms_per_layer != 2:
        notes.append(f"{spec.norms_per_layer} norms per layer (built with 2)")
    notes += choice.model.family.block_notes
    if spec.cross_attention:
        notes.append("cross-attention")
    notes += [e.name for e in spec.extras if e.per_layer]  # a family's own tensors in each layer (Gemma 3n's AltUp)
    return notes + _value_only_notes(choice.model)


def _value_only_notes(model: LoadedModel) -> list[str]:
    """What the real block computes differently at the same shapes, FLOPs and parameters."""
    text = model.config.get("text_config")
    config = text if isinstance(text, Mapping) else model.config
    family = model.family
    notes = list(family.value_notes)
    scalar = config.get("query_pre_attn_scalar")
    if not family.unscaled_scores and isinstance(scalar, (int, float)) and scalar != model.spec.attention.head_dim:
        notes.append(f"scores scaled by {config['query_pre_attn_scalar']:g}^-½, built as head_dim^-½ (values only)")
    if config.get("attn_logit_softcapping"):
        notes.append(f"scores soft-capped at {config['attn_logit_softcapping']:g} (values only)")
    notes += [note for key, note in family.keyed_value_notes if config.get(key)]
    return notes


def _yarn_mscale(config: Mapping[str, Any]) -> bool:
    """Whether transformers scales DeepSeek's attention scores by yarn's mscale² (rope_scaling
    of type yarn with mscale_all_dim set)."""
    rope = config.get("rope_scaling") or config.get("rope_parameters")
    if not isinstance(rope, Mapping):
        return False
    return rope.get("rope_type", rope.get("type")) == "yarn" and bool(rope.get("mscale_all_dim"))


def _eps(model: LoadedModel) -> float:
    text = model.config.get("text_config")
    for where in (text if isinstance(text, Mapping) else {}, model.config):
        for key in _EPS_KEYS:
            value = where.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1:
                return float(value)
    return 1e-5
