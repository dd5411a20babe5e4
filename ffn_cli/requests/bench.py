"""What `ffn bench` and `ffn_cli.bench(...)` are asked, checked once: the timing options, the
implementations, a model's layer or the FFNs of the options, and, under --tp / --ep, every option
the sharded timing would ignore refused, by the rules declared below."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from ffn_cli.benchmark.config import BenchConfig
from ffn_cli.device_name import check_run_dtype
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.outputs import check_plot_file
from ffn_cli.requests.choices import ALL_IMPLS, Cache, CompileMode, ImplChoice, ImplName, check_choice, choices
from ffn_cli.requests.ffn import FFNChoice
from ffn_cli.requests.lists import check_ints, check_names, comma_text
from ffn_cli.requests.parallel import RANK_TIMEOUT_RULE, check_rank_timeout
from ffn_cli.requests.rules import Conflicts, Needs, Rule, Unused, check_rules, given_options
from ffn_cli.requests.view import options_view
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
    seq_len: tuple[int, ...] = (512,)
    dtype: tuple[str, ...] = ("float32",)
    device: str = "cpu"
    backward: bool = False
    compile: bool = False
    compile_mode: CompileMode = "default"
    impl: tuple[ImplChoice, ...] | None = None
    checkpoint: bool = False
    cache: Cache = "cold"
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
        # The case's sizes and dtypes, the choices: here, not only by the sweep, before torch is imported.
        check_int("batch", self.batch)
        self._set("seq_len", check_ints("seq_len", self.seq_len))
        self._set("dtype", check_names("dtype", self.dtype))
        for dtype in self.dtype:
            check_run_dtype(dtype)
        if self.impl is not None:
            self._set("impl", _check_impls(self.impl))
        self._set("cache", check_choice("cache", self.cache, Cache))
        self._set("compile_mode", check_choice("compile_mode", self.compile_mode, CompileMode))
        given = self._given()
        self._set("given", given)
        if self.min_time is not None and not 0 < self.min_time <= MAX_MIN_TIME:
            raise FFNError("min_time", self.min_time, _("seconds in (0, 3600]"))
        check_rank_timeout(self.rank_timeout)
        check_rules(_RULES, given)
        if self.plot is not None:
            check_plot_file(self.plot)
        if not self.names_model:
            check_rules(_NO_MODEL_RULES, given)
            self._set("specs", tuple(_sweep_specs(self._ffn())))
        parallel = self.tp != 1 or self.ep != 1
        if parallel:
            check_rules(_PARALLEL_RULES, given)
        else:
            self.bench_config(gpu=None)  # how to measure (--warmup-ms, --repeats, --threads, …), checked as BenchConfig checks it
        self._set("kind", "parallel" if parallel else "sweep")

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

    def bench_config(self, gpu: str | None) -> BenchConfig:
        """How to measure, the same for every case: a view of this request; `gpu` the table's key
        of --gpu, whose ceilings the cases are held to."""
        return options_view(BenchConfig, self, gpu=gpu)

    def layer_options(self) -> dict[str, Any]:
        """The options given that override a model layer's values (configs/layer_select.py): the
        FFN options but --fused, which here picks the implementation; --dtype as the layer names
        it, as typed (`--dtype float32,bfloat16`)."""
        options = {name: value for name, value in self.given.items() if name != "fused"}
        if "dtype" in options:
            options["dtype"] = comma_text(self.dtype)
        return options

    def _given(self) -> dict[str, Any]:
        options = [f for f in fields(self) if f.init and f.name not in ("ffn", "typed")]
        values = {f.name: getattr(self, f.name) for f in options}
        ffn_typed = self.ffn.typed() if self.ffn is not None else {}
        return ffn_typed | given_options(values, {f.name: f.default for f in options}, self.typed)

    def _ffn(self) -> FFNChoice:
        if self.ffn is None:
            raise ValueError("a request without a model names its FFN: ffn=FFNOptions or OneSpec(spec)")
        return self.ffn

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # a frozen dataclass sets what its checks found once


def _check_impls(names: tuple[str, ...]) -> tuple[str, ...]:
    """--impl's names, each an implementation, or `all` alone."""
    impls = check_names("impl", names)
    if impls != (ALL_IMPLS,) and any(name not in choices(ImplName) for name in impls):
        raise FFNError("impl", comma_text(impls), _("a comma list of {impls}, or all").format(impls=", ".join(choices(ImplName))))
    return impls


def _sweep_specs(ffn: FFNChoice) -> list[FFNSpec]:
    """Every variant at every width, variants outermost; --fused picks the fused implementation instead."""
    specs = [ffn.spec(v, d, fused_gate_up=False) for v in ffn.variants() for d in ffn.d_model]
    ffn.check_used(specs)
    return specs
