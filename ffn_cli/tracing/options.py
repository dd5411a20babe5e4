"""How a trace runs, whatever it traces (`RunOptions`): checked as it is made, without torch, so
that `ffn trace` refuses a mistyped number or choice before torch loads (some 2 s)."""

from __future__ import annotations

from dataclasses import dataclass

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.spec import check_int
from ffn_cli.tracing.result import LOSSES

__all__ = ["MAX_DEPTH", "MAX_VALUES", "MODES", "RunOptions"]

MODES = ("eval", "train")
MAX_VALUES = 64
MAX_DEPTH = 16


@dataclass(frozen=True)
class RunOptions:
    """How the target runs, whatever it is; checked as it is made, each option named.
    `depth` None: the target's own grouping (a module opened through its wrappers); `aten`:
    record the aten ops (`--ops`, `--json`), else the torch calls (the same steps, sooner)."""

    batch: int = 2
    seq_len: int = 5
    device: str | None = "cpu"  # None: where a module's parameters already are
    dtype: str | None = "float32"
    seed: int = 0
    mode: str = "eval"
    values: int = 0
    depth: int | None = None
    backward: bool = False
    loss: str | None = None
    checkpoint: bool = False
    aten: bool = True

    def __post_init__(self) -> None:
        check_int("batch", self.batch)
        check_int("seq_len", self.seq_len)
        check_int("seed", self.seed, minimum=0, maximum=2**63 - 1)  # as bench and --tp: torch seeds are 64-bit
        if self.mode not in MODES:
            raise FFNError("mode", self.mode, _("choose one of {modes}").format(modes=", ".join(MODES)))
        check_int("values", self.values, minimum=0, maximum=MAX_VALUES)
        if self.depth is not None:
            check_int("depth", self.depth, minimum=1, maximum=MAX_DEPTH)
        if not self.backward and self.loss is not None:
            raise FFNError("loss", self.loss, _("shapes the output gradient of a backward: add --backward"))
        if not self.backward and self.checkpoint:
            raise FFNError("checkpoint", True, _("recomputes activations during a backward: add --backward"))
        if self.loss is not None and self.loss.strip().lower() not in LOSSES:
            raise FFNError("loss", self.loss, _("choose one of {losses}").format(losses=", ".join(LOSSES)))

    @property
    def loss_name(self) -> str:
        return "random" if self.loss is None else self.loss.strip().lower()
