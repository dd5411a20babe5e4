"""A whole model's weights as stored: every tensor by its role, which of them a format
quantizes, and the bytes of the checkpoint that results.

The roles are what quantizers choose by: gpt-oss stores only its routed experts in MXFP4 and
keeps attention, router, embeddings and norms in bf16; DeepSeek-V3 stores every linear layer
in FP8 with 128×128 block scales but its router, embeddings and head in bf16. `--quantize`
picks a set of roles, and a config.json's `quantization_config` is read into one.
1-D tensors (biases, norms, sinks) are never quantized.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from math import ceil, prod
from typing import Any

from ffn_cli.configs.quant_sidecar import FROM_SIDECAR, SIDECAR
from ffn_cli.costs.compressed_tensors import compressed_tensors_format
from ffn_cli.errors import FFNError
from ffn_cli.hardware.formats import FORMATS, SYNTAX, TABLE_FORMATS, WeightFormat, awq, gptq, parse_format
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.layout import EMBEDDING_NORM, PlacedTensor, Role, ffn_role, model_layout
from ffn_cli.models.spec import ModelSpec, layer_ranges
from ffn_cli.models.vision import towers_named

__all__ = [
    "QUANTIZE_SCOPES",
    "Checkpoint",
    "StoragePlan",
    "WeightTensor",
    "check_scope",
    "checkpoint",
    "ffn_role",
    "held_roles",
    "leaf_of",
    "plan_from_config",
    "plan_from_options",
    "quantization_config",
    "routed_expert",
    "shipped_words",
    "towers_words",
    "weight_tensors",
]

_FFN = frozenset({"experts", "shared", "latent", "dense_ffn"})
_LINEARS = _FFN | {"attention"}
QUANTIZE_SCOPES: dict[str, frozenset[str]] = {
    "experts": frozenset({"experts"}),
    "ffn": _FFN,
    "linears": _LINEARS,
    "all": _LINEARS | {"router", "embedding", "head", "other"},
}
# What each --quantize scope stores in the format, in words: the rest stays in bf16.
SCOPE_WORDS = {
    "experts": N_("the routed experts alone"),
    "ffn": N_("the FFNs' linears (routed, shared and dense)"),
    "linears": N_("the layers' linears (attention and FFN; not the embeddings, routers or LM head)"),
    "all": N_("every tensor"),  # in a float format; a quantized one's words are the roles the model holds (_scope_words)
}
ROLE_WORDS = {
    "experts": N_("routed experts"),
    "shared": N_("shared experts"),
    "latent": N_("latent projections"),
    "dense_ffn": N_("dense FFNs"),
    "attention": N_("attention projections"),
    "router": N_("routers"),
    "embedding": N_("embeddings"),
    "head": N_("LM head"),
    "vector": N_("biases and norms"),
    "vision": N_("vision tower"),
    "source": N_("the encoder's other tensors"),
    "other": N_("other"),
}
PART_WORDS = {"mtp": N_("multi-token prediction"), "bias": N_("router score biases"), "table": N_("hash-routing tables")}
# A model with a mixer beside or in place of attention (Mamba-2, Gated DeltaNet) stores its
# projections in the attention role: said as token mixing.
MIXING_WORDS = N_("token-mixing projections")


@dataclass(frozen=True)
class WeightTensor:
    """`count` tensors of one role and shape across the model. A tensor the checkpoint ships
    beside the model (a multi-token-prediction layer's) has `part` "mtp" and is stored as its
    `role` says; `stored` fixes its format whatever the plan (a float32 bias)."""

    role: Role
    shape: tuple[int, ...]
    count: int
    part: str = ""
    stored: str = ""
    # A routed expert's own (its biases, a vector each): stored as its role says, held where the
    # expert is (--ep splits it with the expert's matrices).
    expert: bool = False
    kv_heads: int = 0  # a key or value projection's KV heads, which --tp splits by head (PlacedTensor's)
    whole: bool = False  # whole on every GPU of --tp (MLA's down projections: PlacedTensor's)
    # Its module's own name ("q_proj", "in_proj_ba") in the roles a checkpoint may store module by
    # module (ModelOpt's quantized_layers); "" where no list reaches it.
    leaf: str = ""
    layers: tuple[int, ...] = ()  # the decoder layers its count spans, where it is a layer's tensor

    @property
    def params(self) -> int:
        return prod(self.shape) * self.count


# The roles whose modules ModelOpt's quantized_layers may list one by one, and the module's own
# name of a tensor of them: its path's last module, a note in parentheses dropped.
_LEAF_ROLES = frozenset({"attention", "shared", "dense_ffn", "latent"})


def leaf_of(role: str, name: str) -> str:
    """'linear_attn.in_proj_ba.weight' → 'in_proj_ba', in a role quantized_layers lists module by module."""
    if role not in _LEAF_ROLES:
        return ""
    path = name.split(" (")[0].removesuffix(".weight").removesuffix(".bias")
    return path.rpartition(".")[2]


def _storage_order(spec: ModelSpec) -> Callable[[PlacedTensor], int]:
    """Where a tensor's role is listed: embeddings, each layer's token mixer with its norms, its
    FFN, the norms, a family's own tensors, the head and pooler, a vision tower."""
    extras = {e.name for e in spec.extras}
    mixer = spec.mixer.kind if spec.mixer is not None else None

    def section(t: PlacedTensor) -> int:
        if t.block in extras:
            return 4
        if t.part == "attention" or t.block == mixer:
            return 1
        if t.block == EMBEDDING_NORM:
            return 0
        return {"embedding": 0, "ffn": 2, "norm": 3, "head": 5, "pooler": 5, "vision": 6}.get(t.part, 0)

    return section


def routed_expert(t: PlacedTensor) -> bool:
    """A MoE FFN's routed expert's tensor, divided over --ep (not a mixture of heads' attention
    experts, JetMoE's, which every data-parallel copy of the attention holds)."""
    return t.part == "ffn" and t.name.startswith("experts.")


def weight_tensors(spec: ModelSpec) -> list[WeightTensor]:
    """Every parameter tensor of the model, merged by (role, shape); they sum to its total. A
    tied tensor is the one it shares, stored once; a vision tower is one tensor of its parameters."""
    found: dict[tuple[Role, tuple[int, ...], bool, int, bool, str, tuple[int, ...]], int] = {}
    placed = sorted(model_layout(spec), key=_storage_order(spec))
    vision = [t for t in placed if t.role == "vision"]
    for t in placed:
        if t.role != "vision" and not t.tied and t.instances and t.numel:
            leaf = leaf_of(t.role, t.name) if len(t.shape) > 1 else ""
            key = (t.role, t.shape, routed_expert(t), t.kv_heads, t.whole, leaf, (t.layers or ()) if leaf else ())
            found[key] = found.get(key, 0) + t.instances
    tensors = [
        WeightTensor(role, shape, count, expert=expert, kv_heads=heads, whole=whole, leaf=leaf, layers=layers)
        for (role, shape, expert, heads, whole, leaf, layers), count in found.items()
    ]
    if vision:  # counted by part, not by tensor: kept in the rest's format
        tensors.append(WeightTensor("vision", (sum(t.params for t in vision),), 1))
    return tensors


@dataclass(frozen=True)
class StoragePlan:
    """Which roles are stored in `fmt`; everything else in `rest`; a role in `by_role` in its own
    format (DeepSeek-V4's routed experts in fp4 beside its fp8 linears). `origin` says who chose."""

    fmt: WeightFormat
    roles: frozenset[str]
    rest: WeightFormat
    origin: str  # a Message where it is words
    not_converted: str = ""  # what the checkpoint's quantization_config keeps unquantized, in words
    by_role: tuple[tuple[str, WeightFormat], ...] = ()
    # The format --weights asked for, where the reader chose it: the bytes are then the model as
    # it would be stored so, not the checkpoint as it ships.
    asked: str = ""
    # What the checkpoint ships beside the model (its MTP layers), where a plan of its own stores
    # it: ModelOpt's quantized_layers list the decoder's modules, the MTP layers keep the rest's.
    shipped: StoragePlan | None = None
    # The modules quantized_layers lists in each role by_role's format comes from: a tensor of the
    # role under no listed name (Qwen3.6's DeltaNet in_proj_a and in_proj_b) stays in `rest`.
    listed: tuple[tuple[str, frozenset[str]], ...] = ()
    # The modules an exclude list leaves out by name in each role (DeepSeek-V3.2's NVFP4 checkpoint:
    # the latent projections and indexer, not o_proj), stored in `rest`.
    left_out: tuple[tuple[str, frozenset[str]], ...] = ()
    # A module an exclude list names in some of the layers that hold it (Nemotron 3 Nano's Mamba
    # in_proj before each attention layer): (role, its own name, those layers), stored in `rest` there.
    left_in_layers: tuple[tuple[str, str, frozenset[int]], ...] = ()

    def format_of(self, t: WeightTensor) -> WeightFormat:
        if t.stored:
            return FORMATS.get(t.stored) or TABLE_FORMATS[t.stored]
        if t.part == "mtp" and self.shipped is not None:
            return self.shipped.format_of(t)
        names = dict(self.listed).get(t.role)
        if names is not None and t.leaf and not _covered(t.leaf, names):
            return self.rest
        if t.leaf and t.leaf in dict(self.left_out).get(t.role, ()):
            return self.rest
        if t.layers and any(r == t.role and n == t.leaf and set(t.layers) <= at for r, n, at in self.left_in_layers):
            return self.rest
        own = dict(self.by_role).get(t.role)
        if own is not None:
            return own
        return self.fmt if t.role in self.roles else self.rest

    def quantizes(self, role: str) -> bool:
        """Whether tensors of `role` are stored quantized: in `fmt`'s roles, or a format of their own."""
        return role in self.roles or role in dict(self.by_role)


def plan_from_options(
    weights: str,
    quantize: str | None,
    rest_dtype: str = "bf16",
    config: Mapping[str, Any] | None = None,
    present: frozenset[str] | None = None,
    towers: str = ROLE_WORDS["vision"],
    spec: ModelSpec | None = None,
) -> StoragePlan:
    """--weights FORMAT [--quantize SCOPE]: a float format covers every tensor; a quantized one
    what the checkpoint's quantization_config quantizes (`config`, where ffn reads it: gpt-oss
    keeps attention in bf16), else the linears, unless --quantize says. `present`: the roles the
    model's tensors hold, where known, as plan_from_config takes them; `towers`: its towers in words."""
    if quantize is None and config is not None:
        shipped, _note = plan_from_config(config, present, spec)
        plan = plan_from_options(weights, None, rest_dtype, present=present, towers=towers)
        if shipped is not None and plan.fmt.quantized:
            said = (
                N_("--weights {format} where hf_quant_config.json quantizes (not converted: {kept})")
                if config.get(FROM_SIDECAR) == SIDECAR
                else N_("--weights {format} where config.json's quantization_config quantizes (not converted: {kept})")
            )
            origin = Message(said, format=plan.fmt.name, kept=shipped.not_converted)
            # the modules the checkpoint leaves out by name, or whose role it lists module by module, as it does
            asked = StoragePlan(plan.fmt, _quantized_roles(shipped), plan.rest, origin, listed=shipped.listed, left_out=shipped.left_out)
            beside = shipped.shipped  # the MTP layers a ModelOpt list leaves as they were: in --weights where those were quantized
            return replace(asked, shipped=replace(asked, roles=_quantized_roles(beside)) if beside is not None else None)
        return plan
    try:
        fmt = parse_format(weights)
    except ValueError:  # the one refusal parse_format words: "choose SYNTAX", said here in the run's language
        raise FFNError("weights", weights, _("choose {formats}").format(formats=SYNTAX.shown())) from None
    rest = parse_format(rest_dtype)
    if quantize is None:  # said as given: no --quantize the user did not write
        scope = "all" if not fmt.quantized and fmt.element_bits >= 16 else "linears"
        what = _scope_words(scope, fmt, present, towers)
        given = Message(N_("--weights {format} on {what} (--quantize's default)"), format=fmt.name, what=what)
    elif quantize in QUANTIZE_SCOPES:
        scope = quantize
        what = _scope_words(scope, fmt, present, towers)
        given = Message(N_("--weights {format} --quantize {scope}: {what}"), format=fmt.name, scope=scope, what=what)
    else:
        raise FFNError("quantize", quantize, _("choose {quantize_scopes}").format(quantize_scopes=", ".join(QUANTIZE_SCOPES)))
    roles = QUANTIZE_SCOPES[scope] | ({"vector", "vision"} if _every_tensor(scope, fmt) else set())
    return StoragePlan(fmt, frozenset(roles), rest, given)


def _quantized_roles(plan: StoragePlan) -> frozenset[str]:
    """The roles a checkpoint's plan stores quantized: in its format, or in one of their own."""
    return plan.roles | {role for role, _fmt in plan.by_role}


def _every_tensor(scope: str, fmt: WeightFormat) -> bool:
    """`--quantize all` in a float format (fp32 … fp8): the vectors and a vision tower too."""
    return scope == "all" and not fmt.quantized


def _scope_words(scope: str, fmt: WeightFormat, present: frozenset[str] | None, towers: str = ROLE_WORDS["vision"]) -> Message:
    """What a scope stores in `fmt`: `all` in a float format (fp32 … fp8) covers every tensor; in a
    quantized one the layers' linears and those of the embeddings, routers and head the model
    holds (`present`, where known), the vectors and a vision tower left as they are."""
    tower = present is not None and "vision" in present
    if _every_tensor(scope, fmt):
        return Message(SCOPE_WORDS[scope])
    if scope != "all":  # the layers' linears name what they leave (embeddings, routers, head): the towers too
        if tower and scope == "linears":
            return Message(N_("{scope}; the {towers} left unquantized"), scope=Message(SCOPE_WORDS[scope]), towers=Message(towers))
        return Message(SCOPE_WORDS[scope])
    held = [r for r in ("embedding", "router", "head") if present is None or r in present]
    linears = (
        Message(SCOPE_WORDS["linears"])
        if not held
        else Message(N_("the layers' linears, {roles}"), roles=_listed([Message(ROLE_WORDS[r]) for r in held]))
    )
    # the towers by their words (an omni model's "towers and speech output"), said in the reader's language
    kept = (
        Message(N_("biases, norms and the {towers} stay unquantized"), towers=Message(towers))
        if tower
        else Message(N_("biases and norms stay unquantized"))
    )
    return Message(N_("{linears} ({kept})"), linears=linears, kept=kept)


def held_roles(spec: ModelSpec) -> frozenset[str]:
    """The roles the model's tensors hold: what a caption may name (a tied head holds none)."""
    return frozenset(t.role for t in weight_tensors(spec))


def check_scope(spec: ModelSpec, plan: StoragePlan, quantize: str, present: frozenset[str] | None = None) -> None:
    """--quantize SCOPE that covers no tensor of the model (experts of a dense one) is refused:
    the checkpoint would be shown as asked, and nothing in it stored so. `present`: held_roles(spec),
    where the caller has it."""
    present = held_roles(spec) if present is None else present
    if present & plan.roles:
        return
    scopes = ", ".join(name for name, roles in QUANTIZE_SCOPES.items() if roles & present)
    allowed = _("matches no tensor of {name}: nothing would be stored as {format}; choose one of {scopes}")
    raise FFNError("quantize", quantize, allowed.format(name=spec.name, format=plan.fmt.name, scopes=scopes))


# A module path in modules_to_not_convert → the roles it names (by the words transformers' names use).
_MODULE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("shared_expert_gate", ("router",)),
    ("shared_expert", ("shared",)),
    ("self_attn", ("attention",)),
    ("attn", ("attention",)),
    ("router", ("router",)),
    ("mlp.gate", ("router",)),
    ("block_sparse_moe.gate", ("router",)),  # Mixtral's and MiniMax's router
    ("vision_tower", ("vision",)),
    ("embed_vision", ("vision",)),  # Gemma's projector into the text model's width
    ("experts", ("experts",)),
    ("latent_proj", ("latent",)),  # Nemotron 3's fc1_latent_proj, fc2_latent_proj
    ("embed", ("embedding",)),
    ("lm_head", ("head",)),
    ("mlp", tuple(_FFN | {"router"})),
)


