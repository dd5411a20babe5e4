"""The Python API: `ffn_cli.trace(...)`, `ffn_cli.params(...)`, `ffn_cli.compare(...)`,
`ffn_cli.params_per_rank(...)` and `ffn_cli.bench(...)`, the same core functions the commands call,
each returning one type of result that prints with rich, shows in Jupyter, and gives `to_dict()`
equal to the command's `--json`. Every argument is checked against its annotation at this
boundary (api_arguments.py). Kept small: what `__all__` names is the stable surface."""

from __future__ import annotations

import functools
import inspect
import io
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, overload

from rich.console import Console

from ffn_cli.api_arguments import check_arguments
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.outputs import HTML_FILES, check_output_file, write_text
from ffn_cli.render.bench import write_plot
from ffn_cli.render.json_data import json_ready
from ffn_cli.render.presenters import bench as bench_presenter
from ffn_cli.render.presenters import params as params_presenter
from ffn_cli.render.presenters import trace as trace_presenter
from ffn_cli.requests.bench import BenchRequest
from ffn_cli.requests.choices import Cache, Loss, Mode, Phase
from ffn_cli.requests.ffn import OneSpec
from ffn_cli.requests.params import ParamsRequest
from ffn_cli.requests.trace import TraceRequest
from ffn_cli.services.bench import bench as answer_bench
from ffn_cli.services.params import params as answer_params
from ffn_cli.services.results import (
    BenchSweep,
    BuiltCount,
    FFNOnGPU,
    FFNParams,
    ModelParamsAnswer,
    ModelsCompared,
    RanksHeld,
    ShardedTiming,
    TraceAnswer,
)
from ffn_cli.services.trace import trace as answer_trace
from ffn_cli.spec import FFNSpec

if TYPE_CHECKING:
    import torch
    from rich.console import Console, RenderableType
    from torch import Tensor, nn

    from ffn_cli.benchmark.result import BenchReport
    from ffn_cli.configs.built import BuiltModel
    from ffn_cli.models.count import ModelParams
    from ffn_cli.models.layer import FFNReport
    from ffn_cli.models.seq_flops import FlopsAtLength, LayerStack
    from ffn_cli.parallel.accounting import RankParams
    from ffn_cli.parallel.result import ParallelTiming
    from ffn_cli.requests.bench import BenchRequest
    from ffn_cli.services.results import ParamsResult
    from ffn_cli.tracing.result import TraceResult

__all__ = [
    "Cache",
    "ComparedModel",
    "Loss",
    "Mode",
    "Phase",
    "Result",
    "bench",
    "bench_sharded",
    "compare",
    "params",
    "params_per_rank",
    "trace",
]

NOTEBOOK_WIDTH = 100  # columns a notebook cell renders the tables at

# The choices the commands take (`ffn trace --mode`, `--loss`; `ffn params --phase`; `ffn bench
# --cache`) are the requests' own Literal types (requests/choices.py), exported as they are.
# One model of several side by side: its name, counts, layers and FLOPs at each length asked.
ComparedModel = tuple[str, "ModelParams", "LayerStack", tuple["FlopsAtLength", ...]]

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Result(Generic[T]):
    """A result (`value`: a TraceResult, an FFNReport, a ModelParams, …, as the function's return
    type says) with its views: rich (`rich.print(r)`), Jupyter (HTML and text), `str(r)` (the text
    at the console's width), and `to_dict()`, the command's `--json`."""

    value: T
    view: Callable[[], RenderableType]
    data: Callable[[], dict[str, Any]]
    # A trace's picture: the whole page (True) or a notebook cell's fragment (False).
    drawing: Callable[[bool], str] | None = None

    def __rich__(self) -> RenderableType:
        return self.view()

    def to_dict(self) -> dict[str, Any]:
        return json_ready(self.data())

    def _console(self, width: int) -> Console:
        console = Console(record=True, width=width, file=io.StringIO(), color_system="truecolor", force_jupyter=False)
        console.print(self.view())
        return console

    def page(self, path: str | None = None) -> str:
        """A trace drawn as `ffn trace --page` draws it: one offline HTML page, written to `path` if given."""
        if self.drawing is None:
            raise FFNError("page", type(self.value).__name__, _("a trace's result: ffn_cli.trace(...).page()"))
        check_arguments(Result.page, {"path": path})
        text = self.drawing(True)
        if path is not None:  # written as `ffn trace --page` writes it, by the one writer
            write_text(check_output_file("page", str(path), HTML_FILES), text, option="page")
        return text

    def _repr_html_(self) -> str:
        if self.drawing is not None:
            return self.drawing(False)
        return self._console(NOTEBOOK_WIDTH).export_html(inline_styles=True, code_format='<pre style="font-family:monospace">{code}</pre>')

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        console = self._console(NOTEBOOK_WIDTH)
        text = console.export_text(clear=False)
        html = console.export_html(inline_styles=True, code_format='<pre style="font-family:monospace">{code}</pre>')
        return {"text/plain": text, "text/html": self.drawing(False) if self.drawing is not None else html}

    def __repr__(self) -> str:
        return f"<ffn {type(self.value).__name__}: print it, or .to_dict()>"

    def __str__(self) -> str:
        """The text at the width of the console it is printed to: rich's detected width (the
        terminal's, COLUMNS, a notebook's), 80 when it cannot tell; tables fold their words there,
        never their numbers."""

        return self._console(Console().width).export_text()


