"""What each service returns: frozen dataclasses holding data only, one per kind of answer. The
presenters (`ffn_cli/render/presenters/`) turn each into what the command prints and its `--json`;
the Python API hands the same result to the same presenter. Pure Python, and light: every type
it names is imported for type checking only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ffn_cli.benchmark.result import BenchReport
    from ffn_cli.configs.built import BuiltLayout, BuiltModel
    from ffn_cli.configs.layer_select import LayerChoice
    from ffn_cli.costs.decode_state import KindState
    from ffn_cli.costs.rank_memory import RankMemory
    from ffn_cli.costs.weights import Checkpoint
    from ffn_cli.hardware import GPU
    from ffn_cli.hardware.cpu import MeasuredCPU
    from ffn_cli.hardware.profile import DeviceProfile
    from ffn_cli.i18n import Message
    from ffn_cli.models.comparison import Comparison
    from ffn_cli.models.count import ModelParams
    from ffn_cli.models.explain import BlockExplain
    from ffn_cli.models.layer import FFNReport
    from ffn_cli.models.seq_flops import FlopsAtLength, LayerStack, OverLengths
    from ffn_cli.parallel.accounting import RankParams
    from ffn_cli.parallel.result import ParallelResult, ParallelTiming
    from ffn_cli.spec import FFNSpec
    from ffn_cli.tracing.result import TraceResult

__all__ = [
    "BenchSweep",
    "BuiltCount",
    "DecodeState",
    "DeviceProfiled",
    "FFNOnGPU",
    "FFNParams",
    "GPUTable",
    "ModelCosts",
    "ModelParamsAnswer",
    "ModelsCompared",
    "ParamsResult",
    "PresetList",
    "RanksHeld",
    "Roofline",
    "ShardedTiming",
    "ShardedTrace",
    "StoredWeights",
    "TraceAnswer",
    "VariantsCompared",
]


# --- ffn params ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FFNParams:
    """One FFN beside its attention; its FLOPs over --seq-len and --explain's block when asked."""

    report: FFNReport
    over: OverLengths | None = None
    block: BlockExplain | None = None


@dataclass(frozen=True)
class FFNOnGPU:
    """One FFN's forward on --gpu: its passes' roofline, or the line that says why there is none
    (`missing`: the row has no dense rate in this column)."""

    report: FFNReport
    gpu: GPU
    column: str
    passes: list[Any] | None
    missing: str | None = None


@dataclass(frozen=True)
class VariantsCompared:
    """Variants side by side, and what --match-params could not match."""

    comparison: Comparison
    warnings: list[str]


@dataclass(frozen=True)
class RanksHeld:
    """What each of --tp / --ep ranks holds of one FFN."""

    spec: FFNSpec
    ranks: list[RankParams]


@dataclass(frozen=True)
class PresetList:
    """Each preset: its name, its counts (or the model_type no reader knows), where it is from."""

    models: list[tuple[str, Any, str]]


@dataclass(frozen=True)
class BuiltCount:
    """A model no reader knows whose layout ffn cannot read, counted by building it with transformers on meta."""

    built: BuiltModel
    dtype: str


@dataclass(frozen=True)
class ModelsCompared:
    """Whole models side by side: name, counts, layers, FLOPs at each --seq-len."""

    compared: list[tuple[str, ModelParams, LayerStack, tuple[FlopsAtLength, ...]]]
    dtype: str
    # what a model laid out from its built layers leaves out, and its notes, each named by its model
    left_out: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FitsAt:
    """The fewest GPUs of the kind that hold a pass: `copies` copies of one --tp / --ep layout of
    up to 64 GPUs, the batch's sequences shared among them (each an independent server); one copy:
    the layout alone."""

    tp: int
    ep: int
    copies: int = 1

    @property
    def gpus(self) -> int:
        return self.copies * max(self.tp, self.ep)


@dataclass(frozen=True)
class StoredWeights:
    """The weights as the checkpoint stores them, beside bfloat16, and where the format came from."""

    stored: Checkpoint
    bf16_bytes: int
    note: str