# One module path per tensor of each role, as transformers names a decoder's: what a
# compressed-tensors `re:` pattern is matched against (re.match, as compressed-tensors does).
_ROLE_PATHS: dict[str, tuple[str, ...]] = {
    "attention": ("model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.o_proj"),
    "dense_ffn": ("model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj", "model.layers.0.mlp.down_proj"),
    "experts": ("model.layers.1.mlp.experts.0.gate_proj", "model.layers.1.mlp.experts.0.down_proj"),
    "shared": ("model.layers.1.mlp.shared_experts.gate_proj", "model.layers.1.mlp.shared_experts.down_proj"),
    "latent": ("model.layers.1.mixer.fc1_latent_proj", "model.layers.1.mixer.fc2_latent_proj"),
    "router": ("model.layers.1.mlp.gate",),
    "embedding": ("model.embed_tokens",),
    "head": ("lm_head",),
}


def _pattern_roles(pattern: str) -> tuple[str, ...] | None:
    """The roles whose every path an `re:` pattern matches; None where it matches only some of a
    role's paths, or none (ffn cannot say what it keeps out), or is no regular expression."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        return None
    hits = {role: [compiled.match(path) is not None for path in paths] for role, paths in _ROLE_PATHS.items()}
    if any(any(h) and not all(h) for h in hits.values()):
        return None
    return tuple(role for role, h in hits.items() if all(h)) or None


def _not_converted(modules: list[str]) -> tuple[frozenset[str], list[str]]:
    """The roles `modules_to_not_convert` keeps out, and the entries no role matched."""
    roles: set[str] = set()
    unread = []
    for module in modules:
        if module.startswith("re:"):  # compressed-tensors' regular expression: matched against each role's paths
            matched = _pattern_roles(module.removeprefix("re:"))
            if matched is None:
                unread.append(module)
            else:
                roles.update(matched)
            continue
        words = module.replace("*", "")
        hit = next((r for w, r in _MODULE_WORDS if w in words and not (w == "mlp.gate" and "gate_" in words)), None)
        if hit is None:
            unread.append(module)
        else:
            roles.update(hit)
    return frozenset(roles), unread


_WHOLE_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)(?:\.\*|\*|)$")


_LAYER_MODULE = re.compile(r"(?:^|\.)layers\.(\d+)\.(.+)$")


def _modules_left_out(
    placed: list[PlacedTensor], entries: list[str]
) -> tuple[tuple[tuple[str, frozenset[str]], ...], tuple[tuple[str, str, frozenset[int]], ...], list[str]]:
    """Exclude entries naming a module of a decoder layer ("model.layers.3.self_attn.q_a_proj",
    "….indexer*"): the modules, by role and own name, that every layer holding them leaves out;
    those some of their layers leave out, with those layers; and every other entry, read as
    before. An entry naming what ffn never quantizes (a convolution) changes nothing: dropped."""
    named: dict[tuple[str, str], set[int]] = {}  # (role, path in the layer) → the layers naming it
    rest = []
    for entry in entries:
        m = _LAYER_MODULE.search(entry.removeprefix("re:"))
        role = _layer_role(entry) if m else None
        if m is not None and role == "other":
            continue
        if m is None or role is None or role not in _LEAF_ROLES:
            rest.append(entry)
            continue
        named.setdefault((role, m.group(2)), set()).add(int(m.group(1)))
    left: dict[str, set[str]] = {}
    partly: list[tuple[str, str, frozenset[int]]] = []
    for (role, path), layers in named.items():
        prefix = path.rstrip("*")
        own = prefix.rpartition(".")[2]
        # the module's own tensors: its name, or under it where the entry ends in * (an indexer's)
        hits = [t for t in placed if t.role == role and (_path_in(t.name, own) if path.endswith("*") else leaf_of(role, t.name) == own)]
        named_here = [e for e in entries if (m := _LAYER_MODULE.search(e.removeprefix("re:"))) and m.group(2) == path]
        if not hits:  # a block, not a module of it ("self_attn*"): read by its words, as before
            rest += named_here
        elif all(set(t.layers or ()) <= layers for t in hits):
            left.setdefault(role, set()).update(leaf_of(role, t.name) for t in hits)
        else:  # in some of its layers: those layers' tensors of it in the rest's format
            partly += [(role, n, frozenset(layers)) for n in sorted({leaf_of(role, t.name) for t in hits})]
    return tuple((role, frozenset(n)) for role, n in left.items()), tuple(partly), rest


def _roles_left_whole(placed: list[PlacedTensor], left: tuple[tuple[str, frozenset[str]], ...]) -> frozenset[str]:
    """The roles every one of whose modules an exclude list names (GLM-5's attention, layer by layer)."""
    held: dict[str, set[str]] = {}
    for t in placed:
        if t.role in _LEAF_ROLES:
            held.setdefault(t.role, set()).add(leaf_of(t.role, t.name))
    return frozenset(role for role, names in left if held.get(role, set()) <= names)


def _layer_matrices(spec: ModelSpec) -> list[PlacedTensor]:
    """The model's matrices held in its decoder layers (a tied one counted where it is stored): what
    a ModelOpt list names by layer and module."""
    return [t for t in model_layout(spec) if t.layers is not None and len(t.shape) > 1 and not t.tied]


def _path_in(name: str, module: str) -> bool:
    """Whether a tensor's path lies under the attention's module `module` ("indexer" → "indexer.wk.weight")."""
    return name.startswith(module + ".")


def _mtp_layers_named(spec: ModelSpec, entries: list[str]) -> tuple[bool, list[str]]:
    """Whether entries name whole layers past the decoder's (DeepSeek's MTP layer 61,
    nvidia/DeepSeek-V3.2-NVFP4's "model.layers.61*"), and the entries left."""
    past = [e for e in entries if (m := _WHOLE_LAYER.search(e.removeprefix("re:"))) and int(m.group(1)) >= spec.n_layers]
    return bool(past), [e for e in entries if e not in past]


def _whole_layers(placed: list[PlacedTensor], entries: list[str], excluded: frozenset[str]) -> tuple[frozenset[str], list[str]]:
    """Entries that name whole decoder layers ("…layers.0*"): the roles of the model's matrices held
    in those layers alone, and the entries left unmatched: all of them where a role not `excluded`
    already is held in those layers and in others too (ffn gives a role one format)."""
    named = {e: int(m.group(1)) for e in entries if (m := _WHOLE_LAYER.search(e.removeprefix("re:")))}
    held: dict[str, set[int]] = {}
    for t in placed:
        held.setdefault(t.role, set()).update(t.layers or ())
    layers = set(named.values())
    inside = {role for role, at in held.items() if at & layers}
    if not named or any(not held[role] <= layers for role in inside - excluded):
        return frozenset(), entries
    return frozenset(role for role in inside if held[role] <= layers), [e for e in entries if e not in named]


def _is_int(value: object) -> bool:
    """A JSON integer: `true` is not one, though Python's bool is an int."""
    return isinstance(value, int) and not isinstance(value, bool)


def _module_names(qc: Mapping[str, Any], key: str = "modules_to_not_convert") -> list[str]:
    """modules_to_not_convert (or compressed-tensors' `ignore`), refused unless a list of names.
    transformers iterates it as it is: one string would become its letters, each a pattern that
    keeps most modules out."""
    modules = qc.get(key)
    if modules is None:
        return []
    allowed = _('must be a list of module names (transformers\' own spelling: ["lm_head"])')
    if isinstance(modules, str):
        allowed = _("one string, which transformers would read letter by letter; {allowed}").format(allowed=allowed)
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise FFNError(f"quantization_config.{key}", modules, allowed)
    return modules


def _block_size(qc: Mapping[str, Any]) -> tuple[int, int] | None:
    block = qc.get("weight_block_size")
    if block is None:
        return None
    if not isinstance(block, list) or len(block) != 2 or not all(_is_int(b) and b > 0 for b in block):
        raise FFNError("quantization_config.weight_block_size", block, _("must be two positive integers, as [128, 128]"))
    return block[0], block[1]


def quantization_config(config: Mapping[str, Any]) -> Any:
    """config.json's quantization_config, or its text model's where a wrapper keeps it there (Kimi
    K2.5's); None where neither has one."""
    qc = config.get("quantization_config")
    text = config.get("text_config")
    return text.get("quantization_config") if qc is None and isinstance(text, Mapping) else qc


def plan_from_config(
    config: Mapping[str, Any], present: frozenset[str] | None = None, spec: ModelSpec | None = None
) -> tuple[StoragePlan | None, str]:
    """The checkpoint's own storage from config.json's quantization_config, and a note:
    (None, why) when there is none or its method is not one ffn reads. A value of the wrong
    JSON type (a string for a list, `true` for a number) is refused, naming its key. `present`:
    the roles the model's tensors hold, where known; the words name no other (a tied head, the
    routers of a dense model)."""
    qc = quantization_config(config)
    if qc is None:
        return None, ""
    if not isinstance(qc, Mapping):  # a string or a list: no quant_method to read, and silence would count it as bf16
        raise FFNError("quantization_config", qc, _('must be a JSON object naming its quant_method, as {"quant_method": "fp8"}'))
    method = str(qc.get("quant_method", "")).lower()
    producer = qc.get("producer")
    if not method and isinstance(producer, Mapping) and producer.get("name") == "modelopt":  # ModelOpt's, named by its producer alone
        method = "modelopt"
    beside = config.get(FROM_SIDECAR) == SIDECAR
    matrices = _layer_matrices(spec) if spec is not None else []  # what a list names by layer and module, read once
    excluded, unread = _not_converted(_module_names(qc))
    left_modules: tuple[tuple[str, frozenset[str]], ...] = ()  # modules left out by name, each in every layer that holds it
    left_in_layers: tuple[tuple[str, str, frozenset[int]], ...] = ()  # and in some of its layers
    if method == "mxfp4":
        fmt, scope = FORMATS["mxfp4"], QUANTIZE_SCOPES["all"]
    elif method == "fp8":
        block = _block_size(qc)
        if block is None:
            fmt = FORMATS["fp8"]
        else:
            fmt = WeightFormat(f"fp8-block-{block[0]}x{block[1]}", 8, "e4m3", block=block, scale="fp32", compute_dtype="fp8")
        if qc.get("activation_scheme") == "static":  # one float32 input_scale per linear beside its weight's
            both = fmt.tensor_scale_bits  # per-tensor fp8 has a weight_scale already
            words = Message(N_("a weight_scale and an input_scale, fp32, per tensor") if both else N_("an input_scale, fp32, per tensor"))
            fmt = replace(fmt, name=f"{fmt.name}-static", tensor_scale_bits=fmt.tensor_scale_bits + 32, tensor_words=words)
        # transformers' FP8 replaces nn.Linear layers: MoE routers, embeddings and the head are not ones.
        scope = _LINEARS
    elif method == "compressed-tensors":
        read_ct = compressed_tensors_format(qc, str(config.get("torch_dtype") or config.get("dtype") or "bfloat16"))
        if isinstance(read_ct, str):
            return None, read_ct
        # every Linear the group targets, lm_head too, unless `ignore` names it; a router is no Linear in
        # transformers' MoE classes (nor in DeepSeek's own code), and vLLM loads routers unquantized
        fmt, scope = read_ct, _LINEARS | {"head"}
        excluded, unread = _not_converted(_module_names(qc, "ignore"))
    elif method == "modelopt" and _mixed_precision(qc):  # every format is a module's own: quantized_layers below
        fmt, scope = FORMATS["bf16"], frozenset()
    elif method == "modelopt":  # NVIDIA ModelOpt's checkpoints (nvidia/*-NVFP4, *-FP8): every Linear not ignored
        algo = _MODELOPT.get(str(qc.get("quant_algo", "")).upper())
        if algo is None:
            said = N_("quantization_config modelopt quant_algo {algo} is not read by ffn: its weights are priced in --dtype instead")
            return None, Message(said, algo=repr(qc.get("quant_algo")))
        fmt, scope = algo, _LINEARS | {"head"}  # as compressed-tensors' above
        entries = _module_names(qc, "ignore" if "ignore" in qc else "exclude_modules")
        if spec is not None:  # "model.layers.N.self_attn.q_a_proj": that module left out, not all of attention
            left_modules, left_in_layers, entries = _modules_left_out(matrices, entries)
        excluded, unread = _not_converted(entries)
        if spec is not None and left_modules:  # a role all of whose modules are named is left out whole
            whole_roles = _roles_left_whole(matrices, left_modules)
            excluded |= whole_roles
            left_modules = tuple((role, names) for role, names in left_modules if role not in whole_roles)
    elif method in ("gptq", "awq"):
        read = _integer_config(method, qc)
        if isinstance(read, str):
            return None, read
        fmt, scope = read, _LINEARS  # the decoder layers' linears: not the embeddings, the head or the routers
    else:
        said = N_("quantization_config quant_method {method} is not read by ffn: its weights are priced in --dtype instead")
        return None, Message(said, method=repr(method) if method else "(none)")
    mtp_out = False
    if spec is not None and unread:  # a whole layer left out (Kimi K2.6's language_model.model.layers.0*)
        mtp_out, unread = _mtp_layers_named(spec, unread)
        whole, unread = _whole_layers(matrices, unread, excluded)
        excluded |= whole
    roles = frozenset(scope - excluded)
    key = next((k for k in ("modules_to_not_convert", "ignore", "exclude_modules") if k in qc), "modules_to_not_convert")
    note = Message(N_("{key} not matched: {names}"), key=key, names=", ".join(unread)) if unread else ""
    if qc.get("kv_cache_scheme") or qc.get("kv_cache_quant_algo"):  # scales for an fp8 cache a server may be told to keep
        said = N_("The config's KV-cache quantization is not read: the KV cache is priced at --dtype, as a server keeps it unless told fp8")
        kv = Message(said)
        note = Message.join(note, Message(N_("; ")), kv) if note else kv
    shown = present if present is not None else frozenset(ROLE_WORDS)
    kept = _listed([Message(ROLE_WORDS[r]) for r in sorted(excluded) if r in shown]) or Message(N_("none"))
    by_role, experts = _expert_dtype(config, qc)
    rest = FORMATS["fp16"] if method in ("gptq", "awq") else FORMATS["bf16"]  # GPTQ's and AWQ's kernels run in fp16
    if method == "compressed-tensors" and str(config.get("torch_dtype")) == "float16":
        rest = FORMATS["fp16"]
    if method == "modelopt" and _mixed_precision(qc):  # no format of its own: quantized_layers says all
        said = (
            N_("hf_quant_config.json: modelopt MIXED_PRECISION")
            if beside
            else N_("config.json quantization_config: modelopt MIXED_PRECISION")
        )
        plan = StoragePlan(fmt, roles, rest, Message(said), not_converted=kept)
        return _with_quantized_layers(plan, qc, shown, note, spec)
    # ModelOpt's sidecar, where config.json says none (nvidia/DeepSeek-V3.2-NVFP4's): named as the source
    head = (
        N_("hf_quant_config.json: {method}, not converted: {kept}")
        if beside
        else N_("config.json quantization_config: {method}, not converted: {kept}")
    )
    origin = Message(head, method=method, kept=kept)
    # the method's own reach, less what the config already names as not converted
    never = [Message(ROLE_WORDS[r]) for r in ("embedding", "router", "head") if r not in scope and r not in excluded and r in shown]
    if never:
        origin = Message.join(origin, Message(N_("; never quantized by it: {roles}"), roles=_listed(never)))
    origin = Message.join(origin, experts)
    if left_modules:  # modules an exclude list names one by one, in every layer that holds them
        names = Message.listed(sorted(n for _role, found in left_modules for n in found))
        origin = Message.join(origin, Message(N_("; left out by name: {names}"), names=names))
    for _role, name, at in left_in_layers:  # and in some of their layers
        said = Message(N_("; {name} left out in layers {layers}"), name=name, layers=layer_ranges(tuple(sorted(at))))
        origin = Message.join(origin, said)
    plan = StoragePlan(fmt, roles, rest, origin, not_converted=kept, by_role=by_role, left_out=left_modules,
                       left_in_layers=left_in_layers)  # fmt: skip
    if mtp_out:  # the MTP layers, numbered after the decoder's, left out whole: stored in the rest's format
        plan = replace(plan, shipped=replace(plan, roles=frozenset(), by_role=()))
    if _mixed_precision(qc):
        return _with_quantized_layers(plan, qc, shown, note, spec)
    return plan, note


# ModelOpt's quant_algo → what each quantized Linear stores: NVFP4's e2m1 with an e4m3 scale per 16
# and a float32 weight_scale_2 and input_scale per tensor; FP8's e4m3 with a float32 weight_scale
# and input_scale per tensor.
_MODELOPT = {
    "NVFP4": FORMATS["nvfp4"],
    "FP8": replace(
        FORMATS["fp8"], name="fp8-static", tensor_scale_bits=64, tensor_words=Message(N_("two fp32 per tensor (weight_scale, input_scale)"))
    ),
}

# ModelOpt's MIXED_PRECISION: `quantized_layers` names each quantized module and its quant_algo.
# W4A16_NVFP4 stores NVFP4's weights and weight_scale_2 without an input_scale; MXFP8 e4m3 with
# an e8m0 scale per 32.
_LAYER_ALGOS = {
    "NVFP4": FORMATS["nvfp4"],
    "W4A16_NVFP4": replace(
        FORMATS["nvfp4"], name="nvfp4-w4a16", tensor_scale_bits=32, tensor_words=Message(N_("one fp32 per tensor (weight_scale_2)"))
    ),
    "MXFP8": FORMATS["mxfp8"],
    "FP8": _MODELOPT["FP8"],
}
# A quantized_layers module path → its role: the first word it holds, in this order (a shared
# expert's path holds "experts" too; Nemotron-H's mixer is its Mamba's and its MLP's).
_LAYER_WORDS: tuple[tuple[str, str], ...] = (
    ("visual", "vision"),  # a tower's own attention and MLP, never the text model's
    ("vision", "vision"),
    ("shared_expert_gate", "router"),
    ("shared_expert", "shared"),
    ("experts", "experts"),
    ("latent_proj", "latent"),
    ("attn", "attention"),
    ("attention", "attention"),
    ("mixer.in_proj", "attention"),
    ("mixer.out_proj", "attention"),
    ("mixer.q_proj", "attention"),  # Nemotron-H's attention layers hold their projections in `mixer` too
    ("mixer.k_proj", "attention"),
    ("mixer.v_proj", "attention"),
    ("mixer.o_proj", "attention"),
    ("conv1d", "other"),  # a convolution: never quantized, in whatever list
    ("lm_head", "head"),
    ("embed", "embedding"),
    ("router", "router"),
    ("mlp.", "dense_ffn"),
    ("ffn.", "dense_ffn"),
    ("feed_forward.", "dense_ffn"),
    ("mixer.up_proj", "dense_ffn"),
    ("mixer.down_proj", "dense_ffn"),
)
_ROUTER_ENDS = (".gate", ".router")


def _covered(leaf: str, names: frozenset[str]) -> bool:
    """Whether a module's own name is one listed, or fuses listed ones: under their common prefix
    (the layout's in_proj_qkvz is the checkpoint's in_proj_qkv and in_proj_z; in_proj_ba is neither)
    or before their common suffix (gate_up_proj is gate_proj and up_proj; qkv_proj q, k and v's)."""
    if leaf in names:
        return True
    cut = leaf.rfind("_")
    if cut < 0:
        return False
    prefix, suffix = leaf[: cut + 1], leaf[cut:]
    heads = [n[len(prefix) :] for n in names if n.startswith(prefix) and len(n) > len(prefix)]
    stems = [n[: -len(suffix)] for n in names if n.endswith(suffix) and len(n) > len(suffix)]
    return _joined(leaf[len(prefix) :], heads) or _joined(leaf[:cut].replace("_", ""), [s.replace("_", "") for s in stems])


def _joined(text: str, parts: list[str]) -> bool:
    """Whether `text` is some of `parts`, each at most once, one after another."""
    if not text:
        return True
    return any(p and text.startswith(p) and _joined(text[len(p) :], parts[:i] + parts[i + 1 :]) for i, p in enumerate(parts))


def _mixed_precision(qc: Mapping[str, Any]) -> bool:
    return str(qc.get("quant_algo", "")).upper() == "MIXED_PRECISION"


def _layer_role(path: str) -> str | None:
    if path.endswith(_ROUTER_ENDS):
        return "router"
    return next((role for word, role in _LAYER_WORDS if word in path), None)


def _layer_format(path: str, entry: object) -> WeightFormat | None:
    """A quantized_layers entry's format; None where ffn does not read its quant_algo."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("quant_algo"), str):
        allowed = _('must be a JSON object naming its quant_algo, as {"quant_algo": "NVFP4"}')
        raise FFNError(f"quantization_config.quantized_layers.{path}", entry, allowed)
    fmt = _LAYER_ALGOS.get(entry["quant_algo"].upper())
    group = entry.get("group_size")
    if fmt is None or group is None or group == fmt.group or not fmt.group:  # a per-tensor format has no groups to size
        return fmt
    if not _is_int(group) or group <= 0:
        raise FFNError(f"quantization_config.quantized_layers.{path}.group_size", group, _("must be a positive integer"))
    return replace(fmt, name=f"{fmt.name}-g{group}", group=group)


def _with_quantized_layers(
    plan: StoragePlan, qc: Mapping[str, Any], shown: frozenset[str], note: Message | str, spec: ModelSpec | None
) -> tuple[StoragePlan | None, Message | str]:
    """ModelOpt's MIXED_PRECISION over `plan`: each role in the format its quantized_layers give it
    (DeepSeek-V4's NVFP4 checkpoint keeps its fp8 linears and stores the routed experts in NVFP4).
    A module ffn cannot place, a quant_algo it does not read, a role in two formats or a module
    listed in some of its layers only is said, and the weights priced in --dtype (no plan), never
    read as the listed format. The MTP layers, where no entry names them, keep `plan`'s formats."""
    layers = qc.get("quantized_layers")
    if layers is not None and not isinstance(layers, Mapping):
        raise FFNError(
            "quantization_config.quantized_layers",
            layers,
            _('must be a JSON object of module paths, as {"lm_head": {"quant_algo": "NVFP4"}}'),
        )
    if not layers:
        said = N_("quantization_config modelopt MIXED_PRECISION lists no quantized_layers: its weights are priced in --dtype instead")
        return None, Message(said)
    formats: dict[str, dict[str, WeightFormat]] = {}
    names: dict[str, set[str]] = {}  # each role's modules listed, by their own name
    in_layers: dict[str, dict[int, set[str]]] = {}  # and those listed in each layer (the MTP layers' apart)
    unplaced = []
    for path, entry in layers.items():
        fmt, role = _layer_format(str(path), entry), _layer_role(str(path))
        if fmt is None:
            said = N_(
                "quantization_config quantized_layers quant_algo {algo} is not read by ffn: its weights are priced in --dtype instead"
            )
            return None, Message(said, algo=repr(entry["quant_algo"]))
        if role is None or role == "vision":  # a tower is priced whole, never module by module
            unplaced.append(str(path))
            continue
        formats.setdefault(role, {})[fmt.name] = fmt
        names.setdefault(role, set()).add(str(path).rpartition(".")[2])
        layer = _LAYER_MODULE.search(str(path))
        if layer is not None and "mtp" not in str(path):
            in_layers.setdefault(role, {}).setdefault(int(layer.group(1)), set()).add(str(path).rpartition(".")[2])
    if unplaced:
        said = N_(
            "quantization_config quantized_layers {names}: ffn cannot say which tensors they are; its weights are priced in --dtype instead"
        )
        return None, Message(said, names=", ".join(unplaced[:3]) + (", …" if len(unplaced) > 3 else ""))
    for role, found in formats.items():
        if len(found) > 1:
            said = N_("quantization_config quantized_layers store the {role} in {formats}: its weights are priced in --dtype instead")
            return None, Message(said, role=Message(ROLE_WORDS[role]), formats=Message.listed(sorted(found)))
    partly = _listed_in_part(spec, in_layers, names) if spec is not None else None
    if partly is not None:
        part_role, module, at, not_at = partly
        role_words = Message(ROLE_WORDS[part_role])
        what = Message(N_("{module} ({role})"), module=module, role=role_words) if module else role_words
        said = N_("quantized_layers list the {what} of layers {listed}, not {missing}: its weights are priced in --dtype instead")
        return None, Message(said, what=what, listed=at, missing=not_at)
    by_role = {**dict(plan.by_role), **{role: next(iter(found.values())) for role, found in formats.items()}}
    mixing = any(word in str(path) for path in layers for word in ("linear_attn", "mixer."))  # a hybrid's: said as its table says
    words_of = {**ROLE_WORDS, "attention": MIXING_WORDS} if mixing else ROLE_WORDS
    listed = [Message(N_("{role} in {format}"), role=Message(words_of[r]), format=f.name) for r, f in by_role.items() if r in shown]
    roles = _listed(listed) or Message(N_("none"))
    if plan.roles or plan.by_role:  # over a method's own formats (DeepSeek-V4's fp8): the rest as it says
        words = Message(N_("; over these, ModelOpt's quantized_layers: {roles}"), roles=roles)
    else:
        words = Message(N_("; ModelOpt's quantized_layers: {roles}; the rest in {rest}"), roles=roles, rest=plan.rest.name)
    names_mtp = any("mtp" in str(path) for path in layers)
    by_name = tuple((role, frozenset(n)) for role, n in names.items() if role in _LEAF_ROLES)
    mixed = replace(plan, by_role=tuple(by_role.items()), origin=Message.join(plan.origin, words), shipped=None if names_mtp else plan,
                    listed=by_name)  # fmt: skip
    return mixed, note


def _listed_in_part(
    spec: ModelSpec, in_layers: Mapping[str, Mapping[int, set[str]]], names: Mapping[str, set[str]]
) -> tuple[str, str, str, str] | None:
    """A tensor quantized_layers lists in some of the layers that hold it and not in others (a
    module by its own name, where the role is listed so; else the role): ffn gives a tensor of
    the model one format, so it says so (the role, both sets of layers in words) rather than price
    the rest as the listed ones. A module never listed is the rest's, not this."""
    for t in _layer_matrices(spec):
        at = in_layers.get(t.role)
        if at is None or t.layers is None:
            continue
        leaf = leaf_of(t.role, t.name)
        if leaf and not _covered(leaf, frozenset(names[t.role])):
            continue
        missing = tuple(i for i in t.layers if (not _covered(leaf, frozenset(at.get(i, ()))) if leaf else i not in at))
        if missing:
            listed = tuple(i for i in t.layers if i not in missing)
            return t.role, leaf, layer_ranges(listed) if listed else Message(N_("none")).shown(), layer_ranges(missing)
    return None


# config.json's expert_dtype → the routed experts' format: DeepSeek-V4's reference model stores them
# as float4_e2m1fn_x2 with a float8_e8m0fnu scale per 32 along the input, MXFP4's layout.
_EXPERT_DTYPES = {"fp4": "mxfp4"}


def _expert_dtype(config: Mapping[str, Any], qc: Mapping[str, Any]) -> tuple[tuple[tuple[str, WeightFormat], ...], Message | str]:
    """The routed experts' own format where config.json names one (`expert_dtype`, at the top or in
    quantization_config), and the words that say so; an fp8 or absent one adds nothing."""
    said = config.get("expert_dtype", qc.get("expert_dtype"))
    if said is None or str(said).lower() in ("fp8", "", "none"):
        return (), ""
    name = _EXPERT_DTYPES.get(str(said).lower())
    if name is None:
        raise FFNError("expert_dtype", said, _("choose fp4 or fp8"))
    return (("experts", FORMATS[name]),), Message(N_("; routed experts in {format} (expert_dtype {said})"), format=name, said=str(said))


def shipped_words(parts: tuple[str, ...]) -> Message | str:
    """What a checkpoint ships beside the model (PART_WORDS' keys), as a list in the reader's language."""
    return _listed([Message(PART_WORDS[p]) for p in parts])


def _listed(words: list[Message]) -> Message | str:
    """Role words in a list, each said in the reader's language; none: nothing."""
    return Message.listed(words) if words else ""


def _made_by_gptqmodel(qc: Mapping[str, Any]) -> bool:
    """GPTQModel names itself in quantization_config.meta.quantizer; AutoGPTQ wrote no meta, and
    a zero bias for every linear that GPTQModel leaves out."""
    meta = qc.get("meta")
    quantizer = meta.get("quantizer", "") if isinstance(meta, Mapping) else ""
    names = quantizer if isinstance(quantizer, list) else [quantizer]
    return any(str(n).lower().startswith("gptqmodel") for n in names)


def _integer(qc: Mapping[str, Any], keys: tuple[str, str], default: int) -> int:
    """The first of `keys` the config holds (GPTQ's name, then AWQ's), refused unless an integer."""
    key = next((k for k in keys if k in qc), keys[0])
    value = qc.get(key, default)
    if not _is_int(value):
        raise FFNError(f"quantization_config.{key}", value, _("must be an integer"))
    return int(value)


def _integer_config(method: str, qc: Mapping[str, Any]) -> WeightFormat | str:
    """GPTQ's or AWQ's format from its quantization_config, or why it is not read."""
    bits = _integer(qc, ("bits", "w_bit"), 4)
    group = _integer(qc, ("group_size", "q_group_size"), 128)
    if group == 0 or group < -1:
        return Message(N_("quantization_config {method} bits {bits}, group_size {group} not read"), method=method, bits=bits, group=group)
    if method == "gptq":
        if bits not in (2, 3, 4, 8):
            return Message(N_("quantization_config gptq bits {bits} not read"), bits=bits)
        return gptq(bits, group, zero_biases=not _made_by_gptqmodel(qc))
    version = str(qc.get("version", "gemm")).lower()
    if bits != 4 or group < 1 or version != "gemm" or qc.get("zero_point", True) is not True:
        zero = qc.get("zero_point", True)
        said = N_("quantization_config awq (bits {bits}, group_size {group}, version {version}, zero_point {zero}) not read")
        return Message(said, bits=bits, group=group, version=version, zero=zero)
    return awq(group)


@dataclass(frozen=True)
class Checkpoint:
    """The bytes of every tensor under a plan, by role and format."""

    plan: StoragePlan
    tensors: tuple[WeightTensor, ...]
    mixer: bool = False  # the attention role holds a mixer's projections too
    towers: str = ROLE_WORDS["vision"]  # the towers the vision role holds, in words: an omni model's "towers and speech output"

    def words(self, role: str) -> str:
        """What a role's row holds, in words (an English id)."""
        if role == "vision":
            return self.towers
        return MIXING_WORDS if role == "attention" and self.mixer else ROLE_WORDS[role]

    def bits_of(self, t: WeightTensor) -> int:
        return self.plan.format_of(t).tensor_bits(t.shape) * t.count

    @property
    def bytes_(self) -> int:
        return ceil(sum(self.bits_of(t) for t in self.tensors) / 8)

    def quantized(self, t: WeightTensor) -> bool:
        """Stored in a format of its own, not the rest's (a module a list leaves out is not)."""
        return not t.stored and self.plan.quantizes(t.role) and self.plan.format_of(t) != self.plan.rest

    @property
    def quantized_params(self) -> int:
        return sum(t.params for t in self.tensors if self.quantized(t))

    @property
    def rest_params(self) -> int:
        return sum(t.params for t in self.tensors if not self.quantized(t))

    @property
    def shipped_params(self) -> int:
        """Parameters the checkpoint ships beside the model's own (its MTP layers)."""
        return sum(t.params for t in self.tensors if t.part)

    @property
    def shipped_parts(self) -> tuple[str, ...]:
        """What the checkpoint ships beside the model's own, in the order it stores them (PART_WORDS' keys)."""
        return tuple(dict.fromkeys(t.part for t in self.tensors if t.part))

    @property
    def total_params(self) -> int:
        return sum(t.params for t in self.tensors)

    def role_bytes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.role] = out.get(t.role, 0) + self.bits_of(t)
        return {role: ceil(bits / 8) for role, bits in out.items()}


def _has_linear_biases(spec: ModelSpec) -> bool:
    attentions = [spec.attention, *(k.attention for k in spec.attention_kinds)]
    ffns = [f for f, _layers in spec.dense_groups] + ([spec.moe_ffn] if spec.moe_ffn is not None else [])
    biased = any(bool(getattr(a, name, False)) for a in attentions for name in ("qkv_bias", "o_bias", "bias"))
    return biased or any(bool(f.bias) for f in ffns)


def checkpoint(spec: ModelSpec, plan: StoragePlan, shipped: tuple[WeightTensor, ...] = ()) -> Checkpoint:
    """The model's tensors under `plan`, and `shipped`: what the checkpoint holds beside them.
    A format that stores a zero bias per quantized linear (AutoGPTQ's) adds none to a model with
    biases of its own: those are its tensors already, stored as they are."""
    if plan.fmt.row_bias_bits and _has_linear_biases(spec):
        plan = replace(plan, fmt=replace(plan.fmt, row_bias_bits=0))
    tensors = [*weight_tensors(spec), *shipped]
    for role, name, at in plan.left_in_layers:  # a module left out in some of its layers: those layers' share apart
        tensors = [piece for t in tensors for piece in _split_at(t, role, name, at)]
    mtp = [t for t in shipped if t.part == "mtp" and not t.stored]
    if plan.shipped is not None and mtp:  # the layers quantized_layers does not list: say their formats
        kept = Message.listed(sorted({plan.format_of(t).name for t in mtp}))
        said = Message(N_("; the multi-token prediction layers in {formats}"), formats=kept)
        plan = replace(plan, origin=Message.join(plan.origin, said))
    return Checkpoint(plan, tuple(tensors), mixer=spec.mixer is not None, towers=towers_words(spec))


def _split_at(t: WeightTensor, role: str, name: str, at: frozenset[int]) -> tuple[WeightTensor, ...]:
    """`t` as the tensors of its layers in `at` and of the rest, where it is `role`'s module `name`
    and straddles them (each of its layers holds count / layers of it)."""
    inside = tuple(i for i in t.layers if i in at)
    if t.role != role or t.leaf != name or not inside or len(inside) == len(t.layers):
        return (t,)
    each = t.count // len(t.layers)
    outside = tuple(i for i in t.layers if i not in at)
    return replace(t, count=each * len(inside), layers=inside), replace(t, count=each * len(outside), layers=outside)


def towers_words(spec: ModelSpec) -> str:
    """The model's towers in words (an English id): "vision tower", "vision and audio towers", an
    omni model's "towers and speech output"."""
    return towers_named(spec.vision.runs_on) if spec.vision is not None else ROLE_WORDS["vision"]
