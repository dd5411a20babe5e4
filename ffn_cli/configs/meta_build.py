"""Build a Hugging Face config with transformers on the meta device and count its modules.

Only transformers' own classes are built: `auto_map` is dropped before the config object
exists, so no code from a model repository can run, and nothing is downloaded (the config is
read from the dict given, weights are never asked for). The meta device holds shapes without
storage, so a 600B-parameter model builds in a fraction of a second.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import transformers
from torch import nn
from transformers import AutoModel, AutoModelForCausalLM, PretrainedConfig
from transformers.models.auto import configuration_auto, modeling_auto

from ffn_cli.configs.attribution import BuiltKind, Owner, attribute, is_experts, pattern
from ffn_cli.configs.built import TOWER_RUNS_ON, TOWER_WORDS, BuiltModel, BuiltPart, RoutedExperts, Towers, described_towers
from ffn_cli.configs.encoder_decoder import half_of
from ffn_cli.configs.quant_sidecar import FROM_SIDECAR
from ffn_cli.configs.unknown import SeveralTextModels
from ffn_cli.errors import FFNError, first_line
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.spec import MAX_LAYERS

__all__ = [
    "FFNModule",
    "auto_class",
    "build_on_meta",
    "config_top_k",
    "count",
    "count_module",
    "find_ffn_module",
    "hf_config_of",
    "knows",
    "quiet",
    "version",
]

# Keys that name the experts a token visits, and the experts per MoE layer, across families.
# Zero-computation (identity) experts in the router's pool beside the real ones (LongCat-Flash).
ZERO_EXPERT_KEYS = ("zero_expert_num",)
TOP_K_KEYS = (
    "num_experts_per_tok", "num_experts_per_token", "moe_top_k", "moe_topk", "num_selected_experts", "experts_per_token", "moe_k",
    "top_k_experts",  # Gemma 4
)  # fmt: skip
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "num_routed_experts")
_KIND_ORDER: tuple[BuiltKind, ...] = ("embedding", "attention", "ffn", "norm", "head", "pooler", "vision", "other")


def version() -> str:
    return str(transformers.__version__)


def knows(model_type: str) -> bool:
    """Whether the installed transformers has its own config class for `model_type`."""
    return model_type in configuration_auto.CONFIG_MAPPING_NAMES


def _is_decoder_only(model_type: str, config: PretrainedConfig) -> bool:
    """A generative decoder gets its LM head (as the readers count it); encoders and
    encoder-decoders are built as the base model, as BertModel is. An encoder's config that sets
    is_decoder (BERT's kin as a causal LM) is the decoder, built as transformers' causal-LM class.
    A decoder that transformers also lists as sequence-to-sequence for its audio input, not an
    encoder-decoder (MOSS-Transcribe-Diarize's), is a decoder: its causal-LM class holds its head."""
    if model_type not in modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or getattr(config, "is_encoder_decoder", False):
        return False
    return (
        getattr(config.get_text_config(), "is_decoder", False) is True or model_type not in modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES
    )


def auto_class(model_type: str, config: PretrainedConfig) -> Any:
    """Generative models with their LM head (decoders, and vision-language models such as
    Mistral 3, whose base class has none); everything else as its base model. A checkpoint whose
    `architectures` names its image-text class (Qwen3.5's Qwen3_5ForConditionalGeneration, whose
    causal-LM class builds the text model alone) is built as that class, its tower with it."""
    image_text = getattr(modeling_auto, "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", {})
    generative = model_type in image_text and not getattr(config, "is_encoder_decoder", False)
    named = getattr(config, "architectures", None) or ()
    if generative and image_text[model_type] in named and hasattr(transformers, "AutoModelForImageTextToText"):
        return transformers.AutoModelForImageTextToText
    if _is_decoder_only(model_type, config):
        return AutoModelForCausalLM
    if generative and hasattr(transformers, "AutoModelForImageTextToText"):
        return transformers.AutoModelForImageTextToText
    # A model of text and audio (or more) that AutoModel does not build (Qwen3-Omni: thinker, talker, vocoder).
    multimodal = getattr(modeling_auto, "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES", {})
    if (
        model_type in multimodal
        and model_type not in modeling_auto.MODEL_MAPPING_NAMES
        and hasattr(transformers, "AutoModelForMultimodalLM")
    ):
        return transformers.AutoModelForMultimodalLM
    return AutoModel


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """transformers' advice about weights and kernels is noise here: nothing is loaded or run."""
    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        transformers.logging.set_verbosity(level)


def architecture_model_type(config: Mapping[str, Any]) -> str | None:
    """Where a config's model_type is its repository's own name (Kimi K2's `kimi_k2`), the
    model_type of the one transformers class its `architectures` names (DeepseekV3ForCausalLM's
    deepseek_v3), as vLLM and SGLang choose a model by it; None where there is no such class.
    The name is looked up in transformers' own namespace alone: no repository code is reached."""
    names = config.get("architectures")
    if not isinstance(names, list) or len(names) != 1 or not isinstance(names[0], str):
        return None
    name = names[0]
    if not name.isidentifier() or name.startswith("_"):
        return None
    try:
        with quiet():
            cls = getattr(transformers, name, None)
    except (ImportError, RuntimeError):  # transformers' lazy import of the class's module, failing on a package it lacks
        return None
    if not (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel)):
        return None
    model_type = str(getattr(cls.config_class, "model_type", ""))
    return model_type if knows(model_type) else None


def hf_config_of(config: Mapping[str, Any], source: str = "config") -> tuple[PretrainedConfig, tuple[str | Message, ...]]:
    """transformers' own config object for a config.json, `auto_map` and `quantization_config`
    set aside (each named in the notes): its class fills every key the file leaves out. A
    model_type transformers lacks is read as its `architectures`' class's, where that is one of
    transformers' own (a note says so)."""
    model_type = str(config.get("model_type"))
    data, notes = dict(config), list[str | Message]()
    if not knows(model_type):
        read_as = architecture_model_type(config)
        if read_as is None:
            raise FFNError("model_type", model_type, _("transformers {version} has no config class for it").format(version=version()))
        said = N_("model_type {given!r} is no transformers type: read as {model_type}, the type of {cls}, which its architectures name")
        notes.append(Message(said, given=model_type, model_type=read_as, cls=config["architectures"][0]))
        model_type = data["model_type"] = read_as
    if data.pop("auto_map", None):
        notes.append(N_("auto_map ignored: built transformers' own class, never the repository's code"))
    data.pop(FROM_SIDECAR, None)  # ffn's own mark: where the quantization below came from
    if data.pop("quantization_config", None):
        notes.append(N_("quantization_config set aside in the build: parameters counted unquantized (the weights as stored follow it)"))
    config_class = configuration_auto.CONFIG_MAPPING[model_type]  # known (above): a KeyError here is ffn's
    with quiet():
        try:
            hf_config = config_class.from_dict(data)
        except Exception as exc:  # transformers' code on the config's values: whatever it raises, the config caused
            raise FFNError(
                "config",
                source,
                _("transformers cannot read it as {model_type}: {one_line}").format(model_type=model_type, one_line=first_line(exc)),
            ) from None
    try:
        hf_config.get_text_config()
    except ValueError as exc:  # a model of several text models (MusicGen's text encoder and decoder): which one is not ffn's to choose
        # transformers' message lists the sub-configs ("['text_encoder', 'decoder']"): named alone, without its advice to coders
        names = re.findall(r"'(\w+)'", next(iter(re.findall(r"\[[^\]]*\]", str(exc))), ""))
        why = _("transformers finds more than one text model in it ({why}): ffn sizes a model of one")
        said = ", ".join(names) if names else first_line(exc)
        raise SeveralTextModels(_("{source}: {why}").format(source=source, why=why.format(why=said))) from None
    _check_read_as_given(data, hf_config)
    return hf_config, tuple(notes)


# Keys whose value transformers may derive from another (LongCat-Flash: num_hidden_layers is 2 ×
# num_layers): a file that gives both, disagreeing, is refused rather than read one way.
# A file that gives one is read as its class reads it.
_DERIVED_COUNTS = ("num_hidden_layers", "num_layers")


# The keys that shape a text model: where a file sets one at its top level, beside no text_config
# that sets it, and transformers' class reads its text model's from text_config instead (a flat
# copy of a wrapper's config), the file's value would be silently replaced by a default.
_SHAPE_KEYS = (
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "head_dim", "sliding_window", "max_position_embeddings", "num_experts", "num_local_experts", "n_routed_experts",
    "moe_intermediate_size", "num_experts_per_tok", "num_nextn_predict_layers", "first_k_dense_replace",
)  # fmt: skip


def _check_read_as_given(data: Mapping[str, Any], hf_config: PretrainedConfig) -> None:
    """The counts the file gives, as transformers reads them, and zero-computation experts as a
    count: a disagreement or a negative count is the file's, said by its key."""
    nested = data.get("text_config")
    text, given = hf_config.get_text_config(), {**data, **(nested if isinstance(nested, Mapping) else {})}
    if text is not hf_config:
        _check_top_level_keys(data, nested if isinstance(nested, Mapping) else {}, text, str(hf_config.model_type))
    for key in ZERO_EXPERT_KEYS:
        value = given.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise FFNError(key, value, _("must be a whole number, 0 or more"))
    if not all(k in given for k in _DERIVED_COUNTS):  # one of them alone is read as the class reads it (Dory's loops)
        return
    for key in _DERIVED_COUNTS:
        value, read = given.get(key), getattr(text, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and isinstance(read, int) and read != value:
            why = _("transformers reads it as {read} from the file's other keys: they disagree").format(read=f"{read:,}")
            raise FFNError(key, value, why)


def _check_top_level_keys(data: Mapping[str, Any], nested: Mapping[str, Any], text: PretrainedConfig, model_type: str) -> None:
    """A shape key at the file's top level that its text model, read from text_config, does not
    take: refused by the key, never answered with the class's default in its place."""
    unread = []
    for key in _SHAPE_KEYS:
        value = data.get(key)
        if key in nested or value is None or isinstance(value, bool) or not isinstance(value, int) or not hasattr(text, key):
            continue
        read = getattr(text, key)
        if read != value:
            unread.append((key, value, "none" if read is None else f"{read:,}"))
    if unread:  # every such key at once, so that one edit answers
        key, value, _read = unread[0]
        said = ", ".join(f"{k} = {v} ({r} in text_config)" for k, v, r in unread)
        why = _("{model_type} reads these of its text model from text_config, not the top level: {keys}; set them there")
        raise FFNError(key, value, why.format(model_type=model_type, keys=said))


def towers_not_built(config: Mapping[str, Any], names: Iterable[str], model_class: str) -> tuple[Message, ...]:
    """A note for each tower the config describes (its vision_config, audio_config) that the model
    transformers built holds no module of: Qwen3.5's causal-LM class builds the text model alone,
    and its checkpoint ships the vision tower beside it, counted nowhere."""
    held = [n.lower() for n in names]
    said = N_("its {key}'s tower is not counted: transformers' {cls} builds the text model alone")
    # An omni model whose config turns its speech off (enable_audio_output: false) builds no talker; nor
    # does a class that is the thinker alone.
    silent = N_("its {key} is not counted: transformers' {cls} builds no speech output where enable_audio_output is false")
    if config.get("enable_audio_output") is not False:
        silent = N_("its {key} is not counted: transformers' {cls} builds no speech output")
    notes = [
        Message(silent if TOWER_RUNS_ON[key] == "speech" else said, key=key, cls=model_class)
        for key in described_towers(config)
        if not any(w in n for n in held for w in TOWER_WORDS[key])
    ]
    parts = N_("its {key} ({model_type}) describes a part transformers' {cls} does not build: not counted")
    notes += [Message(parts, key=key, model_type=config[key]["model_type"], cls=model_class) for key in parts_not_built(config, held)]
    return tuple(notes)


def parts_not_built(config: Mapping[str, Any], names: Iterable[str]) -> tuple[str, ...]:
    """The keys of any other part the config describes as a model of its own (Moshi's
    depth_decoder_config and its audio codec's audio_encoder_config, Kyutai STT's codec_config)
    that the class holds no module of (`names`), by its first word. (IDEFICS's perceiver_config
    where use_resampler is off: a part the config leaves out, said so too.)"""
    held = [n.lower() for n in names]
    return tuple(
        key
        for key, value in config.items()
        if key not in TOWER_WORDS
        and key != "text_config"
        and key.endswith("_config")
        and isinstance(value, Mapping)
        and isinstance(kind := value.get("model_type"), str)
        and kind
        and not any(key.split("_")[0] in n for n in held)
    )


def build_on_meta(config: Mapping[str, Any], source: str = "config") -> tuple[nn.Module, PretrainedConfig, tuple[str, ...]]:
    """The transformers model a config.json describes, on the meta device, with notes on what
    of the config was set aside. Decoder-only families get their causal-LM class (head
    included); the rest the base model."""
    hf_config, notes = hf_config_of(config, source)
    model_type = str(hf_config.model_type)  # the architectures' own where the config's is its repository's
    with quiet():
        check_build_size(hf_config.to_dict())
        auto = auto_class(model_type, hf_config)
        try:
            with torch.device("meta"):
                model = auto.from_config(hf_config, trust_remote_code=False, attn_implementation="eager")
        except Exception as exc:  # transformers' code on the config's values (as above)
            raise FFNError(
                "config",
                source,
                _("transformers cannot build {model_type} from it: {one_line}").format(model_type=model_type, one_line=first_line(exc)),
            ) from None
    names = (n for n, _m in model.named_modules())
    return model, hf_config, (*notes, *towers_not_built(config, names, type(model).__name__))


# Meta tensors cost nothing, but every module is a Python object: a million of them take minutes
# and gigabytes to build. Each count a config gives (layers of any stack, a vision tower's,
# experts) is bounded, and so is the number of experts summed over the layers.
MAX_EXPERT_MODULES = 1 << 21
MAX_BUILT_EXPERTS = 1 << 16  # Doge's experts are 16,384 rows of one table; a hundred thousand is no model


def _counts(data: Mapping[Any, Any], prefix: str = "") -> Iterator[tuple[str, str, int]]:
    """(key path, "layers" or "experts", value) of every count a module stack is built from,
    in sub-configs too (text_config, vision_config, …). A config's own dicts may be keyed by
    numbers (Aria's projector_patch_to_query_dict, patches to queries): no count is keyed so."""
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _counts(value, path + ".")
        elif isinstance(value, int) and not isinstance(value, bool) and isinstance(key, str):
            name = key.lower()
            if name.endswith("experts") and name.startswith(("num_", "n_", "moe_num_")):
                yield path, "experts", value
            elif name.endswith(("layers", "layer", "blocks")) and name.startswith(("num_", "n_", "encoder_", "decoder_")):
                yield path, "layers", value


def check_build_size(data: Mapping[str, Any]) -> None:
    """Refuse, before building, a config whose module count would take minutes and gigabytes."""
    most = {"layers": 1, "experts": 1}
    for path, kind, value in _counts(data):
        limit = MAX_LAYERS if kind == "layers" else MAX_BUILT_EXPERTS
        if value > limit:
            raise FFNError(
                path, value, _("must be at most {limit:,} ({kind} of a model built to be counted)").format(limit=limit, kind=kind)
            )
        most[kind] = max(most[kind], value)
    if most["layers"] * most["experts"] > MAX_EXPERT_MODULES:
        raise FFNError(
            "config",
            f"{most['layers']:,} layers × {most['experts']:,} experts",
            _("at most {max_expert_modules:,} expert modules can be built to be counted").format(max_expert_modules=MAX_EXPERT_MODULES),
        )


def count(config: Mapping[str, Any], *, name: str, source: str) -> BuiltModel:
    """Build `config` on meta and count it (see count_module)."""
    model, hf_config, notes = build_on_meta(config, source)
    return count_module(model, hf_config, name=name, source=source, notes=notes)


# --- counting -----------------------------------------------------------------------------


def _owners(modules: Mapping[str, nn.Module], module_path: str) -> tuple[Owner, ...]:
    owners, prefix = [], ""
    for part in module_path.split(".") if module_path else []:
        prefix = f"{prefix}.{part}" if prefix else part
        owners.append(Owner(part, type(modules[prefix]).__name__))
    return tuple(owners)


def count_module(model: nn.Module, config: PretrainedConfig, *, name: str, source: str, notes: tuple[str, ...] = ()) -> BuiltModel:
    """Every parameter of `model` once (named_parameters drops tied duplicates, as
    parameters() does), sorted into parts by the attribution rule."""
    modules = dict(model.named_modules())
    params: dict[BuiltKind, int] = dict.fromkeys(_KIND_ORDER, 0)
    where: dict[BuiltKind, dict[str, None]] = {kind: {} for kind in _KIND_ORDER}
    data = config.to_dict()
    towers = Towers.of(data)
    for param_name, param in model.named_parameters():
        module_path, _, leaf = param_name.rpartition(".")
        owners = _owners(modules, module_path)
        tower = towers.path(module_path)
        kind: BuiltKind
        if tower is not None:  # a tower the config describes, or its projector: the part of its own the rule names first
            kind, depth = "vision", tower.count(".") + 1
        else:
            kind, depth = attribute(owners, is_embedding=isinstance(modules[module_path], nn.Embedding))
        params[kind] += param.numel()
        where[kind][pattern(owners[:depth]) or leaf] = None
    routed = _routed_experts(modules, config)
    parts = tuple(
        BuiltPart(kind, params[kind], tuple(where[kind]), _inactive(routed, kind))
        for kind in _KIND_ORDER
        if params[kind] or kind == "other"
    )
    text = config.get_text_config()
    return BuiltModel(
        name=name,
        model_type=str(config.model_type),
        source=source,
        model_class=type(model).__name__,
        transformers_version=version(),
        parts=parts,
        routed=routed,
        n_layers=_int_attr(text, "num_hidden_layers"),
        d_model=_int_attr(text, "hidden_size"),
        vocab_size=_int_attr(text, "vocab_size"),
        notes=(*notes, *_tied(model)),
    )


def _int_attr(config: Any, key: str) -> int | None:
    value = getattr(config, key, None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tied(model: nn.Module) -> list[Message]:
    """One note per tensor reachable under two names: parameters() counts it once."""
    first: dict[int, str] = {}
    notes = []
    for param_name, param in model.named_parameters(remove_duplicate=False):
        if id(param) in first:
            notes.append(Message(N_("{name} is tied to {first}: counted once"), name=param_name, first=first[id(param)]))
        else:
            first[id(param)] = param_name
    return notes


def _inactive(routed: tuple[RoutedExperts, ...], kind: BuiltKind) -> int:
    return sum(r.params - r.active_params for r in routed if r.kind == kind and r.active_params is not None)


def _config_int(config: PretrainedConfig, keys: tuple[str, ...]) -> tuple[str, int] | None:
    """The first of `keys` set to a positive integer on the config, its text config, or a
    nested config (DBRX keeps moe_top_k in ffn_config)."""
    nested = [v for v in vars(config).values() if isinstance(v, (PretrainedConfig, dict))]
    for holder in (config, config.get_text_config(), *nested):
        for key in keys:
            value = holder.get(key) if isinstance(holder, dict) else getattr(holder, key, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return key, value
    return None


@dataclass(frozen=True)
class _TopK:
    """What the config says about the experts per token: one k, or one per layer."""

    key: str | None = None
    value: int | None = None
    per_layer: tuple[int, ...] = ()
    problem: Message | None = None


def config_top_k(config: PretrainedConfig) -> _TopK:
    """The first of TOP_K_KEYS the config sets: a positive integer, or a per-layer list of them
    (Hunyuan's moe_topk), which collapses to one k when every layer agrees. A key that is set to
    anything else is named as unusable, never reported as missing."""
    found = _config_int(config, TOP_K_KEYS)
    if found is not None:
        return _TopK(found[0], found[1])
    nested = [v for v in vars(config).values() if isinstance(v, (PretrainedConfig, dict))]
    for holder in (config, config.get_text_config(), *nested):
        for key in TOP_K_KEYS:
            value = holder.get(key) if isinstance(holder, dict) else getattr(holder, key, None)
            if value is None:
                continue
            # The name the config.json uses (transformers maps num_experts_per_tok onto Hunyuan's moe_topk).
            key = key if isinstance(holder, dict) else getattr(holder, "attribute_map", {}).get(key, key)
            if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value):
                ks = tuple(value)
                return _TopK(key, ks[0]) if len(set(ks)) == 1 else _TopK(key, None, ks)
            return _TopK(
                key,
                problem=Message(N_("{key} is {value}, not a positive integer or a per-layer list of them"), key=key, value=_short(value)),
            )
    return _TopK()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _layer_of(path: str) -> int | None:
    """The first index on a module path: model.layers.7.mlp.experts → 7."""
    return next((int(p) for p in path.split(".") if p.isdigit()), None)


def _expert_count(module: nn.Module, config: PretrainedConfig) -> int | None:
    """E of one container: its length (a list of expert modules), or its num_experts (else the
    config's) when every tensor under it splits into E equal slices along its first dimension
    ([E, …] fused tensors, DBRX's [E·d_ff, d])."""
    if isinstance(module, (nn.ModuleList, nn.ModuleDict)):
        return len(module)
    value = getattr(module, "num_experts", None)
    if not isinstance(value, int):
        found = _config_int(config, EXPERT_KEYS)
        value = found[1] if found else None
    tensors = list(module.parameters())
    if value is None or value < 1 or not tensors or any(p.dim() < 2 or p.shape[0] % value for p in tensors):
        return None
    return value


def _routed_experts(modules: Mapping[str, nn.Module], config: PretrainedConfig) -> tuple[RoutedExperts, ...]:
    """The innermost experts containers (a fused [E, …] tensor module, or a list of expert
    modules), grouped by the part they sit in: FFN, or attention for a mixture of attention
    heads (JetMoE)."""
    paths = [p for p, m in modules.items() if p and is_experts(p.rpartition(".")[2], type(m).__name__)]
    innermost = [p for p in paths if not any(q.startswith(p + ".") for q in paths)]
    top_k = config_top_k(config)
    by_kind: dict[BuiltKind, list[str]] = {}
    for path in innermost:
        kind, _ = attribute((*_owners(modules, path), Owner("", "")))
        by_kind.setdefault(kind, []).append(path)
    routed = []
    for kind, found in by_kind.items():
        counts = {_expert_count(modules[p], config) for p in found}
        routed.append(
            RoutedExperts(
                kind=kind,
                modules=tuple(dict.fromkeys(pattern(_owners(modules, p)) for p in found)),
                containers=len(found),
                params=sum(sum(p.numel() for p in modules[path].parameters()) for path in found),
                experts=counts.pop() if len(counts) == 1 else None,
                top_k=top_k.value,
                top_k_key=top_k.key,
                layer_top_k=_per_container(top_k, found),
                top_k_problem=top_k.problem or _per_layer_problem(top_k, found),
                zero_experts=(_config_int(config, ZERO_EXPERT_KEYS) or ("", 0))[1],
            )
        )
    return tuple(routed)


def _per_container(top_k: _TopK, containers: list[str]) -> tuple[int, ...]:
    """k of each container, by its layer index, when the config gives k per layer."""
    if not top_k.per_layer:
        return ()
    layers = [_layer_of(p) for p in containers]
    if any(i is None or i >= len(top_k.per_layer) for i in layers):
        return ()
    return tuple(top_k.per_layer[i] for i in layers if i is not None)


def _per_layer_problem(top_k: _TopK, containers: list[str]) -> Message | None:
    if top_k.per_layer and not _per_container(top_k, containers):
        return Message(
            N_("{key} lists {count} values, which do not cover the layers holding experts"), key=top_k.key, count=len(top_k.per_layer)
        )
    return None


# --- the FFN of one layer -----------------------------------------------------------------


@dataclass(frozen=True)
class FFNModule:
    """The model's own FFN module of one layer, for a trace or a benchmark to run."""

    path: str
    layer: int
    module: nn.Module


def _layer_stack(model: nn.Module, n_layers: int | None) -> tuple[str, nn.ModuleList] | None:
    """The first ModuleList holding one block per layer (model.layers, transformer.h, …)."""
    for path, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and len(module) > 0 and (n_layers is None or len(module) == n_layers):
            return path, module
    return None


def find_ffn_module(model: nn.Module, layer: int, n_layers: int | None = None) -> FFNModule | None:
    """The outermost module the attribution rule calls FFN inside block `layer` of the layer
    stack (model.layers[i].mlp, transformer.h[i].mlp, …); None when there is no such single
    module (BERT splits its FFN into intermediate and output)."""
    config = getattr(model, "config", None)
    prefix = ""
    if isinstance(config, PretrainedConfig) and getattr(config, "is_encoder_decoder", False) is True:
        # An encoder-decoder's layers are its decoder's (BART's num_hidden_layers names its encoder's)
        decoder = half_of(model, "get_decoder")
        if decoder is not None:
            prefix, model = decoder
            n_layers = n_layers or _int_attr(config, "decoder_layers") or _int_attr(config, "num_decoder_layers")
    if n_layers is None and isinstance(config, PretrainedConfig):
        n_layers = _int_attr(config.get_text_config(), "num_hidden_layers")
    stack = _layer_stack(model, n_layers)
    if stack is None:
        return None
    stack_path, blocks = stack
    stack_path = f"{prefix}.{stack_path}" if prefix else stack_path
    if not 0 <= layer < len(blocks):
        raise FFNError("layer", layer, _("the model has layers 0 to {last}").format(last=len(blocks) - 1))
    block = blocks[layer]
    inside = dict(block.named_modules())
    for path, module in inside.items():
        if not path:
            continue
        owners = (Owner(str(layer), type(block).__name__), *_owners(inside, path))
        # A sentinel child that is no norm or embedding: the rule then decides by the path.
        kind, depth = attribute((*owners, Owner("", "")))
        if kind == "ffn" and depth == len(owners) and not path.endswith(("intermediate", "output")):
            if isinstance(module, nn.Linear) and (loose := _loose_ffn(block)) is not None:
                return FFNModule(f"{stack_path}.{layer}.(fc1, activation_fn, fc2)", layer, loose)
            return FFNModule(f"{stack_path}.{layer}.{path}", layer, module)
    return None


def _loose_ffn(block: nn.Module) -> nn.Module | None:
    """A layer whose FFN is two Linears and an activation held loose in it (OPT's, XGLM's, BART's,
    Whisper's fc1, activation_fn and fc2), run in that order by its forward: the three, as one module."""
    parts = {n: getattr(block, n, None) for n in ("fc1", "activation_fn", "fc2")}
    fc1, act, fc2 = parts["fc1"], parts["activation_fn"], parts["fc2"]
    if not (isinstance(fc1, nn.Linear) and isinstance(fc2, nn.Linear) and isinstance(act, nn.Module)):
        return None
    if fc1.out_features != fc2.in_features:
        return None
    return nn.Sequential(OrderedDict(fc1=fc1, activation_fn=act, fc2=fc2))
