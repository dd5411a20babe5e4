"""BenchConfig: how to measure, validated at construction; the same for every case of a sweep."""

from __future__ import annotations

from dataclasses import dataclass

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.spec import check_int
from ffn_cli.values import is_finite_number

__all__ = ["CACHE_MODES", "MAX_REPEATS", "BenchConfig"]

CACHE_MODES = ("cold", "hot")
MAX_REPEATS = 10_000


@dataclass(frozen=True)
class BenchConfig:
    """How to measure; the same for every case of a sweep."""

    device: str = "cpu"
    backward: bool = False
    checkpoint: bool = False  # also run each case with gradient checkpointing and compare
    cache: str = "cold"
    warmup_ms: float = 300.0
    repeats: int | None = None  # fixed sample count; None: enough calls to fill min_time_ms
    min_time_ms: float = 500.0
    threads: int | None = None  # CPU: torch.set_num_threads; None keeps torch's count
    calibrate: bool = False
    seed: int = 0
    gpu: str | None = None  # a key of ffn_cli/hardware's table: its ceilings instead of the device's own row

    def __post_init__(self) -> None:
        if self.cache not in CACHE_MODES:
            raise FFNError("cache", self.cache, _("choose cold or hot"))
        if self.checkpoint and not self.backward:
            raise FFNError("checkpoint", True, _("checkpointing changes only the backward pass: add --backward"))
        if not is_finite_number(self.warmup_ms) or not 0 <= self.warmup_ms <= 600_000:
            raise FFNError("warmup_ms", self.warmup_ms, _("must be a number of milliseconds in [0, 600000]"))
        if self.repeats is not None:
            check_int("repeats", self.repeats, maximum=MAX_REPEATS)
        if not is_finite_number(self.min_time_ms) or not 0 < self.min_time_ms <= 3_600_000:
            raise FFNError("min_time", self.min_time_ms, _("must be a positive time of at most an hour"))
        if self.threads is not None:
            check_int("threads", self.threads, maximum=1024)
        check_int("seed", self.seed, minimum=0, maximum=2**63 - 1)
