"""What `ffn trace` and `ffn_cli.trace(...)` are asked, checked once: what is traced (a registry
variant or its block, a model's layer, the user's module, a model's own FFN module) and how it
runs, and every option that answer would ignore refused, by the rules declared below.

Which model a --preset / --config / --model names is known only once it is read: its layer is
a registry FFN when a family reads it, else transformers' own module. The service reads it and
resolves the request against it (`resolve`), which checks the rules that then hold."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from ffn_cli.device_name import check_run_dtype, parse_device_name
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.module_ref import check_module_file, parse_module_ref
from ffn_cli.outputs import HTML_FILES, check_output_file
from ffn_cli.requests.choices import Loss, Mode, Norm, check_choice
from ffn_cli.requests.ffn import FFNChoice
from ffn_cli.requests.lists import comma_text
from ffn_cli.requests.parallel import RANK_TIMEOUT_RULE, check_rank_timeout
from ffn_cli.requests.rules import Conflicts, Needs, Rule, Unused, check_rules, given_options
from ffn_cli.requests.view import options_view
from ffn_cli.spec import FFNSpec, check_int
from ffn_cli.tracing.options import RunOptions

__all__ = ["TraceAnswer", "TraceRequest"]

# A registry variant (or its block, or a model's layer as the registry builds it), one sharded
# forward under --tp / --ep, a module (the user's own), transformers' own FFN module of a model.
TraceAnswer = Literal["variant", "parallel", "module", "model_module"]

MODEL = ("preset", "config", "model")
ATTENTION = ("n_heads", "n_kv_heads", "head_dim", "norm", "pre_norm")
_REGISTRY_ONLY = ("check", "block", "tp", "ep", *ATTENTION, *MODEL, "layer", "revision")

_RULES: tuple[Rule, ...] = (
    Conflicts("explain", "ops", N_("explains the steps; --ops shows the raw aten ops instead: drop one")),
    RANK_TIMEOUT_RULE,
)
# --module: the user's module, as it is.
_MODULE_RULES: tuple[Rule, ...] = (
    Unused(
        ("check", "block", "tp", "ep", "n_heads", "n_kv_heads", "head_dim", "pre_norm", "norm", *MODEL, "layer", "revision"),
        N_("works on a registry variant or a model's layer, not with --module: drop it"),
    ),
)
_SIZES_A_VARIANT = N_("sizes a registry variant; --module traces your module as it is: drop it")
# No model named: the FFN of the options.
_NO_MODEL_RULES: tuple[Rule, ...] = (
    Needs(("layer", "revision"), MODEL, N_("picks a layer of a model: give --preset, --config or --model")),
)
# A registry FFN: the registry's steps, checked by --check.
_VARIANT_RULES: tuple[Rule, ...] = (
    Unused("reference", N_("names the registry FFN your module computes: use it with --module (a registry variant has --check)")),
    Unused("depth", N_("groups the steps of --module or of a model's own FFN module; a registry variant has its own steps")),
    Needs(ATTENTION, "block", N_("shapes the Transformer block around the FFN: add --block, or drop it")),
)
# --tp / --ep: one sharded forward in eval mode, compared with the unsharded module.
_PARALLEL_RULES: tuple[Rule, ...] = (
    Unused(
        ("block", "mode", "values", "ops", "explain", "backward", "loss", "checkpoint", "page"),
        N_("--tp / --ep run the sharded forward in eval mode and compare it with the unsharded module; drop it"),
        allowed=(("mode", "eval"), ("values", 0)),  # what the sharded forward does anyway
    ),
)
# transformers' own FFN module of a model no family reads: traced as transformers builds it.
_MODEL_MODULE_RULES: tuple[Rule, ...] = (
    Unused("check", N_("compares a registry variant with its NumPy reference; a model's own module has none")),
    Unused(
        ("block", "tp", "ep", *ATTENTION),
        N_("works on a layer ffn reads; a model's own FFN module is traced as transformers builds it: drop it"),
    ),
)
_OWN_MODULE_SIZES = N_("resizes a layer ffn reads; a model's own FFN module is traced as transformers builds it: drop it")


@dataclass(frozen=True)
class TraceRequest:
    """The options of `ffn trace`, by field name as the options are named, checked as the
    request is made. `ffn`: the FFN options (a parsed FFNOptions, or OneSpec for the API's
    FFNSpec); `module`: --module's FILE.py:NAME(args); `own`: an nn.Module the API was handed,
    with its input `x` (both torch objects, never looked at here); `d_model`: the API's width for
    a module; `page`: --page's file; `text_only`: the answer is read as text alone (no --json, no
    page), so the torch calls are recorded rather than the aten ops; `typed`: the options typed
    on the command line (rules.given_options). Made, it knows its answer (`kind`); a model's is
    known once the service has read it, from `resolve(own_module=…)`."""

    ffn: FFNChoice | None = None
    batch: int = 2
    seq_len: int = 5
    device: str | None = "cpu"
    dtype: str | None = "float32"
    seed: int = 0
    mode: Mode = "eval"
    values: int = 0
    ops: bool = False
    check: bool = False
    explain: bool = False
    block: bool = False
    backward: bool = False
    loss: Loss | None = None
    checkpoint: bool = False
    n_heads: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    norm: Norm = "layernorm"
    pre_norm: bool = False
    tp: int = 1
    ep: int = 1
    rank_timeout: float | None = None
    preset: str | None = None
    config: str | None = None
    model: str | None = None
    revision: str | None = None
    layer: int | None = None
    module: str | None = None
    depth: int | None = None
    reference: bool = False
    page: str | None = None
    d_model: int | None = None
    own: Any = field(default=None, compare=False, repr=False)
    x: Any = field(default=None, compare=False, repr=False)
    text_only: bool = False
    typed: frozenset[str] = frozenset()
    # What the checks found, for the service.
    kind: TraceAnswer = field(init=False, default="variant")
    given: dict[str, Any] = field(init=False, default_factory=dict, compare=False, repr=False)  # rules.given_options

    def __post_init__(self) -> None:
        if self.page is not None:  # checked before any work: a run must not end on a page it cannot write
            check_output_file("page", self.page, HTML_FILES)
        # An empty --device or --dtype is refused as bench refuses it, not read as the default.
        if self.device is not None:
            parse_device_name(self.device)
        if self.dtype is not None:
            check_run_dtype(self.dtype)
        check_int("batch", self.batch)  # here too, not only by the pipeline: before torch is imported
        check_int("seq_len", self.seq_len)
        object.__setattr__(self, "mode", self.mode.strip().lower())
        object.__setattr__(self, "norm", check_choice("norm", self.norm, Norm))  # a misspelt norm is named as such, --block or not
        check_rank_timeout(self.rank_timeout)
        given = self._given()
        object.__setattr__(self, "given", given)
        check_rules(_RULES, given)
        if self.names_module:
            check_rules(_MODULE_RULES, given)
            check_rules([Unused(tuple(n for n in self._ffn_typed() if n != "d_model"), _SIZES_A_VARIANT)], given)
            if self.module is not None:  # its form and its file, before torch loads
                check_module_file(parse_module_ref(self.module))
            object.__setattr__(self, "kind", "module")
        elif not self.names_model:
            check_rules(_NO_MODEL_RULES, given)
            object.__setattr__(self, "kind", self._variant_answer())
            self.one_spec()  # the FFN of the options: one variant at one width
        self.run_options(self.dtype)  # how it runs (--mode, --values, --loss, …), checked as RunOptions checks it

    def run_options(self, dtype: str | None) -> RunOptions:
        """How the target runs, a view of this request: `dtype` the run's (a model's layer runs in
        the model's); a model's own FFN module is grouped by its own layers unless --depth says."""
        depth = 1 if self.kind == "model_module" and self.depth is None else self.depth
        return options_view(RunOptions, self, dtype=dtype, depth=depth)

    @property
    def names_model(self) -> bool:
        return self.preset is not None or self.config is not None or self.model is not None

    @property
    def names_module(self) -> bool:
        return self.module is not None or self.own is not None

    @property
    def aten(self) -> bool:
        """Whether the aten ops are recorded: where the answer names them (--ops, --json, a page)."""
        return self.ops or not self.text_only or self.page is not None

    @property
    def module_width(self) -> tuple[int | None, str]:
        """A module's input width as given (--d-model, the API's d_model), and how it is named."""
        if self.d_model is not None:
            return self.d_model, "d_model"
        if self.ffn is not None and "d_model" in self._ffn_typed():
            return self.ffn.d_model[0], "--d-model"
        return None, "--d-model"

    def resolve(self, *, own_module: bool) -> TraceRequest:
        """This request once the model it names is read: a family reads it (its layer a registry
        FFN), or none does (`own_module`: transformers' own FFN module is traced). The rules of
        that answer checked, a request that knows it (`kind`) is returned; this one stays as made."""
        kind = self._model_module_answer() if own_module else self._variant_answer()
        resolved = copy.copy(self)
        object.__setattr__(resolved, "kind", kind)  # the copy's, once: the request as made is not changed
        return resolved

    def _variant_answer(self) -> TraceAnswer:
        """The rules of a registry FFN (the options' one, or a model's layer a family reads),
        then those of one sharded forward under --tp / --ep."""
        check_rules(_VARIANT_RULES, self.given)
        if self.tp != 1 or self.ep != 1:
            check_rules(_PARALLEL_RULES, self.given)
            return "parallel"
        return "variant"

    def _model_module_answer(self) -> TraceAnswer:
        """The rules of a model's own FFN module (a model no family reads)."""
        check_rules(_MODEL_MODULE_RULES, self.given)
        check_rules([Unused(tuple(self._ffn_typed()), _OWN_MODULE_SIZES)], self.given)
        return "model_module"

    def layer_options(self) -> dict[str, Any]:
        """The options given that override a model layer's values (configs/layer_select.py)."""
        return dict(self.given)

    def one_spec(self) -> FFNSpec:
        """The FFN of the options (one variant at one width): trace runs one."""
        ffn = self._ffn()
        why = _("ffn trace runs one FFN: give one value (ffn params compares, ffn bench sweeps)")
        variants, widths = ffn.variants(), ffn.d_model
        if len(variants) > 1:
            raise FFNError("variant", comma_text(ffn.variant), why)  # named as typed: -v relu,swiglu
        if len(widths) > 1:
            raise FFNError("d_model", comma_text(ffn.d_model), why)
        spec = ffn.spec(variants[0], widths[0])
        ffn.check_used([spec])
        return spec

    def _ffn_typed(self) -> dict[str, Any]:
        return self.ffn.typed() if self.ffn is not None else {}

    def _given(self) -> dict[str, Any]:
        skip = ("ffn", "typed", "own", "x", "text_only")
        options = [f for f in fields(self) if f.init and f.name not in skip]
        values = {f.name: getattr(self, f.name) for f in options}
        given = given_options(values, {f.name: f.default for f in options}, self.typed)
        # --d-model typed is the FFN options' width, not the API's d_model field of the same name.
        return self._ffn_typed() | given | self._ffn_typed()

    def _ffn(self) -> FFNChoice:
        if self.ffn is None:
            raise ValueError("a request for a registry FFN names it: ffn=FFNOptions or OneSpec(spec)")
        return self.ffn