def _model_name(text: str) -> dict[str, Any]:
    """A preset name, or a config.json path (a file or its folder)."""

    return {"config": text} if Path(text).expanduser().exists() or text.endswith(".json") else {"preset": text}


# A refusal names the other options it asks for as the command line spells them ("add --gpu NAME");
# a caller of these functions reads those that are its keywords as it passes them ("add gpu=NAME").
# An option is rewritten only where the words around it say which form it takes: before a metavar
# (NAME), a connective or punctuation, or as --no-X of a bool; one followed by a value or a verb
# ("--device cpu") and one that is no keyword ("--preset") stay as the command line spells them.
_FLAG = re.compile(r"--(no-)?([a-z][a-z0-9-]*)(?:( )(?=[A-Z][A-Z_]*\b)|(?=(?: (?:or|and|too|not|with)\b)|[,.;:)]|$))")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _keyword_words(text: str, keywords: frozenset[str]) -> str:
    """`--gpu NAME` as `gpu=NAME`, `--tokens or` as `tokens or`, `--no-mtp` as `mtp=False`."""

    def said(m: re.Match[str]) -> str:
        keyword = m[2].replace("-", "_")
        if keyword not in keywords or (m[1] and m[3]):
            return m[0]
        if m[1]:
            return f"{keyword}=False"
        return keyword + ("=" if m[3] else "")  # the metavar after it: gpu=NAME

    return _FLAG.sub(said, text)


