"""What counting a model by building it finds: its parts by the attribution rule, its routed
experts, the exact total; and a layout read from built layers. Torch-free, shared by the builder (meta_build.py, torch and
transformers) and everything that reads its result (fallback.py, render/built.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ffn_cli.configs.attribution import RULES, BuiltKind
from ffn_cli.i18n import N_, Message
from ffn_cli.models.spec import ModelSpec
from ffn_cli.models.vision import TowerInput, towers_named

__all__ = [
    "PART_NAMES",
    "SOURCE_KEPT",
    "SOURCE_UNSAID",
    "TOWERS",
    "TOWER_RUNS_ON",
    "TOWER_WORDS",
    "BuiltLayout",
    "BuiltModel",
    "BuiltPart",
    "RoutedExperts",
    "Towers",
    "described_towers",
]

# What an encoder-decoder's decoder keeps of a source, said beside its layout: the most its encoder
# hands on; a length no key names (T5's relative positions, TrOCR's decoder alone); the length asked.
SOURCE_KEPT = N_(
    "each decoder layer's cross-attention keeps the keys and values of a source of {tokens} tokens ({key}), the most the "
    "encoder hands on (--source-len N sizes a shorter one); their projections of the source, as {encoder}, run once a source, "
    "not by a token decoded"
)
SOURCE_UNSAID = N_(
    "each decoder layer's cross-attention keeps the keys and values of the encoder's output, whose length the config "
    "does not say: --source-len N sizes what they keep and a token's scores over them, else they are left out; their "
    "projections of the source (k_proj, v_proj) run once a source, not by a token decoded"
)
_SOURCE_GIVEN = N_(
    "each decoder layer's cross-attention keeps the keys and values of a source of {tokens} tokens (--source-len); their "
    "projections of the source (k_proj, v_proj) run once a source, not by a token decoded"
)

# A tower a config describes beside its text model (its vision_config's, its audio_config's), the words
# a built module's name has for it, and what it runs on instead of a text token; a projector into the
# text model's width (multi_modal_projector, Kimi K2.5's mm_projector) is a tower's where the config
# describes one. A model's speech output is one too (Qwen2.5-Omni's and Qwen3-Omni's talker, a decoder
# of its own that turns the text model's states into speech codes, and the vocoder after it): it runs
# on the speech the model speaks.
TOWERS: dict[str, tuple[TowerInput, tuple[str, ...]]] = {
    "vision_config": ("images", ("vision", "visual", "image", "video", "resampler")),
    "audio_config": ("audio", ("audio",)),
    "talker_config": ("speech", ("talker",)),
    "token2wav_config": ("speech", ("token2wav",)),
    "code2wav_config": ("speech", ("code2wav",)),
    # VibeVoice's: a diffusion head that draws each speech latent, and the semantic tokenizer that reads it back
    "diffusion_head_config": ("speech", ("diffusion",)),
    "semantic_model_config": ("speech", ("semantic",)),
}
TOWER_WORDS = {key: words for key, (_runs_on, words) in TOWERS.items()}
TOWER_RUNS_ON = {key: runs_on for key, (runs_on, _words) in TOWERS.items()}


_PROJECTOR = "projector"  # a tower's projector into the text model's width (multi_modal_projector, mm_projector)
_SPOKEN = "decoder"  # an acoustic tokenizer's half that writes the waveform


def described_towers(config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The towers a config describes, by key: its own (Gemma 4's vision_config), and those of a
    model nested in it (Qwen3-Omni's thinker_config holds its vision_config and audio_config)."""
    found = {k: v for k, v in config.items() if k in TOWER_WORDS and isinstance(v, Mapping)}
    for key, value in config.items():
        if key.endswith("_config") and key not in TOWER_WORDS and isinstance(value, Mapping):
            found |= {k: v for k, v in value.items() if k in TOWER_WORDS and k not in found and isinstance(v, Mapping)}
    return found