@dataclass(frozen=True)
class Roofline:
    """The passes asked on --gpu: their costs (per GPU under tp / ep), the backward's, the
    forecasts from a measured profile, and the file the sweep is drawn to (--plot)."""

    costs: list[Any]
    gpu: GPU
    column: str
    origin: Message | str
    model: str
    n_layers: int
    backward: list[Any] | None
    per_gpu: list[Any] | None
    forecasts: Any
    plot: Path | None = None
    real_picks: Message | None = None  # what k is where zero-computation experts share the router's pool
    dense_layers: int = 0  # the dense FFN layers beside MoE ones: FFN ×1 is a MoE layer's (0: one kind)
    mtp_layers: int = 0  # the checkpoint's multi-token-prediction layers the memory counts and the pass does not run
    reapplied_layers: int = 0  # layers that run an earlier layer's shared blocks, reading its weights again (Zamba's)
    left_out: tuple[str, ...] = ()  # work the model does that no FLOP count sizes (a layout's flops_left_out)


@dataclass(frozen=True)
class DecodeState:
    """What a decode pass reads of its cache, by layer kind."""

    kinds: tuple[KindState, ...]
    seq_len: int
    batches: list[int]
    act_bytes: int


@dataclass(frozen=True)
class ModelCosts:
    """What a whole model costs as asked: the weights as stored, per-GPU memory and the fit
    verdict, the roofline (or why there is none: `missing`, the row's `notes`), the decode state.
    Each part None when not asked."""

    weights: StoredWeights | None = None
    ranks: RankMemory | None = None
    fit: Any = None
    left_out: tuple[str, ...] = ()
    roofline: Roofline | None = None
    missing: str | None = None
    missing_notes: str = ""
    decode: DecodeState | None = None
    # Where the verdict is "does not fit": the fewest GPUs of the kind that hold the same pass
    # (services/costs.py tries the layouts); None: none does.
    fits_at: FitsAt | None = None


@dataclass(frozen=True)
class ModelParamsAnswer:
    """One whole model: its counts, FLOPs over --seq-len, its costs, --explain's block; `layout`
    when it was read from built layers (no reader knows its model_type)."""

    counted: ModelParams
    dtype: str
    stack: LayerStack
    rows: tuple[FlopsAtLength, ...]
    costs: ModelCosts
    block: BlockExplain | None = None
    layout: BuiltLayout | None = None


ParamsResult = FFNParams | FFNOnGPU | VariantsCompared | RanksHeld | PresetList | BuiltCount | ModelsCompared | ModelParamsAnswer


# --- ffn bench -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchSweep:
    """The timings of a sweep, and the model layer they are of (--preset, --config, --model)."""

    report: BenchReport
    choice: LayerChoice | None = None


@dataclass(frozen=True)
class ShardedTiming:
    """One sharded forward timed under --tp / --ep; `shown`: False on a rank that is not the
    first under torchrun (the first one prints for all)."""

    timing: ParallelTiming
    shown: bool = True


# --- ffn trace -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceAnswer:
    """A trace, the model layer it is of, what the view shows (--ops, --values, --explain), and
    a failed --check (raised once the result is shown)."""

    result: TraceResult
    choice: LayerChoice | None = None
    ops: bool = False
    values: int = 0
    explain: bool = False
    failure: Exception | None = None


@dataclass(frozen=True)
class ShardedTrace:
    """One sharded forward held to the unsharded module; `failure` when they differ."""

    result: ParallelResult
    shown: bool = True
    failure: Exception | None = None


# --- ffn hardware ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GPUTable:
    """The GPUs asked (every row of the table, or the one --gpu names) and this CPU as measured
    (--measure-cpu; None when not asked)."""

    gpus: tuple[GPU, ...]
    cpu: MeasuredCPU | None = None


@dataclass(frozen=True)
class DeviceProfiled:
    """This device's profile as measured (--measure), and the file it was saved to."""

    profile: DeviceProfile
    path: Path
