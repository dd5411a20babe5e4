"""The Python API: `ffn_cli.trace(...)`, `ffn_cli.params(...)` and `ffn_cli.bench(...)`, the same
core functions the commands call, returning results that print with rich, show in Jupyter, and give `to_dict()`
equal to the command's `--json`. Kept small: what `__all__` names is the stable surface."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.spec import FFNSpec

if TYPE_CHECKING:
    from rich.console import RenderableType
    from torch import Tensor, nn

__all__ = ["Result", "bench", "params", "trace"]

NOTEBOOK_WIDTH = 100  # columns a notebook cell renders the tables at


@dataclass(frozen=True, eq=False)
class Result:
    """A result (`value`: a TraceResult, an FFNReport, a ModelParams) with its views: rich
    (`rich.print(r)`), Jupyter (HTML and text), and `to_dict()`, the command's `--json`.
    Its fields read through: `r.steps`, `r.total_params`."""

    value: Any
    view: Callable[[], RenderableType]
    data: Callable[[], dict[str, Any]]
    # A trace's picture: the whole page (True) or a notebook cell's fragment (False).
    drawing: Callable[[bool], str] | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.value, name)

    def __rich__(self) -> RenderableType:
        return self.view()

    def to_dict(self) -> dict[str, Any]:
        from ffn_cli.render.json_data import json_ready

        return json_ready(self.data())

    def _console(self) -> Any:
        from rich.console import Console

        console = Console(record=True, width=NOTEBOOK_WIDTH, file=io.StringIO(), color_system="truecolor", force_jupyter=False)
        console.print(self.view())
        return console

    def page(self, path: str | None = None) -> str:
        """A trace drawn as `ffn trace --page` draws it: one offline HTML page, written to `path` if given."""
        if self.drawing is None:
            raise FFNError("page", type(self.value).__name__, _("a trace's result: ffn_cli.trace(...).page()"))
        text = self.drawing(True)
        if path is not None:  # written as `ffn trace --page` writes it, by the one writer
            from ffn_cli.outputs import HTML_FILES, check_output_file, write_text

            write_text(check_output_file("page", str(path), HTML_FILES), text, option="page")
        return text

    def _repr_html_(self) -> str:
        if self.drawing is not None:
            return self.drawing(False)
        return self._console().export_html(inline_styles=True, code_format='<pre style="font-family:monospace">{code}</pre>')

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        console = self._console()
        text = console.export_text(clear=False)
        html = console.export_html(inline_styles=True, code_format='<pre style="font-family:monospace">{code}</pre>')
        return {"text/plain": text, "text/html": self.drawing(False) if self.drawing is not None else html}

    def __repr__(self) -> str:
        return f"<ffn {type(self.value).__name__}: print it, or .to_dict()>"

    def __str__(self) -> str:
        return self._console().export_text()


def _model_name(text: str) -> dict[str, str]:
    """A preset name, or a config.json path (a file or its folder)."""
    from pathlib import Path

    return {"config": text} if Path(text).expanduser().exists() or text.endswith(".json") else {"preset": text}


def trace(
    module_or_spec: nn.Module | FFNSpec | str,
    x: Tensor | Any = None,
    *,
    batch: int = 2,
    seq_len: int = 5,
    d_model: int | None = None,
    device: str | None = None,
    dtype: str | None = None,
    seed: int = 0,
    mode: str = "eval",
    values: int = 0,
    depth: int | None = None,
    backward: bool = False,
    loss: str | None = None,
    checkpoint: bool = False,
    check: bool = False,
    layer: int | None = None,
    ops: bool = False,
    explain: bool = False,
    reference: bool = False,
) -> Result:
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
    from ffn_cli.requests.ffn import OneSpec
    from ffn_cli.requests.trace import TraceRequest
    from ffn_cli.services.trace import trace as answer_trace

    device, dtype = _torch_name("device", device), _torch_name("dtype", dtype)
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
        "device": device if is_module else device or "cpu", "dtype": dtype if is_module else dtype or "float32",
        # The device and dtype named are given, even at their defaults: a model's layer then runs in that dtype.
        "typed": frozenset(name for name, value in (("device", device), ("dtype", dtype)) if value is not None),
    }  # fmt: skip
    if isinstance(module_or_spec, FFNSpec):
        request = TraceRequest(ffn=OneSpec(module_or_spec), check=check, **options)
    elif isinstance(module_or_spec, str) and is_module:
        request = TraceRequest(module=module_or_spec, x=x, depth=depth, reference=reference, d_model=d_model, **options)
    elif isinstance(module_or_spec, str):
        request = TraceRequest(**_model_name(module_or_spec), layer=layer, check=check, **options)
    else:
        request = TraceRequest(own=module_or_spec, x=x, depth=depth, reference=reference, d_model=d_model, **options)
    answer = answer_trace(request)
    return Result(answer.value, answer.view, answer.data, answer.drawing)


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


def params(
    spec_or_model: FFNSpec | str,
    *,
    dtype: str | None = None,
    gpu: str | None = None,
    weights: str | None = None,
    quantize: str | None = None,
    tp: int = 1,
    ep: int = 1,
    phase: str = "prefill",
    batch: int | list[int] | None = None,
    seq_len: int | list[int] | None = None,
    tokens: int | None = None,
    mtp: bool = True,
    explain: bool = False,
) -> Result:
    """Parameters, FLOPs and memory without torch, as `ffn params` answers them: an FFNSpec
    (beside an attention of its width; bytes in float32 by default), or a preset name or
    config.json path (the whole model; bfloat16 by default).

    What it costs on GPUs, as `ffn params --gpu … --tp … --ep …` answers it: `gpu` (a key of
    `ffn hardware`: for a model the fit verdict and the roofline, per GPU under `tp` / `ep`; for
    an FFNSpec its forward's roofline), `phase`, `batch` (a number or a list to sweep),
    `seq_len` (with `gpu`: tokens per sequence, or decode's context; without: the lengths to
    count FLOPs at), `tokens`; for a model `weights` / `quantize` (how it is stored) and
    `mtp=False` to leave out the multi-token-prediction layers the checkpoint ships. An FFNSpec
    with `tp` / `ep` (and no `gpu`): what each rank holds. `explain`: why the FFN is about two
    thirds of a layer. `to_dict()` is the command's `--json` for the same options."""
    from ffn_cli.requests.ffn import OneSpec
    from ffn_cli.requests.params import ParamsRequest
    from ffn_cli.services.params import params as answer_params

    options: dict[str, Any] = {
        "dtype": dtype, "gpu": gpu, "weights": weights, "quantize": quantize, "tp": tp, "ep": ep, "phase": phase,
        "batch": _comma_list(batch), "seq_len": _comma_list(seq_len), "tokens": tokens, "no_mtp": not mtp, "explain": explain,
    }  # fmt: skip
    if isinstance(spec_or_model, FFNSpec):
        request = ParamsRequest(ffn=OneSpec(spec_or_model), **options)
    elif isinstance(spec_or_model, str):
        request = ParamsRequest(**_model_name(spec_or_model), **options)
    else:
        raise FFNError("spec_or_model", spec_or_model, _("give an FFNSpec, a preset name or a config.json path"))
    answer = answer_params(request)
    return Result(answer.value, answer.view, answer.data)


def bench(
    spec_or_model: FFNSpec | str,
    *,
    batch: int = 8,
    seq_len: int | list[int] = 512,
    dtype: str | list[str] | Any = "float32",
    device: str | Any = "cpu",
    backward: bool = False,
    impl: str | list[str] | None = None,
    checkpoint: bool = False,
    cache: str = "cold",
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
    plot: str | None = None,
) -> Result:
    """Time an FFN's forward (or forward + backward) as `ffn bench` does: median ms, TFLOP/s,
    % of peak, memory. `spec_or_model`: an FFNSpec (`fused_gate_up=True` times the fused
    implementation, as `--fused` does), or a preset name / config.json path (its layer `layer`'s
    FFN at the model's sizes). `seq_len`, `dtype` and `impl` take one value or a list to sweep;
    `device` and `dtype` take names or a `torch.device` / `torch.dtype`; `tp` / `ep` time one
    sharded forward. `plot`: also draw the results to that file, as `--plot` does.
    `to_dict()` is the command's `--json` for the same options."""
    from ffn_cli.requests.bench import BenchRequest
    from ffn_cli.requests.ffn import OneSpec
    from ffn_cli.services.bench import bench as answer_bench

    dtypes = [_torch_name("dtype", d) for d in dtype] if isinstance(dtype, (list, tuple)) else [_torch_name("dtype", dtype)]
    options: dict[str, Any] = {
        "batch": batch, "seq_len": _comma_list(seq_len), "dtype": ",".join(str(d) for d in dtypes), "device": _torch_name("device", device),
        "backward": backward, "impl": impl if impl is None or isinstance(impl, str) else ",".join(impl), "checkpoint": checkpoint,
        "cache": cache, "calibrate": calibrate, "warmup_ms": warmup_ms, "repeats": repeats, "min_time": min_time,
        "threads": threads, "seed": seed, "max_cases": max_cases, "tp": tp, "ep": ep, "layer": layer, "gpu": gpu, "plot": plot,
    }  # fmt: skip
    if isinstance(spec_or_model, FFNSpec):
        request = BenchRequest(ffn=OneSpec(spec_or_model), **options)
    elif isinstance(spec_or_model, str):
        request = BenchRequest(**_model_name(spec_or_model), **options)
    else:
        raise FFNError("spec_or_model", spec_or_model, _("give an FFNSpec, a preset name or a config.json path"))
    answer = answer_bench(request)
    if plot is not None:
        from ffn_cli.render.bench import write_plot

        write_plot(answer.value, plot)
    return Result(answer.value, answer.view, answer.data)


def _comma_list(value: int | list[int] | tuple[int, ...] | None) -> str | None:
    """A number or a list, as the option's comma list (`[1, 64]` is `1,64`)."""
    if value is None:
        return None
    return ",".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