@dataclass(frozen=True)
class Towers:
    """The towers a config describes (its vision_config's, its audio_config's, an omni model's
    talker and vocoder), read once: where a built module sits in one, and what that one runs on.
    Counting by building and the layout both place towers so."""

    keys: tuple[str, ...]  # the TOWERS keys the config describes

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> Towers:
        return cls(tuple(described_towers(config)))

    @property
    def speaks(self) -> bool:
        """Whether the model has a speech output (a talker, a vocoder, a diffusion head)."""
        return any(TOWER_RUNS_ON[key] == "speech" for key in self.keys)

    def path(self, path: str) -> str | None:
        """The module a tower is built as, where `path` sits in one: the shortest start of the path
        whose last name is a tower's (model.vision_tower, Kosmos-2.5's vision_model at the root,
        Phi-4-multimodal's model.embed_tokens_extend.image_embed); None for a module of the text model.
        A speaking model's audio tower's decoder is a part of its own (VibeVoice's acoustic tokenizer)."""
        names = path.split(".")
        found = next((i for i, name in enumerate(names) if self._runs_on(name) is not None), None)
        if found is None:
            return None
        spoken = self._spoken(names[found], names[found + 1] if found + 1 < len(names) else "")
        return ".".join(names[: found + (2 if spoken else 1)])

    def runs_on(self, top: str) -> TowerInput:
        """What the tower built as module `top` (a `path`) runs on."""
        parent, _dot, name = top.rpartition(".")
        if self._spoken(parent.rpartition(".")[2], name):
            return "speech"
        return self._runs_on(name) or "images"

    def _spoken(self, tower: str, child: str) -> bool:
        """A speaking model's acoustic tokenizer (VibeVoice's audio tower): its encoder reads the voice
        given, its decoder turns the latents the model draws into the waveform it speaks."""
        return child == _SPOKEN and self.speaks and self._runs_on(tower) == "audio"

    def _runs_on(self, name: str) -> TowerInput | None:
        """What the tower whose module is named `name` runs on, by the words of the towers described;
        a projector, on the input its towers read (audio where no vision tower is described: MOSS's)."""
        lowered = name.lower()
        found = [TOWER_RUNS_ON[key] for key in self.keys if any(w in lowered for w in TOWER_WORDS[key])]
        if found:
            return found[0]
        inputs = [TOWER_RUNS_ON[key] for key in self.keys if TOWER_RUNS_ON[key] in ("images", "audio")]
        if _PROJECTOR in lowered and inputs:
            return "images" if "images" in inputs else "audio"
        return None


PART_NAMES: dict[BuiltKind, str] = {
    "vision": N_("vision tower"),
    "embedding": N_("embeddings"),
    "attention": N_("attention"),
    "ffn": N_("FFN"),
    "norm": N_("norms"),
    "head": N_("head"),
    "pooler": N_("pooler"),
    "other": N_("other"),
}


@dataclass(frozen=True)
class BuiltPart:
    """Every parameter the rule put in one kind, and the modules (layer indices as *) it came from."""

    kind: BuiltKind
    params: int
    modules: tuple[str, ...]
    inactive_params: int = 0  # routed experts a token does not visit

    @property
    def name(self) -> str:
        """Its row's name: the towers by what they run on, as their modules say ("audio_tower";
        "vision_tower", "visual"; a projector says neither)."""
        if self.kind == "vision":
            held = frozenset(
                TOWER_RUNS_ON[k] for k, words in TOWER_WORDS.items() if any(w in m.lower() for m in self.modules for w in words)
            )
            return towers_named(held or frozenset({"images"}))
        return PART_NAMES[self.kind]

    @property
    def active_params(self) -> int:
        return self.params - self.inactive_params


