"""What `ffn params` and `ffn_cli.params(...)` are asked, checked once: which answer (the
presets, whole models, one FFN on a GPU, per-rank counts, one FFN or a comparison), and every
option that answer would ignore refused, by the rules declared below."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from ffn_cli.attention import AttentionSpec
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.models.layer import check_dtype
from ffn_cli.requests.choices import Phase, check_choice
from ffn_cli.requests.lists import check_ints, check_names, check_paths, comma_text
from ffn_cli.requests.rules import Conflicts, Needs, Rule, Unused, check_rules, given_options
from ffn_cli.spec import FFNSpec, check_int, spec_options

if TYPE_CHECKING:
    from ffn_cli.attention import AttentionSpec
    from ffn_cli.requests.ffn import FFNChoice

__all__ = ["ParamsAnswer", "ParamsRequest"]

# The answers `ffn params` gives: the presets, whole models, one FFN on a GPU, per-rank counts,
# one FFN, variants side by side.
ParamsAnswer = Literal["presets", "models", "ffn_gpu", "ranks", "ffn", "comparison"]

MODEL = ("preset", "config", "model")  # the options that name a whole model
ATTENTION = ("n_heads", "n_kv_heads", "head_dim", "attn_bias", "match_params")
# FFN options that change the module's values but no count: params refuses them rather than ignore them.
VALUES_ONLY = tuple(opt.name for opt in spec_options().values() if opt.values_only)
# At its default such an option changes nothing, so nothing is ignored: `--dropout 0` is accepted.
_VALUES_ONLY_DEFAULTS = tuple((opt.name, f.default) for f in fields(FFNSpec) if (opt := spec_options().get(f.name)) and opt.values_only)
EVERY_FFN_OPTION = tuple(opt.name for opt in spec_options().values())

_READS_EVERY_SIZE = N_("sizes one FFN; --config, --preset and --model read every size from the model")
_WHOLE_MODEL = N_("applies to a whole model: give --preset, --config or --model")
EXPLAINS_ONE = N_("explains one FFN or one model: give one --variant, or one model")

# A whole model: it sets every size itself.
_MODEL_RULES: tuple[Rule, ...] = (
    Conflicts(EVERY_FFN_OPTION, MODEL, _READS_EVERY_SIZE),
    Conflicts(ATTENTION, MODEL, _READS_EVERY_SIZE),
)
_ONE_PASS_SIZE = Conflicts("tokens", "batch", N_("is the pass's size itself: give --tokens or --batch, not both"))
# What a model costs: the pass is the roofline's, on --gpu.
_COST_RULES: tuple[Rule, ...] = (
    Needs(("batch", "tokens"), "gpu", N_("sizes the roofline's pass: add --gpu NAME")),
    Needs("backward", "gpu", N_("adds the backward to the roofline: add --gpu NAME")),
    Needs("plot", "gpu", N_("draws the roofline's batch sweep: add --gpu NAME")),
    Needs("phase", "gpu", N_("chooses the roofline's pass: add --gpu NAME")),
    # what a decoder keeps of a source and its scores over it: the decode state's and the FLOPs over --seq-len
    Needs(
        "source_len",
        ("gpu", "seq_len"),
        N_("sizes what decoding keeps of a source and a token's scores over it: add --gpu NAME or --seq-len"),
    ),
    # The backward and the plot are of one GPU's whole pass: not split over --tp / --ep.
    Conflicts(
        ("backward", "plot"),
        ("tp", "ep"),
        N_("counts one GPU running the whole pass; per GPU under --tp / --ep it is not counted: drop --tp / --ep"),
    ),
    _ONE_PASS_SIZE,
)
# One FFN on a GPU: its roofline, no model's storage or layout.
_FFN_GPU_RULES: tuple[Rule, ...] = (
    Needs(("weights", "quantize", "backward", "plot", "no_mtp", "source_len", "tp", "ep"), MODEL, _WHOLE_MODEL),
    _ONE_PASS_SIZE,
)
# One FFN, or several side by side: its counts.
_FFN_RULES: tuple[Rule, ...] = (
    Needs(("weights", "quantize", "gpu", "batch", "tokens", "backward", "plot", "no_mtp", "source_len"), MODEL, _WHOLE_MODEL),
    Needs("phase", MODEL, _WHOLE_MODEL),
    Needs("revision", "model", N_("applies to --model (a Hub model id)")),
    Needs("no_cache", MODEL, N_("applies to --config, --preset and --model")),
    Unused(VALUES_ONLY, N_("changes the values, not one count or FLOP; ffn trace runs it"), allowed=_VALUES_ONLY_DEFAULTS),
)
# Per-rank counts (--tp / --ep of one FFN): of the FFN's matrices alone.
_RANK_RULES: tuple[Rule, ...] = (
    Unused("explain", EXPLAINS_ONE),
    Unused("seq_len", N_("per-rank counts hold no sequence; drop it or --tp / --ep")),
    Unused(ATTENTION, N_("per-rank counts are of the FFN alone; drop it or --tp / --ep")),
)
# A comparison of several FFNs (or --match-params): one table, no FFN's own detail.
_COMPARISON_RULES: tuple[Rule, ...] = (
    Unused("explain", EXPLAINS_ONE),
    Unused("seq_len", N_("FLOPs over length are of one FFN or of models: give one --variant")),
)


@dataclass(frozen=True)
class ParamsRequest:
    """The options of `ffn params`, by field name as the options are named (`--no-mtp` is
    `no_mtp`), checked as the request is made. `ffn`: the FFN options (a parsed FFNOptions, or
    OneSpec for the API); `preset`, `config`, `model`: the models named, side by side (tuples);
    `typed`: the options typed on the command line (see rules.given_options). Made, it knows its
    answer (`kind`) and what that answer reads: `specs`, `attention`, `seq_lens`, `count_dtype`."""

    ffn: FFNChoice | None = None
    n_heads: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    attn_bias: bool | None = None
    match_params: bool = False
    config: tuple[str, ...] | None = None
    preset: tuple[str, ...] | None = None
    model: tuple[str, ...] | None = None
    revision: str | None = None
    list_presets: bool = False
    no_cache: bool = False
    seq_len: tuple[int, ...] | None = None
    dtype: str | None = None
    tp: int = 1
    ep: int = 1
    weights: str | None = None
    quantize: str | None = None
    no_mtp: bool = False
    source_len: int | None = None
    gpu: str | None = None
    batch: tuple[int, ...] | None = None
    tokens: int | None = None
    phase: Phase = "prefill"
    backward: bool = False
    plot: str | None = None
    explain: bool = False
    typed: frozenset[str] = frozenset()
    # What the checks found, for the service.
    kind: ParamsAnswer = field(init=False, default="ffn")
    specs: tuple[FFNSpec, ...] = field(init=False, default=())
    attention: AttentionSpec | None = field(init=False, default=None)
    seq_lens: tuple[int, ...] = field(init=False, default=())
    count_dtype: str = field(init=False, default="")
    given: dict[str, Any] = field(init=False, default_factory=dict, compare=False, repr=False)  # rules.given_options

    def __post_init__(self) -> None:
        for name in ("seq_len", "batch"):
            if getattr(self, name) is not None:
                self._set(name, check_ints(name, getattr(self, name)))
        if self.source_len is not None:
            check_int("source_len", self.source_len)
        # The models side by side: presets and model ids are names, config files paths as given.
        for name, check in (("preset", check_names), ("config", check_paths), ("model", check_names)):
            if getattr(self, name) is not None:
                self._set(name, check(name, getattr(self, name)))
        self._set("phase", check_choice("phase", self.phase, Phase))
        given = self._given()
        self._set("given", given)
        if self.list_presets:
            others = tuple(name for name in given if name != "list_presets")
            check_rules([Unused(others, N_("--list-presets lists every preset alone"))], given)
            return self._found("presets")
        # With --gpu, --seq-len sizes the roofline's pass instead of listing lengths to count FLOPs at.
        if self.seq_len is not None and self.gpu is None:
            self._set("seq_lens", self.seq_len)
        if self.names_model:
            check_rules(_MODEL_RULES, given)
            self._set("count_dtype", _check_dtype("bfloat16" if self.dtype is None else self.dtype))
            check_rules(_COST_RULES, given)
            return self._found("models")
        ffn = self._ffn()
        if self.gpu is not None:
            check_rules(_FFN_GPU_RULES, given)
            variants, widths = ffn.variants(), ffn.d_model
            if len(variants) != 1 or len(widths) != 1:
                raise FFNError("gpu", self.gpu, _("times one FFN: give one --variant and one --d-model"))
            self._set("specs", (ffn.spec(variants[0], widths[0], fused_gate_up=ffn.fused),))
            self._set("count_dtype", _check_dtype("float32" if self.dtype is None else self.dtype))
            return self._found("ffn_gpu")
        check_rules(_FFN_RULES, given)
        self._set("specs", tuple(_ffn_specs(ffn)))
        if self.tp != 1 or self.ep != 1:
            check_rules(_RANK_RULES, given)
            self._set("count_dtype", _check_dtype("float32" if self.dtype is None else self.dtype))
            return self._found("ranks")
        self._set("attention", self._attention())
        self._set("count_dtype", _check_dtype("float32" if self.dtype is None else self.dtype))
        if len(self.specs) == 1 and not self.match_params:
            return self._found("ffn")
        check_rules(_COMPARISON_RULES, given)
        if self.match_params and len(self.specs) < 2:
            raise FFNError("match_params", True, _("needs two or more variants, e.g. --variant relu,swiglu"))
        return self._found("comparison")

    @property
    def names_model(self) -> bool:
        return self.config is not None or self.preset is not None or self.model is not None

    def _given(self) -> dict[str, Any]:
        options = [f for f in fields(self) if f.init and f.name not in ("ffn", "typed")]
        values = {f.name: getattr(self, f.name) for f in options}
        ffn_typed = self.ffn.typed() if self.ffn is not None else {}
        return ffn_typed | given_options(values, {f.name: f.default for f in options}, self.typed)

    def _ffn(self) -> FFNChoice:
        if self.ffn is None:
            raise ValueError("a request for one FFN or a comparison names its FFN: ffn=FFNOptions or OneSpec(spec)")
        return self.ffn

    def _attention(self) -> AttentionSpec:
        """One attention for the whole table, whatever the order of the list: biased when
        every FFN is (the tutorial's block), else not, unless --attn-bias says."""

        bias = all(bool(s.bias) for s in self.specs) if self.attn_bias is None else self.attn_bias
        d_model = self.specs[0].d_model
        return AttentionSpec(d_model, n_heads=self.n_heads, n_kv_heads=self.n_kv_heads, head_dim=self.head_dim, qkv_bias=bias, o_bias=bias)

    def _found(self, kind: ParamsAnswer) -> None:
        self._set("kind", kind)

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # a frozen dataclass sets what its checks found once


def _check_dtype(dtype: str) -> str:
    return check_dtype(dtype)


def _ffn_specs(ffn: FFNChoice) -> list[FFNSpec]:
    """The FFNs to count, at one width; --fused where a variant reads it."""
    widths = ffn.d_model
    if len(widths) > 1:
        why = _("ffn params compares variants at one width; give one --d-model (ffn bench sweeps)")
        raise FFNError("d_model", comma_text(ffn.d_model), why)
    specs = [ffn.spec(name, widths[0], fused_gate_up=False) for name in ffn.variants()]
    specs = [s.with_(fused_gate_up=True) if ffn.fused and "fused_gate_up" in s.info.options_used(s) else s for s in specs]
    ffn.check_used(specs)
    # --fused is dropped for variants it cannot apply to in a comparison; alone it must apply.
    if ffn.fused and not any(s.fused_gate_up for s in specs):
        raise FFNError("fused_gate_up", True, _("needs a gated variant or a gated expert variant"))
    return specs
