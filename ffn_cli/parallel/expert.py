"""The expert-parallel MoE forward: route locally, all-to-all to the owning rank, run, all-to-all back.

Each rank holds a contiguous block of the tokens and of the experts. The owner of an expert sees
its rows source rank by source rank, each in token order, which is global token order: capacity
then drops exactly the rows the unsharded module drops.

The routing, each expert, the combine and the shared experts are the variant's own forward
(`variants/moe.py`), run on this rank's shard through `ExpertShardWeights`; only the
all-to-alls between them, and where the received rows lie, are this module's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor

from ffn_cli.parallel.accounting import owned_experts
from ffn_cli.parallel.steps import StepLog, all_to_all_rows
from ffn_cli.parallel.tensor import local_ffn
from ffn_cli.spec import FFNSpec
from ffn_cli.variants.moe import LATENT_DOWN, LATENT_UP
from ffn_cli.variants.routing import capacity, sort_by_expert, zeros_like

if TYPE_CHECKING:
    from ffn_cli.variants.moe import RoutedMoE

__all__ = ["ExpertShardWeights", "ExpertStats", "ep_forward"]

# The variant's steps and parts a rank logs as they run (the rest it logs itself, around its
# all-to-alls): the shared experts, on this rank's own tokens.
_LOGGED = {
    "shared_experts": "shared(x), on this rank's tokens",
    "shared_expert_gate": "routed + σ(x·w_g) ⊙ shared",
    "shared_add": "routed + shared",
}


@dataclass
class ExpertStats:
    """Routing seen by one rank: rows per owned expert, rows sent to / received from each rank."""

    experts: tuple[int, ...]
    tokens_per_expert: list[int]
    tokens_sent: list[int]
    tokens_received: list[int]
    dropped: int = 0


class ExpertShardWeights:
    """One expert-parallel rank's shard seen through the variant's `Weights` (eval mode: no
    dropout): the replicated router, shared experts and their gate, and this rank's experts,
    whole. A part that is one FFN (`experts.5`, `shared_experts`) runs the expert variant's own
    forward on its tensors; the steps and parts in `_LOGGED` are logged with their shapes."""

    def __init__(self, shard: Mapping[str, Tensor], spec: FFNSpec, log: StepLog) -> None:
        self.shard, self.spec, self.log = shard, spec, log

    def _log(self, name: str, inputs: tuple[Any, ...], out: Any) -> None:
        if name in _LOGGED:
            self.log.step(name, _LOGGED[name], [t for t in inputs if isinstance(t, Tensor)], out)

    def linear(self, name: str, x: Tensor) -> Tensor:
        return F.linear(x, self.shard[name + ".weight"], self.shard.get(name + ".bias"))

    def call(self, name: str, x: Tensor) -> Tensor:
        out = local_ffn(self.shard, self.spec, x, prefix=name + ".")
        self._log(name, (x,), out)
        return out

    def tensor(self, name: str) -> Tensor:
        return self.shard[name]

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        out = fn(*args)
        self._log(name, args, out)
        return out

    def dropout(self, h: Tensor) -> Tensor:
        return h


@dataclass(frozen=True)
class _Dispatch:
    """This rank's (token, slot) pairs sorted by expert, then by token."""

    token_idx: Tensor  # (n·k,)
    slot: Tensor  # (n·k,)
    weights: Tensor  # (n, k)
    counts: Tensor  # (E,) rows for each expert


def _route(variant: RoutedMoE, w: ExpertShardWeights, spec: FFNSpec, tokens: Tensor, log: StepLog) -> _Dispatch:
    """The variant's routing, on this rank's tokens (the router is replicated)."""
    logits, weights, chosen = variant.route(spec, w, tokens)  # (n, E); (n, k) each
    log.step("router", "x·W_routerᵀ", [tokens], logits)
    log.step("top-k", f"top-{spec.top_k} of softmax", [logits], chosen)
    token_idx, slot, counts = sort_by_expert(chosen, spec.experts)
    return _Dispatch(token_idx, slot, weights, counts)


