"""A rank's record of its forward (shapes per step, bytes per collective) and the logged collectives."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch.distributed as dist
from torch import Tensor

from ffn_cli.parallel.result import CommRecord, StepShape

__all__ = ["StepLog", "all_reduce_sum", "all_to_all_rows"]


class StepLog:
    """Shapes of every step and bytes of every collective; a disabled log (timing) keeps nothing."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.steps: list[StepShape] = []
        self.comm: list[CommRecord] = []

    def step(self, name: str, formula: str, inputs: Sequence[Tensor], output: Tensor) -> None:
        if self.enabled:
            self.steps.append(StepShape(name, formula, tuple(tuple(t.shape) for t in inputs), tuple(output.shape)))

    def collective(self, record: CommRecord) -> None:
        if self.enabled:
            self.comm.append(record)


def all_reduce_sum(partial: Tensor, log: StepLog, name: str) -> Tensor:
    """Sum `partial` over all ranks, in place; every rank ends with the same full result."""
    dist.all_reduce(partial, op=dist.ReduceOp.SUM)
    payload = partial.numel() * partial.element_size()
    shape = tuple(partial.shape)
    log.collective(CommRecord("all_reduce", name, shape, shape, payload, payload))
    log.step("all_reduce", "Σ over ranks of the partial sums", [partial], partial)
    return partial


def all_to_all_rows(rows: Tensor, send_rows: list[int], recv_rows: list[int], log: StepLog, name: str) -> Tensor:
    """Send send_rows[j] consecutive rows of `rows` to rank j; receive recv_rows[i] from rank i, in rank order."""
    out = rows.new_empty((sum(recv_rows), *rows.shape[1:]))
    dist.all_to_all_single(out, rows.contiguous(), output_split_sizes=recv_rows, input_split_sizes=send_rows)
    rank = dist.get_rank()
    row_bytes = math.prod(rows.shape[1:]) * rows.element_size()
    sent = (sum(send_rows) - send_rows[rank]) * row_bytes  # rows kept on this rank cross no link
    received = (sum(recv_rows) - recv_rows[rank]) * row_bytes
    log.collective(CommRecord("all_to_all", name, tuple(rows.shape), tuple(out.shape), sent, received))
    return out
