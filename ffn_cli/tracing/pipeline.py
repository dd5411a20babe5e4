"""One trace of any target into one TraceResult: the run's options checked once (`RunOptions`),
the target placed (built, its input drawn), its forward (and backward) recorded and grouped,
what only the target knows added (`Target.findings`), the result assembled here and nowhere
else. The caller's random state is given back: the run draws from its own seeded streams.

A target is what is traced: a registry variant or its block (`variant_target.VariantTarget`),
any nn.Module (`any_module.ModuleTarget`), transformers' own FFN module of a model no reader
knows (`model_module.HFModuleTarget`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from ffn_cli.modules.user import caller_rng_kept
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.tracing.options import MAX_DEPTH, MAX_VALUES, MODES, RunOptions
from ffn_cli.tracing.recorder import Recording, dtype_name
from ffn_cli.tracing.result import BackwardResult, TracedModule, TraceResult, TraceStep

__all__ = ["MAX_DEPTH", "MAX_VALUES", "MODES", "RUNTIME_BYTES", "Placed", "Recorded", "RunOptions", "Target", "make_input", "run_target"]

# BLAS packing buffers, thread workspaces and allocator slack a first run of new shapes adds.
RUNTIME_BYTES = 32 * 2**20


@dataclass(frozen=True)
class Placed:
    """The target built where it runs, with its input."""

    module: nn.Module
    x: Tensor
    device: torch.device  # as asked ("cuda"), which the result names
    width: int  # the input width
    width_from: str  # where it was read: "the spec", "--d-model", "linear1.in_features"
    depth: int = 1  # how deep its submodules become steps
    opened: tuple[str, ...] = ()  # the wrappers opened to reach that depth

    @property
    def dtype(self) -> str:
        return dtype_name(self.x.dtype)


@dataclass(frozen=True)
class Recorded:
    """What the run did: its output, the forward's recording and steps, the backward's result."""

    out: Tensor
    rec: Recording
    steps: list[TraceStep]
    backward: BackwardResult | None


class Target(Protocol):
    """What a trace needs of the thing it traces."""

    def running(self) -> AbstractContextManager[Any]:
        """The context its code runs in (the user's code contained, its modes given back)."""
        ...

    def place(self, run: RunOptions) -> Placed:
        """Checked, sized and refused before allocating what cannot fit; built; its input drawn."""
        ...

    def record(self, placed: Placed, run: RunOptions) -> Recorded:
        """Its forward (and backward) under the recorder, grouped into its steps."""
        ...

    def identity(self, placed: Placed) -> TracedModule: ...

    def findings(self, placed: Placed, recorded: Recorded, run: RunOptions) -> dict[str, Any]:
        """The TraceResult's fields only this target can say (its check, its reference match,
        its warnings, its unread parameters …)."""
        ...


def _param_groups(module: nn.Module) -> tuple[tuple[str, int], ...]:
    """Parameter counts by top-level part (up_proj, experts, attn, …), in registration order."""
    groups: dict[str, int] = {}
    for name, p in module.named_parameters():
        top = name.split(".", 1)[0]
        groups[top] = groups.get(top, 0) + p.numel()
    return tuple(groups.items())


def make_input(shape: tuple[int, ...], device: torch.device, dtype: torch.dtype, seed: int) -> Tensor:
    """A seeded standard-normal input, drawn in float32 so every dtype starts from the same values."""
    if device.type == "meta":
        return torch.empty(shape, device=device, dtype=dtype)
    generator = torch.Generator(device=device).manual_seed(stream_seed(seed, Stream.INPUT))
    return torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)


def run_target(target: Target, run: RunOptions) -> TraceResult:
    """Place the target, run it once under the recorder, and assemble its TraceResult."""
    with caller_rng_kept(), target.running():
        placed = target.place(run)
        placed.module.train(run.mode == "train")
        torch.manual_seed(stream_seed(run.seed, Stream.DROPOUT))  # dropout masks in train mode
        recorded = target.record(placed, run)
        found = target.findings(placed, recorded, run)
    x, out, rec = placed.x, recorded.out, recorded.rec
    batch, seq_len = (int(x.shape[0]), int(x.shape[1])) if x.dim() == 3 else (1, int(x.shape[:-1].numel()))
    return TraceResult(
        module=target.identity(placed),
        batch=batch,
        seq_len=seq_len,
        device=str(placed.device),
        dtype=placed.dtype,
        mode=run.mode,
        seed=run.seed,
        input_shape=tuple(x.shape),
        output_shape=tuple(out.shape),
        input_stats=rec.input_stats,
        input_values=rec.input_values,
        steps=tuple(recorded.steps),
        ops=tuple(op.record for op in rec.ops),
        param_groups=_param_groups(placed.module),
        saved_bytes=rec.saved_bytes,
        backward=recorded.backward,
        output_member=rec.output_member,
        other_outputs=tuple(rec.other_outputs),
        **found,
    )