def _expert_rows(recv_counts: list[list[int]], local: int) -> list[int]:
    """Rows of the receive buffer holding local expert `local`: source by source, in token order."""
    rows: list[int] = []
    start = 0
    for per_source in recv_counts:  # blocks arrive in source-rank order
        offset = start + sum(per_source[:local])
        rows.extend(range(offset, offset + per_source[local]))
        start += sum(per_source)
    return rows


def _run_experts(
    w: ExpertShardWeights,
    received: Tensor,
    recv_counts: list[list[int]],
    mine: range,
    limit: int | None,
    log: StepLog,
) -> tuple[Tensor, list[int], int]:
    """Each owned expert on its received rows (the first `capacity` of them); their outputs in place."""
    out = torch.zeros_like(received)  # dropped rows come back as 0: no contribution, as unsharded
    computed, dropped = [], 0
    for local, e in enumerate(mine):
        rows = _expert_rows(recv_counts, local)
        if limit is not None and len(rows) > limit:
            dropped += len(rows) - limit
            rows = rows[:limit]
        idx = torch.tensor(rows, dtype=torch.long, device=received.device)
        x_e = received[idx]  # (m_e, d)
        y_e = w.call(f"experts.{e}", x_e)  # (m_e, d): the expert variant's forward
        log.step(f"experts.{e}", "expert_e(x) on the rows routed to e", [x_e], y_e)
        out[idx] = y_e
        computed.append(len(rows))
    return out, computed, dropped


def ep_forward(
    shard: Mapping[str, Tensor], spec: FFNSpec, tokens: Tensor, *, rank: int, world_size: int, total_tokens: int, log: StepLog
) -> tuple[Tensor, ExpertStats]:
    """MoE forward of this rank's `tokens` (n, d), its experts reached through two all-to-alls."""
    variant = cast("RoutedMoE", spec.info)  # check_parallel lets only an expert-parallel variant through
    w = ExpertShardWeights(shard, spec, log)
    per_rank = spec.experts // world_size
    route = _route(variant, w, spec, tokens, log)
    # 1. split sizes first: every owner learns how many rows each source sends to each of its experts.
    recv_counts = all_to_all_rows(route.counts, [per_rank] * world_size, [per_rank] * world_size, log, "split sizes")
    log.step("all_to_all split sizes", "rows per expert, to each expert's owner", [route.counts], recv_counts)
    recv_table = recv_counts.view(world_size, per_rank).tolist()  # [source][local expert]
    send_rows = route.counts.view(world_size, per_rank).sum(dim=1).tolist()
    recv_rows = [sum(row) for row in recv_table]
    # 2. dispatch: rows sorted by expert are already grouped by owning rank; a latent MoE's in its
    # latent, projected down once on the token's own rank (the projection is replicated).
    inner = w.linear(LATENT_DOWN, tokens) if spec.latent else tokens  # (n, d) or (n, L)
    send = inner[route.token_idx]  # (n·k, d) or (n·k, L)
    log.step("dispatch", "gather rows by expert", [inner], send)
    received = all_to_all_rows(send, send_rows, recv_rows, log, "dispatch")  # (Σ recv, d)
    log.step("all_to_all dispatch", "rows to the rank owning their expert", [send], received)
    # 3. owned experts, with the capacity the unsharded module computes from all tokens.
    mine = owned_experts(rank, world_size, spec.experts)
    expert_out, computed, dropped = _run_experts(w, received, recv_table, mine, capacity(spec, total_tokens), log)
    # 4. return: the same split sizes, reversed.
    returned = all_to_all_rows(expert_out, recv_rows, send_rows, log, "return")  # (n·k, d)
    log.step("all_to_all return", "expert outputs back to the token's rank", [expert_out], returned)
    # 5. combine: Σ_k g_k·y_k into each token's row.
    routed = variant.combine(w, zeros_like(inner), route.token_idx, returned, route.weights, route.slot)  # (n, d) or (n, L)
    log.step("combine", "Σ_k g_k·y_k", [returned], routed)
    if spec.latent:
        routed = w.linear(LATENT_UP, routed)  # back to d_model, on the token's rank
    out = variant.add_shared(spec, w, tokens, routed)  # logged as it runs
    return out, ExpertStats(tuple(mine), computed, send_rows, recv_rows, dropped)
