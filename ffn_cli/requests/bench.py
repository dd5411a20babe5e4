"""What `ffn bench` and `ffn_cli.bench(...)` are asked, checked once: the timing options, the
implementations, a model's layer or the FFNs of the options, and, under --tp / --ep, every option
the sharded timing would ignore refused, by the rules declared below."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from ffn_cli.device_name import check_run_dtype
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.outputs import check_plot_file
from ffn_cli.requests.ffn import FFNChoice
from ffn_cli.requests.lists import parse_int_list, parse_list
from ffn_cli.requests.parallel import RANK_TIMEOUT_RULE, check_rank_timeout
from ffn_cli.requests.rules import Conflicts, Needs, Rule, Unused, check_rules, given_options
from ffn_cli.spec import FFNSpec, check_int

__all__ = ["BenchAnswer", "BenchRequest"]

BenchAnswer = Literal["sweep", "parallel"]  # a sweep of cases, or one sharded forward under --tp / --ep

MODEL = ("preset", "config", "model")  # the options that name a model, whose layer is timed
DEFAULT_MIN_TIME = 0.5  # seconds of timed calls per case, when neither --repeats nor --min-time says
MAX_MIN_TIME = 3600.0

# Every request.
_RULES: tuple[Rule, ...] = (
    Conflicts("repeats", "min_time", N_("give --repeats or --min-time, not both")),
    Conflicts(
        "impl", ("fused", "compile", "compile_mode"), N_("--impl replaces --fused, --compile and --compile-mode; give one or the other")
    ),
    RANK_TIMEOUT_RULE,
)
# No model named: the FFNs of the options.
_NO_MODEL_RULES: tuple[Rule, ...] = (
    Needs(("layer", "revision"), MODEL, N_("picks a layer of a model: give --preset, --config or --model")),
)
# --tp / --ep: one eager sharded forward, timed by --repeats and --warmup-ms alone.
_PARALLEL_RULES: tuple[Rule, ...] = (
    Unused(
        ("backward", "checkpoint", "impl", "fused", "compile", "cache", "calibrate", "min_time", "threads", "plot"),
        N_("--tp / --ep time the eager sharded forward alone (--repeats, --warmup-ms); drop it"),
    ),
)


@dataclass(frozen=True)
class BenchRequest:
    """The options of `ffn bench`, by field name as the options are named, checked as the
    request is made. `ffn`: the FFN options (a parsed FFNOptions, or OneSpec for the API);
    `typed`: the options typed on the command line (rules.given_options). Made, it knows its
    answer (`kind`: sweep, or parallel under --tp / --ep) and the FFNs to time (`specs`, none
    when a model's layer is: the service reads the model)."""

    ffn: FFNChoice | None = None
    batch: int = 8
    seq_len: str = "512"
    dtype: str = "float32"
    device: str = "cpu"
    backward: bool = False
    compile: bool = False
    compile_mode: str = "default"
    impl: str | None = None
    checkpoint: bool = False
    cache: str = "cold"
    calibrate: bool = False
    warmup_ms: float = 300.0
    repeats: int | None = None
    min_time: float | None = None
    threads: int | None = None
    seed: int = 0
    plot: str | None = None
    max_cases: int = 1_000  # bench.plan.DEFAULT_MAX_CASES, which cannot be imported before torch
    tp: int = 1
    ep: int = 1
    rank_timeout: float | None = None
    preset: str | None = None
    config: str | None = None
    model: str | None = None
    revision: str | None = None
    layer: int | None = None
    gpu: str | None = None
    typed: frozenset[str] = frozenset()
    # What the checks found, for the service.
    kind: BenchAnswer = field(init=False, default="sweep")
    specs: tuple[FFNSpec, ...] = field(init=False, default=())
    given: dict[str, Any] = field(init=False, default_factory=dict, compare=False, repr=False)  # rules.given_options

    def __post_init__(self) -> None:
        given = self._given()
        object.__setattr__(self, "given", given)
        if self.min_time is not None and not 0 < self.min_time <= MAX_MIN_TIME:
            raise FFNError("min_time", self.min_time, _("seconds in (0, 3600]"))
        check_rank_timeout(self.rank_timeout)
        # The case's sizes and dtypes here too, not only by the sweep: before torch is imported.
        check_int("batch", self.batch)
        parse_int_list("seq_len", self.seq_len)
        for dtype in parse_list("dtype", self.dtype):
            check_run_dtype(dtype)
        check_rules(_RULES, given)
        if self.plot is not None:
            check_plot_file(self.plot)
        if not self.names_model:
            check_rules(_NO_MODEL_RULES, given)
            object.__setattr__(self, "specs", tuple(_sweep_specs(self._ffn())))
        parallel = self.tp != 1 or self.ep != 1
        if parallel:
            check_rules(_PARALLEL_RULES, given)
        object.__setattr__(self, "kind", "parallel" if parallel else "sweep")

    @property
    def names_model(self) -> bool:
        return self.preset is not None or self.config is not None or self.model is not None

    @property
    def fused(self) -> bool:
        """--fused: the fused implementation (bench's --fused picks how, not what, it runs)."""
        return self.ffn is not None and self.ffn.fused

    @property
    def compile_asked(self) -> bool:
        """--compile, or a --compile-mode named: naming a mode asks for compilation."""
        return self.compile or self.compile_mode != "default"

    @property
    def min_time_ms(self) -> float:
        return 1e3 * (DEFAULT_MIN_TIME if self.min_time is None else self.min_time)

    def layer_options(self) -> dict[str, Any]:
        """The options given that override a model layer's values (models/layer_select.py): the
        FFN options but --fused, which here picks the implementation."""
        return {name: value for name, value in self.given.items() if name != "fused"}

    def _given(self) -> dict[str, Any]:
        options = [f for f in fields(self) if f.init and f.name not in ("ffn", "typed")]
        values = {f.name: getattr(self, f.name) for f in options}
        ffn_typed = self.ffn.typed() if self.ffn is not None else {}
        return ffn_typed | given_options(values, {f.name: f.default for f in options}, self.typed)

    def _ffn(self) -> FFNChoice:
        if self.ffn is None:
            raise ValueError("a request without a model names its FFN: ffn=FFNOptions or OneSpec(spec)")
        return self.ffn


def _sweep_specs(ffn: FFNChoice) -> list[FFNSpec]:
    """Every variant at every width, variants outermost; --fused picks the fused implementation instead."""
    specs = [ffn.spec(v, d, fused_gate_up=False) for v in ffn.variants() for d in ffn.widths()]
    ffn.check_used(specs)
    return specs
