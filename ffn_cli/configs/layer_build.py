"""The layout of a model no reader knows, read from transformers' own modules: one decoder layer
of each kind built on the meta device, never the whole model.

Which layers share a kind is read from the config alone: two layers are of one kind when every
per-layer entry of the text config agrees on them (a list with one value a layer, such as
layer_types; a list of layer indices, such as mlp_only_layers; a layer rule such as
first_k_dense_replace, decoder_sparse_step or full_attention_interval). One layer of each kind
is built with the decoder layer class the model's own class names, and its modules are read:

  token mixer   softmax attention (q/k/v/o projections or one fused qkv projection: heads, KV
                heads, head width, biases, q/k norms, sinks, a q_proj twice as wide gating the
                output, a sliding window; a KV-shared layer without k/v projections), latent
                attention (kv_a_proj_with_mqa, kv_b_proj), DeepSeek-V4's compressed attention
                (compressed_attention.py), a Gated DeltaNet, a Mamba-1 or Mamba-2 mixer, another
                delta rule, lightning attention or a short convolution (their state's widths); any
                other mixer counted tensor by tensor, its decode state named as not sized
  FFN           dense (gated or not), or routed experts ([E, …] tensors or a list of experts)
                with a router, shared experts and zero-computation experts in its pool, and
                whether the router adds a score bias its checkpoint stores (a buffer, no parameter)
  sublayers     a layer whose attentions are a list of N (LongCat-Flash's two), each sublayer
                one of num_hidden_layers, as the cache numbers them
  beside them   the layer's norms, and tensors of no part (kept per layer, counted exactly;
                DeepSeek-V4's hyper-connections, which mix copies of the residual stream)

Each part read is checked against the built module's own parameter count: a part whose count the
spec does not reproduce is refused, naming the layers and the module, never counted as something
else. The embeddings, final norm and head are the config's (vocab_size × hidden_size, tied as it
says). torch and transformers: imported only when such a model is asked for.
"""

from __future__ import annotations

import copy
import functools
import importlib
import inspect
import itertools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import torch
import transformers
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.models.auto import modeling_auto
from transformers.pytorch_utils import Conv1D

from ffn_cli.accounting import ParamTensor, param_tensors, total_params
from ffn_cli.attention import AnyAttention, AttentionSpec, LatentAttentionSpec, QKNorm
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.configs.attribution import Owner, attribute, is_experts
from ffn_cli.configs.built import TOWER_WORDS, BuiltLayout
from ffn_cli.configs.encoder_decoder import CROSS_ATTENTION, EncoderDecoder, encoder_decoder_of, half_of
from ffn_cli.configs.families.common import FamilyReader
from ffn_cli.configs.meta_build import auto_class, check_build_size, config_top_k, hf_config_of, quiet, tower_path, towers_not_built
from ffn_cli.configs.shared_blocks import SharedBlocks, applied_layer, shared_blocks
from ffn_cli.configs.windows import attention_chunks
from ffn_cli.errors import FFNError, FFNRuntimeError, first_line
from ffn_cli.i18n import N_, Message, _, shown
from ffn_cli.models.layer import compressed_summary
from ffn_cli.models.mixers import (
    STATE_DTYPE_BYTES,
    DeltaRuleScan,
    ElementwiseScan,
    LightningScan,
    LinearMixer,
    MLSTMScan,
    SelectiveScan,
    SourceAttention,
    gated_delta_net,
    mamba2,
    short_conv,
)
from ffn_cli.models.spec import AttentionKind, ExtraPart, ModelSpec, NormKind, kv_tensors, layer_ranges
from ffn_cli.models.tensor_notes import (
    BIAS_ALONE,
    GATE_HALF,
    NOT_PICKED,
    ROWS_PAST_VOCAB,
    SHARED_EXPERTS_ROWS,
    ZERO_EXPERTS_ROWS,
    modules_said,
    noted,
)
from ffn_cli.models.vision import VisionPart, VisionTower
from ffn_cli.spec import FFNSpec

__all__ = ["LayerRead", "decoder_layer_classes", "layer_kinds", "read_layout"]

# Config keys whose integer value is a rule over layer indices (first_k_dense_replace,
# decoder_sparse_step, moe_layer_freq, full_attention_interval, sliding_window_pattern, …).
_LAYER_RULE = re.compile(r"layer|interval|step|freq|replace|pattern|period|every", re.IGNORECASE)
_NOT_A_RULE = frozenset({"num_hidden_layers"})
_SHORT_PERIOD = 16
# Keys beside num_hidden_layers that a model builds its layers by (xLSTM's num_blocks), where they say as many.
_LAYER_COUNTS = ("num_blocks",)
# A query projection, and a fused one to the queries, keys and values, by the names transformers' models give them.
_Q_NAMES = ("q_proj", "query", "q_gate_proj", "Wq")
_QKV_NAMES = ("qkv_proj", "query_key_value", "Wqkv", "c_attn", "qkv")
# The tensors of an [experts, …] container that its FFNSpec holds: the projections and their biases.
_STATIC_TAPS = ".static_weight"  # a dynamic short convolution's taps that every token shares (Inkling 2's)
_EXPERT_TENSORS = ("gate_up_proj", "gate_proj", "up_proj", "down_proj")
# Experts held as a pair of containers, to the expert's width and back (JetMoE's)
_PAIRED_EXPERTS = ("input_linear", "output_linear")
# A router's bias on its scores, kept out of the gradient: a buffer (DeepSeek-V3's, LFM2-MoE's).
_SCORE_BIASES = ("e_score_correction_bias", "expert_bias", "balancing_biases")
# Where a config names its FFN's activation (GPT-2's, OPT's and XGLM's: activation_function).
_ACTIVATION_KEYS = ("hidden_act", "hidden_activation", "activation_function")
_TORCH_ACTIVATIONS: dict[type[nn.Module], str] = {nn.ReLU: "relu", nn.GELU: "gelu", nn.SiLU: "silu"}
# FFN classes whose forward squares a ReLU, as functions no module or config key names.
_SQUARED_RELU_CLASSES = frozenset({"RwkvFeedForward"})
# Attention with queries, keys and values but no softmax over a cache: a recurrent state in its
# place (MiniMax's lightning attention, a delta rule), whatever its projections are named.
_LINEAR_ATTENTION = re.compile(r"Lightning|LinearAttention|Delta|Retention|Mamba|RWKV|GLA")
# Layer classes of a tower beside the decoder, and modules kept whole that are no layer.
_ASIDE = re.compile(r"Vision|Visual|Audio|Encoder|Embed|Patch|Attention$|Mixer$")
# The parts table's rows for what no reader's part holds: tensors in every layer beside its token
# mixer, FFN and norms (Gemma 4's per-layer input gate), and beside the layers (a vision tower).
BESIDE_THE_PARTS = N_("tensors beside the layer's parts")
BESIDE_THE_LAYERS = N_("beside the layers")
IMAGE_EXPERTS = N_("vision experts")
ATTENTION_EXPERTS = N_("attention experts not picked")
LOOKUP_TABLES = N_("lookup tables beside the layers")
LAYER_TABLES = N_("lookup tables in the layers")
# A shared block's tensors beside its attention and FFN (Zamba's norms), and each application's own adapters.
BESIDE_THE_SHARED_PARTS = N_("tensors beside the shared block's parts")
ADAPTERS = N_("per-application adapters")
_SUBLAYERS = N_(
    "its {n} decoder layers hold {sub} sublayers each, an attention and an FFN apiece: the {layers} layers here are those "
    "sublayers, numbered as num_hidden_layers and the KV cache number them; a module beside the sublayers' lists (a "
    "shortcut MoE) is read with the first sublayer, whose FFN input it reads"
)
_PASSES = N_(
    "layers {later} are passes 2–{passes} of layers {looped} (loop_num_passes), numbered as transformers' cache "
    "numbers them: each pass runs those layers' weights again, with a cache of its own"
)
_ONE_PASS = N_(
    "layers {later} are pass 2 of layers {looped} (loop_num_passes), numbered as transformers' cache numbers them: "
    "it runs those layers' weights again, with a cache of its own"
)
_SHARED_BLOCKS = N_("{blocks}: shared, held once by {holders}, run and cached in each of {layers}")
MESSAGE_GATES = N_("message gates")
# A config key that says how many times layers run over (Dory's n_recurrent_loops).
_LOOPS = re.compile(r"(^|_)loops($|_)")
_BESIDE_NOT_RUN = N_(
    "the FLOPs of the modules beside the layers, which may run on the model's other inputs (audio, images), not on a text token"
)
_LOOPED = N_(
    "its {key} {n}: some layers run {n} times over, each pass with what it caches; ffn sizes each layer once, "
    "its FLOPs, activations and decode state for one pass"
)
_NO_MIXER_RECOGNISED = N_(
    "no token mixer recognised among {names} (counted as tensors beside the parts): what it keeps while decoding is not sized"
)


def _signature(data: Mapping[str, Any], n_layers: int, layer: int) -> tuple[Any, ...]:
    """What the text config says of layer `layer` alone: equal for two layers of one kind."""
    said: list[Any] = []
    for key, value in sorted(data.items()):
        if isinstance(value, list):
            ints = bool(value) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            # Layer indices, from 0 (Llama 4's moe_layers) or from 1 (Qwen4-Exp's ple_layer_ids): a layer
            # either could name is a kind of its own; kinds that read alike are merged after.
            if ints and value[0] >= 0 and value[-1] <= n_layers and all(a < b for a, b in itertools.pairwise(value)):
                said.append((key, layer in value, layer + 1 in value))
            elif len(value) == n_layers:
                said.append((key, repr(value[layer])))
            elif ints:
                said.append((key, layer in value, layer + 1 in value))
            elif 0 < len(value) < n_layers and all(isinstance(v, str) for v in value):  # a pattern, cycled (RecurrentGemma's block_types)
                said.append((key, value[layer % len(value)]))
        elif isinstance(value, int) and not isinstance(value, bool) and value > 0 and key not in _NOT_A_RULE and _LAYER_RULE.search(key):
            # A short period by the layer's place in it (Jamba's attn_layer_period with its offset).
            said.append((key, layer < value, layer % value if value <= _SHORT_PERIOD else layer % value == 0, (layer + 1) % value == 0))
    return tuple(said)


def layer_kinds(text: PretrainedConfig | Mapping[str, Any], n_layers: int) -> list[tuple[int, ...]]:
    """The layers grouped by what the config says of each, in order of their first layer."""
    data = text if isinstance(text, Mapping) else text.to_dict()
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i in range(n_layers):
        groups.setdefault(_signature(data, n_layers, i), []).append(i)
    return [tuple(g) for g in groups.values()]


def decoder_layer_classes(hf_config: PretrainedConfig) -> tuple[type[nn.Module], ...]:
    """The decoder layer classes the model's causal-LM (else base) class keeps whole on a device
    (its _no_split_modules), from the modeling module that defines them: one, or one a layer
    kind (Jamba's attention and Mamba layers)."""
    text = hf_config.get_text_config()
    for model_type in dict.fromkeys((str(text.model_type), str(hf_config.model_type))):
        for mapping in (modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, modeling_auto.MODEL_MAPPING_NAMES):
            name = mapping.get(model_type)
            cls = getattr(transformers, name, None) if isinstance(name, str) else None
            if cls is None:
                continue
            module = importlib.import_module(cls.__module__)
            kept = [n for n in sorted(getattr(cls, "_no_split_modules", None) or ()) if hasattr(module, n)]
            names = [n for n in kept if not _ASIDE.search(n)]
            found = [getattr(module, n) for n in names if n.endswith(("DecoderLayer", "HybridLayer"))]
            if not found:  # GPT-2's GPT2Block, DBRX's DbrxBlock, Mamba-2's Mamba2Block
                found = [getattr(module, n) for n in names if n.endswith(("Block", "Layer"))]
            if found:
                return tuple(found)
    return ()


def _listed_layer_classes(model: nn.Module, n_layers: int, source: str) -> tuple[type[nn.Module], ...]:
    """The class of the one list of num_hidden_layers layers the whole model built, for a model
    whose classes name none to keep whole (BERT's BertLayer, BioGPT's, CTRL's)."""
    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList) and len(m) == n_layers and len({type(x) for x in m}) == 1]
    lists = [m for m in lists if _count(m[0]) and _attends_within(m[0])]
    if len(lists) > 1:  # Qwen2.5-Omni's thinker and talker: two decoders, each its own cache
        paths = [n for n, m in model.named_modules() if any(m is x for x in lists)]
        why = _("it builds {n} lists of num_hidden_layers decoder layers ({paths}): ffn lays out one decoder")
        raise _beyond(source, why.format(n=len(lists), paths=", ".join(paths)))
    if len(lists) != 1:
        why = _("transformers names no decoder layer class for it, and it builds no one list of num_hidden_layers layers: "
                "its layout cannot be read layer by layer")  # fmt: skip
        raise _beyond(source, why)
    return (type(lists[0][0]),)


def _attends_within(layer: nn.Module) -> bool:
    """A layer that holds a token mixer somewhere inside it (a list of attentions alone is no layer: XLM's)."""
    return any(attribute((Owner(n.rpartition(".")[2], type(m).__name__),))[0] == "attention" for n, m in layer.named_modules() if n)


# --- one built layer, read ------------------------------------------------------------------


@dataclass
class LayerRead:
    """What one built layer of a kind holds, as the spec's pieces."""

    layers: tuple[int, ...]
    params: int  # the built layer's own count: each piece below is checked to add up to it
    attention: AnyAttention | None = None
    attention_extra: tuple[ParamTensor, ...] = ()
    mixer: LinearMixer | None = None
    ffn: FFNSpec | None = None
    ffn_extra: tuple[ParamTensor, ...] = ()
    norms: int = 0
    norm: NormKind = "rmsnorm"
    norm_params: int = 0  # one norm's
    norm_names: list[str] = field(default_factory=list)  # the children read as the layer's norms
    other: tuple[ParamTensor, ...] = ()
    other_flops: int = 0  # per token, of `other` beyond its Linear weights (DeepSeek-V4's hyper-connections)
    # Tables a token reads rows of, inside the layer (Qwen4-Exp's PLE n-gram table), and the rows it reads of each.
    tables: tuple[ParamTensor, ...] = ()
    table_lookups: int = 1
    # Elements a convolution among `other` keeps per sequence between tokens (Qwen4-Exp's PLE conv1d).
    other_state: int = 0
    # Experts of another modality beside the text ones (ERNIE 4.5 VL's vision_moe): held, run on image tokens alone.
    image_experts: tuple[ParamTensor, ...] = ()
    image_experts_shape: tuple[int, int] | None = None  # (experts, width) of them
    # A mixture of attention heads (JetMoE's): the query-and-output experts a token does not pick,
    # and (experts, picks); the AttentionSpec holds the picks'.
    attention_experts: tuple[ParamTensor, ...] = ()
    attention_routing: tuple[int, int] = (0, 0)
    window: int | None = None
    index_keys: int | None = None  # a DSA indexer's key, elements a token
    index_heads: int | None = None  # its heads
    index_topk: int | None = None  # the keys its layer's attention then reads
    index_block: int | None = None  # keys averaged into each block its heads score (QSA's compress_ratio)
    kv_shared: bool = False  # its attention reads an earlier layer's keys and values, and builds no k/v projections
    zero_experts: int = 0  # zero-computation (identity) experts in its router's pool beside the routed ones
    router_in_extra: bool = False  # its router scores a state of its own width: counted in ffn_extra, no d × E router
    score_bias: bool = False  # its router chooses on scores plus a stored bias buffer (e_score_correction_bias)
    residual_copies: int | None = None  # copies of the residual stream its hyper-connections mix
    # The layer's children that are blocks shared with other layers (Zamba's shared transformer),
    # and its application's own entries in them (Zamba2's LoRA adapters), out of `other`.
    shared_paths: tuple[str, ...] = ()
    adapters: tuple[ParamTensor, ...] = ()
    looped: bool = False  # its layers run again in later passes (Inkling 2 Loop's): every tensor beside its parts is shared
    said: list[Message] = field(default_factory=list)
    left_out: list[Message] = field(default_factory=list)
    flops_left_out: list[Message] = field(default_factory=list)  # work no FLOP count sizes; its state, if any, sized


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _linear(modules: Mapping[str, nn.Module], *names: str) -> nn.Linear | None:
    found = next((modules[n] for n in names if n in modules), None)
    return found if isinstance(found, nn.Linear) else None


def _projection(modules: Mapping[str, nn.Module], *names: str) -> nn.Linear | None:
    """An attention's projection by its name: the Linear itself, or the one Linear a module of that
    name wraps with a norm or a convolution after it (Inkling 2's q_proj.linear, k_proj.linear)."""
    found = _linear(modules, *names)
    if found is None:
        name = next((n for n in names if n in modules), None)
        found = _linear(modules, f"{name}.linear") if name is not None else None
    return found


def _named_in(prefix: str, module: nn.Module) -> tuple[ParamTensor, ...]:
    """Every tensor of `module`, named from `prefix` as `_tensor` names them."""
    named = []
    for sub, p in module.named_parameters():
        path, _dot, leaf = sub.rpartition(".")
        named.append(_tensor(".".join(filter(None, (prefix, path))), leaf, p, module.get_submodule(path)))
    return tuple(named)


def _tensor(path: str, leaf: str, p: torch.Tensor, module: nn.Module) -> ParamTensor:
    """A tensor no piece of the spec holds, by its name; a Linear's weight keeps `.weight` (its
    matmul is counted), any other tensor is named without it (no matmul: a norm, a scale)."""
    name = f"{path}.{leaf}" if path else leaf
    if not isinstance(module, nn.Linear):
        name = f"{path} ({leaf})" if path else leaf
    return ParamTensor(name, tuple(p.shape))


def _rest(child: nn.Module, used: set[str]) -> tuple[ParamTensor, ...]:
    """The tensors of `child` under none of the module paths in `used`."""
    modules = dict(child.named_modules())
    rest = []
    for name, p in child.named_parameters():
        path, _dot, leaf = name.rpartition(".")
        if not any(path == u or path.startswith(u + ".") or name == u for u in used):
            rest.append(_tensor(path, leaf, p, modules[path]))
    return tuple(rest)


@functools.lru_cache(maxsize=64)
def _ffn_params(spec: FFNSpec) -> int:
    """An FFN's parameters, once a spec: a mixture's lists every expert's tensors to count them."""
    return total_params(spec)


def _beyond(source: str, why: str) -> FFNRuntimeError:
    """A config transformers builds whose layout ffn does not size: a limit of the tool (exit 1), not bad input."""
    return FFNRuntimeError(_("{source}: {why}").format(source=source, why=why))