def _said_as_keywords(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """`function`, its refusals naming its keywords, not the command line's options."""
    keywords = frozenset(inspect.signature(function).parameters)

    @functools.wraps(function)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return function(*args, **kwargs)
        except FFNError as exc:
            if type(exc) is not FFNError:  # a kind of its own (an unknown GPU) keeps its class and words
                raise
            value = _as_given(exc.option, exc.value, kwargs)
            raise FFNError(exc.option, value, _keyword_words(exc.allowed, keywords)) from None

    return call


def _as_given(option: str, value: object, kwargs: Mapping[str, object]) -> object:
    """The value a refusal names as the caller gave it (batch=8, seq_len=[1, 2]), where the request
    spelled it as the command line does ('8', '1,2'); a part of it (one length of a list) as named."""
    given = kwargs.get(option.replace("-", "_"), value)
    if isinstance(value, str) and not isinstance(given, str):
        spelled = ",".join(map(str, given)) if isinstance(given, (list, tuple)) else str(given)
        return given if spelled == value else value
    return value


@_said_as_keywords
def trace(
    module_or_spec: nn.Module | FFNSpec | str,
    x: Tensor | Any = None,
    *,
    batch: int = 2,
    seq_len: int = 5,
    d_model: int | None = None,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    seed: int = 0,
    mode: Mode = "eval",
    values: int = 0,
    depth: int | None = None,
    backward: bool = False,
    loss: Loss | None = None,
    checkpoint: bool = False,
    check: bool = False,
    layer: int | None = None,
    ops: bool = False,
    explain: bool = False,
    reference: bool = False,
) -> Result[TraceResult]:
    """Run a module once and show every step: shapes, parameters, FLOPs, values.

    `module_or_spec`: any nn.Module (traced where its parameters are, unless `device` / `dtype`
    say otherwise; the module is moved there), an FFNSpec, a preset name or config.json path
    (its layer `layer`'s FFN), or `"FILE.py:NAME(args)"` as `--module` takes. `x`: the input, for
    a module (a tensor, a NumPy array or nested lists of numbers); else a seeded normal (batch,
    seq_len, d_model). `device` and `dtype` take names or a `torch.device` / `torch.dtype`. The
    caller's world is left as it was: torch's global random state, and the module's train/eval
    mode (of every submodule). `ops`: `to_dict()` lists the aten ops.
    `explain`: the view says why each step is there, and `to_dict()` gives each step's explanation.
    `reference`: a module only: which registry FFN it computes, held to the NumPy float64
    reference on its own weights (`to_dict()["reference"]`).
    """
    check_arguments(
        trace,
        {
            "batch": batch,
            "seq_len": seq_len,
            "d_model": d_model,
            "device": device,
            "dtype": dtype,
            "seed": seed,
            "mode": mode,
            "values": values,
            "depth": depth,
            "backward": backward,
            "loss": loss,
            "checkpoint": checkpoint,
            "check": check,
            "layer": layer,
            "ops": ops,
            "explain": explain,
            "reference": reference,
        },
    )

    device_name, dtype_name = _torch_name("device", device), _torch_name("dtype", dtype)
    if not isinstance(module_or_spec, (FFNSpec, str)) and not _is_module(module_or_spec):
        raise FFNError(
            "module_or_spec",
            module_or_spec,
            _('give an nn.Module, an FFNSpec, a preset name, a config.json path or "FILE.py:NAME(args)"'),
        )
    is_module = (isinstance(module_or_spec, str) and ":" in module_or_spec) or not isinstance(module_or_spec, (FFNSpec, str))
    if is_module:
        if check:
            raise FFNError("check", True, _("compares a registry variant with its NumPy reference; a module of your own has none"))
        if layer is not None:
            raise FFNError("layer", layer, _("picks a layer of a model (a preset or config); a module is traced as it is: drop it"))
        if x is not None and d_model is not None:
            raise FFNError("d_model", d_model, _("the input x gives the width (its last dimension): drop d_model"))
    else:
        if reference:
            raise FFNError(
                "reference", True, _("names the registry FFN a module computes; a spec is one (check=True holds it to the reference)")
            )
        if x is not None or d_model is not None or depth is not None:
            raise FFNError("x", "given", _("a spec's trace draws its own seeded input, in its own steps: drop x, d_model and depth"))
    options: dict[str, Any] = {
        "batch": batch, "seq_len": seq_len, "seed": seed, "mode": mode, "values": values, "backward": backward, "loss": loss,
        "checkpoint": checkpoint, "ops": ops, "explain": explain,
        # A module runs where its parameters are unless told; a spec or a model's layer on the CPU.
        "device": device_name if is_module else device_name or "cpu", "dtype": dtype_name if is_module else dtype_name or "float32",
        # The device and dtype named are given, even at their defaults: a model's layer then runs in that dtype.
        "typed": frozenset(name for name, value in (("device", device_name), ("dtype", dtype_name)) if value is not None),
    }  # fmt: skip
    if isinstance(module_or_spec, FFNSpec):
        request = TraceRequest(ffn=OneSpec(module_or_spec), check=check, **options)
    elif isinstance(module_or_spec, str) and is_module:
        request = TraceRequest(module=module_or_spec, x=x, depth=depth, reference=reference, d_model=d_model, **options)
    elif isinstance(module_or_spec, str):
        request = TraceRequest(**_model_name(module_or_spec), layer=layer, check=check, **options)
    else:
        request = TraceRequest(own=module_or_spec, x=x, depth=depth, reference=reference, d_model=d_model, **options)

    traced = answer_trace(request)
    assert isinstance(traced, TraceAnswer)  # the API's trace is never sharded (no tp, ep)
    presented = trace_presenter.present(traced)
    return Result(traced.result, presented.view, presented.data, presented.drawing)


def _params_result(result: ParamsResult) -> Any:
    """`ffn params`'s result as the API gives it: its principal value (the FFN's report, the
    model's counts, the models side by side, the ranks), shown by the command's presenter."""

    value: Any
    match result:
        case FFNParams() | FFNOnGPU():
            value = result.report
        case ModelParamsAnswer():
            value = result.counted
        case BuiltCount():
            value = result.built
        case ModelsCompared():
            value = result.compared
        case RanksHeld():
            value = result.ranks
        case _:
            value = result
    presented = params_presenter.present(result)
    return Result(value, presented.view, presented.data)


def _torch_name(option: str, value: Any) -> str | None:
    """A `torch.device` or `torch.dtype` as the name the options take (`cuda:0`, `float16`)."""
    if value is None or isinstance(value, str):
        return value
    import torch

    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    raise FFNError(option, value, _("give a name ('cpu', 'float16') or a torch.{kind}").format(kind=option))


def _is_module(value: object) -> bool:
    from torch import nn

    return isinstance(value, nn.Module)


@overload
def params(
    spec_or_model: FFNSpec,
    *,
    dtype: str | None = None,
    gpu: str | None = None,
    weights: str | None = None,
    quantize: str | None = None,
    tp: int = 1,
    ep: int = 1,
    phase: Phase = "prefill",
    batch: int | list[int] | None = None,
    seq_len: int | list[int] | None = None,
    tokens: int | None = None,
    mtp: bool = True,
    source_len: int | None = None,
    explain: bool = False,
) -> Result[FFNReport]: ...
@overload
def params(
    spec_or_model: str,
    *,
    dtype: str | None = None,
    gpu: str | None = None,
    weights: str | None = None,
    quantize: str | None = None,
    tp: int = 1,
    ep: int = 1,
    phase: Phase = "prefill",
    batch: int | list[int] | None = None,
    seq_len: int | list[int] | None = None,
    tokens: int | None = None,
    mtp: bool = True,
    source_len: int | None = None,
    explain: bool = False,
) -> Result[ModelParams | BuiltModel]: ...
@_said_as_keywords
def params(
    spec_or_model: FFNSpec | str,
    *,
    dtype: str | None = None,
    gpu: str | None = None,
    weights: str | None = None,
    quantize: str | None = None,
    tp: int = 1,
    ep: int = 1,
    phase: Phase = "prefill",
    batch: int | list[int] | None = None,
    seq_len: int | list[int] | None = None,
    tokens: int | None = None,
    mtp: bool = True,
    source_len: int | None = None,
    explain: bool = False,
) -> Result[FFNReport] | Result[ModelParams | BuiltModel]:
    """Parameters, FLOPs and memory without torch, as `ffn params` answers them: an FFNSpec
    (beside an attention of its width; bytes in float32 by default) gives its FFNReport, a preset
    name or config.json path (the whole model; bfloat16 by default) its ModelParams (a model_type
    no reader knows: laid out from one decoder layer of each kind built by transformers on meta;
    where its layout cannot be read, counted by building the whole model, a BuiltModel).

    What it costs on GPUs, as `ffn params --gpu … --tp … --ep …` answers it (in the view and
    `to_dict()`): `gpu` (a key of `ffn hardware`: for a model the fit verdict and the roofline,
    per GPU under `tp` / `ep`; for an FFNSpec its forward's roofline), `phase`, `batch` (a number
    or a list to sweep), `seq_len` (with `gpu`: tokens per sequence, or decode's context; without:
    the lengths to count FLOPs at), `tokens`; for a model `weights` / `quantize` (how it is
    stored), `tp` / `ep` (its layout) and `mtp=False` to leave out the multi-token-prediction
    layers the checkpoint ships; `source_len`, an encoder-decoder's source in tokens (the most its encoder
    hands on by default). `explain`: why the FFN is about two thirds of a layer. Several
    models side by side: `compare`; what each rank of a split FFN holds: `params_per_rank`.
    `to_dict()` is the command's `--json` for the same options."""
    check_arguments(
        params,
        {
            "dtype": dtype,
            "gpu": gpu,
            "weights": weights,
            "quantize": quantize,
            "tp": tp,
            "ep": ep,
            "phase": phase,
            "batch": batch,
            "seq_len": seq_len,
            "tokens": tokens,
            "mtp": mtp,
            "source_len": source_len,
            "explain": explain,
        },
    )

    options: dict[str, Any] = {
        "dtype": dtype, "gpu": gpu, "weights": weights, "quantize": quantize, "tp": tp, "ep": ep, "phase": phase,
        "batch": _as_tuple(batch), "seq_len": _as_tuple(seq_len), "tokens": tokens, "no_mtp": not mtp, "source_len": source_len,
        "explain": explain,
    }  # fmt: skip
    if not isinstance(spec_or_model, (FFNSpec, str)):
        raise FFNError("spec_or_model", spec_or_model, _("give an FFNSpec, a preset name or a config.json path"))
    if isinstance(spec_or_model, FFNSpec):
        if gpu is None and (tp != 1 or ep != 1):
            option, value = ("tp", tp) if tp != 1 else ("ep", ep)
            raise FFNError(option, value, _("what each rank of one FFN holds is ffn_cli.params_per_rank(spec, tp=…, ep=…)"))
        request = ParamsRequest(ffn=OneSpec(spec_or_model), **options)
    else:
        if "," in spec_or_model:
            raise FFNError("spec_or_model", spec_or_model, _("one model; several side by side are ffn_cli.compare([...])"))
        named: dict[str, Any] = {option: (name,) for option, name in _model_name(spec_or_model).items()}  # one model: a list of one
        request = ParamsRequest(**named, **options)
    return _params_result(answer_params(request))


@_said_as_keywords
def compare(
    models: list[str],
    *,
    dtype: str | None = None,
    seq_len: int | list[int] | None = None,
) -> Result[list[ComparedModel]]:
    """Whole models side by side, as `ffn params --preset a,b` shows them: each one's counts
    (bytes in `dtype`, bfloat16 by default) and, with `seq_len`, its FLOPs at those lengths.
    `models`: preset names or config.json paths. `to_dict()` is the command's `--json`."""
    check_arguments(compare, {"models": models, "dtype": dtype, "seq_len": seq_len})

    if len(models) < 2:
        raise FFNError("models", list(models), _("sets two or more models side by side; one model is ffn_cli.params(name)"))
    paths = tuple(m for m in models if "preset" not in _model_name(m))
    names: dict[str, Any] | None = {"preset": tuple(models)} if not paths else None
    if len(paths) == len(models):
        names = {"config": paths}  # each path as it is, commas and all
    if names is None:
        raise FFNError("models", list(models), _("preset names alone, or config.json paths alone, as ffn params takes them"))
    request = ParamsRequest(**names, dtype=dtype, seq_len=_as_tuple(seq_len))
    return _params_result(answer_params(request))


@_said_as_keywords
def params_per_rank(spec: FFNSpec, *, tp: int = 1, ep: int = 1, dtype: str | None = None) -> Result[list[RankParams]]:
    """What each rank holds when one FFN is split over `tp` tensor-parallel or `ep`
    expert-parallel ranks, as `ffn params -v … --tp N` / `--ep N` shows it: its tensors, their
    parameters and bytes in `dtype` (float32 by default). No processes, no torch."""
    check_arguments(params_per_rank, {"spec": spec, "tp": tp, "ep": ep, "dtype": dtype})

    _check_split(tp, ep)
    return _params_result(answer_params(ParamsRequest(ffn=OneSpec(spec), tp=tp, ep=ep, dtype=dtype)))


@_said_as_keywords
def bench(
    spec_or_model: FFNSpec | str,
    *,
    batch: int = 8,
    seq_len: int | list[int] = 512,
    dtype: str | torch.dtype | list[str | torch.dtype] = "float32",
    device: str | torch.device = "cpu",
    backward: bool = False,
    impl: str | list[str] | None = None,  # ImplChoice names, checked by the request in the CLI's words
    checkpoint: bool = False,
    cache: Cache = "cold",
    calibrate: bool = False,
    warmup_ms: float = 300.0,
    repeats: int | None = None,
    min_time: float | None = None,
    threads: int | None = None,
    seed: int = 0,
    max_cases: int = 1_000,
    tp: int = 1,
    ep: int = 1,
    layer: int | None = None,
    gpu: str | None = None,
    plot: str | os.PathLike[str] | None = None,
) -> Result[BenchReport]:
    """Time an FFN's forward (or forward + backward) as `ffn bench` does: median ms, TFLOP/s,
    % of peak, memory. `spec_or_model`: an FFNSpec (`fused_gate_up=True` times the fused
    implementation, as `--fused` does), or a preset name / config.json path (its layer `layer`'s
    FFN at the model's sizes). `seq_len`, `dtype` and `impl` take one value or a list to sweep;
    `device` and `dtype` take names or a `torch.device` / `torch.dtype`; one sharded forward
    (`tp` / `ep`) is `bench_sharded`'s. `plot`: also draw the results to that file, as `--plot` does.
    `to_dict()` is the command's `--json` for the same options."""
    check_arguments(
        bench,
        {
            "batch": batch,
            "seq_len": seq_len,
            "dtype": dtype,
            "device": device,
            "backward": backward,
            "impl": impl,
            "checkpoint": checkpoint,
            "cache": cache,
            "calibrate": calibrate,
            "warmup_ms": warmup_ms,
            "repeats": repeats,
            "min_time": min_time,
            "threads": threads,
            "seed": seed,
            "max_cases": max_cases,
            "tp": tp,
            "ep": ep,
            "layer": layer,
            "gpu": gpu,
            "plot": plot,
        },
    )

    if tp != 1 or ep != 1:
        option, value = ("tp", tp) if tp != 1 else ("ep", ep)
        raise FFNError(option, value, _("one sharded forward is timed by ffn_cli.bench_sharded(spec, tp=…, ep=…)"))
    plot = None if plot is None else os.fspath(plot)
    dtypes = tuple(_torch_name("dtype", d) for d in _as_tuple(dtype))
    options: dict[str, Any] = {
        "batch": batch, "seq_len": _as_tuple(seq_len), "dtype": dtypes, "device": _torch_name("device", device),
        "backward": backward, "impl": _as_tuple(impl), "checkpoint": checkpoint,
        "cache": cache, "calibrate": calibrate, "warmup_ms": warmup_ms, "repeats": repeats, "min_time": min_time,
        "threads": threads, "seed": seed, "max_cases": max_cases, "tp": tp, "ep": ep, "layer": layer, "gpu": gpu, "plot": plot,
    }  # fmt: skip

    swept = answer_bench(_bench_request(spec_or_model, options))
    assert isinstance(swept, BenchSweep)  # tp and ep are 1: bench_sharded's are refused above
    if plot is not None:  # drawn here, written by ffn_cli/outputs.py's writer
        write_plot(swept.report, plot)
    presented = bench_presenter.present(swept)
    return Result(swept.report, presented.view, presented.data)


@_said_as_keywords
def bench_sharded(
    spec_or_model: FFNSpec | str,
    *,
    tp: int = 1,
    ep: int = 1,
    batch: int = 8,
    seq_len: int = 512,
    dtype: str | torch.dtype = "float32",
    device: str | torch.device = "cpu",
    warmup_ms: float = 300.0,
    repeats: int | None = None,
    seed: int = 0,
    layer: int | None = None,
    rank_timeout: float | None = None,
) -> Result[ParallelTiming]:
    """One eager forward sharded over `tp` tensor-parallel or `ep` expert-parallel ranks (spawned
    processes), timed and held to the unsharded module, as `ffn bench --tp N` / `--ep N` does it;
    `rank_timeout` the seconds the ranks may take (`--rank-timeout`; default 300).
    `to_dict()` is the command's `--json` for the same options."""
    check_arguments(
        bench_sharded,
        {
            "tp": tp,
            "ep": ep,
            "batch": batch,
            "seq_len": seq_len,
            "dtype": dtype,
            "device": device,
            "warmup_ms": warmup_ms,
            "repeats": repeats,
            "seed": seed,
            "layer": layer,
            "rank_timeout": rank_timeout,
        },
    )

    _check_split(tp, ep)
    options: dict[str, Any] = {
        "tp": tp, "ep": ep, "batch": batch, "seq_len": (seq_len,), "dtype": (_torch_name("dtype", dtype),),
        "device": _torch_name("device", device), "warmup_ms": warmup_ms, "repeats": repeats, "seed": seed, "layer": layer,
        "rank_timeout": rank_timeout,
    }  # fmt: skip

    sharded = answer_bench(_bench_request(spec_or_model, options))
    assert isinstance(sharded, ShardedTiming)  # _check_split: tp or ep above 1
    presented = bench_presenter.present(sharded)
    return Result(sharded.timing, presented.view, presented.data)


def _bench_request(spec_or_model: FFNSpec | str, options: dict[str, Any]) -> BenchRequest:
    """`ffn bench`'s request for an FFNSpec, a preset name or a config.json path."""

    if isinstance(spec_or_model, FFNSpec):
        return BenchRequest(ffn=OneSpec(spec_or_model), **options)
    if isinstance(spec_or_model, str):
        return BenchRequest(**_model_name(spec_or_model), **options)
    raise FFNError("spec_or_model", spec_or_model, _("give an FFNSpec, a preset name or a config.json path"))


def _check_split(tp: int, ep: int) -> None:
    """A split over ranks needs tp or ep above 1."""
    if tp == 1 and ep == 1:
        raise FFNError("tp", tp, _("splits the FFN over 2 or more ranks: give tp or ep"))


@overload
def _as_tuple(value: None) -> None: ...
@overload
def _as_tuple(value: T | list[T]) -> tuple[T, ...]: ...
def _as_tuple(value: T | list[T] | None) -> tuple[T, ...] | None:
    """One value or a list (or tuple) of them (`seq_len=512`, `seq_len=[128, 512]`) as the request's tuple."""
    if value is None:
        return None
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)