@dataclass(frozen=True)
class RoutedExperts:
    """The routed experts containers of one part (one or two per MoE layer), and what routes a
    token.

    `experts` is None when the containers disagree or their tensors do not show the count;
    `top_k` is None when no config key names it. Either makes the active count unknown. A
    config that names the experts per token per layer (Hunyuan's `moe_topk: [8, 8, …]`) gives
    `layer_top_k`, one value per container in layer order, when the values differ; `top_k_problem`
    says why a key that is present could not be used. `zero_experts` are zero-computation
    (identity) experts in the router's pool beside the `experts` (LongCat-Flash's
    `zero_expert_num`): a pick that lands on one costs no parameters, so what a token touches is
    a range, from `least_active_params` to `active_params` (every pick a real expert).
    """

    kind: BuiltKind
    modules: tuple[str, ...]
    containers: int
    params: int
    experts: int | None
    top_k: int | None
    top_k_key: str | None
    layer_top_k: tuple[int, ...] = ()
    top_k_problem: Message | None = None
    zero_experts: int = 0

    @property
    def least_active_params(self) -> int | None:
        """The fewest a token touches: as many picks as the zero experts can take land on them
        (all of them when there are at least k)."""
        most = self.active_params
        if most is None or self.experts is None or not self.zero_experts:
            return most
        ks = self.layer_top_k or (self.top_k,) * self.containers
        each = self.params // self.containers // self.experts
        return sum(each * max(0, k - self.zero_experts) for k in ks if k is not None)

    @property
    def mean_active_params(self) -> int | None:
        """What a token touches on average when the router picks each expert of its pool, real
        or zero-computation, equally often: k · E / (E + Z) real experts a layer (LongCat-Flash:
        12 · 512 / 768 = 8), computed from the config alone; active_params without zero experts."""
        most = self.active_params
        if most is None or self.experts is None or not self.zero_experts:
            return most
        ks = self.layer_top_k or (self.top_k,) * self.containers
        each = self.params // self.containers // self.experts
        pool = self.experts + self.zero_experts
        return round(sum(Fraction(each * k * self.experts, pool) for k in ks if k is not None))

    @property
    def active_params(self) -> int | None:
        """What one token touches: k of E equal experts, when both are known (summed per
        container when k differs by layer)."""
        if self.experts is None or self.params % self.experts:
            return None
        if self.layer_top_k:
            each, rest = divmod(self.params, self.containers)
            if rest or len(self.layer_top_k) != self.containers or each % self.experts or max(self.layer_top_k) > self.experts:
                return None
            return sum(each // self.experts * k for k in self.layer_top_k)
        if self.top_k is None or self.top_k > self.experts:
            return None
        return self.params // self.experts * self.top_k

    @property
    def top_k_text(self) -> Message:
        """top-8, or top-2–8 by layer."""
        if self.layer_top_k:
            return Message(N_("top-{least}–{most} by layer"), least=min(self.layer_top_k), most=max(self.layer_top_k))
        return Message(N_("top-{k}"), k=self.top_k)

    @property
    def unknown_because(self) -> Message | None:
        if self.experts is None:
            return Message(N_("the number of experts per container cannot be read from the built modules"))
        if self.top_k_problem is not None:
            return self.top_k_problem
        if self.top_k is None and not self.layer_top_k:
            return Message(N_("no config key names the experts per token (num_experts_per_tok, moe_top_k, …)"))
        if self.active_params is None:
            return Message(
                N_("{params} parameters do not split into {experts} equal experts with {top_k}"),
                params=f"{self.params:,}",
                experts=self.experts,
                top_k=self.top_k_text,
            )
        return None


@dataclass(frozen=True)
class BuiltModel:
    """A model counted from its modules: the exact total, the parts by the rule, the routing."""

    name: str
    model_type: str
    source: str
    model_class: str
    transformers_version: str
    parts: tuple[BuiltPart, ...]
    routed: tuple[RoutedExperts, ...] = ()  # one per part that holds routed experts
    n_layers: int | None = None
    d_model: int | None = None
    vocab_size: int | None = None
    notes: tuple[str, ...] = ()
    cached_from: str = ""  # the cache file these counts were read from (ffn_cli.configs.built_cache)

    @property
    def total_params(self) -> int:
        return sum(p.params for p in self.parts)

    @property
    def active_params(self) -> int | None:
        """Parameters one token touches; None when routed experts were found but their routing
        cannot be read; the total when there are none."""
        if any(r.active_params is None for r in self.routed):
            return None
        return sum(p.active_params for p in self.parts if p.kind != "vision")  # a tower runs on images, not on a text token

    @property
    def least_active_params(self) -> int | None:
        """The fewest parameters one token touches: active_params, less what zero-computation
        experts can take from the routed picks (the same as active_params without them)."""
        active = self.active_params
        if active is None:
            return None
        # Every routed part's count is known here: active_params is None otherwise.
        return active - sum((r.active_params or 0) - (r.least_active_params or 0) for r in self.routed)

    @property
    def mean_active_params(self) -> int | None:
        """The parameters one token touches on average when its routers pick each expert of their
        pools, real or zero-computation, equally often (RoutedExperts.mean_active_params)."""
        active = self.active_params
        if active is None:
            return None
        return active - sum((r.active_params or 0) - (r.mean_active_params or 0) for r in self.routed)

    def part(self, kind: BuiltKind) -> BuiltPart | None:
        return next((p for p in self.parts if p.kind == kind), None)

    def params_of(self, kind: BuiltKind) -> int:
        part = self.part(kind)
        return part.params if part is not None else 0

    @property
    def rules(self) -> tuple[tuple[BuiltKind, str], ...]:
        return RULES


@dataclass(frozen=True)
class BuiltLayout:
    """A model no reader knows, laid out from one built decoder layer of each kind
    (ffn_cli.configs.layer_read): the same ModelSpec a reader gives, and what its answer leaves out.

    `kinds` says, one pair a layer kind, which layers it covers and what was read from its
    modules ("beside" for what sits beside the layers); `left_out` names each thing built that no part of the spec sizes (a cache, a
    state, a tower), so an answer folded over the spec says it is missing rather than count it
    as something else."""

    spec: ModelSpec
    config: Mapping[str, Any]
    source: str
    windows: tuple[int | None, ...]
    chunks: tuple[int | None, ...]
    kinds: tuple[tuple[str, str], ...] = ()
    left_out: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    causal: bool = True
    # Work built that no FLOP count sizes (Inkling's relative-position logits): the roofline's to
    # name, not the memory's, which it does not touch.
    flops_left_out: tuple[str, ...] = ()
    # Tokens the model's forward puts before every sequence (CPM-Ant's soft prompt), run and cached
    # as the text's own: every length sized counts them, a note says so.
    prefix_tokens: int = 0
    # Parts a checkpoint holds that the model as transformers builds it does not (Moshi's
    # depth_decoder_config, Kyutai STT's codec_config; lm_head where the class builds no head):
    # named in the notes, and beside the memory's checkpoint bytes, which leave them out.
    not_built: tuple[str, ...] = ()

    def with_source_len(self, tokens: int) -> BuiltLayout:
        """The layout decoding against a source of `tokens` tokens (--source-len), its note saying so."""
        said = (SOURCE_KEPT, SOURCE_UNSAID)
        notes = tuple(n for n in self.notes if not (isinstance(n, Message) and n.msgid in said))
        given = Message(_SOURCE_GIVEN, tokens=f"{tokens:,}")
        return replace(self, spec=self.spec.with_source_tokens(tokens), notes=(*notes, given))