class _Unread(Exception):
    """A part whose count the spec cannot reproduce: why, in words (a Message, said in the reader's language)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _layers_named(layers: tuple[int, ...]) -> Message:
    """'layer 0' or 'layers 0-2, 5'."""
    return Message(N_("layer {layers}") if len(layers) == 1 else N_("layers {layers}"), layers=layer_ranges(layers))


def _heads(text: PretrainedConfig, child: nn.Module) -> tuple[int, int]:
    heads = getattr(child, "num_heads", None) or getattr(text, "num_attention_heads", None)
    if not isinstance(heads, int):
        raise _Unread(Message(N_("no num_attention_heads")))
    groups = getattr(child, "num_key_value_groups", None)
    kv = heads // groups if isinstance(groups, int) and groups > 0 else getattr(text, "num_key_value_heads", None) or heads
    return heads, int(kv)


def _softmax_attention(d: int, text: PretrainedConfig, child: nn.Module, read: LayerRead) -> None:
    m = dict(child.named_modules())
    q, k, v = _projection(m, *_Q_NAMES), _projection(m, "k_proj", "key", "Wk"), _projection(m, "v_proj", "value", "Wv")
    o = _projection(m, "o_proj", "out_proj", "dense", "c_proj", "Wo")  # ModernBERT's Wo
    fused = _linear(m, *_QKV_NAMES) if q is None and k is None and v is None else None
    if fused is not None and o is not None:  # one projection to the queries, keys and values (Ergo's qkv_proj, MPT's Wqkv)
        q, k, v = _split_qkv(text, child, fused, o)
    # Gemma 4's attention_k_eq_v full layers: no v_proj, the values projected by k_proj.
    values_from_keys = v is None and bool(getattr(child, "use_alternative_attention", False) and getattr(text, "attention_k_eq_v", False))
    v = k if values_from_keys else v
    # A KV-shared layer (Gemma 4's E2B and E4B, as Gemma 3n's) builds no k_proj or v_proj: it reads
    # the keys and values an earlier layer of its kind computed, and is the shape of that kind less them.
    read.kv_shared = k is None and v is None and getattr(child, "is_kv_shared_layer", False) is True
    if q is None or o is None or (not read.kv_shared and (k is None or v is None)):
        raise _Unread(Message(N_("no q, k, v and o projections")))
    heads, kv = _heads(text, child)
    # The KV heads a fused projection holds; or a module that reads no num_key_value_heads (BioGPT's,
    # CTRL's), whose k_proj is as wide as its q_proj whatever the config says.
    if k is not None and (fused is not None or (k.out_features == q.out_features and not hasattr(child, "num_key_value_groups"))):
        kv = k.out_features * heads // q.out_features
    if k is None or v is None:
        head_dim = getattr(child, "head_dim", None)
        if not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim < 1:
            raise _Unread(Message(N_("a KV-shared attention that names no head_dim")))
        v_head_dim = head_dim
    else:
        if k.out_features % kv:
            raise _Unread(
                Message(N_("k_proj's {outputs} outputs do not split into {kv} KV heads"), outputs=f"{k.out_features:,}", kv=f"{kv:,}")
            )
        head_dim = k.out_features // kv
        if v.out_features % kv:
            raise _Unread(
                Message(N_("v_proj's {outputs} outputs do not split into {kv} KV heads"), outputs=f"{v.out_features:,}", kv=f"{kv:,}")
            )
        v_head_dim = v.out_features // kv  # MiMo-V2-Flash's values are narrower than its keys
    q_dim = heads * head_dim
    # What q, k and v read: d, or Zamba's 2 · d (the hidden state and the token embeddings side by side)
    reads = q.in_features
    if any(p is not None and p.in_features != reads for p in (k, v)) or o.out_features != d:
        raise _Unread(Message(N_("q_proj, k_proj and v_proj read different widths, or o_proj does not write hidden_size")))
    if q.out_features not in (q_dim, 2 * q_dim) or o.in_features != heads * v_head_dim:
        raise _Unread(Message(N_("q_proj's {q} outputs and o_proj's {o} inputs are not {heads} heads × {head_dim}"),
                              q=f"{q.out_features:,}", o=f"{o.in_features:,}", heads=f"{heads:,}", head_dim=f"{head_dim:,}"))  # fmt: skip
    norms = {n: m[n] for n in ("q_norm", "k_norm") if n in m and _count(m[n])}  # a norm without weights counts none (NanoChat's)
    qk_norm: QKNorm = "none"
    if norms:
        width = next(iter(norms["q_norm"].parameters())).shape[0] if "q_norm" in norms and _count(norms["q_norm"]) else 0
        qk_norm = "head" if width == head_dim else "proj"
    sinks = isinstance(getattr(child, "sinks", None), nn.Parameter)
    spec = _attention_spec(
        d,
        (heads, kv, head_dim),
        q,
        o,
        qk_norm=qk_norm,
        qk_norm_bias=any(getattr(n, "bias", None) is not None for n in norms.values()),
        sinks=sinks,
        v_head_dim=v_head_dim if v_head_dim != head_dim else None,
        values_from_keys=values_from_keys,
        input_width=reads if reads != d else None,
    )
    names = {n for n, mod in m.items() if mod is not None and mod in (q, k, v, o, fused, *norms.values())}
    extra: tuple[ParamTensor, ...] = ()
    if q.out_features == 2 * q_dim:  # the second half gates the output (Qwen3-Next, Qwen3.5, MiniCPM5's q_gate_proj)
        q_name = next(n for n in _Q_NAMES if m.get(n) is q)
        extra = (ParamTensor(noted(f"{q_name}.weight", GATE_HALF), (q_dim, reads)),)
        if q.bias is not None:
            extra += (ParamTensor(noted(f"{q_name}.bias", GATE_HALF), (q_dim,)),)
    biased = {p.bias is not None for p in (q, k, v) if p is not None}
    if len(biased) > 1 and fused is None and q.out_features == q_dim:
        # Some of q, k and v hold a bias and some none (Whisper's k_proj none): their biases beside the spec's projections
        spec = replace(spec, qkv_bias=False)
        extra += tuple(ParamTensor(noted(f"{n}.bias", BIAS_ALONE), tuple(mod.bias.shape))
                       for n, mod in m.items() if mod in (q, k, v) and mod.bias is not None)  # fmt: skip
    used = names | ({"sinks"} if sinks else set())
    convs = _kv_convs(m, k, v, values_from_keys)
    if convs is not None:  # Inkling's k_sconv and v_sconv, kept in float32 where the model says so
        taps, paths = convs
        # A dynamic convolution's window is float32 as its taps are (Inkling 2's sums them per token in float32).
        fp32 = all(p.endswith(_STATIC_TAPS) or _kept_as(p, _kept_in_float32(text)) for p in paths)
        spec = replace(spec, kv_conv=taps, kv_conv_bytes=4 if fp32 else None)
        used |= set(paths)
    read.attention, read.attention_extra = spec, extra + _rest(child, used)
    _qsa_indexer(child, read)
    relative = [(n, m) for n, m in child.named_modules() if n and isinstance(getattr(m, "rel_extent", None), int) and _count(m)]
    for n, m in relative:  # Inkling's relative-position logits: a matmul a token no projection counts
        why = N_("the FLOPs of {cls}'s relative-position logits ({path}: each query's against {extent} distances), beyond its projections")
        read.flops_left_out.append(Message(why, cls=type(child).__name__, path=n, extent=f"{m.rel_extent:,}"))
    read.window = _window(child)
    one, many = N_("attention: {heads} heads × {head_dim}, {kv} KV head"), N_("attention: {heads} heads × {head_dim}, {kv} KV heads")
    shape = one if kv == 1 else many
    said = Message(shape, heads=f"{heads:,}", head_dim=f"{head_dim:,}", kv=f"{kv:,}")
    if spec.v_head_dim is not None:
        said = Message.join(said, Message(N_(", values {v} per head"), v=f"{v_head_dim:,}"))
    if values_from_keys:
        said = Message.join(said, Message(N_(", values from k_proj")))
    window_said = Message(N_(", window {window}"), window=f"{read.window:,}") if read.window else ""
    shared_said = Message(N_(", an earlier layer's keys and values")) if read.kv_shared else ""
    read.said.append(Message.join(said, window_said, shared_said))


def _query_experts(d: int, child: nn.Module) -> tuple[nn.Module, int, int] | None:
    """A mixture of attention heads (JetMoE's MoA): one kv_proj every token runs, and `experts`
    holding query-and-output experts as a pair of containers (input_linear to a query of the KV
    heads' width, output_linear back to d), a router picking some a token: (experts, their count,
    a query's width). None for any other attention."""
    children = dict(child.named_children())
    kv, experts = children.get("kv_proj"), children.get("experts")
    paired = _paired_experts(d, experts) if experts is not None else None
    if not isinstance(kv, nn.Linear) or experts is None or paired is None or paired[2] or kv.out_features != 2 * paired[1]:
        return None
    return experts, paired[0], paired[1]


def _mixture_of_heads(d: int, child: nn.Module, heads: tuple[nn.Module, int, int], read: LayerRead) -> None:
    """JetMoE's attention: keys and values of its KV heads from kv_proj, a query per pick from the
    top_k experts a router picks of `experts`, each a query of the KV heads' width (so heads = KV
    heads × top_k, each query head scoring its KV head) and an output back to d, summed with their
    gates, and a bias. The AttentionSpec is what a token runs (its picks' queries and outputs); the
    experts it does not pick are held beside, out of its active count, read where other tokens pick them."""
    experts, count, width = heads
    picks, head_dim = getattr(child, "top_k", None), getattr(child, "head_dim", None)
    if not isinstance(picks, int) or not isinstance(head_dim, int) or min(picks, head_dim) < 1 or width % head_dim:
        raise _Unread(Message(N_("{cls} names no top_k and head_dim its experts' width divides into"), cls=type(child).__name__))
    kv_heads = width // head_dim
    if not picks < count:
        raise _Unread(Message(N_("{cls} picks all its {count} experts"), cls=type(child).__name__, count=f"{count:,}"))
    bias = dict(experts.named_parameters(recurse=False)).get("bias")
    if bias is not None and tuple(bias.shape) != (d,):
        raise _Unread(Message(N_("{cls}'s experts hold a bias of other than hidden_size"), cls=type(child).__name__))
    read.attention = AttentionSpec(d_model=d, n_heads=kv_heads * picks, n_kv_heads=kv_heads, head_dim=head_dim, qkv_bias=False,
                                   o_bias=bias is not None)  # fmt: skip
    router = [(n, m) for n, m in experts.named_children() if n not in _PAIRED_EXPERTS]
    read.attention_extra = tuple(t for n, m in router for t in _named_in(f"experts.{n}", m))
    # one expert's query and output projections, held count − picks times beside the picks'
    read.attention_experts = (
        ParamTensor(noted("experts.input_linear.weight", NOT_PICKED), (width, d)),
        ParamTensor(noted("experts.output_linear.weight", NOT_PICKED), (d, width)),
    )
    read.attention_routing = (count, picks)
    said = N_("attention: {heads} heads × {head_dim}, {kv} KV heads, the queries and outputs of {picks} of {count} experts a token")
    read.said.append(Message(said, heads=f"{kv_heads * picks:,}", head_dim=f"{head_dim:,}", kv=f"{kv_heads:,}", picks=picks,
                             count=f"{count:,}"))  # fmt: skip


def _qsa_indexer(child: nn.Module, read: LayerRead) -> None:
    """Qwen4-Exp's QSA indexer beside a softmax attention: one key of index_head_dim a token (its
    index_kv_heads, one), cached beside K and V (transformers' cache.update_indexer); the attention
    then reads the token_budget tokens it picks and the compress_ratio − 1 of the block not yet
    closed. Its index_n_heads score blocks of compress_ratio keys averaged, a block's share a key."""
    indexer = getattr(child, "indexer", None)
    keys = ("index_n_heads", "index_head_dim", "index_kv_heads", "token_budget", "compress_ratio")
    sizes = _positive_ints([getattr(indexer, k, None) for k in keys])
    if not isinstance(getattr(indexer, "index_qk_proj", None), nn.Linear) or sizes is None:
        return
    heads, width, kv_heads, budget, ratio = sizes
    read.index_keys, read.index_topk, read.index_block, read.index_heads = width * kv_heads, budget + ratio - 1, ratio, heads
    read.said.append(Message(N_("indexer keys {width} per token, scored in blocks of {ratio}"), width=f"{width * kv_heads:,}",
                             ratio=f"{ratio:,}"))  # fmt: skip


def _positive_ints(values: list[Any]) -> list[int] | None:
    """`values`, where each is a positive int (a module's sizes, a config's); None where one is not."""
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return ints if len(ints) == len(values) else None


def _attention_spec(d: int, shape: tuple[int, int, int], q: nn.Linear, o: nn.Linear, **more: Any) -> AttentionSpec:
    """An attention of `shape` (heads, KV heads, head width), its biases as its q_proj and o_proj hold them."""
    heads, kv, head_dim = shape
    return AttentionSpec(d_model=d, n_heads=heads, n_kv_heads=kv, head_dim=head_dim, qkv_bias=q.bias is not None,
                         o_bias=o.bias is not None, **more)  # fmt: skip


def _cca_projection(child: nn.Module) -> tuple[str, nn.Module] | None:
    """A projection module inside the attention that holds the queries' and keys' Linears, the
    values' in two halves (one of the current token, one delayed a token) and convolutions over
    the queries and keys (Zaya's ZayaCCAProjection, compressed convolutional attention): its path."""
    for name, m in child.named_children():
        parts = dict(m.named_children())
        halves = [n for n, c in parts.items() if n.startswith("v_proj_") and isinstance(c, nn.Linear)]
        convs = [c for c in parts.values() if isinstance(c, nn.Conv1d)]
        if {"q_proj", "k_proj"} <= set(parts) and len(halves) == 2 and convs:
            return name, m
    return None


def _cca_attention(d: int, text: PretrainedConfig, child: nn.Module, found: tuple[str, nn.Module], read: LayerRead) -> None:
    """Compressed convolutional attention (Zaya's): q_proj and k_proj, the values in a current and
    a delayed half, two convolutions in a row over the queries' and keys' channels, o_proj. Counted
    as an attention of those projections (the halves as one v_proj) and its convolutions beside
    them, each a multiply-add of its weights a token as a Linear's; decoding keeps K and V of every
    token, and beside them the convolutions' latest inputs and the last token's delayed value half."""
    o = _linear(dict(child.named_modules()), "o_proj")
    path, proj = found
    parts = dict(proj.named_children())
    q, k = parts["q_proj"], parts["k_proj"]
    halves = [c for n, c in parts.items() if n.startswith("v_proj_") and isinstance(c, nn.Linear)]
    convs = [(n, c) for n, c in parts.items() if isinstance(c, nn.Conv1d)]
    if not isinstance(q, nn.Linear) or not isinstance(k, nn.Linear) or o is None:
        raise _Unread(Message(N_("no q, k, v and o projections")))
    heads, kv = _heads(text, child)
    head_dim = k.out_features // kv
    if k.out_features % kv or q.out_features != heads * head_dim or sum(h.out_features for h in halves) != k.out_features:
        raise _Unread(Message(N_("q_proj's {q} outputs and o_proj's {o} inputs are not {heads} heads × {head_dim}"),
                              q=f"{q.out_features:,}", o=f"{o.in_features:,}", heads=f"{heads:,}", head_dim=f"{head_dim:,}"))  # fmt: skip
    channels = q.out_features + k.out_features
    if any(c.in_channels != channels or c.out_channels != channels for _n, c in convs):
        raise _Unread(Message(N_("{cls}'s convolutions are not over its queries' and keys' channels"), cls=type(proj).__name__))
    window = sum(int(c.kernel_size[0]) - 1 for _n, c in convs)  # each convolution's taps − 1, in a row
    delayed = min(h.out_features for h in halves)  # the delayed half: the last token's, kept
    spec = _attention_spec(d, (heads, kv, head_dim), q, o, side_state=window * channels, carried_values=delayed)
    # A convolution's weight is named as a Linear's: a token's multiply-adds are its weight's elements.
    conv_tensors = tuple(ParamTensor(f"{path}.{n}.{leaf}", tuple(p.shape)) for n, c in convs for leaf, p in c.named_parameters())
    used = {f"{path}.{n}" for n in ("q_proj", "k_proj", *(n for n, c in parts.items() if any(c is h for h in halves)))}
    used |= {f"{path}.{n}" for n, _c in convs} | {"o_proj"}
    read.attention, read.attention_extra = spec, conv_tensors + _rest(child, used)
    read.window = _window(child)
    said = Message(N_("compressed convolutional attention: {heads} heads × {head_dim}, {kv} KV heads, convolutions over {channels} "
                      "channels"), heads=f"{heads:,}", head_dim=f"{head_dim:,}", kv=f"{kv:,}", channels=f"{channels:,}")  # fmt: skip
    window_said = Message(N_(", window {window}"), window=f"{read.window:,}") if read.window else ""
    read.said.append(Message.join(said, window_said))


def _window(child: nn.Module) -> int | None:
    """The attention module's own sliding_window (None in a layer that attends to every key); a
    GPT-Neo local layer's window_size, which its mask keeps (transformers' cache keeps every key)."""
    window = getattr(child, "sliding_window", None)
    if window is None and getattr(child, "attention_type", None) == "local":
        window = getattr(getattr(child, "config", None), "window_size", None)
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None


def _split_qkv(text: PretrainedConfig, child: nn.Module, fused: nn.Linear, o: nn.Linear) -> tuple[nn.Linear, nn.Linear, nn.Linear]:
    """A fused projection as the three it holds, each of its own width: heads × head width for the
    queries, KV heads × head width for the keys and for the values, the head width o_proj's inputs
    over the heads and the KV heads what the rest of the width holds (a config's num_key_value_heads
    is not read by every model that fuses: MPT's and BLOOM's attend with all heads). Built on meta,
    as the layer is: only their shapes and biases are read."""
    heads, _kv = _heads(text, child)
    head_dim, rest = divmod(o.in_features, heads)
    kv, odd = divmod(fused.out_features // max(head_dim, 1) - heads, 2)
    if rest or odd or fused.out_features % max(head_dim, 1) or not 0 < kv <= heads or heads % kv:
        why = N_("a fused qkv projection of {outputs} outputs that is not {heads} heads and twice some KV heads × {head_dim}")
        raise _Unread(Message(why, outputs=f"{fused.out_features:,}", heads=f"{heads:,}", head_dim=f"{head_dim:,}"))
    bias = fused.bias is not None
    with torch.device("meta"):
        widths = (heads * head_dim, kv * head_dim, kv * head_dim)
        q, k, v = (nn.Linear(fused.in_features, w, bias=bias) for w in widths)
    return q, k, v


def _latent_attention(d: int, text: PretrainedConfig, child: nn.Module, read: LayerRead) -> None:
    m = dict(child.named_modules())
    kv_a, kv_b = _linear(m, "kv_a_proj_with_mqa"), _linear(m, "kv_b_proj")
    if kv_a is None or kv_b is None:
        raise _Unread(Message(N_("no kv_a_proj_with_mqa and kv_b_proj")))

    def of(key: str) -> Any:
        value = getattr(child, key, None)
        return value if value is not None else getattr(text, key, None)

    q_a, q_gate = _linear(m, "q_a_proj"), _linear(m, "q_gate_proj")
    spec = LatentAttentionSpec(
        d_model=d,
        n_heads=int(of("num_heads") or text.num_attention_heads),
        kv_lora_rank=int(of("kv_lora_rank")),
        qk_nope_head_dim=int(of("qk_nope_head_dim")),
        qk_rope_head_dim=int(of("qk_rope_head_dim")),
        v_head_dim=int(of("v_head_dim")),
        q_lora_rank=q_a.out_features if q_a is not None else None,
        bias=kv_a.bias is not None,
        q_gate=q_gate is not None and "q_b_proj" not in m,  # A.X K2's: the queries and an output gate from one projection
    )
    if spec.q_gate and q_gate is not None:
        (shape,) = [(rows, cols) for name, rows, cols, _bias in spec.projections() if name == "q_gate_proj"]
        if (q_gate.out_features, q_gate.in_features) != shape:
            why = N_("a q_gate_proj of {rows:,} × {cols:,}, not the queries and an output gate ({want_rows:,} × {want_cols:,}) "
                     "from the latent and its norm")  # fmt: skip
            raise _Unread(Message(why, rows=q_gate.out_features, cols=q_gate.in_features, want_rows=shape[0], want_cols=shape[1]))
    own = ("q_a_proj", "q_a_layernorm", "q_b_proj", "q_gate_proj", "q_proj", "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj")
    rest = _rest(child, {n for n in own if n in m})
    read.attention, read.attention_extra = spec, rest
    read.window = _window(child)  # dots3's sliding layers keep their window's latents alone
    said = Message(N_("latent attention: {heads} heads, KV latent {latent} + rope {rope}"),
                   heads=f"{spec.n_heads:,}", latent=f"{spec.kv_lora_rank:,}", rope=f"{spec.qk_rope_head_dim:,}")  # fmt: skip
    window_said = Message(N_(", window {window}"), window=f"{read.window:,}") if read.window else ""
    read.said.append(Message.join(said, window_said))
    # An output gate (a Linear), a norm or a tensor of the attention's own (its sinks) keeps nothing across tokens.
    children = dict(child.named_children())
    tops = {t.name.split(".")[0].split(" ")[0] for t in rest}
    beside = sorted(n for n in tops if not _keeps_nothing(children.get(n), n))
    indexer = getattr(child, "indexer", None)
    wk = getattr(indexer, "wk", None)
    if "indexer" in beside and isinstance(wk, nn.Linear) and wk.out_features == getattr(indexer, "head_dim", None):
        # DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5): one key of index_head_dim a token,
        # cached beside the latent (transformers' cache.update_indexer); a layer whose indexer_types
        # says "shared" builds none and caches none.
        read.index_keys = wk.out_features
        read.index_heads, read.index_topk = int(getattr(indexer, "n_heads", 0)) or None, int(getattr(indexer, "index_topk", 0)) or None
        beside.remove("indexer")
        read.said.append(Message(N_("indexer keys {width} per token"), width=f"{wk.out_features:,}"))
    if beside:
        read.left_out.append(
            Message(
                N_("what {modules} of {cls} caches while decoding (its parameters are counted; any cache of its own is not sized)"),
                modules=", ".join(beside),
                cls=type(child).__name__,
            )
        )


def _keeps_nothing(module: nn.Module | None, name: str) -> bool:
    """Whether a module beside an attention's own keeps nothing while decoding: none (a tensor of the
    attention itself), a Linear, or a norm."""
    return module is None or isinstance(module, nn.Linear) or attribute((Owner(name, type(module).__name__),))[0] == "norm"


def _is_compressed(child: nn.Module) -> bool:
    """DeepSeek-V4's attention: one shared key-and-value projection, a sliding window, and a
    compressor slot (None in a layer of the window alone)."""
    return hasattr(child, "compressor") and isinstance(getattr(child, "kv_proj", None), nn.Linear) and hasattr(child, "sliding_window")


def _compressed_attention(d: int, child: nn.Module, read: LayerRead) -> None:
    """DeepSeek-V4's attention by its modules: heads and head width, the window, the compressor's
    rate and series, the indexer's heads, width and top-k; its tensors counted as built."""
    a, kv = vars(child), getattr(child, "kv_proj", None)
    widths = [a.get(k) for k in ("num_heads", "head_dim", "sliding_window")]
    heads, head_dim, window = (v if isinstance(v, int) and not isinstance(v, bool) else 0 for v in widths)
    if not (heads and head_dim and window) or not isinstance(kv, nn.Linear) or kv.out_features != head_dim:
        raise _Unread(Message(N_("a compressed attention without one key-and-value head of head_dim and a sliding_window")))
    compressor, rate, overlap = child.compressor, 0, False
    index_heads = index_dim = topk = 0
    if compressor is not None:
        said_rate = getattr(compressor, "compress_rate", None)
        rate = said_rate if isinstance(said_rate, int) and not isinstance(said_rate, bool) else 0
        proj = getattr(compressor, "kv_proj", None)
        if not rate or not isinstance(proj, nn.Linear) or proj.out_features not in (head_dim, 2 * head_dim):
            raise _Unread(Message(N_("a compressor without a compress_rate and a kv_proj of one or two head widths")))
        overlap = proj.out_features == 2 * head_dim
        indexer = getattr(compressor, "indexer", None)
        if indexer is not None:
            index_heads, index_dim, topk = (int(getattr(indexer, k, 0) or 0) for k in ("num_heads", "head_dim", "index_topk"))
            if not (index_heads and index_dim and topk):
                raise _Unread(Message(N_("an indexer without its heads, head width and top-k")))
    spec = CompressedAttentionSpec(d, heads, head_dim, window, _rest(child, set()), rate, overlap, index_heads, index_dim, topk)
    read.attention = spec
    read.said.append(compressed_summary(spec))


def _image_tiles(hf_config: PretrainedConfig) -> tuple[int, int] | None:
    """The tiles an image is cut into at most and the tokens the vision tower hands on for each
    (Llama 3.2 Vision's: max_num_tiles, and (image_size / patch_size)² patches plus its class
    token); None where the config does not say."""
    vision = getattr(hf_config, "vision_config", None)
    sizes = [getattr(vision, k, None) for k in ("max_num_tiles", "image_size", "patch_size")]
    said = [v for v in sizes if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    if len(said) != len(sizes):
        return None
    tiles, image, patch = said
    return tiles, (image // patch) ** 2 + 1


def _encoder_tokens(seq2seq: EncoderDecoder) -> _Source:
    """The encoder's output a decoder layer attends to: one 'tile' of the most tokens it hands on."""
    return _Source("encoder", (1, seq2seq.source_tokens))


@dataclass(frozen=True)
class _Source:
    """What a cross-attention attends to: an image of the most `tiles` (tiles, tokens a tile), or
    the encoder's output (one tile of its most tokens); `tiles` None where the config does not say."""

    kind: Literal["image", "encoder"]
    tiles: tuple[int, int] | None


def _cross_attention(child: nn.Module, read: LayerRead, source: _Source) -> None:
    """An attention over another input's tokens (an image's, Llama 3.2 Vision's, in layers of its
    own among the text's; the encoder's output, in an encoder-decoder's decoder layers beside their
    self-attention): its tensors as built; a token decoded runs its queries and output (q_proj,
    o_proj) and scores the input's keys, while those keys and values are projected once when the
    input arrives. A sequence keeps them for one input of the most `source.tiles` (tiles, tokens a
    tile); where the config does not say, they are named as left out, never counted as attention
    over the text."""
    name = type(child).__name__
    m = dict(child.named_modules())
    q, k, o = _linear(m, *_Q_NAMES), _linear(m, "k_proj"), _linear(m, "o_proj", "out_proj")
    head_dim = vars(child).get("head_dim")
    if q is None or o is None:
        raise _Unread(Message(N_("no q and o projections")))
    tensors = _rest(child, set())
    flops = 2 * (q.weight.numel() + o.weight.numel())
    image = source.kind == "image"
    kind = Message(N_("cross-attention over an image's tokens") if image else N_("cross-attention over the encoder's output"))
    runs = N_("{kind}: q and o a text token, k and v once an image") if image else N_("{kind}: q and o a token, k and v once a source")
    read.said.append(Message(runs, kind=kind))
    width = head_dim if isinstance(head_dim, int) and head_dim > 0 else 0
    tiles = source.tiles
    if tiles is None or k is None or not width or q.out_features % width or k.out_features % width:
        read.mixer = LinearMixer(kind, name, tensors, (), flops, read.layers, state_sized=False)
        why = N_("the keys and values {name} keeps of an image's tokens, their projections and its scores over them: they run on "
                 "the image, whose tokens ffn does not size")  # fmt: skip
        read.left_out.append(Message(why, name=name))
        return
    on_source = tuple(t.name for t in tensors if re.match(r"(k_proj|v_proj|k_norm)\b", t.name))  # the keys' and values'
    scan = SourceAttention(q.out_features // width, k.out_features // width, width, *tiles, on_source=on_source, source=source.kind)
    read.mixer = LinearMixer(kind, name, tensors, (), flops, read.layers, scan=scan)
    if image:  # an encoder's output is one a sequence: read_layout's note says how long
        why = N_("the keys and values of more than one image of {tiles} tiles ({tokens} tokens) a sequence; the projections to "
                 "them, run once an image, and the vision tower")  # fmt: skip
        read.left_out.append(Message(why, tiles=scan.tiles, tokens=f"{scan.tokens:,}"))


def _mixer(d: int, child: nn.Module, read: LayerRead) -> None:
    """A Gated DeltaNet or Mamba-2 by its widths; any other mixer tensor by tensor, its state unsized."""
    name, a = type(child).__name__, vars(child)
    mixer: LinearMixer | None = None
    selective = _selective_scan(child)
    if name.endswith("GatedDeltaNet") and all(k in a for k in ("num_k_heads", "head_k_dim", "num_v_heads", "head_v_dim")):
        mixer = gated_delta_net(
            d,
            key_heads=a["num_k_heads"],
            key_dim=a["head_k_dim"],
            value_heads=a["num_v_heads"],
            value_dim=a["head_v_dim"],
            conv_kernel=a["conv_kernel_size"],
            layers=read.layers,
        )
    elif all(k in a for k in ("num_heads", "head_dim", "n_groups", "ssm_state_size", "conv_kernel_size")) and hasattr(child, "A_log"):
        m = dict(child.named_modules())
        conv, proj = m.get("conv1d"), _linear(m, "in_proj")
        mixer = mamba2(
            d,
            heads=a["num_heads"],
            head_dim=a["head_dim"],
            groups=a["n_groups"],
            state=a["ssm_state_size"],
            conv_kernel=a["conv_kernel_size"],
            conv_bias=getattr(conv, "bias", None) is not None,
            proj_bias=proj is not None and proj.bias is not None,
            layers=read.layers,
            chunk=int(a.get("chunk_size") or 256),
        )
        norm = m.get("norm")
        if norm is None or not _count(norm):  # no gated norm (Falcon-H1's mamba_rms_norm off)
            mixer = LinearMixer(**{**vars(mixer), "norm_tensors": ()})
    elif "Lightning" in name and all(isinstance(a.get(k), int) for k in ("num_attention_heads", "head_dim", "block_size")):
        # MiniMax's lightning attention: its tensors as built (qkv, output gate, norm, out), its state
        # a head_dim × head_dim matrix per head, in blocks of block_size while prefilling.
        # Its output norm is counted with the norms, as the attribution rule sorts a Norm class.
        norms = {n for n, mod in child.named_modules() if n and attribute((Owner(n, type(mod).__name__),))[0] == "norm"}
        tensors = _rest(child, norms)
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
        lightning = LightningScan(a["num_attention_heads"], a["head_dim"], a["block_size"])
        if lightning.chunk < 1:
            raise FFNError("block_size", lightning.chunk, _("must be a positive integer"))
        norm_tensors = tuple(t for t in _rest(child, set()) if t not in tensors)
        mixer = LinearMixer(Message(N_("lightning attention")), name, tensors, norm_tensors, flops, read.layers, scan=lightning)
    elif (conv := _short_conv(d, child)) is not None:
        # LFM2's and LFM3's short convolution: a depthwise conv over the gated input, its kernel − 1 latest inputs kept.
        mixer = short_conv(d, kernel=conv.kernel_size[0], bias=conv.bias is not None, layers=read.layers)
    elif selective is not None:
        # Mamba-1 (Jamba, Falcon-Mamba): its tensors as built, its state a state-size vector per
        # channel (A_log's [channels, state]) and its depthwise conv's kernel − 1 latest inputs.
        tensors = _rest(child, set())
        selective_scan, taps = selective
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
        # Zamba's x and dt projections, a matrix a head (x_proj_weight, dt_proj_weight): a matmul a token each
        flops += 2 * sum(p.numel() for n, p in child.named_parameters(recurse=False) if p.dim() == 3 and n.endswith("_weight"))
        c = selective_scan.channels
        mixer = LinearMixer("Mamba", name, tensors, (), flops, read.layers, 2 * c * taps, c * (taps - 1), selective_scan)
    elif (lru := _rg_lru(child)) is not None:
        # RecurrentGemma's recurrent block (Griffin): linear_x and linear_y (d → lru_width), a depthwise
        # conv over the x branch, the RG-LRU's two block-diagonal gates (heads × width² each, matmuls
        # a token) and its recurrence, linear_out back to d; its tensors as built. transformers keeps
        # the recurrent state in float32 whatever the dtype (RecurrentGemmaRecurrentBlock._setup_cache).
        rg, conv = lru
        tensors = _rest(child, set())
        gates = sum(p.numel() for p in rg.parameters() if p.dim() == 3)
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2) + 2 * gates
        c, taps = int(conv.in_channels), int(conv.kernel_size[0])
        mixer = LinearMixer(
            Message(N_("RG-LRU")), name, tensors, (), flops, read.layers, 2 * c * taps, c * (taps - 1), ElementwiseScan(c, "RG-LRU"), 4
        )
    elif all(isinstance(getattr(child, n, None), nn.Parameter) for n in ("time_decay", "time_first")) and "receptance" in dict(
        child.named_children()
    ):
        # RWKV-4's time mixing: key, value, receptance and output (d → d), the decay and bonus a
        # channel, the token-shift mixes; its tensors as built. Its WKV state (numerator,
        # denominator, maximum a channel) is float32, as transformers keeps it; its token shift
        # keeps the latest input a channel, a window of one, the channel mixing's beside it.
        tensors = _rest(child, set())
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
        c = int(child.get_parameter("time_decay").numel())
        mixer = LinearMixer(
            Message(N_("RWKV time mixing")), name, tensors, (), flops, read.layers, 0, c, ElementwiseScan(c, "WKV", per_channel=3), 4
        )
    elif (memory := _mlstm(child)) is not None:
        # xLSTM's mLSTM layer: q, k, v, the output gate, the input and forget gates (one value a
        # head), a multi-head norm and out_proj, its tensors as built; its memory kept per head at the
        # config's inference_state_dtype, as transformers' xLSTMCache keeps it (float32 by default).
        matrix_memory, state_bytes = memory
        norms = {n for n, mod in child.named_modules() if n and attribute((Owner(n, type(mod).__name__),))[0] == "norm"}
        tensors = _rest(child, norms)
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
        norm_tensors = tuple(t for t in _rest(child, set()) if t not in tensors)
        mixer = LinearMixer(Message(N_("mLSTM")), name, tensors, norm_tensors, flops, read.layers, scan=matrix_memory,
                            state_dtype_bytes=state_bytes, norm_kind=N_("per-head LayerNorm"))  # fmt: skip
    elif "Delta" in name and all(isinstance(a.get(k), int) for k in ("num_heads", "head_dim", "conv_dim", "conv_kernel_size")):
        # A delta rule of another shape (Kimi Delta Attention): its tensors as built, its state
        # a key × value matrix per head and its conv's kernel − 1 latest inputs of each channel.
        tensors = _rest(child, set())
        heads, dim, conv, kernel = a["num_heads"], a["head_dim"], a["conv_dim"], a["conv_kernel_size"]
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
        scan = DeltaRuleScan(heads, dim, dim)
        mixer = LinearMixer(name, name, tensors, (), flops, read.layers, 2 * conv * kernel, conv * (kernel - 1), scan)
    if mixer is not None and mixer.params + mixer.norm_params == _count(child):
        read.mixer = mixer
        read.said.append(Message(N_("{kind}: {state}"), kind=mixer.kind, state=mixer.state_words()))
        return
    tensors = _rest(child, set())
    flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight"))
    read.mixer = LinearMixer(name, name, tensors, (), flops, read.layers, state_sized=False)
    read.said.append(Message(N_("{name}: counted tensor by tensor"), name=name))
    read.left_out.append(
        Message(
            N_("the decode state of {name}, and the FLOPs of its state beyond its projections: a token mixer ffn does not size"), name=name
        )
    )


def _kept_in_float32(hf_config: PretrainedConfig) -> frozenset[str]:
    """The module names the model's class keeps in float32 whatever dtype it is loaded in
    (its _keep_in_fp32_modules_strict and _keep_in_fp32_modules: Inkling's short convolutions)."""
    names: set[str] = set()
    model_type = str(hf_config.get_text_config().model_type)
    for mapping in (modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, modeling_auto.MODEL_MAPPING_NAMES):
        cls = getattr(transformers, str(mapping.get(model_type, "")), None)
        for key in ("_keep_in_fp32_modules_strict", "_keep_in_fp32_modules"):
            listed = getattr(cls, key, None)
            names |= {n for n in listed or () if isinstance(n, str)}
    return frozenset(names)


def _kept_as(path: str, kept: frozenset[str]) -> bool:
    """Whether the module at `path` is one a class keeps in float32: a name it lists is the path,
    or a run of the path's module names (Inkling 2's "sconv.conv1d" in k_proj.sconv.conv1d)."""
    return any(f".{name}." in f".{path}." for name in kept)


def _depthwise_convs(modules: Mapping[str, nn.Module]) -> list[tuple[str, nn.Conv1d]]:
    """The depthwise Conv1d modules among `modules` (one filter a channel), by their path."""
    return [(n, m) for n, m in modules.items() if isinstance(m, nn.Conv1d) and m.groups == m.in_channels == m.out_channels]


def _kv_convs(
    modules: Mapping[str, nn.Module], k: nn.Linear | None, v: nn.Linear | None, values_from_keys: bool
) -> tuple[int, tuple[str, ...]] | None:
    """A depthwise convolution over the keys' channels and one over the values', of one kernel
    width, inside the attention (Inkling's k_sconv and v_sconv; Inkling 2's k_proj.sconv.conv1d):
    (taps, the paths of their tensors' modules, or of the tensors). A dynamic one's static taps,
    [taps, channels] (Inkling 2's full layers, which add taps projected from each token by a
    weight_proj, a Linear beside them), are its convolution."""
    convs = [(n, int(c.in_channels), int(c.kernel_size[0]), c.bias is None) for n, c in _depthwise_convs(modules)]
    convs += [(f"{n}{_STATIC_TAPS}", int(w.shape[1]), int(w.shape[0]), True) for n, w in _static_taps(modules)]
    if len(convs) != 2 or k is None or v is None or values_from_keys:
        return None
    widths = sorted(width for _n, width, _t, _b in convs)
    taps = {t for _n, _w, t, _b in convs}
    if widths != sorted((k.out_features, v.out_features)) or len(taps) != 1 or not all(unbiased for *_x, unbiased in convs):
        return None
    return taps.pop(), tuple(n for n, *_x in convs)


def _static_taps(modules: Mapping[str, nn.Module]) -> list[tuple[str, nn.Parameter]]:
    """A dynamic short convolution's static taps among `modules`: its static_weight of [taps, channels]
    beside the Linear that projects each token's own taps (Inkling 2's weight_proj)."""
    found = []
    for n, m in modules.items():
        weight = getattr(m, "static_weight", None)
        if isinstance(weight, nn.Parameter) and weight.dim() == 2 and isinstance(getattr(m, "weight_proj", None), nn.Linear):
            found.append((n, weight))
    return found


def _lone_conv(module: nn.Module) -> bool:
    """A module that holds one depthwise convolution and nothing else (Inkling's attn_sconv and mlp_sconv
    over the residual stream): a token mixer of a few tokens, whatever its name."""
    convs = _depthwise_convs(dict(module.named_modules()))
    return len(convs) == 1 and _count(convs[0][1]) == _count(module)


def _short_convs(convs: list[tuple[str, nn.Conv1d]], layers: tuple[int, ...], fp32: bool) -> LinearMixer:
    """Depthwise causal convolutions beside the layer's attention (Inkling's, over the residual
    stream before the attention and before the FFN) as one mixer: their taps, 2 · channels · taps
    FLOPs a token each, and each one's kernel − 1 latest inputs kept while decoding, in float32
    where the model keeps them so."""
    tensors = tuple(_tensor(path, leaf, p, conv) for path, conv in convs for leaf, p in conv.named_parameters())
    flops = sum(2 * c.in_channels * int(c.kernel_size[0]) for _p, c in convs)
    window = sum(c.in_channels * (int(c.kernel_size[0]) - 1) for _p, c in convs)
    detail = Message(N_("{n} depthwise convolutions: {paths}"), n=f"{len(convs):,}", paths=Message.listed([p for p, _c in convs]))
    return LinearMixer(
        Message(N_("short convolutions")),
        detail,
        tensors,
        (),
        0,
        layers,
        flops,
        window,
        conv_dtype_bytes=4 if fp32 else None,
        whole_on_each_gpu=True,
    )


def _mlstm(child: nn.Module) -> tuple[MLSTMScan, int | None] | None:
    """The matrix memory of an mLSTM layer (transformers' xLSTMLayer) and the bytes of one of its
    elements: q and k of one width, v, and an input and a forget gate of one value a head; the
    chunk its kernels run in and the state's dtype from the config it was built with."""
    m = dict(child.named_children())
    q, k, v, i, f = (_linear(m, n) for n in ("q", "k", "v", "igate_preact", "fgate_preact"))
    if q is None or k is None or v is None or i is None or f is None:
        return None
    heads, config = i.out_features, getattr(child, "config", None)
    chunk, dtype = getattr(config, "chunk_size", None), getattr(config, "inference_state_dtype", None)
    shaped = f.out_features == heads and q.out_features == k.out_features and not (q.out_features % heads or v.out_features % heads)
    if not shaped or not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1 or dtype not in STATE_DTYPE_BYTES:
        return None
    return MLSTMScan(heads, q.out_features // heads, v.out_features // heads, chunk), STATE_DTYPE_BYTES[dtype]


def _rg_lru(child: nn.Module) -> tuple[nn.Module, nn.Conv1d] | None:
    """The RG-LRU of a Griffin recurrent block (transformers' RecurrentGemmaRecurrentBlock): an
    `rg_lru` with a recurrent_param and two [heads, width, width] gates, beside a depthwise
    `conv_1d` over as many channels."""
    m = dict(child.named_children())
    rg, conv = m.get("rg_lru"), m.get("conv_1d")
    if rg is None or not isinstance(conv, nn.Conv1d) or not conv.in_channels == conv.groups == conv.out_channels:
        return None
    gates = [getattr(rg, n, None) for n in ("input_gate_weight", "recurrent_gate_weight")]
    param = getattr(rg, "recurrent_param", None)
    shaped = all(isinstance(g, nn.Parameter) and g.dim() == 3 for g in gates) and isinstance(param, nn.Parameter)
    return (rg, conv) if shaped and param is not None and param.numel() == conv.in_channels else None


def _short_conv(d: int, child: nn.Module) -> nn.Conv1d | None:
    """The depthwise conv of a short convolution (transformers' Lfm2ShortConv and its kin): a
    Conv1d over hidden_size channels, one each, between in_proj (d → 3·d) and out_proj (d → d)."""
    m = dict(child.named_children())
    conv, into, out = m.get("conv"), _linear(m, "in_proj"), _linear(m, "out_proj")
    if not isinstance(conv, nn.Conv1d) or into is None or out is None:
        return None
    shaped = conv.in_channels == conv.groups == conv.out_channels == d and (into.out_features, out.in_features) == (3 * d, d)
    return conv if shaped else None


def _selective_scan(child: nn.Module) -> tuple[SelectiveScan, int] | None:
    """Mamba-1's scan and conv kernel where the module is one: A_log of [channels, state] (Zamba's
    of [heads, channels a head, state]) and a depthwise Conv1d over those channels."""
    a_log, conv = getattr(child, "A_log", None), getattr(child, "conv1d", None)
    if not isinstance(a_log, nn.Parameter) or a_log.dim() not in (2, 3) or not isinstance(conv, nn.Conv1d):
        return None
    channels, state = math.prod(a_log.shape[:-1]), a_log.shape[-1]
    if conv.in_channels != channels or conv.groups != channels:
        return None
    return SelectiveScan(int(channels), int(state)), int(conv.kernel_size[0])


def _experts(child: nn.Module) -> tuple[str, nn.Module] | None:
    found = [(p, mod) for p, mod in child.named_modules() if p and is_experts(p.rpartition(".")[2], type(mod).__name__)]
    innermost = [(p, mod) for p, mod in found if not any(q.startswith(p + ".") for q, _m in found)]
    return innermost[0] if len(innermost) == 1 else None


def _paired_experts(d: int, block: nn.Module) -> tuple[int, int, bool] | None:
    """Experts held as two containers of their own, each one weight of [experts, out, in] (JetMoE's
    JetMoeParallelExperts, named as _PAIRED_EXPERTS): input_linear from d to the expert's width
    (twice it where gated), output_linear back to d. (experts, width, gated); None for any other block."""
    children = dict(block.named_children())
    weights = {n: dict(children[n].named_parameters()) if n in children else {} for n in _PAIRED_EXPERTS}
    if any(set(w) != {"weight"} or w["weight"].dim() != 3 for w in weights.values()):
        return None
    w_in, w_out = (weights[n]["weight"] for n in _PAIRED_EXPERTS)
    count, f = int(w_out.shape[0]), int(w_out.shape[2])
    if tuple(w_out.shape) != (count, d, f) or w_in.shape[0] != count or w_in.shape[2] != d or w_in.shape[1] not in (f, 2 * f):
        return None
    return count, f, w_in.shape[1] == 2 * f


def _widths(d: int, up: nn.Linear | None, gate: nn.Linear | None, fused: nn.Linear | None, down: nn.Linear | None) -> tuple[int, bool]:
    """(d_ff, gated) of one MLP's projections."""
    if down is None or down.out_features != d:
        raise _Unread(Message(N_("no down projection back to hidden_size")))
    f = down.in_features
    if fused is not None and fused.out_features == 2 * f:
        return f, True
    if up is None or up.out_features != f:
        raise _Unread(Message(N_("no up projection to the down projection's {width} inputs"), width=f"{f:,}"))
    return f, gate is not None


def _mlp(module: nn.Module) -> tuple[nn.Linear | None, nn.Linear | None, nn.Linear | None, nn.Linear | None]:
    linears = [c for c in module.children() if isinstance(c, nn.Linear)]
    if isinstance(module, nn.Sequential) and len(linears) == 2:  # CTRL's ffn: Linear, ReLU, Linear
        return linears[0], None, None, linears[1]
    m = dict(module.named_modules())
    up = _linear(m, "up_proj", "w3", "fc1", "c_fc", "fc_in", "dense_h_to_4h", "wi", "proj_up", "key")
    gate = _linear(m, "gate_proj", "w1", "proj_up_gate")
    fused = _linear(m, "gate_up_proj", "input_linear", "Wi")  # ModernBERT's Wi: the gate and the input, one Linear
    down = _linear(m, "down_proj", "w2", "fc2", "c_proj", "fc_out", "dense_4h_to_h", "wo", "Wo", "output_linear", "proj_down", "value")
    if fused is None and gate is None and up is not None and down is not None and up.out_features == 2 * down.in_features:
        return None, None, up, down  # an up projection to twice what the down one reads holds the gate too (Moshi's fc1)
    return up, gate, fused, down


def _dense(d: int, r: FamilyReader, child: nn.Module) -> FFNSpec:
    up, gate, fused, down = _mlp(child)
    f, gated = _widths(d, up, gate, fused, down)
    first = up or fused or down
    bias = first is not None and first.bias is not None
    variant = r.variant(*_ACTIVATION_KEYS, gated=gated, built=_built_activation(child))
    return FFNSpec(variant=variant, d_model=d, d_ff=f, bias=bias, fused_gate_up=fused is not None)


def _built_activation(module: nn.Module) -> str | None:
    """The activation a module runs, where it holds one of torch's own (CTRL's nn.ReLU, named by no
    config key), or where its class is one whose forward squares a ReLU (RWKV-4's channel mixing)."""
    if type(module).__name__ in _SQUARED_RELU_CLASSES:
        return "relu2"
    found = {name for m in module.modules() for cls, name in _TORCH_ACTIVATIONS.items() if type(m) is cls}
    return found.pop() if len(found) == 1 else None


def _moe(
    d: int, r: FamilyReader, hf_config: PretrainedConfig, child: nn.Module, read: LayerRead, beside: tuple[tuple[str, nn.Module], ...] = ()
) -> None:
    """Routed experts with their router, and shared experts inside `child` or `beside` it
    (Granite-4.0-H's shared_mlp sits beside block_sparse_moe)."""
    found = _experts(child)
    paired = _paired_experts(d, child) if found is None else None
    if found is None and paired is None:
        raise _Unread(Message(N_("no one routed experts container")))
    path, experts = found if found is not None else ("", child)
    latent = _latent_projections(d, child)
    width = latent[1] if latent is not None else d  # what an expert reads and writes
    each_expert: tuple[ParamTensor, ...] = ()  # tensors of one row an expert beside their projections
    held = {path}  # the modules that hold the experts
    if paired is not None:  # JetMoE's input_linear and output_linear, each its own container
        (count, f, gated), held = paired, set(_PAIRED_EXPERTS)
        bias = False
    elif isinstance(experts, (nn.ModuleList, nn.ModuleDict)):
        count, first = len(experts), next(iter(experts.children()))
        f, gated = _widths(width, *_mlp(first))
        bias = any(n.endswith("bias") for n, _p in first.named_parameters())
    elif (flat := _flat_experts(d, experts)) is not None:
        count, f, gated = flat
        bias = False
    else:
        tensors = dict(experts.named_parameters(recurse=False))
        down = tensors.get("down_proj")
        if down is None or down.dim() != 3:
            raise _Unread(Message(N_("{cls} holds no [experts, …] down_proj"), cls=type(experts).__name__))
        count = down.shape[0]
        f = down.shape[2] if down.shape[1] == width else down.shape[1]
        gated = "gate_up_proj" in tensors
        bias = any(n.endswith("bias") for n in tensors)
        # Beside the projections, a module of one row an expert (Ergo's norm after each expert's
        # output, [E, d]) or a norm every expert's output goes through (Muse Spark's post_expert_norm,
        # [width]) is counted by name beside the FFN, its work elementwise; anything else an expert
        # holds no FFNSpec sizes.
        rowed = [(n, m) for n, m in experts.named_children() if _count(m)]
        one_norm = {n for n, m in rowed if attribute((Owner(n, type(m).__name__),))[0] == "norm"
                    and all(tuple(t.shape) == (width,) for t in m.parameters())}  # fmt: skip
        others = sorted(n for n, m in rowed if n not in one_norm and any(t.dim() != 2 or t.shape[0] != count for t in m.parameters()))
        others += sorted(n for n in tensors if not n.startswith(_EXPERT_TENSORS))
        if others:
            why = N_("{cls} holds {names} beside its experts' projections: ffn sizes experts of projections alone")
            raise _Unread(Message(why, cls=type(experts).__name__, names=", ".join(others)))
        each_expert = tuple(t for n, m in rowed for t in _named_in(f"{path}.{n}", m))
    top = config_top_k(hf_config)
    if top.value is None:
        raise _Unread(top.problem or Message(N_("no config key names the experts per token")))
    shared = [(p, mod) for p, mod in child.named_children() if "shared" in p and not isinstance(mod, nn.Linear)] + list(beside)
    gate_linear = _linear(dict(child.named_modules()), "shared_expert_gate")
    shared_width = shared_count = 0
    shared_beside: tuple[ParamTensor, ...] = ()  # tensors beside the shared expert's projections (Ergo's norm)
    if shared:
        name, module = shared[0]
        stacked = _stacked_experts(d, module)
        if stacked is not None:  # Inkling's: S shared experts as [S, …] tensors, each of `width`
            shared_count, shared_width, tensor_names = stacked
            shared_beside = tuple(ParamTensor(f"{name}.{t.name}", t.shape) for t in _rest(module, set()) if t.name not in tensor_names)
        else:
            projections = _mlp(module)
            shared_count, shared_width = 1, _widths(d, *projections)[0]
            used_by_mlp = {n for n, m in module.named_modules() if m is not None and any(m is x for x in projections)}
            shared_beside = tuple(ParamTensor(f"{name}.{t.name}", t.shape) for t in _rest(module, used_by_mlp))
    spec = FFNSpec(
        variant="moe",
        d_model=d,
        d_ff=f,
        latent=latent[1] if latent is not None else None,
        experts=count,
        top_k=top.value,
        expert_variant=r.variant(*_ACTIVATION_KEYS, gated=gated),
        shared_experts=shared_count if shared_width else 0,
        shared_d_ff=shared_width or None,
        shared_expert_gate=gate_linear is not None and bool(shared_width),
        normalize_top_k=_renormalises((child, *(m for _n, m in beside)), hf_config.get_text_config()),
        bias=bias,
    )
    # LongCat-Flash's zero-computation experts: picks in the router's pool that pass the token through.
    zero = getattr(child, "zero_expert_num", 0)
    read.zero_experts = zero if isinstance(zero, int) and not isinstance(zero, bool) and zero > 0 else 0
    if not read.zero_experts and not shared_count:
        read.zero_experts = _skip_experts(child, count)
    routers = {p: _router_weight(mod, count + read.zero_experts) for p, mod in child.named_children() if p in ("gate", "router")}
    routers = {p: w for p, w in routers.items() if w is not None}
    # A router that scores a state of its own width (Zaya's MLP router over router_hidden_size):
    # every tensor of it beside the experts, the FFNSpec's d × E router not held.
    read.router_in_extra = any(child.get_submodule(p).get_parameter(str(w)).shape[1] != d for p, w in routers.items())
    used = {*held, *(p for p, _m in shared), *routers, *(["shared_expert_gate"] if spec.shared_expert_gate else [])}
    used |= set(latent[0]) if latent is not None else set()
    router_tensors: tuple[ParamTensor, ...] = ()
    for p, weight in routers.items():  # the router's weight is the FFNSpec's; its bias and any other tensor beside it
        router = child.get_submodule(p)
        if read.router_in_extra:
            router_tensors += _named_in(p, router)
            continue
        router_tensors += tuple(ParamTensor(f"{p}.{n}", tuple(t.shape)) for n, t in router.named_parameters() if n != weight)
        if read.zero_experts:  # the FFNSpec's router scores the routed experts; these rows, the zero ones
            router_tensors += (ParamTensor(noted(f"{p}.{weight}", ZERO_EXPERTS_ROWS), (read.zero_experts, d)),)
        rows = child.get_submodule(p).get_parameter(str(weight)).shape[0]
        if shared_count and rows == count + read.zero_experts + shared_count:  # Inkling's router scores its shared experts too
            router_tensors += (ParamTensor(noted(f"{p}.{weight}", SHARED_EXPERTS_ROWS), (shared_count, d)),)
    read.ffn, read.ffn_extra = spec, router_tensors + _rest(child, used) + each_expert + shared_beside
    read.score_bias = _score_bias(child, count + read.zero_experts)
    said = Message(N_("MoE: {count} experts × {width}, top-{top}"), count=f"{count:,}", width=f"{f:,}", top=f"{top.value:,}")
    zero_said = Message(N_(" in a pool of {pool}, {zero} of them zero-computation"), pool=f"{count + read.zero_experts:,}",
                        zero=f"{read.zero_experts:,}") if read.zero_experts else ""  # fmt: skip
    shared_said = Message(N_(", shared {width}"), width=f"{shared_width:,}") if shared_width else ""
    if shared_count > 1:
        shared_said = Message(N_(", {n} shared × {width}"), n=f"{shared_count:,}", width=f"{shared_width:,}")
    read.said.append(Message.join(said, zero_said, shared_said))


# The Linears a latent MoE's experts read and write through: to the latent, and back to d_model.
_LATENT_PROJECTIONS = (("pre_expert_proj", "post_expert_proj"), ("fc1_latent_proj", "fc2_latent_proj"))


def _latent_projections(d: int, block: nn.Module) -> tuple[tuple[str, str], int] | None:
    """A MoE block whose experts read and write a latent narrower than d_model, through a Linear
    down to it and one back up every token runs (Muse Spark's pre_expert_proj and post_expert_proj,
    Nemotron 3's fc1_latent_proj and fc2_latent_proj): (their names, the latent width); None where none."""
    children = dict(block.named_children())
    for down_name, up_name in _LATENT_PROJECTIONS:
        down, up = children.get(down_name), children.get(up_name)
        if not (isinstance(down, nn.Linear) and isinstance(up, nn.Linear)) or down.bias is not None or up.bias is not None:
            continue
        if down.in_features == up.out_features == d and down.out_features == up.in_features < d:
            return (down_name, up_name), down.out_features
    return None


def _skip_experts(block: nn.Module, experts: int) -> int:
    """Classes a MoE block's router scores past its experts, which no module of the block runs:
    picks that compute nothing, the token going on by its residual (Zaya's skip expert, the last
    of num_experts + 1; LongCat-Flash's zero experts add the token itself), fewer
    than its experts; 0 where its router has a weight of one row an expert."""
    for name, router in block.named_children():
        if name not in ("gate", "router") or _router_weight(router, experts) is not None:
            continue
        scores = [m.out_features for m in router.modules() if isinstance(m, nn.Linear) and experts < m.out_features < 2 * experts]
        if len(scores) == 1:
            return scores[0] - experts
    return 0


def _score_bias(block: nn.Module, pool: int) -> bool:
    """Whether a MoE block's router adds a bias to its scores that the checkpoint stores: a buffer
    named as transformers' routers name it, persistent (in the state dict, not a parameter), one
    entry an expert of the pool."""
    params = {n for n, _p in block.named_parameters()}
    stored = block.state_dict().items()
    return any(n.rpartition(".")[2] in _SCORE_BIASES and n not in params and t.numel() == pool for n, t in stored)


def _stacked_experts(d: int, module: nn.Module) -> tuple[int, int, tuple[str, ...]] | None:
    """Experts held as [S, …] tensors of their own (Inkling's shared experts: gate_proj and up_proj
    [S, width, d], down_proj [S, d, width]): (S, width, the tensors' names); None for any other module."""
    tensors = dict(module.named_parameters(recurse=False))
    down = tensors.get("down_proj")
    ins = [tensors.get(n) for n in ("gate_proj", "up_proj")] if "gate_up_proj" not in tensors else [tensors["gate_up_proj"]]
    if down is None or down.dim() != 3 or down.shape[1] != d or any(t is None or t.dim() != 3 for t in ins):
        return None
    count, width = int(down.shape[0]), int(down.shape[2])
    rows = width * (2 if len(ins) == 1 else 1)
    if any(t is None or tuple(t.shape) != (count, rows, d) for t in ins):
        return None
    return count, width, ("down_proj", *(("gate_up_proj",) if len(ins) == 1 else ("gate_proj", "up_proj")))


def _flat_experts(d: int, experts: nn.Module) -> tuple[int, int, bool] | None:
    """DBRX's experts: w1, v1 and w2 of [experts · width, d] each, in one module inside the
    container (DbrxExperts.mlp), the expert count the container's num_experts: (E, width, gated)."""
    count = getattr(experts, "num_experts", None)
    tensors = {n.rpartition(".")[2]: t for n, t in experts.named_parameters()}
    if not isinstance(count, int) or isinstance(count, bool) or count < 1 or set(tensors) not in ({"w1", "w2"}, {"w1", "v1", "w2"}):
        return None
    rows = {tuple(t.shape) for t in tensors.values()}
    if len(rows) != 1 or any(len(r) != 2 or r[1] != d or r[0] % count for r in rows):
        return None
    return count, next(iter(rows))[0] // count, "v1" in tensors


def _router_weight(router: nn.Module, experts: int) -> str | None:
    """The name of a router's [experts, d] weight (the zero-computation experts' rows among
    `experts`): its own `weight`, or its one Linear to the experts (Gemma 4's router.proj, beside
    its scales; LongCat-Flash's router.classifier)."""
    if hasattr(router, "weight"):
        return "weight"
    found = [f"{n}.weight" for n, m in router.named_modules() if isinstance(m, nn.Linear) and m.out_features == experts]
    return found[0] if len(found) == 1 else None


def _beside_the_mlp(children: list[tuple[str, nn.Module]]) -> list[tuple[str, nn.Module]]:
    """Gemma 4's MoE layers hold a dense MLP, a router and an experts container side by side: the
    three as one block, the MLP a shared expert every token runs, the router the experts'."""
    containers = [(n, c) for n, c in children if is_experts(n, type(c).__name__)]
    mlps = [(n, c) for n, c in children if n not in ("router", "gate") and (n, c) not in containers]
    routers = [(n, c) for n, c in children if n in ("router", "gate")]
    if len(containers) != 1 or len(mlps) != 1 or len(routers) != 1:
        return children
    block = nn.Module()
    block.add_module("experts", containers[0][1])
    block.add_module("shared_mlp", mlps[0][1])
    block.add_module(routers[0][0], routers[0][1])
    return [(f"{mlps[0][0]}, {routers[0][0]}, {containers[0][0]}", block)]


def _position_rows(table: nn.Embedding) -> int:
    """The positions a learned position table holds, past the rows it keeps before them (OPT's
    `offset`, 2: its max_position_embeddings + 2 rows)."""
    offset = getattr(table, "offset", 0)
    return table.num_embeddings - (offset if isinstance(offset, int) and not isinstance(offset, bool) and offset > 0 else 0)


def _loose_linears(children: list[tuple[str, nn.Module]]) -> list[tuple[str, nn.Module]]:
    """OPT's and XGLM's FFN: fc1 and fc2 straight in the decoder layer, no MLP module around
    them: read as one MLP."""
    if len(children) < 2 or not all(isinstance(c, nn.Linear) for _n, c in children):
        return children
    block = nn.Module()
    for name, child in children:
        block.add_module(name, child)
    return [(", ".join(n for n, _c in children), block)]


def _by_modality(d: int, children: list[tuple[str, nn.Module]], read: LayerRead) -> list[tuple[str, nn.Module]]:
    """ERNIE 4.5 VL's MoE block: text_moe and vision_moe, each a router and experts of its own,
    and shared experts every token runs. The text MoE with the shared experts is the layer's FFN;
    the vision MoE's tensors are held beside it, run on image tokens alone (never by a text token)."""
    if len(children) != 1:
        return children
    name, block = children[0]
    parts = dict(block.named_children())
    experts = {n: found for n, c in parts.items() if n.endswith("_moe") and (found := _experts(c)) is not None}
    others = [n for n in experts if n != "text_moe"]
    if "text_moe" not in experts or len(others) != 1:
        return children
    read.image_experts = tuple(_one_matrix(t) for t in _named_in(f"{name}.{others[0]}", parts[others[0]]))
    stacked = _stacked_experts(d, experts[others[0]][1])
    if stacked is not None:  # the words of the layout's row, after the text MoE's
        read.image_experts_shape = stacked[:2]
    return [(f"{name}.text_moe", parts["text_moe"])] + [(f"{name}.{n}", c) for n, c in parts.items() if n not in ("text_moe", others[0])]


def _one_matrix(t: ParamTensor) -> ParamTensor:
    """Experts held as one [E, out, in] tensor ("experts (gate_up_proj)") as the [E · out, in]
    matrix their E Linears stack to, stored and divided as a routed expert's projections are."""
    if len(t.shape) != 3 or not t.name.endswith(")"):
        return t
    module, _sep, leaf = t.name.removesuffix(")").partition(" (")
    return ParamTensor(f"{module}.{leaf}", (t.shape[0] * t.shape[1], t.shape[2]))


def _ffn(d: int, r: FamilyReader, hf_config: PretrainedConfig, children: list[tuple[str, nn.Module]], read: LayerRead) -> None:
    children = _by_modality(d, _loose_linears(_beside_the_mlp(children)), read)
    moe = [(n, c) for n, c in children if _experts(c) is not None or _paired_experts(d, c) is not None]
    beside: tuple[ParamTensor, ...] = ()
    if len(moe) == 1 and len(children) <= 2:
        _moe(d, r, hf_config, moe[0][1], read, tuple(c for c in children if c[0] != moe[0][0]))
    elif not moe and len(children) == 1:
        name, child = children[0]
        read.ffn = _dense(d, r, child)
        read.said.append(Message(N_("dense FFN: {width} wide"), width=f"{read.ffn.d_ff:,}"))
        # Tensors beside its projections and its variant's own (Apertus' xIELU parameters), such as
        # Dory's per-unit scales: kept by name with the layer's other tensors.
        projections = {n for n, mod in child.named_modules() if mod is not None and mod in _mlp(child)}
        projections |= {t.name.rpartition(".")[0] for t in param_tensors(read.ffn)}
        beside = tuple(ParamTensor(f"{name}.{t.name}" if "(" not in t.name else f"{name} {t.name}", t.shape)
                       for t in _rest(child, projections))  # fmt: skip
        read.other += beside
    else:
        raise _Unread(Message(N_("the FFN is split over {names}"), names=", ".join(n for n, _c in children)))
    built, counted = sum(_count(c) for _n, c in children), _ffn_count(read) + sum(t.count for t in beside)
    if counted != built:
        raise _Unread(
            Message(N_("its FFN counts {counted} parameters where the module holds {built}"), counted=f"{counted:,}", built=f"{built:,}")
        )
    if read.image_experts_shape is not None:
        n, width = read.image_experts_shape
        read.said.append(Message(N_("{n} vision experts × {width} beside them, a router of their own"), n=f"{n:,}", width=f"{width:,}"))


def _holds_a_mixer(child: nn.Module) -> bool:
    """A module of several parts, one of them a token mixer of its own modules (not a projection):
    a decoder layer inside a layer."""
    inner = [(n, c) for n, c in child.named_children() if _count(c)]
    mixers = [c for n, c in inner if not isinstance(c, nn.Linear) and attribute((Owner(n, type(c).__name__),))[0] == "attention"]
    return len(inner) > 1 and bool(mixers)


def _unwrapped(layer: nn.Module) -> list[tuple[str, nn.Module]]:
    """The layer's children, a module that only wraps an attention with its norms opened (DBRX's
    norm_attn_norm: norm_1, attn, norm_2), its children named from the layer; so too the decoder
    layers of a layer made of two (Zamba's hybrid layer: its shared transformer and its Mamba layer)."""
    out: list[tuple[str, nn.Module]] = []
    layers = {n for n, c in layer.named_children() if _holds_a_mixer(c)}
    for name, child in layer.named_children():
        inner = list(child.named_children())
        kinds = {attribute((Owner(n, type(c).__name__),))[0] for n, c in inner if _count(c)}
        wraps = {"attention", "norm"} <= kinds <= {"attention", "norm"} or (len(layers) > 1 and name in layers)
        if not list(child.parameters(recurse=False)) and wraps:
            out += [(f"{name}.{n}", c) for n, c in inner]
        else:
            out.append((name, child))
    return out


def read_layer(
    d: int,
    r: FamilyReader,
    hf_config: PretrainedConfig,
    layer: nn.Module,
    layers: tuple[int, ...],
    shared: tuple[str, ...] = (),
    source_of: EncoderDecoder | None = None,
) -> LayerRead:
    """Sort a built layer's children into token mixer, FFN, norms and the rest, and read each. A
    norm inside a block `shared` with other layers is the block's: among the rest, not a layer norm.
    An encoder-decoder's (`source_of`) decoder layer attends to the encoder's output beside its own tokens."""
    read = LayerRead(layers, _count(layer), shared_paths=shared)
    text = hf_config.get_text_config()
    mixers: list[tuple[str, nn.Module]] = []
    ffns: list[tuple[str, nn.Module]] = []
    rest: list[tuple[str, nn.Module]] = []
    convs: list[tuple[str, nn.Module]] = []  # lone short convolutions over the residual stream (Inkling's)
    gates: list[tuple[str, tuple[ParamTensor, ...]]] = []  # the gates of gated norms (A.X K2's), by the norm's name
    for name, child in _unwrapped(layer):
        if not _count(child):
            continue
        if _lone_conv(child):
            convs.append((name, child))
            continue
        kind, _depth = attribute((Owner(name, type(child).__name__), Owner("", "")))
        in_shared = any(name.startswith(f"{p}.") for p in shared)
        if not in_shared and (kind == "norm" or attribute((Owner(name, type(child).__name__),))[0] == "norm"):
            gated = _gated_norm(name, child)
            norm = gated[0] if gated is not None else child
            weights = [p for p in norm.parameters()]
            if all(p.dim() == 1 and p.shape[0] == d for p in weights) and len(weights) in (1, 2):
                read.norms += 1
                read.norm_names.append(name)
                # one weight: an RMSNorm, or a LayerNorm without its bias (MPT's)
                read.norm = "layernorm" if len(weights) == 2 else "layernorm_no_bias" if _is_layer_norm(norm) else "rmsnorm"
                read.norm_params = len(weights) * d
                if gated is not None:
                    gates.append((name, gated[1]))
                continue
        (mixers if kind == "attention" else ffns if kind == "ffn" else rest).append(
            (name, _inner_attention(child) if kind == "attention" else child)
        )
    if any(is_experts(n, type(c).__name__) for n, c in ffns):  # a router beside the experts (Gemma 4): the FFN's
        ffns += [(n, c) for n, c in rest if n in ("router", "gate")]
        rest = [(n, c) for n, c in rest if n not in ("router", "gate")]
    where = _layers_named(layers)
    # A decoder layer's attention over the encoder's output (BART's encoder_attn), by its name
    cross = {n for n, _c in mixers if source_of is not None and n in CROSS_ATTENTION}
    try:
        if source_of is None and (unknown := [n for n, _c in mixers if n in CROSS_ATTENTION]):  # TrOCR's decoder alone
            raise _Unread(Message(N_("its layers attend to an encoder's output ({names}) that its config does not describe, "
                                     "and ffn cannot size what they keep"), names=", ".join(unknown)))  # fmt: skip
        attends = [(n, c) for n, c in mixers if _attends(c) and n not in cross]
        if len(mixers) > 2 or (len(mixers) == 2 and len(attends) != 1):  # one attention beside one mixer at most (Falcon-H1)
            raise _Unread(
                Message(N_("{n} token mixers in one layer ({names})"), n=f"{len(mixers):,}", names=", ".join(n for n, _c in mixers))
            )
        for name, child in sorted(mixers, key=lambda m: not _attends(m[1]) or m[0] in cross):  # the attention first
            modules = dict(child.named_modules())
            if name in cross and source_of is not None:
                _cross_attention(child, read, _encoder_tokens(source_of))
            elif "kv_a_proj_with_mqa" in modules:
                _latent_attention(d, text, child, read)
            elif _is_compressed(child):
                _compressed_attention(d, child, read)
            elif (cca := _cca_projection(child)) is not None:
                _cca_attention(d, text, child, cca, read)
            elif (heads := _query_experts(d, child)) is not None:
                _mixture_of_heads(d, child, heads, read)
            elif _attends(child):
                _softmax_attention(d, text, child, read)
            elif _is_cross(child):
                _cross_attention(child, read, _Source("image", _image_tiles(hf_config)))
            else:
                _mixer(d, child, read)
            if read.mixer is not None and len(mixers) == 2 and not read.mixer.state_sized:
                raise _Unread(Message(N_("{cls} beside attention is a mixer ffn does not size"), cls=type(child).__name__))
        if convs:  # short convolutions over the residual stream beside the attention (Inkling's): a mixer beside it
            if read.mixer is not None or read.attention is None:
                raise _Unread(Message(N_("short convolutions beside a token mixer other than attention")))
            inner = [(f"{n}.{path}", conv) for n, c in convs for path, conv in _depthwise_convs(dict(c.named_modules()))]
            kept = _kept_in_float32(hf_config)
            read.mixer = _short_convs(inner, layers, fp32=all(_kept_as(n, kept) for n, _c in inner))
            read.said.append(Message(N_("{kind}: {state}"), kind=read.mixer.kind, state=read.mixer.state_words()))
            mixers += convs
        built, counted = sum(_count(c) for _n, c in mixers), _mixer_params(read)
        if counted != built:
            cls = " + ".join(type(c).__name__ for _n, c in mixers)
            raise _Unread(Message(N_("{cls} counts {counted} parameters where the module holds {built}"),
                                  cls=cls, counted=f"{counted:,}", built=f"{built:,}"))  # fmt: skip
        if ffns:
            _ffn(d, r, hf_config, ffns, read)
        for name, tensors in gates:  # a gate before a routed FFN is the MoE layer's (its moe_extra); any other, the layer's
            before_ffn = any(w in name for w in ("post_attention", "feedforward", "ffn", "mlp"))
            if before_ffn and read.ffn is not None and read.ffn.mixture is not None:
                read.ffn_extra += tensors
            else:
                read.other += tensors
        wkv = read.mixer is not None and isinstance(read.mixer.scan, ElementwiseScan) and read.mixer.scan.name == "WKV"
        if read.mixer is not None and wkv and any(hasattr(c, "time_mix_key") for _n, c in ffns):
            # RWKV's channel mixing shifts its input a token too: its latest input, kept beside the time mixing's
            said = read.said.index(Message(N_("{kind}: {state}"), kind=read.mixer.kind, state=read.mixer.state_words()))
            read.mixer = replace(read.mixer, conv_state_elements=read.mixer.conv_state_elements + d)
            read.said[said] = Message(N_("{kind}: {state}"), kind=read.mixer.kind, state=read.mixer.state_words())
    except _Unread as unread:
        raise _beyond(r.source, _("ffn cannot lay out {where} of {model_type}: {why}").format(
            where=where.shown(), model_type=hf_config.model_type, why=shown(unread.why))) from None  # fmt: skip
    hyper = [c for _n, c in rest if _residual_copies(c)]
    if hyper:  # DeepSeek-V4's mHC, Qwen4-Exp's gated residuals: the residual stream is that many copies of the hidden state wide
        copies = sorted({_residual_copies(c) for c in hyper})
        if len(copies) > 1:
            raise _Unread(Message(N_("hyper-connections over {n} copies of the residual stream"), n=", ".join(map(str, copies))))
        read.residual_copies = copies[0]
        read.other_flops = sum(_hyper_connection_flops(d, c) for c in hyper)
    attending = [(n, c) for n, c in rest if "Attention" in type(c).__name__]
    for cls in dict.fromkeys(type(c).__name__ for _n, c in attending):  # Inkling 2's attention over earlier blocks' outputs
        paths = Message.listed([n for n, c in attending if type(c).__name__ == cls])
        read.flops_left_out.append(Message(N_("the FLOPs of {cls}'s attention ({paths}), beyond its parameters"), cls=cls, paths=paths))
    for name, child in rest:
        tables = _tables_in(child, read)
        _convolutions_in(child, read)
        read.other += tuple(
            ParamTensor(f"{name}.{t.name}" if "(" not in t.name else f"{name} {t.name}", t.shape) for t in _rest(child, set(tables))
        )
        read.tables += tuple(ParamTensor(f"{name}.{p}", tuple(child.get_submodule(p).get_parameter("weight").shape)) for p in tables)
    own = tuple(ParamTensor(name, tuple(p.shape)) for name, p in layer.named_parameters(recurse=False))  # Doge's residual scales
    if read.mixer is not None and read.attention is None and any(_is_cross(c) for _n, c in mixers):
        # A cross-attention layer's own gates (Llama 3.2 Vision's tanh gates on the cross-attention's
        # output and on its MLP's): scalars of that layer kind alone, named with its mixer's tensors.
        read.mixer = replace(read.mixer, tensors=(*read.mixer.tensors, *own))
    else:
        read.other += own
    if not mixers and rest:  # every decoder layer mixes tokens: here in a module ffn does not know
        names = ", ".join(type(c).__name__ for _n, c in rest)
        read.left_out.append(Message(_NO_MIXER_RECOGNISED, names=names))
    counted = _read_params(read)
    if counted != read.params:  # every tensor of the layer is in one piece, once
        mismatch = _("its pieces count {counted:,} parameters where the layer holds {built:,}").format(counted=counted, built=read.params)
        raise _beyond(r.source, _("ffn cannot lay out {where} of {model_type}: {why}").format(
            where=where.shown(), model_type=hf_config.model_type, why=mismatch))  # fmt: skip
    return read


def _tables_in(child: nn.Module, read: LayerRead) -> list[str]:
    """The tables a module beside a layer's parts looks rows up in (Qwen4-Exp's PLE n-gram table,
    an nn.Embedding of 320,001,536 rows of 160): a token reads rows of them, never multiplies by them;
    the rows it reads of each, one a hashed head where its module says how many (ngram_heads)."""
    found = [p for p, m in child.named_modules() if p and isinstance(m, nn.Embedding)]
    for p in found:
        holder = child.get_submodule(p.rpartition(".")[0]) if "." in p else child
        heads = getattr(holder, "ngram_heads", 1)
        read.table_lookups = heads if isinstance(heads, int) and not isinstance(heads, bool) and heads > 0 else 1
    return found


def _convolutions_in(child: nn.Module, read: LayerRead) -> None:
    """A depthwise causal convolution inside a module beside a layer's parts (Qwen4-Exp's PLE
    conv1d, dilated by its n-gram size): what it keeps per sequence between tokens, its (taps − 1)
    · dilation latest inputs of each channel, and its work, 2 · channels · taps FLOPs a token."""
    for m in child.modules():
        if isinstance(m, nn.Conv1d) and m.groups == m.in_channels == m.out_channels:
            taps, dilation = int(m.kernel_size[0]), int(m.dilation[0])
            read.other_state += (taps - 1) * dilation * m.in_channels
            read.other_flops += 2 * m.in_channels * taps


def _renormalises(modules: tuple[nn.Module, ...], text: PretrainedConfig) -> bool:
    """Whether a MoE's router rescales a token's top-k weights to sum to 1: as its module says
    (norm_topk_prob), else its config, else yes: a router whose class and config name no choice
    renormalises (Mixtral's, Qwen3.5's and Gemma 4's: top_k_weights /= their sum)."""
    said = next(
        (m.norm_topk_prob for top in modules for m in top.modules() if isinstance(getattr(m, "norm_topk_prob", None), bool)),
        None,
    )
    if said is None:
        said = getattr(text, "norm_topk_prob", None)
    return said if isinstance(said, bool) else True


def _gated_norm(name: str, module: nn.Module) -> tuple[nn.Module, tuple[ParamTensor, ...]] | None:
    """A norm whose output a small MLP of Linears gates (A.X K2's AXK2GatedRMSNorm: y·σ(fc2(silu(fc1(y))))):
    its one norm, and its gate's tensors named from `name`; None for any other module."""
    if any(True for _ in module.parameters(recurse=False)):
        return None
    children = [(n, c) for n, c in module.named_children() if _count(c)]
    norms = [c for n, c in children if attribute((Owner(n, type(c).__name__),))[0] == "norm"]
    gate = [(n, c) for n, c in children if all(c is not x for x in norms)]
    if len(norms) != 1 or not gate:
        return None
    leaves = [(f"{n}.{sub}" if sub else n, m) for n, c in gate for sub, m in c.named_modules() if not list(m.children()) and _count(m)]
    if any(not isinstance(m, nn.Linear) for _p, m in leaves):
        return None
    return norms[0], tuple(t for path, m in leaves for t in _named_in(f"{name}.{path}", m))


def _beside_said(beside: tuple[ParamTensor, ...]) -> str:
    """The tensors beside the layers by their modules, each once: "model (input_hidden_states_scale,
    input_hidden_states_bias)" (Zaya's), "model.language_model.final_input.query" (Inkling 2's); a
    numbered list of modules once, by its range ("audio_tower.layers.0–31")."""
    dotted = [t.name.replace(" (", ".").removesuffix(")") if t.name.endswith(")") else t.name for t in beside]
    return Message.listed(modules_said(_layers_folded(dotted)))


_NUMBERED = re.compile(r"^(.*?\.)(\d+)\.(.*)$")


def _layers_folded(names: list[str]) -> list[str]:
    """Names in a numbered list of modules as the list, once, its indices in a range:
    "audio_tower.layers.3.fc1.weight" as "audio_tower.layers.0–31", where the list runs 0–31."""
    indices: dict[str, set[int]] = {}
    for name in names:
        if found := _NUMBERED.match(name):
            indices.setdefault(found[1], set()).add(int(found[2]))
    out: list[str] = []
    for name in names:
        found = _NUMBERED.match(name)
        listed = found is not None and len(indices[found[1]]) > 1
        folded = f"{found[1]}{layer_ranges(tuple(sorted(indices[found[1]])))}" if found is not None and listed else name
        if folded not in out:
            out.append(folded)
    return out


def _towers(
    beside: tuple[ParamTensor, ...], config: Mapping[str, Any], encoder: tuple[str, EncoderDecoder] | None = None
) -> tuple[VisionTower | None, tuple[ParamTensor, ...]]:
    """The towers `config` describes among the tensors beside the layers (a vision tower and its
    projector: Gemma 4's, Kimi K2.5's), each module one part of the model's tower, run on its
    images, not its tokens; an encoder-decoder's encoder, run on its source; and the rest."""
    towers: dict[str, int] = {}
    rest = []
    if encoder is not None:
        path, seq2seq = encoder
        modules = [t.name.split(" ")[0] for t in beside]  # a tensor's module path, its leaf named after it where no Linear's
        held = [(t, m) for t, m in zip(beside, modules, strict=True) if m.startswith(f"{path}.")]
        kinds = tuple((t, attribute(tuple(Owner(n, "") for n in m.split(".")))[0]) for t, m in held)
        part = VisionPart(path, N_("as transformers builds it"), sum(t.count for t, _m in held), runs_on=seq2seq.runs_on, tensors=kinds)
        vision, others = _towers(tuple(t for t, m in zip(beside, modules, strict=True) if not m.startswith(f"{path}.")), config)
        parts = (part, *(vision.parts if vision is not None else ()))
        return VisionTower(Message.listed([p.name for p in parts]), parts), others
    for t in beside:
        top = tower_path(t.name.split(" ")[0], config)
        if top is not None:
            towers[top] = towers.get(top, 0) + t.count
        else:
            rest.append(t)
    if not towers:
        return None, tuple(rest)
    # An audio tower's modules, and a projector where the config describes no vision tower (MOSS's), run on audio.
    audio_only = not isinstance(config.get("vision_config"), Mapping)
    parts = tuple(
        VisionPart(top, N_("as transformers builds it"), params, runs_on="audio" if _audio(top) or audio_only else "images")
        for top, params in towers.items()
    )
    return VisionTower(Message.listed(list(towers)), parts), tuple(rest)


def _audio(path: str) -> bool:
    """A tower module whose name says it is the audio tower's (audio_tower)."""
    return any(w in path.lower() for w in TOWER_WORDS["audio_config"])


def _residual_copies(module: nn.Module) -> int:
    """The copies of the residual stream a hyper-connection mixes (DeepSeek-V4's hc_mult, Qwen4-Exp's
    hc_count); 0 for any other module."""
    for key in ("hc_mult", "hc_count"):
        n = getattr(module, key, None)
        if isinstance(n, int) and not isinstance(n, bool) and n > 1:
            return n
    return 0


def _is_layer_norm(module: nn.Module) -> bool:
    """A LayerNorm (it centres as well as scales), by its type or its class's name."""
    name = type(module).__name__
    return isinstance(module, nn.LayerNorm) or ("LayerNorm" in name and "RMS" not in name)


def _hyper_connection_flops(d: int, module: nn.Module) -> int:
    """One hyper-connection's contractions per token (transformers' DeepseekV4HyperConnection and the
    decoder layer around it), N copies of the residual stream: the projection of the N·d flattened
    copies to the (2 + N)·N mixing weights (2 a weight of `fn`), the copies collapsed into the
    block's input (2·N·d) and mixed into the output's copies by the N × N comb (2·N²·d)."""
    n, fn = getattr(module, "hc_mult", None), getattr(module, "fn", None)
    if not isinstance(n, int) or not isinstance(fn, nn.Parameter):
        return 0
    return 2 * fn.numel() + 2 * n * d + 2 * n * n * d


def _attends(child: nn.Module) -> bool:
    """Softmax attention (latent or not), by its projections; not a mixer with a conv."""
    modules = dict(child.named_modules())
    # A fused projection is read as softmax attention's only in a class named so (MPT's MptAttention).
    cls = type(child).__name__
    fused = isinstance(_linear(modules, *_QKV_NAMES), nn.Linear) and cls.endswith("Attention")
    queries = any(n in modules for n in _Q_NAMES) or fused
    softmax = queries and "conv1d" not in modules and not _LINEAR_ATTENTION.search(cls) and not _is_cross(child)
    return "kv_a_proj_with_mqa" in modules or _is_compressed(child) or softmax or _cca_projection(child) is not None


def _is_cross(child: nn.Module) -> bool:
    """An attention over another input's tokens (Llama 3.2 Vision's MllamaTextCrossAttention over an
    image's), not over the text's own."""
    return "CrossAttention" in type(child).__name__


def _inner_attention(child: nn.Module) -> nn.Module:
    """An attention module that only wraps another (GPT-Neo's GPTNeoAttention around its
    GPTNeoSelfAttention): the one that holds the projections."""
    if _attends(child) or list(child.parameters(recurse=False)):
        return child
    inner = [c for _n, c in child.named_children() if _count(c)]
    return inner[0] if len(inner) == 1 and _attends(inner[0]) else child


def _mixer_params(read: LayerRead) -> int:
    """The token mixers as read: a linear mixer with its norm, an attention with its other tensors, or both side by side."""
    mixer = read.mixer.params + read.mixer.norm_params if read.mixer is not None else 0
    if read.attention is None:
        return mixer
    kv = sum(t.count for t in kv_tensors(read.attention)) if read.kv_shared else 0
    unpicked = (read.attention_routing[0] - read.attention_routing[1]) * sum(t.count for t in read.attention_experts)
    return mixer + read.attention.params - kv + sum(t.count for t in read.attention_extra) + unpicked


def _ffn_count(read: LayerRead) -> int:
    """The FFN as read: its spec's parameters and the tensors beside them (a router's bias), less
    the spec's own router where the layer's is a module of its own (Zaya's), in the tensors beside."""
    if read.ffn is None:
        return 0
    dropped = read.ffn.experts * read.ffn.d_model if read.router_in_extra else 0
    return _ffn_params(read.ffn) + sum(t.count for t in read.ffn_extra) - dropped


def _read_params(read: LayerRead) -> int:
    beside = sum(t.count for t in (*read.other, *read.tables, *read.image_experts, *read.adapters))
    return _mixer_params(read) + _ffn_count(read) + read.norms * read.norm_params + beside


# --- the model ------------------------------------------------------------------------------


def _one(reads: list[LayerRead], what: str, value: Any, source: str) -> Any:
    """The one value every kind that has `what` agrees on; two differing values are refused."""
    values = [(r, getattr(r, value)) for r in reads if getattr(r, value) is not None and getattr(r, value) != ()]
    if not values:
        return None
    first = values[0][1]
    for r, v in values[1:]:
        if v != first:
            raise _beyond(
                source,
                _("layers {a} and {b} have {what} of two shapes; ffn sizes one per model").format(
                    a=layer_ranges(values[0][0].layers), b=layer_ranges(r.layers), what=_(what)
                ),
            )
    return first


def _attention_shapes(reads: list[LayerRead]) -> tuple[AnyAttention | None, tuple[ParamTensor, ...], tuple[AttentionKind, ...]]:
    """The model's attention (its first attention layer's shape, with the tensors beside it), and
    each other shape with its layers (Gemma 4's full layers beside its sliding ones)."""
    shapes: dict[tuple[AnyAttention, tuple[ParamTensor, ...]], list[int]] = {}
    for r in reads:
        if r.attention is not None:
            shapes.setdefault((r.attention, r.attention_extra), []).extend(r.layers)
    if not shapes:
        return None, (), ()
    (attention, extra), *others = shapes
    return attention, extra, tuple(AttentionKind(a, e, tuple(sorted(shapes[(a, e)]))) for a, e in others)


def _state_dtype_bytes(config: Mapping[str, Any], source: str) -> int | None:
    """Bytes of a recurrent-state element where the file as given names the state's dtype
    (mamba_ssm_cache_dtype, or any key ending ssm_cache_dtype, as the Nemotron-H reader reads it;
    Qwen3.5's mamba_ssm_dtype, the dtype its Gated DeltaNet state is kept in); a class's default is
    not read: a file that names none is cached at the cache dtype."""
    nested = config.get("text_config")
    parts = (config, nested if isinstance(nested, Mapping) else {})
    said = {k: v for part in parts for k, v in part.items() if (k.endswith("ssm_cache_dtype") or k == "mamba_ssm_dtype") and v is not None}
    sizes = set()
    for key, value in said.items():
        if value not in STATE_DTYPE_BYTES:
            raise FFNError(key, value, _("must be float32, bfloat16, float16 or auto"))
        sizes.add(STATE_DTYPE_BYTES[value])
    if len(sizes) > 1:
        raise _beyond(source, _("{keys} name two dtypes for one recurrent state").format(keys=", ".join(sorted(said))))
    return sizes.pop() if sizes else None


def read_layout(config: Mapping[str, Any], *, name: str, source: str) -> BuiltLayout:
    """The ModelSpec of `config`, read from one built decoder layer of each kind."""
    hf_config, notes = hf_config_of(config, source)
    check_build_size(hf_config.to_dict())  # a tower, or the whole model where it is built, is bounded as a count's build is
    seq2seq = encoder_decoder_of(hf_config)
    if isinstance(seq2seq, Message):
        raise _beyond(source, seq2seq.shown())
    text = hf_config.get_text_config()
    # An encoder-decoder's depth is its decoder_layers (read above), not the encoder's num_hidden_layers
    for key in ("hidden_size", "vocab_size") + (("num_hidden_layers",) if seq2seq is None else ()):
        value = getattr(text, key, None)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise FFNError("config", source, _("its text config names no {key}: its layout cannot be read layer by layer").format(key=key))
    given = text.to_dict()  # as written: a per-layer config holds no one global head count to read
    for key in ("num_attention_heads", "num_key_value_heads"):  # a head count of 0 builds, and attends to nothing
        value = given.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise FFNError(key, value, _("must be 1 or more"))
    # An encoder-decoder's layers are its decoder's (BART's num_hidden_layers names its encoder's)
    d, n_layers = int(text.hidden_size), seq2seq.decoder_layers if seq2seq is not None else int(text.num_hidden_layers)
    runs = _passes(text.to_dict(), n_layers)
    classes = decoder_layer_classes(hf_config)
    r = FamilyReader(text.to_dict(), str(text.model_type), source)
    reads = []
    blocks: SharedBlocks | None = None
    with quiet():
        # The whole model is built once where the layers come from several classes (which layer is
        # which is the model's own code), tensors beside the layers are sized by the layer count, or
        # the model's classes name no layer class (its layers are then the list the model built).
        alone = len(classes) == 1 and _builds_alone(classes[0])
        # An encoder-decoder is built whole too, by its Seq2Seq class: the decoder's layers beside the encoder's.
        model_class = seq2seq.model_class if seq2seq is not None else None

        def decoder_of(model: nn.Module) -> nn.Module:
            """Where the layers are: an encoder-decoder's decoder (Marian's list), not its encoder's beside it."""
            half = half_of(model, "get_decoder") if seq2seq is not None else None
            return half[1] if half is not None else model

        whole = _whole_model(hf_config, source, model_class) if seq2seq or not alone or sized_by_layer_count(r.config) else None
        if not classes:
            assert whole is not None
            classes = _listed_layer_classes(decoder_of(whole), n_layers, source)
        found = half_of(whole, "get_encoder") if whole is not None and seq2seq is not None else None
        encoder = found[0] if found is not None else None
        vocab = seq2seq.vocab if seq2seq is not None else None
        shell = _shell(hf_config, classes, source) if whole is None else _shell_of(whole, classes, source, whole=True, encoder=encoder,
                                                                                   vocab=vocab)  # fmt: skip
        if shell.layer_config is not None:  # the config the model's class leaves (TrOCR's is_decoder, the attention kernel)
            text = shell.layer_config
        if whole is None:
            layer_cls = classes[0]

            def built(i: int) -> nn.Module:
                return _build(layer_cls, text, i, source)
        else:
            every, blocks = _every_layer(decoder_of(whole), classes, n_layers, source)

            def built(i: int) -> nn.Module:
                return every[i]

        def read(i: int, layers: tuple[int, ...]) -> LayerRead:
            if blocks is None or i not in blocks.applications:
                return read_layer(d, r, hf_config, built(i), layers, source_of=seq2seq)
            layer, adapters = applied_layer(built(i), i, blocks)  # a shared block's application: its own adapters apart
            found = read_layer(d, r, hf_config, layer, layers, blocks.paths)
            found.adapters, found.params = adapters, found.params + sum(t.count for t in adapters)
            if blocks.weights_from:
                found.said.append(Message(N_("{blocks} shared, each block held by the first layer to run it"),
                                          blocks=Message.listed(list(blocks.paths))))  # fmt: skip
            return found

        sublayers = _sublayers(built(0), source) if whole is None else None
        if sublayers is not None:  # the config's layers are the sublayers; its decoder layers hold N each
            reads = _read_sublayers(d, r, hf_config, sublayers, _sublayers(built(n_layers // len(sublayers) - 1), source), n_layers)
        else:
            for layers in layer_kinds(r.config, n_layers):
                first = read(layers[0], layers)
                last = read(layers[-1], layers) if len(layers) > 1 else first
                if _key(first) == _key(last):
                    reads.append(first)
                else:  # the config's entries did not tell these layers apart: each one built and read
                    reads += [read(i, (i,)) for i in layers]
    if seq2seq is not None and (plain := [r for r in reads if r.mixer is None or r.attention is None]):
        # T5's blocks hold their attentions inside a list of sublayers (layer.0.SelfAttention, layer.1.EncDecAttention)
        why = _("ffn reads an encoder-decoder's decoder layer as a self_attn beside an {names} (BART's, Whisper's); its "
                "decoder layers ({layers}) hold their attention otherwise, and ffn cannot tell what they keep")  # fmt: skip
        layers = tuple(sorted(i for r in plain for i in r.layers))
        raise _beyond(source, why.format(layers=_layers_named(layers).shown(), names=", ".join(CROSS_ATTENTION)))
    sub = len(sublayers) if sublayers is not None else 1
    merged, shell = _embedding_norm_in_first_layer(_merged(reads), shell)
    merged, shell, stood_in = _first_layer_norm_in_embeddings(merged, shell)
    merged = _with_passes(merged, runs)
    notes += tuple(stood_in)
    notes += towers_not_built(config, (t.name for t in shell.beside), shell.model_class)
    if seq2seq is not None:
        notes += (Message(_SOURCE_KEPT, tokens=f"{seq2seq.source_tokens:,}", key=seq2seq.source_key, encoder=encoder or ""),)
    if runs and blocks is not None:
        raise _beyond(source, _("its layers share blocks and run several passes: ffn sizes one of the two a model"))
    weights_from = runs or (blocks.weights_from if blocks is not None else {})
    paths = blocks.paths if blocks is not None else ()
    return _assemble(hf_config, r.config, merged, shell, config, name=name, source=source, notes=notes, sublayers=sub,
                     weights_from=weights_from, reused_whole=bool(runs), shared_paths=paths, n_layers=n_layers, vocab=vocab,
                     encoder=(encoder, seq2seq) if encoder is not None and seq2seq is not None else None)  # fmt: skip


_ENCODER_PASS = N_(
    "the encoder's pass over a source ({encoder}) and the cross-attention's keys and values of it (k_proj, v_proj), run once a source"
)
_SOURCE_KEPT = N_(
    "each decoder layer's cross-attention keeps the keys and values of a source of {tokens} tokens ({key}), the most the "
    "encoder hands on (a shorter source keeps less); their projections, as {encoder}, run once a source, not by a token decoded"
)


def _embedding_norm_in_first_layer(reads: list[LayerRead], shell: Shell) -> tuple[list[LayerRead], Shell]:
    """A norm the first layer alone holds, beyond the norms every other layer holds, normalizes
    what enters the first layer, the embeddings (RWKV's pre_ln, which its block 0 applies before
    anything else): the model's embedding norm, and layer 0 then reads as the others do."""
    first = [x for x in reads if x.layers == (0,)]
    others = [x for x in reads if x.layers != (0,)]
    if len(first) != 1 or not others or shell.embedding_norm or len({x.norms for x in others}) != 1:
        return reads, shell
    read = first[0]
    extra = [n for n in read.norm_names if not all(n in x.norm_names for x in others)]
    if len(extra) != 1 or read.norms != others[0].norms + 1 or read.norm_params != others[0].norm_params:
        return reads, shell
    read.norms, read.params = read.norms - 1, read.params - read.norm_params
    read.norm_names = [n for n in read.norm_names if n != extra[0]]
    return _merged(reads), replace(shell, embedding_norm=read.norm_params)


def _first_layer_norm_in_embeddings(reads: list[LayerRead], shell: Shell) -> tuple[list[LayerRead], Shell, list[Message]]:
    """The first layer holds one norm fewer than every other layer, and the model a norm over the
    embeddings of that size (ModernBERT's embeddings.norm, where its layer 0 builds no attn_norm):
    that norm is layer 0's, and layer 0 then reads as the others do, with a note saying so."""
    first = [x for x in reads if x.layers == (0,)]
    others = [x for x in reads if x.layers != (0,)]
    if len(first) != 1 or not others or len({x.norms for x in others}) != 1:
        return reads, shell, []
    read = first[0]
    if read.norms != others[0].norms - 1 or shell.embedding_norm != others[0].norm_params:
        return reads, shell, []
    read.norms, read.params = read.norms + 1, read.params + shell.embedding_norm
    read.norm_params = others[0].norm_params
    said = Message(
        N_("the norm over the embeddings stands in for layer 0's first norm, which that layer does not build: counted as that norm")
    )
    return _merged(reads), replace(shell, embedding_norm=0), [said]


def _passes(text_data: Mapping[str, Any], n_layers: int) -> dict[int, int]:
    """The layers a config's looped span adds, each mapped to the layer whose weights it runs:
    Inkling 2 Loop's layers loop_layer_index_start to loop_layer_index_end − 1 run loop_num_passes
    passes a token, each pass with the same weights and a cache of its own, pass p's copy of layer j
    numbered n_layers + (p − 2) · span + (j − start), as transformers' cache numbers it. None: {}."""
    values = _positive_ints([text_data.get(k) for k in ("loop_num_passes", "loop_layer_index_start", "loop_layer_index_end")])
    if values is None:
        return {}
    passes, start, end = values
    if end > n_layers:  # transformers builds it, and its cache fails on the first token
        why = _("is past num_hidden_layers ({n}): the looped span must lie in the layers")
        raise FFNError("loop_layer_index_end", end, why.format(n=n_layers))
    if passes < 2 or not start < end:
        return {}
    span = end - start
    return {n_layers + (p - 2) * span + (j - start): j for p in range(2, passes + 1) for j in range(start, end)}


def _with_passes(reads: list[LayerRead], runs: dict[int, int]) -> list[LayerRead]:
    """Each kind read with the later passes of its layers among its layers (`runs`: a later
    pass's layer, the layer whose weights it runs); a looped kind's tensors beside its parts are
    shared with those passes, its message gates (run by the later passes alone) a part of their own."""
    again: dict[int, list[int]] = {}
    for copy_of, layer in runs.items():
        again.setdefault(layer, []).append(copy_of)
    out = []
    for r in reads:
        later = tuple(i for layer in r.layers for i in again.get(layer, ()))
        if later:
            r.said.append(Message(N_("layers {later}: later passes, running these weights again"), later=layer_ranges(later)))
            r.layers, r.looped = tuple(sorted(r.layers + later)), True
            if r.mixer is not None:
                r.mixer = LinearMixer(**{**vars(r.mixer), "layers": tuple(sorted(r.mixer.layers + later))})
        out.append(r)
    return out


def _loops(text_data: Mapping[str, Any]) -> list[Message]:
    """A config that runs layers more than once (Dory's n_recurrent_loops), named: the model's own
    code decides which layers loop and what each pass caches, and ffn sizes each layer once."""
    said = [(k, v) for k, v in sorted(text_data.items()) if _LOOPS.search(k) and isinstance(v, int) and not isinstance(v, bool) and v > 1]
    return [Message(_LOOPED, key=k, n=f"{v:,}") for k, v in said]


def _sublayers(layer: nn.Module, source: str) -> list[nn.Module] | None:
    """A decoder layer that is N sublayers, each one of num_hidden_layers (LongCat-Flash: its
    attentions a list of two, each with its layer_idx, its MLPs and norms lists of two beside), as
    N modules: list entry j of each child in sublayer j; a child that is no list (the shortcut
    MoE, which reads the first sublayer's FFN input) in the first. None for a layer of one."""
    children = [(n, c) for n, c in layer.named_children() if _count(c)]
    lists: dict[str, nn.ModuleList] = {n: c for n, c in children if isinstance(c, nn.ModuleList)}
    attentions = [c for c in lists.values() if len(c) > 1 and all(_attends(x) for x in c)]
    if len(attentions) != 1:
        return None
    n = len(attentions[0])
    if any(len(c) != n for c in lists.values()):
        return None
    indices = [getattr(x, "layer_idx", None) for x in attentions[0]]
    first = indices[0]
    if not isinstance(first, int) or indices != list(range(first, first + n)) or first % n:
        why = _("its layer holds {n} attentions whose layer_idx are not {n} in a row: ffn cannot tell which cache layer is which")
        raise _beyond(source, why.format(n=n))
    subs = [nn.Module() for _j in range(n)]
    for name, child in children:
        if name in lists:
            for j, sub in enumerate(subs):
                sub.add_module(name, lists[name][j])
        else:
            subs[0].add_module(name, child)
    return subs


def _read_sublayers(
    d: int, r: FamilyReader, hf_config: PretrainedConfig, first: list[nn.Module], last: list[nn.Module] | None, n_layers: int
) -> list[LayerRead]:
    """Sublayer j of every decoder layer as one kind: layers j, j + N, j + 2N, … of num_hidden_layers,
    read in the first decoder layer and checked alike in the last."""
    n = len(first)
    if n_layers % n or last is None or len(last) != n:
        raise _beyond(r.source, _("its {n} sublayers a layer do not divide num_hidden_layers ({layers})").format(n=n, layers=n_layers))
    reads = []
    for j in range(n):
        layers = tuple(range(j, n_layers, n))
        read = read_layer(d, r, hf_config, first[j], layers)
        if _key(read) != _key(read_layer(d, r, hf_config, last[j], layers)):
            why = _("its first and last layers differ in sublayer {j}: ffn reads each sublayer alike in every layer")
            raise _beyond(r.source, why.format(j=j))
        reads.append(read)
    return reads


@dataclass(frozen=True)
class Shell:
    """What the model holds beside its decoder layers, read from it built with none (or whole,
    its layers passed over)."""

    tied: bool
    head_bias: bool
    head: bool  # an LM head (tied or not); a base model (BertModel) has none
    final_norm: int  # the final norm's parameters
    beside: tuple[ParamTensor, ...]  # every other tensor (a vision tower, a projector), by its path
    model_class: str
    # Tables read a row a token beside the token embeddings (Gemma 4's per-layer embeddings), by path.
    tables: tuple[ParamTensor, ...] = ()
    positions: int = 0  # the rows of learned absolute position embeddings (StarCoder's wpe), 0 for none
    first_position: int = 0  # the row the first token's position reads (RoBERTa's: past its padding row)
    embedding_norm: int = 0  # the parameters of a norm over the embeddings (BLOOM's), 0 for none
    head_rows: int = 0  # an untied head's rows where other than the vocabulary's (Inkling 2's), 0 for vocab_size
    # The text config as the model's class leaves it, its layers' lists and count as given: what its
    # layers are built from (TrOCR's causal LM sets is_decoder, which gives each a cross-attention;
    # GPT-Neo's layers read the attention kernel the model sets). None for a whole build.
    layer_config: PretrainedConfig | None = None


def sized_by_layer_count(text_data: Mapping[str, Any]) -> tuple[str, ...]:
    """The text config's keys that size tensors beside the layers by the layer count (Gemma 3n's and
    Gemma 4's per-layer inputs: one slice of a table a layer; IDEFICS's cross_layer_interval: a
    gated cross-attention layer every that many); none where hidden_size_per_layer_input is 0
    (Gemma 4's larger sizes), whatever vocab_size_per_layer_input says."""
    counts = [k for k, v in text_data.items() if isinstance(v, int) and not isinstance(v, bool) and v]
    cross = [k for k in counts if "cross" in k and k.endswith("interval")]
    if text_data.get("hidden_size_per_layer_input", None) == 0:
        return tuple(sorted(cross))
    return tuple(sorted(k for k in counts if "per_layer" in k or k in cross))


def _whole_model(hf_config: PretrainedConfig, source: str, model_class: Any = None) -> PreTrainedModel:
    """The whole model built on meta, once: by `model_class`, else the class a count builds."""
    model_class = model_class or auto_class(str(hf_config.model_type), hf_config)  # ffn's own step: a fault here is ffn's
    try:
        with torch.device("meta"):
            return model_class.from_config(hf_config, attn_implementation="eager")
    except Exception as exc:  # transformers building the config's values: any failure is the config's
        why = _("transformers cannot build {model_type} from it: {one_line}")  # as a count by building it says
        raise FFNError("config", source, why.format(model_type=hf_config.model_type, one_line=first_line(exc))) from None


def _every_layer(
    model: nn.Module, classes: tuple[type[nn.Module], ...], n_layers: int, source: str
) -> tuple[list[nn.Module], SharedBlocks | None]:
    """The decoder layers of a model whose layers come from several classes (Jamba's attention and
    Mamba layers, OLMo-Hybrid's), as the whole model built them, each layer then read alone; and
    the blocks they share (Zamba's tied shared transformers), held by the first layer that applies each."""
    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList) and len(m) == n_layers and all(isinstance(x, classes) for x in m)]
    if len(lists) != 1:
        why = _("its {n} layer classes are not one list of num_hidden_layers layers: ffn cannot tell which is which")
        raise _beyond(source, why.format(n=len(classes)))
    shared = shared_blocks(list(lists[0]), source)
    return [_bert_style(_as_linears(layer), source) for layer in lists[0]], shared


def _shell(hf_config: PretrainedConfig, classes: tuple[type[nn.Module], ...], source: str) -> Shell:
    """The model built on meta with no decoder layer (per-layer config lists emptied): its token
    embeddings, final norm and head, and whatever else sits beside the layers."""
    shell_config = copy.deepcopy(hf_config)
    text = shell_config.get_text_config()
    n_layers = int(text.num_hidden_layers)
    emptied = {key: value for key, value in vars(text).items() if isinstance(value, list) and len(value) == n_layers}
    for key in emptied:
        setattr(text, key, [])
    text.num_hidden_layers = 0
    counts = [key for key in _LAYER_COUNTS if getattr(text, key, None) == n_layers]  # xLSTM's num_blocks, which its model builds by
    for key in counts:
        setattr(text, key, 0)
    auto = auto_class(str(hf_config.model_type), shell_config)  # ffn's choice: outside the config's try
    try:
        with torch.device("meta"):
            model = auto.from_config(shell_config, attn_implementation="eager")
    except Exception as exc:  # transformers' code on the config's values: whatever it raises, the config caused
        raise FFNError("config", source, _("transformers cannot build it without its layers: {why}").format(why=first_line(exc))) from None
    layer_config = copy.deepcopy(model.config.get_text_config())
    for key, value in emptied.items():
        setattr(layer_config, key, value)
    layer_config.num_hidden_layers = n_layers
    for key in counts:
        setattr(layer_config, key, n_layers)
    return replace(_shell_of(model, classes, source, whole=False), layer_config=layer_config)


def _shell_of(
    model: PreTrainedModel,
    classes: tuple[type[nn.Module], ...],
    source: str,
    *,
    whole: bool,
    encoder: str | None = None,
    vocab: int | None = None,
) -> Shell:
    """The tensors of `model` outside its decoder layers: built with none, or `whole` with them all;
    an encoder-decoder's `encoder` module beside them, as a tower, and its decoder's own `vocab`."""
    text = model.config.get_text_config()
    d, vocab = int(text.hidden_size), vocab or int(text.vocab_size)
    modules = dict(model.named_modules())
    built = [(n, m) for n, m in modules.items() if isinstance(m, classes)]
    if built and not whole:  # layers beside num_hidden_layers' (HRM's stacks)
        raise _beyond(source, _("it builds {cls} layers beside its num_hidden_layers: ffn cannot tell how many").format(
            cls=type(built[0][1]).__name__))  # fmt: skip
    inside = tuple(f"{n}." for n, _m in built)
    # Layers of another class beside the decoder's, in the text model, each attending (IDEFICS's gated
    # cross-attention layers over an image, one every cross_layer_interval): what they run and keep a
    # token is not sized. (A Q-Former's, BLIP-2's, runs on the image: beside the text model.)
    text_models = {n.rpartition(".")[0].rpartition(".")[0] for n, _m in built}
    listed = [n for n, m in modules.items() if isinstance(m, nn.ModuleList) and len(m) and n.rpartition(".")[0] in text_models
              and not any(isinstance(x, classes) for x in m) and all(_attends_within(x) for x in m)]  # fmt: skip
    if listed:
        why = _("it builds layers that attend beside its decoder layers ({paths}): ffn cannot size what they run and keep")
        raise _beyond(source, why.format(paths=", ".join(listed)))
    # The LM head by transformers' own word (BioGPT's output_projection), else by its usual names.
    output = model.get_output_embeddings()
    heads = {n for n, m in modules.items() if (output is not None and m is output) or n.rpartition(".")[2] in ("lm_head", "embed_out")}
    # A head inside a module of its own holds its transform there (BERT's cls.predictions.transform, with
    # its LayerNorm; CamemBERT's lm_head.dense and lm_head.layer_norm): counted beside, never a final norm.
    # A module that holds the token embeddings too is the text model the head sits in (Kosmos-2.5's text_model).
    input_embeddings = _input_embeddings(model)
    table = next((n for n, m in modules.items() if m is input_embeddings), "")
    head_blocks = tuple(f"{n.rpartition('.')[0]}." for n in heads if "." in n and not table.startswith(f"{n.rpartition('.')[0]}."))
    # A head tied to the token embeddings is one tensor, listed once under whichever name comes first
    # (CamemBERT's lm_head.decoder, before its embeddings).
    tied_weight = getattr(output, "weight", None)
    if tied_weight is not None and tied_weight is not getattr(_input_embeddings(model), "weight", None):
        tied_weight = None
    # A table looked up by token (Gemma 4's per-layer embeddings) has a vocabulary's rows, as the config sizes one.
    data = text.to_dict()
    vocabularies = {v for k, v in data.items() if "vocab" in k and isinstance(v, int) and not isinstance(v, bool) and v > 0}
    embedding = head = norm = embedding_norm = None
    head_bias, head_rows = False, 0
    beside, tables = [], []
    norms: dict[str, list[ParamTensor]] = {}  # the norms of d outside the layers, by module: the final norm among them
    # Learned absolute positions: an nn.Embedding of the config's max_position_embeddings (n_positions) rows.
    # (Whisper's decoder: max_target_positions; LED's: max_decoder_position_embeddings.)
    position_keys = ("max_position_embeddings", "n_positions", "max_target_positions", "max_decoder_position_embeddings")  # LED's
    position_rows = {v for k, v in data.items() if k in position_keys and isinstance(v, int)} - vocabularies
    positions = first_position = 0
    whole_config = model.config.to_dict()
    for name, p in model.named_parameters():
        if name.startswith(inside):
            continue
        path, _dot, leaf = name.rpartition(".")
        module, last = modules[path], path.rpartition(".")[2]
        # a tower's tables and norms are the tower's (Kosmos-2.5's row_embedder); an encoder's, the encoder's
        in_encoder = encoder is not None and (path == encoder or path.startswith(f"{encoder}."))
        if in_encoder or tower_path(path, whole_config) is not None:
            beside.append(_tensor(path, leaf, p, module))
            continue
        if embedding is None and tuple(p.shape) == (vocab, d) and (isinstance(module, nn.Embedding) or p is tied_weight):
            embedding = name
        elif embedding is None and module is _input_embeddings(model) and _rows_past(p, vocab, d):
            # The token table holds rows past vocab_size (Llama 3.2 Vision's 8 for its image tokens): the
            # vocabulary's rows are the embeddings, the rest a table looked up beside them.
            embedding = name
            tables.append(ParamTensor(noted(name, ROWS_PAST_VOCAB), (int(p.shape[0]) - vocab, d)))
        elif head is None and path in heads and leaf == "weight":
            head = name
            # A head of other rows than the vocabulary's (Inkling 2's unpadded_vocab_size): its own logits.
            head_rows = int(p.shape[0]) if p.dim() == 2 and p.shape[1] == d and p.shape[0] != vocab else 0
        elif path in heads and leaf == "bias":
            head_bias = True  # its own; a bias it shares with a module beside it (BERT's predictions.bias) is counted there
            continue
        elif not positions and isinstance(module, nn.Embedding) and _position_rows(module) in position_rows and tuple(p.shape)[1:] == (d,):
            positions = module.num_embeddings
            # A table with a padding row (RoBERTa's) is read as fairseq's: positions start past it.
            first_position = module.padding_idx + 1 if module.padding_idx is not None else 0
        elif p.dim() == 1 and p.shape[0] == d and attribute((Owner(last, type(module).__name__),))[0] == "norm" and "embed" in path:
            embedding_norm = path  # BLOOM's word_embeddings_layernorm, BERT's embeddings.LayerNorm: over the summed embeddings
        elif (p.dim() == 1 and p.shape[0] == d and attribute((Owner(last, type(module).__name__),))[0] == "norm"
              and not name.startswith(head_blocks)):  # fmt: skip
            norms.setdefault(path, []).append(_tensor(path, leaf, p, module))
        elif isinstance(module, nn.Embedding) and module.num_embeddings in vocabularies:
            tables.append(_tensor(path, leaf, p, module))
        elif path not in (*norms, embedding_norm):
            beside.append(_tensor(path, leaf, p, module))
    norm = _final_norm(list(norms), embedding)
    beside += [t for path, tensors in norms.items() if path != norm for t in tensors]
    if embedding is None:  # ELECTRA's and RemBERT's narrower table, projected up; CPM-Ant's longer one: the spec's is vocab × d
        narrow = [tuple(m.weight.shape) for m in modules.values() if isinstance(m, nn.Embedding) and m.num_embeddings == vocab]
        if narrow:
            why = _("its token embeddings are a {rows:,} × {width:,} table, not vocab_size × hidden_size ({vocab:,} × {d:,}), "
                    "the one ffn sizes")  # fmt: skip
            raise _beyond(source, why.format(rows=narrow[0][0], width=narrow[0][1], vocab=vocab, d=d))
        why = _("its token embeddings are not one vocab_size × hidden_size table ({vocab:,} × {d:,}), the one ffn sizes")
        raise _beyond(source, why.format(vocab=vocab, d=d))
    return Shell(
        tied=head is None and bool(heads),
        head_bias=head_bias,
        head=bool(heads),
        final_norm=_count(modules[norm]) if norm is not None else 0,
        beside=tuple(beside),
        model_class=type(model).__name__,
        tables=tuple(tables),
        positions=positions,
        first_position=first_position,
        embedding_norm=_count(modules[embedding_norm]) if embedding_norm is not None else 0,
        head_rows=head_rows,
    )


def _final_norm(norms: list[str], embedding: str | None) -> str | None:
    """The final norm among the norms of d beside the layers: the first in the module that holds
    the token embeddings (the text model's), where one is; else the first. A module built before
    the text model may hold a norm of the same width (BLIP-2's Q-Former its layernorm), which is its own."""
    text_model = embedding.rpartition(".")[0].rpartition(".")[0] if embedding else ""
    own = [n for n in norms if n.rpartition(".")[0] == text_model]
    return next(iter(own or norms), None)


def _rows_past(p: torch.Tensor, vocab: int, d: int) -> bool:
    """A token table of d columns and more rows than the vocabulary (Llama 3.2 Vision's 8 more)."""
    return p.dim() == 2 and p.shape[1] == d and p.shape[0] > vocab


def _input_embeddings(model: PreTrainedModel) -> nn.Module | None:
    try:
        return model.get_input_embeddings()
    except NotImplementedError:  # transformers' answer for a model that names none
        return None


def _builds_alone(layer_cls: type[nn.Module]) -> bool:
    """Whether the class builds from the config and its index alone: Moshi's layer asks beside
    them which kind it is (use_flexible_linear), which only the model that builds it says."""
    params = list(inspect.signature(layer_cls.__init__).parameters.values())[1:]
    required = [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return len(required) <= 2


def _build(layer_cls: type[nn.Module], text: PretrainedConfig, layer: int, source: str) -> nn.Module:
    # A layer class that takes its index (layer_idx) beside the config, or the config alone (xLSTM's block).
    takes_index = len(inspect.signature(layer_cls.__init__).parameters) > 2
    try:
        with torch.device("meta"):
            built = layer_cls(text, layer) if takes_index else layer_cls(text)
    except Exception as exc:  # transformers' code on the config's values: whatever it raises, the config caused
        raise FFNError(
            "config", source, _("transformers cannot build a {cls} from it: {why}").format(cls=layer_cls.__name__, why=first_line(exc))
        ) from None
    return _bert_style(_as_linears(built), source)


def _bert_style(layer: nn.Module, source: str) -> nn.Module:
    """BERT's layer and its kin's (RoBERTa, ELECTRA, RemBERT, RoFormer, Megatron-BERT): its
    attention's query, key and value in attention.self and its output projection in
    attention.output, its FFN's up projection in intermediate and its down projection in output,
    each LayerNorm inside one of them. Regrouped, the same modules, as one attention, one MLP and
    the norms beside them, which the layer's reading reads as any other's. Any other layer as it is."""
    children = dict(layer.named_children())
    if not {"attention", "intermediate", "output"} <= set(children):
        return layer
    parts = dict(children["attention"].named_children())
    inner, o = parts.get("self"), getattr(parts.get("output"), "dense", None)
    up, down = getattr(children["intermediate"], "dense", None), getattr(children["output"], "dense", None)
    if inner is None or not all(isinstance(x, nn.Linear) for x in (o, up, down)):
        return layer
    if getattr(layer, "is_decoder", None) is False:  # transformers' own flag: its LM-head class warns, and builds it bidirectional
        why = _("its layers are built as an encoder's (the config does not set is_decoder): every token attends to the ones "
                "after it, and nothing is decoded")  # fmt: skip
        raise _beyond(source, why)
    block, attention, mlp = nn.Module(), nn.Module(), nn.Module()
    for name, child in inner.named_children():
        attention.add_module(name, child)
    attention.add_module("dense", o)
    mlp.add_module("up_proj", up)
    mlp.add_module("down_proj", down)
    block.add_module("self_attn", attention)
    block.add_module("mlp", mlp)
    wrappers = {"attention": children["attention"], "attention_output": parts["output"], "intermediate": children["intermediate"],
                "output": children["output"]}  # fmt: skip
    moved = {id(x) for x in (inner, o, up, down, *wrappers.values())}
    for prefix, wrapper in {"": layer, **wrappers}.items():
        for name, child in wrapper.named_children():
            if id(child) not in moved and _count(child):  # a norm (Megatron-BERT's ln), or a part of its own (a cross-attention)
                block.add_module(f"{prefix}_{name}" if prefix else name, child)
    return block if _count(block) == _count(layer) else layer


def _as_linears(layer: nn.Module) -> nn.Module:
    """The built layer (our own copy, on meta) with each of transformers' Conv1D (GPT-2's
    projections: a Linear whose weight is stored [in, out]) replaced by the nn.Linear of its
    shape: the same parameters and matmul, read as every other Linear is."""
    for name, module in list(layer.named_modules()):
        if isinstance(module, Conv1D):
            rows, cols = module.weight.shape  # [in, out]
            with torch.device("meta"):
                linear = nn.Linear(int(rows), int(cols), bias=module.bias is not None)
            layer.set_submodule(name, linear)
    return layer


def _key(read: LayerRead) -> tuple[Any, ...]:
    """What a layer was read as, its layer indices aside: equal for two layers of one kind."""
    m = read.mixer
    return (read.params, read.attention, read.attention_extra, m and (m.kind, m.tensors), read.ffn, read.ffn_extra, read.norms, read.norm,
            read.other, read.other_state, read.tables, read.image_experts, read.window, read.index_keys, read.kv_shared,
            read.zero_experts, read.residual_copies, read.shared_paths, read.adapters, tuple(read.left_out))  # fmt: skip


def _merged(reads: list[LayerRead]) -> list[LayerRead]:
    """Kinds the config told apart whose layers were read alike, as one kind."""
    merged: dict[tuple[Any, ...], LayerRead] = {}
    for read in reads:
        m = read.mixer
        key = _key(read)
        if key in merged:
            kept = merged[key]
            kept.layers = tuple(sorted(kept.layers + read.layers))
            kept.score_bias |= read.score_bias  # DeepSeek-V4's hash-routed layers hold none, its others one
            if kept.mixer is not None and m is not None:
                kept.mixer = LinearMixer(**{**vars(kept.mixer), "layers": tuple(sorted(kept.mixer.layers + m.layers))})
        else:
            merged[key] = read
    return sorted(merged.values(), key=lambda r: r.layers[0])


def _kinds_said(reads: list[LayerRead]) -> tuple[tuple[str, str], ...]:
    """Each kind's layers and what was read in them; kinds read alike but for the tensors beside
    their parts say those too (Zaya's layer 0, whose router takes no state from a layer before)."""
    said = [Message.separated(r.said) for r in reads]
    kinds = []
    for r, words in zip(reads, said, strict=True):
        if said.count(words) > 1:
            beside = Message(N_("; beside its parts: {modules}"), modules=Message.listed(modules_said(t.name for t in r.other)))
            words = Message.join(words, beside if r.other else Message(N_("; nothing beside its parts")))
        kinds.append((layer_ranges(r.layers), words))
    return tuple(kinds)


def _by_layers(said: list[tuple[tuple[int, ...], list[Message]]]) -> list[Message]:
    """What each kind leaves out, each thing once with every layer that leaves it out."""
    missing: dict[str, list[int]] = {}
    for layers, what in said:
        for x in what:
            missing.setdefault(x, []).extend(layers)
    return [Message(N_("{where}: {what}"), where=_layers_named(tuple(sorted(layers))), what=x) for x, layers in missing.items()]


def _common_ffn_extra(reads: list[LayerRead]) -> list[LayerRead]:
    """The tensors every MoE layer holds beside its experts, and the reads with those a kind holds
    beyond them as tensors beside its parts (Zaya's routers from layer 1 on scale the state the
    layer before hands them; layer 0's has none)."""
    moe = [r for r in reads if r.ffn is not None and r.ffn.mixture is not None]
    if len({r.ffn_extra for r in moe}) < 2:
        return reads
    common = tuple(t for t in moe[0].ffn_extra if all(t in r.ffn_extra for r in moe))
    return [replace(r, ffn_extra=common, other=r.other + tuple(t for t in r.ffn_extra if t not in common)) if r in moe else r
            for r in reads]  # fmt: skip


def _common_norms(reads: list[LayerRead], d: int) -> tuple[int, list[LayerRead]]:
    """The norms every layer holds, and the reads with the norms a kind holds beyond them as
    tensors beside its parts (Inkling 2's full layers: norms before the keys and the values as
    well as before the queries), the names the kinds share kept as norms first."""
    fewest = min(r.norms for r in reads)
    if all(r.norms == fewest for r in reads):
        return fewest, reads
    shared = set.intersection(*(set(r.norm_names) for r in reads))
    out = []
    for r in reads:
        kept = [n for n in r.norm_names if n in shared][:fewest]
        kept += [n for n in r.norm_names if n not in kept][: fewest - len(kept)]
        leaves = ("weight", "bias") if r.norm == "layernorm" else ("weight",)
        surplus = tuple(ParamTensor(f"{n} ({leaf})", (d,)) for n in r.norm_names if n not in kept for leaf in leaves)
        out.append(replace(r, norms=fewest, norm_names=kept, other=r.other + surplus))
    return fewest, out


def _beside_the_parts(reads: list[LayerRead]) -> tuple[ExtraPart, ...]:
    """The tensors each kind of layer holds beside its parts, one part a set: in every layer, or in
    the layers that hold it (Inkling 2's first layer has no attention_input; its full layers' reads
    three queries). A Linear among them (Gemma 4's per-layer input gate) runs once a token, as the parts' do."""
    groups: dict[tuple[tuple[ParamTensor, ...], int, bool], list[LayerRead]] = {}
    for r in reads:
        other = tuple(t for t in r.other if not _message_gate(t))  # a part of their own
        own: tuple[ParamTensor, ...]
        if r.looped:  # every tensor of a looped layer runs again in the later passes
            own, state, shared = (), 0, other
        else:  # a shared block's own (Zamba's norms): held by the layers that first apply it
            shared = tuple(t for t in other if any(t.name.startswith((f"{p}.", f"{p} ")) for p in r.shared_paths))
            own, state = tuple(t for t in other if t not in shared), r.other_state
        groups.setdefault((own, state, False), []).append(r)
        if shared:
            groups.setdefault((shared, r.other_state - state, True), []).append(r)
    extras: tuple[ExtraPart, ...] = ()
    for (other, state, shared_block), holders in groups.items():
        if not other:
            continue
        # a Linear's weight, 2-D, a matmul a token; a vector named weight (a norm's of another width,
        # Zamba's 2 · d; a residual gate, Ergo's) scales elementwise
        weights = sum(t.count for t in other if t.name.endswith(".weight") and len(t.shape) == 2)
        linear = 2 * weights + sum(t.count for t in other if t.name.endswith(".bias"))
        linear += 0 if shared_block else holders[0].other_flops
        detail = Message.listed(modules_said(t.name for t in other))
        layers = () if len(groups) == 1 else tuple(sorted(i for r in holders for i in r.layers))
        name = BESIDE_THE_SHARED_PARTS if shared_block and not holders[0].looped else BESIDE_THE_PARTS
        extras += (ExtraPart(name, "other", detail, other, per_layer=True, flops=linear, layers=layers, state=state, shared=shared_block),)
    return extras


def _message_gate(t: ParamTensor) -> bool:
    """A tensor of a message gate beside a looped layer's parts (Inkling 2 Loop's q_message_gate, …)."""
    return t.name.split(".")[0].split(" ")[0].endswith("message_gate")


def _message_gates(reads: list[LayerRead], runs: dict[int, int], source: str) -> tuple[ExtraPart, ...]:
    """The gates a looped layer mixes the previous pass's message in with (Inkling 2 Loop's q, k, v
    and MLP message gates): held by the layers of the first pass, run by the later passes alone;
    with one pass, held and never run."""
    why = _("its looped layers hold message gates of more than one shape")
    holders, tensors = _held_alike(reads, lambda r: tuple(t for t in r.other if _message_gate(t)), source, why)
    if not holders:
        return ()
    detail = Message.listed(modules_said(t.name for t in tensors))
    if not runs:
        layers = tuple(sorted(i for r in holders for i in r.layers))
        return (ExtraPart(MESSAGE_GATES, "other", Message(N_("{gates}, never run: one pass"), gates=detail), tensors, per_layer=True,
                          layers=layers, idle=True),)  # fmt: skip
    flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
    layers = tuple(sorted(i for r in holders for i in r.layers if i in runs))
    return (ExtraPart(MESSAGE_GATES, "other", detail, tensors, per_layer=True, flops=flops, layers=layers, shared=True),)


def _held_alike(reads: list[LayerRead], part: Callable[[LayerRead], Any], source: str, why: str) -> tuple[list[LayerRead], Any]:
    """The kinds that hold a part, and the part, which they all hold alike (refused, `why`, where
    they do not); no kinds and None where none holds it."""
    holders = [r for r in reads if part(r)]
    if len({part(r) for r in holders}) > 1:
        raise _beyond(source, why)
    return holders, part(holders[0]) if holders else None


def _adapters(reads: list[LayerRead], source: str) -> tuple[ExtraPart, ...]:
    """The entries each application of a shared block runs alone (Zamba2's LoRA adapters): in the
    layers that apply it, each layer its own, a Linear's matmul a token each."""
    holders, tensors = _held_alike(reads, lambda r: r.adapters, source, _("its shared blocks hold adapters of more than one shape"))
    if not holders:
        return ()
    flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight"))
    # each list once: its entry's Linears (.0, .1) and their leaf off (the application's index is off already)
    lists = modules_said(dict.fromkeys(t.name.rpartition(".")[0].rpartition(".")[0] for t in tensors))
    rank = min(min(t.shape) for t in tensors)
    detail = Message(N_("rank {rank}: {lists}"), rank=f"{rank:,}", lists=Message.listed(lists))
    layers = tuple(sorted(i for r in holders for i in r.layers))
    return (ExtraPart(ADAPTERS, "other", detail, tensors, per_layer=True, flops=flops, layers=layers),)


def _tables_in_layers(reads: list[LayerRead], source: str) -> tuple[ExtraPart, ...]:
    """The tables the layers that hold them look rows up in (Qwen4-Exp's PLE n-gram table), a part
    of the embeddings' tier: held whole, no FLOPs, `lookups` rows read a token."""
    why = _("its layers look rows up in tables of more than one shape")
    holders, held = _held_alike(reads, lambda r: (r.tables, r.table_lookups) if r.tables else (), source, why)
    if not holders:
        return ()
    tables, lookups = held
    said = [Message(N_("{table}: {shape}"), table=m, shape=f"({', '.join(map(str, t.shape))})")
            for t in tables for m in modules_said([t.name])]  # fmt: skip
    if lookups > 1:
        said = [Message(N_("{tables}, {n} rows read a token"), tables=Message.listed(said), n=f"{lookups:,}")]
    layers = tuple(sorted(i for r in holders for i in r.layers))
    return (ExtraPart(LAYER_TABLES, "embedding", Message.listed(said), tables, per_layer=True, layers=layers, lookups=lookups),)


def _attention_experts(reads: list[LayerRead], source: str) -> tuple[ExtraPart, ...]:
    """The query-and-output experts a mixture of attention heads holds beside a token's picks (JetMoE's):
    in the total, not a token's active count; a pass reads those its tokens touch beyond the picks."""
    why = _("its layers mix attention heads of more than one shape")
    holders, tensors = _held_alike(reads, lambda r: r.attention_experts, source, why)
    if not holders:
        return ()
    count, picks = holders[0].attention_routing
    layers = tuple(sorted(i for r in holders for i in r.layers))
    all_layers = tuple(sorted(i for r in reads for i in r.layers))
    detail = Message(N_("{n} of {count} query-and-output experts, picked by other tokens"), n=f"{count - picks:,}", count=f"{count:,}")
    return (ExtraPart(ATTENTION_EXPERTS, "attention", detail, tensors, per_layer=True, copies=count - picks,
                      layers=() if layers == all_layers else layers, routed=(count, picks)),)  # fmt: skip


def _image_experts(reads: list[LayerRead], source: str) -> tuple[ExtraPart, ...]:
    """The experts of another modality each MoE layer holds beside the text ones (ERNIE 4.5 VL's
    vision_moe): the model's vision part, held and divided over --ep as experts, never run by a text token."""
    why = _("its MoE layers hold vision experts of more than one shape")
    holders, tensors = _held_alike(reads, lambda r: r.image_experts, source, why)
    if not holders:
        return ()
    layers = tuple(sorted(i for r in holders for i in r.layers))
    all_layers = tuple(sorted(i for r in reads for i in r.layers))
    detail = Message.listed(modules_said(t.name for t in tensors))
    if holders[0].image_experts_shape is not None:
        n, width = holders[0].image_experts_shape
        detail = Message(N_("router + {n} × d_ff {width}, run on image tokens alone"), n=f"{n:,}", width=f"{width:,}")
    return (ExtraPart(IMAGE_EXPERTS, "vision", detail, tensors, per_layer=True, layers=() if layers == all_layers else layers),)


def _assemble(
    hf_config: PretrainedConfig,
    text_data: Mapping[str, Any],
    reads: list[LayerRead],
    shell: Shell,
    config: Mapping[str, Any],
    *,
    name: str,
    source: str,
    notes: tuple[str, ...],
    sublayers: int = 1,
    weights_from: dict[int, int] | None = None,
    reused_whole: bool = False,
    shared_paths: tuple[str, ...] = (),
    n_layers: int | None = None,
    encoder: tuple[str, EncoderDecoder] | None = None,
    vocab: int | None = None,
) -> BuiltLayout:
    text = hf_config.get_text_config()
    weights_from = weights_from or {}
    configured = n_layers or int(text.num_hidden_layers)  # an encoder-decoder's: its decoder's
    d, n_layers = int(text.hidden_size), configured + (len(weights_from) if reused_whole else 0)  # a looped span's later passes
    attention, attention_extra, attention_kinds = _attention_shapes(reads)
    mixers = [r.mixer for r in reads if r.mixer is not None]
    mixer = None
    if mixers:
        first = mixers[0]
        if any((m.kind, m.tensors) != (first.kind, first.tensors) for m in mixers):
            if not any(m.state_sized for m in mixers):  # DeepSeek-V4's compressed attention, its CSA and HCA layers
                shapes = len({(m.kind, m.tensors) for m in mixers})
                why = _("its layers mix tokens with {classes} in {n} shapes, a mixer ffn does not size; ffn sizes one kind per model")
                raise _beyond(source, why.format(classes=", ".join(sorted({m.kind for m in mixers})), n=shapes))
            raise _beyond(source, _("its layers mix tokens with two kinds of mixer; ffn sizes one kind per model"))
        mixer = LinearMixer(**{**vars(first), "layers": tuple(sorted(i for m in mixers for i in m.layers))})
        if mixer.scan is not None and mixer.state_sized:  # a recurrent state at the dtype the file names, not --dtype
            named = _state_dtype_bytes(config, source)  # else the one its module keeps (RecurrentGemma's float32), if any
            mixer = LinearMixer(**{**vars(mixer), "state_dtype_bytes": named if named is not None else mixer.state_dtype_bytes})
    beside_attention = tuple(i for r in reads if r.mixer is not None and r.attention is not None for i in r.layers)
    reads = _common_ffn_extra(reads)
    moe_reads = [r for r in reads if r.ffn is not None and r.ffn.mixture is not None]
    dense_reads = [r for r in reads if r.ffn is not None and r.ffn.mixture is None]
    moe = _one(moe_reads, N_("routed experts"), "ffn", source)
    moe_extra = _one(moe_reads, N_("tensors beside the experts"), "ffn_extra", source) or ()
    dense = None
    widths: tuple[int, ...] = ()
    if dense_reads:
        dense = dense_reads[0].ffn
        assert dense is not None
        if any(r.ffn is not None and r.ffn.with_(d_ff=dense.d_ff) != dense for r in dense_reads):
            raise _beyond(source, _("its dense FFNs differ beyond their width; ffn sizes one kind per model"))
        if len({r.ffn.d_ff for r in dense_reads if r.ffn is not None}) > 1:
            by_layer = {i: r.ffn.hidden for r in dense_reads if r.ffn is not None for i in r.layers}
            widths = tuple(by_layer.get(i, dense.hidden) for i in range(n_layers))
    norms, reads = _common_norms(reads, d)
    extras = _beside_the_parts(reads) + _adapters(reads, source) + _message_gates(reads, weights_from if reused_whole else {}, source)
    extras += _tables_in_layers(reads, source) + _image_experts(reads, source) + _attention_experts(reads, source)
    if shell.tables:  # read a row a token, as the token embeddings are; a shape's dimensions carry no separators
        # each by its module, and the part of it meant (Llama 3.2 Vision's token table's rows past vocab_size)
        said = [Message(N_("{table}: {shape}"), table=m, shape=f"({', '.join(map(str, t.shape))})")
                for t in shell.tables for m in modules_said([t.name])]  # fmt: skip
        extras += (ExtraPart(LOOKUP_TABLES, "embedding", Message.listed(said), shell.tables),)
    vision, beside = _towers(shell.beside, config, encoder)
    # In a text model a Linear beside the layers runs once a token (Gemma 4's per-layer model
    # projection); in a model with a tower, what is beside the layers may run on its inputs, not counted per token.
    text_only = hf_config.get_text_config() is hf_config
    if beside:
        tops = _beside_said(beside)
        beside_flops = 2 * sum(t.count for t in beside if t.name.endswith(".weight")) if text_only else 0
        extras += (ExtraPart(BESIDE_THE_LAYERS, "other", tops, beside, flops=beside_flops),)
    if attention is None:  # no layer attends: a stand-in nothing reads (attention_layers is empty)
        attention = AttentionSpec(d_model=d, n_heads=1, head_dim=d, qkv_bias=False, o_bias=False)
    spec = ModelSpec(
        name=name,
        model_type=str(hf_config.model_type),
        d_model=d,
        n_layers=n_layers,
        vocab_size=vocab or int(text.vocab_size),  # an encoder-decoder's decoder's own (Marian's decoder_vocab_size)
        attention=attention,
        dense_ffn=dense,
        moe_ffn=moe,
        moe_layers=tuple(i for r in moe_reads for i in r.layers),
        norm=reads[0].norm,
        norms_per_layer=norms,
        tie_word_embeddings=shell.tied,
        lm_head=shell.head,
        lm_head_bias=shell.head_bias,
        lm_head_rows=shell.head_rows,
        max_positions=shell.positions,
        first_position=shell.first_position,
        embedding_norm=bool(shell.embedding_norm),
        final_norm=bool(shell.final_norm),
        moe_extra=moe_extra,
        mixer=mixer,
        attention_extra=attention_extra,
        no_ffn_layers=tuple(i for r in reads if r.ffn is None for i in r.layers),
        no_mixer_layers=tuple(i for r in reads if r.attention is None and r.mixer is None for i in r.layers),
        kv_shared_layers=tuple(i for r in reads if r.kv_shared for i in r.layers),
        beside_attention=beside_attention,
        weights_from=tuple(sorted(weights_from.items())),
        reused_whole=reused_whole,
        extras=extras,
        dense_widths=widths,
        attention_kinds=attention_kinds,
        index_key_width=_one(reads, N_("indexer keys"), "index_keys", source) or 0,
        index_layers=tuple(i for r in reads if r.index_keys for i in r.layers),
        index_heads=_one(reads, N_("indexer heads"), "index_heads", source) or 0,
        sparse_topk=_one(reads, N_("indexer top-k"), "index_topk", source) or 0,
        index_block=_one(reads, N_("indexer blocks"), "index_block", source) or 1,
        zero_experts=_one(moe_reads, N_("zero-computation experts"), "zero_experts", source) or 0,
        router_score_bias=any(r.score_bias for r in moe_reads),
        router_in_extra=any(r.router_in_extra for r in moe_reads),
        sublayers=sublayers,
        residual_copies=_one(reads, N_("residual-stream copies"), "residual_copies", source) or 1,
        vision=vision,
        source=source,
    )
    windows: list[int | None] = [None] * n_layers
    for r in reads:
        for i in r.layers:
            windows[i] = r.window
    chunks = attention_chunks(config, configured)
    if chunks and reused_whole:  # a later pass's layer attends as the layer it runs again
        chunks = (*chunks, *(chunks[weights_from[i]] for i in range(configured, n_layers)))
    left_out = _by_layers([(r.layers, r.left_out) for r in reads]) + _loops(text_data)
    flops_left_out = _by_layers([(r.layers, r.flops_left_out) for r in reads])
    if encoder is not None:  # run once a source, as a tower runs once an image
        flops_left_out.append(Message(_ENCODER_PASS, encoder=encoder[0]))
    # Linears beside the layers of a model with a tower, outside it, may run on its inputs: their FLOPs named as no token's
    # (a table or a learned vector beside them, Inkling 2's final_input query, LLaVA-NeXT's image_newline, runs no matmul).
    if not text_only and any(t.name.endswith(".weight") for t in beside):
        flops_left_out.append(Message(_BESIDE_NOT_RUN))
    if shell.final_norm not in (0, spec.norm_params) or shell.embedding_norm not in (0, spec.norm_params):
        raise _beyond(source, _("its final norm holds {n:,} parameters, its layers' norms {m:,}").format(
            n=shell.final_norm, m=spec.norm_params))  # fmt: skip
    kinds = _kinds_said(reads)
    built_as_is = [(vision.name, vision.params)] if vision is not None else []  # the towers, then the rest beside the layers
    built_as_is += [(_beside_said(beside), sum(t.count for t in beside))] if beside else []
    for modules, count in built_as_is:
        kinds += (("beside", Message(N_("{modules}: {count} parameters, counted as built"), modules=modules, count=f"{count:,}")),)
    if reused_whole:
        pairs = sorted(weights_from.items())
        looped = tuple(sorted({holder for _copy, holder in pairs}))
        passes = len(pairs) // len(looped) + 1
        later = layer_ranges(tuple(copy for copy, _holder in pairs))
        notes += (Message(_ONE_PASS if passes == 2 else _PASSES, later=later, passes=passes, looped=layer_ranges(looped)),)
    elif weights_from and shared_paths:
        holders = tuple(sorted(set(weights_from.values())))
        running = _layers_named(tuple(sorted({*weights_from, *holders})))
        notes += (Message(_SHARED_BLOCKS, blocks=Message.listed(list(shared_paths)), layers=running, holders=_layers_named(holders)),)
    if sublayers > 1:
        notes += (Message(_SUBLAYERS, n=f"{n_layers // sublayers:,}", sub=sublayers, layers=f"{n_layers:,}"),)
    return BuiltLayout(spec, config, source, tuple(windows), tuple(chunks), kinds, tuple(left_out), notes,
                       flops_left_out=tuple(flops_left_out))  # fmt: skip
