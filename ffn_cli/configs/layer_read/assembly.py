"""The reads of every kind assembled into one ModelSpec and its BuiltLayout: the values every kind
agrees on, the tensors beside the parts and beside the layers (towers, tables, adapters, message
gates, vision and attention experts), the notes, and what no part sizes, named by its layers."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from transformers import PretrainedConfig

from ffn_cli.accounting import ParamTensor
from ffn_cli.attention import AnyAttention, AttentionSpec
from ffn_cli.configs.attribution import Owner, attribute
from ffn_cli.configs.built import TOWER_WORDS, BuiltLayout, Towers
from ffn_cli.configs.encoder_decoder import EncoderDecoder
from ffn_cli.configs.layer_read.shell import Shell
from ffn_cli.configs.layer_read.tensors import LayerRead, beyond_ffn, layers_named
from ffn_cli.configs.windows import attention_chunks
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.mixers import STATE_DTYPE_BYTES, LinearMixer
from ffn_cli.models.spec import NORM_KINDS, AttentionKind, ExtraPart, ModelSpec, layer_ranges
from ffn_cli.models.tensor_notes import modules_said
from ffn_cli.models.vision import VisionPart, VisionTower

__all__ = [
    "ADAPTERS",
    "ATTENTION_EXPERTS",
    "BESIDE_THE_LAYERS",
    "BESIDE_THE_PARTS",
    "BESIDE_THE_SHARED_PARTS",
    "IMAGE_EXPERTS",
    "LAYER_TABLES",
    "LOOKUP_TABLES",
    "MESSAGE_GATES",
    "assemble",
]

# --- the model ------------------------------------------------------------------------------

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
_SHARED_BLOCKS = N_("{blocks}: shared, held once by {holders}, run and cached in each of {layers}")
MESSAGE_GATES = N_("message gates")
# A config key that says how many times layers run over (Dory's n_recurrent_loops).
_LOOPS = re.compile(r"(^|_)loops($|_)")
_BESIDE_NOT_RUN = N_(
    "the FLOPs of the modules beside the layers, which may run on the model's other inputs (audio, images), not on a text token"
)
# An omni model's talker and vocoder: held as weights, run on the speech it speaks.
_SPEECH_STATE = N_(
    "the decode state of the speech output ({modules}): its talker decodes speech codes with a cache of its own, which "
    "grows with the speech spoken, not with the text; not counted (its weights are)"
)
_SPEECH_PASS = N_("the speech output ({modules}): its FLOPs and bytes, which run on the speech the model speaks, not on a text token")
_SPEECH_HELD = N_(
    "the speech output ({n} parameters) is held whole on every GPU, as a server that speaks holds it; one that returns "
    "text alone (vLLM serves Qwen3-Omni's thinker) loads none of it: enable_audio_output: false in the config sizes that"
)
_LOOPED = N_(
    "its {key} {n}: some layers run {n} times over, each pass with what it caches; ffn sizes each layer once, "
    "its FLOPs, activations and decode state for one pass"
)


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
    described = Towers.of(config)
    for t in beside:
        top = described.path(t.name.split(" ")[0])
        if top is not None:
            towers[top] = towers.get(top, 0) + t.count
        else:
            rest.append(t)
    if not towers:
        return None, tuple(rest)
    parts = tuple(
        VisionPart(top, N_("as transformers builds it"), params, runs_on=described.runs_on(top)) for top, params in towers.items()
    )
    return VisionTower(Message.listed(list(towers)), parts), tuple(rest)


def _one(reads: list[LayerRead], what: str, value: Any, source: str) -> Any:
    """The one value every kind that has `what` agrees on; two differing values are refused."""
    values = [(r, getattr(r, value)) for r in reads if getattr(r, value) is not None and getattr(r, value) != ()]
    if not values:
        return None
    first = values[0][1]
    for r, v in values[1:]:
        if v != first:
            raise beyond_ffn(
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
        raise beyond_ffn(source, _("{keys} name two dtypes for one recurrent state").format(keys=", ".join(sorted(said))))
    return sizes.pop() if sizes else None


_ENCODER_PASS = N_(
    "the encoder's pass over a source ({encoder}) and the cross-attention's keys and values of it (k_proj, v_proj), run once a source"
)


def _loops(text_data: Mapping[str, Any]) -> list[Message]:
    """A config that runs layers more than once (Dory's n_recurrent_loops), named: the model's own
    code decides which layers loop and what each pass caches, and ffn sizes each layer once."""
    said = [(k, v) for k, v in sorted(text_data.items()) if _LOOPS.search(k) and isinstance(v, int) and not isinstance(v, bool) and v > 1]
    return [Message(_LOOPED, key=k, n=f"{v:,}") for k, v in said]


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
    return [Message(N_("{where}: {what}"), where=layers_named(tuple(sorted(layers))), what=x) for x, layers in missing.items()]


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
        raise beyond_ffn(source, why)
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


def assemble(
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
    # a looped span's later passes, numbered past the configured layers (a cycled stack's runs are among them)
    d, n_layers = int(text.hidden_size), max(configured, max(weights_from, default=-1) + 1) if reused_whole else configured
    attention, attention_extra, attention_kinds = _attention_shapes(reads)
    mixers = [r.mixer for r in reads if r.mixer is not None]
    mixer = None
    if mixers:
        first = mixers[0]
        if any((m.kind, m.tensors) != (first.kind, first.tensors) for m in mixers):
            if not any(m.state_sized for m in mixers):  # DeepSeek-V4's compressed attention, its CSA and HCA layers
                shapes = len({(m.kind, m.tensors) for m in mixers})
                why = _("its layers mix tokens with {classes} in {n} shapes, a mixer ffn does not size; ffn sizes one kind per model")
                raise beyond_ffn(source, why.format(classes=", ".join(sorted({m.kind for m in mixers})), n=shapes))
            raise beyond_ffn(source, _("its layers mix tokens with two kinds of mixer; ffn sizes one kind per model"))
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
            raise beyond_ffn(source, _("its dense FFNs differ beyond their width; ffn sizes one kind per model"))
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
        embedding_dim=shell.embedding_dim,
        lm_head_dim=shell.head_dim,
        max_positions=shell.positions,
        first_position=shell.first_position,
        fixed_positions=shell.fixed_positions,
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
        index_select_block=_one(reads, N_("indexer's selected blocks"), "index_select_block", source) or 1,
        full_read_layers=tuple(i for r in reads if r.full_read for i in r.layers) if any(r.index_keys for r in reads) else (),
        zero_experts=_one(moe_reads, N_("zero-computation experts"), "zero_experts", source) or 0,
        router_score_bias=any(r.score_bias for r in moe_reads),
        router_in_extra=any(r.router_in_extra for r in moe_reads),
        sublayers=sublayers,
        residual_copies=_one(reads, N_("residual-stream copies"), "residual_copies", source) or 1,
        vision=vision,
        source=source,
    )
    windows: list[int | None] = [None] * n_layers
    # Where the attention names no window of its own, the config's sliding_window with no layer_types
    # makes transformers' DynamicCache slide in every layer (Moshi's, Kyutai STT's), as the model decodes.
    text_keys = text.to_dict()  # as written: a config of per-layer values names no one window to read as an attribute
    named = text_keys.get("sliding_window") if text_keys.get("layer_types") is None else None
    config_window = named if isinstance(named, int) and not isinstance(named, bool) and named > 0 else None
    for r in reads:
        for i in r.layers:
            windows[i] = r.window or (config_window if r.attention is not None else None)
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
    speaking = [part for part in vision.parts if part.runs_on == "speech"] if vision is not None else []
    if speaking:
        speech = Message.listed([part.name for part in speaking])
        if any(w in part.name.lower() for part in speaking for w in TOWER_WORDS["talker_config"]):  # a decoder with a cache of its own
            left_out.append(Message(_SPEECH_STATE, modules=speech))
        flops_left_out.append(Message(_SPEECH_PASS, modules=speech))
        if config.get("enable_audio_output") is not None:  # the switch an omni config has
            notes += (Message(_SPEECH_HELD, n=f"{sum(part.params for part in speaking):,}"),)
    embedding_norm = NORM_KINDS[spec.norm] * spec.embedding_width  # over the embeddings, as wide as their table
    if shell.final_norm not in (0, spec.norm_params) or shell.embedding_norm not in (0, embedding_norm):
        raise beyond_ffn(source, _("its final norm holds {n:,} parameters, its layers' norms {m:,}").format(
            n=shell.final_norm, m=spec.norm_params))  # fmt: skip
    kinds = _kinds_said(reads)
    built_as_is = [(vision.name, vision.params)] if vision is not None else []  # the towers, then the rest beside the layers
    built_as_is += [(_beside_said(beside), sum(t.count for t in beside))] if beside else []
    for modules, count in built_as_is:
        kinds += (("beside", Message(N_("{modules}: {count} parameters, counted as built"), modules=modules, count=f"{count:,}")),)
    if weights_from and shared_paths and not reused_whole:  # a looped span's passes are said where they are read
        holders = tuple(sorted(set(weights_from.values())))
        running = layers_named(tuple(sorted({*weights_from, *holders})))
        notes += (Message(_SHARED_BLOCKS, blocks=Message.listed(list(shared_paths)), layers=running, holders=layers_named(holders)),)
    if sublayers > 1:
        notes += (Message(_SUBLAYERS, n=f"{n_layers // sublayers:,}", sub=sublayers, layers=f"{n_layers:,}"),)
    return BuiltLayout(spec, config, source, tuple(windows), tuple(chunks), kinds, tuple(left_out), notes,
                       flops_left_out=tuple(flops_left_out))  # fmt: skip
