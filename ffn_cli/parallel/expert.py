"""The expert-parallel MoE forward: route locally, all-to-all to the owning rank, run, all-to-all back.

Each rank holds a contiguous block of the tokens and of the experts. The owner of an expert sees
its rows source rank by source rank, each in token order, which is global token order: capacity
then drops exactly the rows the unsharded module drops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ffn_cli.modules.routing import capacity, route, router_probs, sort_by_expert
from ffn_cli.parallel.accounting import owned_experts
from ffn_cli.parallel.steps import StepLog, all_to_all_rows
from ffn_cli.parallel.tensor import local_ffn
from ffn_cli.spec import FFNSpec

__all__ = ["ExpertStats", "ep_forward"]


@dataclass
class ExpertStats:
    """Routing seen by one rank: rows per owned expert, rows sent to / received from each rank."""

    experts: tuple[int, ...]
    tokens_per_expert: list[int]
    tokens_sent: list[int]
    tokens_received: list[int]
    dropped: int = 0


@dataclass(frozen=True)
class _Dispatch:
    """This rank's (token, slot) pairs sorted by expert, then by token."""

    token_idx: Tensor  # (n·k,)
    slot: Tensor  # (n·k,)
    weights: Tensor  # (n, k)
    counts: Tensor  # (E,) rows for each expert


def _route(shard: Mapping[str, Tensor], spec: FFNSpec, tokens: Tensor, log: StepLog) -> _Dispatch:
    """The unsharded module's routing (`modules.routing`), on this rank's tokens."""
    logits = F.linear(tokens, shard["router.weight"])  # (n, E), replicated router
    log.step("router", "x·W_routerᵀ", [tokens], logits)
    weights, chosen = route(spec, router_probs(logits), tokens.dtype)  # (n, k) each
    log.step("top-k", f"top-{spec.top_k} of softmax", [logits], chosen)
    token_idx, slot, counts = sort_by_expert(chosen, spec.experts)
    return _Dispatch(token_idx, slot, weights, counts)


def _expert_rows(recv_counts: list[list[int]], local: int) -> list[int]:
    """Rows of the receive buffer holding local expert `local`: source by source, in token order."""
    rows, start = [], 0
    for per_source in recv_counts:  # blocks arrive in source-rank order
        offset = start + sum(per_source[:local])
        rows.extend(range(offset, offset + per_source[local]))
        start += sum(per_source)
    return rows


def _run_experts(
    shard: Mapping[str, Tensor],
    spec: FFNSpec,
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
        y_e = local_ffn(shard, spec, x_e, prefix=f"experts.{e}.")  # (m_e, d)
        log.step(f"experts.{e}", "expert_e(x) on the rows routed to e", [x_e], y_e)
        out[idx] = y_e
        computed.append(len(rows))
    return out, computed, dropped


def _add_shared(shard: Mapping[str, Tensor], spec: FFNSpec, tokens: Tensor, routed: Tensor, log: StepLog) -> Tensor:
    if not spec.shared_hidden:
        return routed
    shared = local_ffn(shard, spec, tokens, prefix="shared_experts.")  # (n, d), replicated weights
    log.step("shared_experts", "shared(x), on this rank's tokens", [tokens], shared)
    gate = shard.get("shared_expert_gate.weight")
    if gate is not None:
        shared = torch.sigmoid(F.linear(tokens, gate)) * shared  # Qwen2-MoE
        log.step("shared_expert_gate", "σ(x·w_g) ⊙ shared", [tokens], shared)
    out = routed + shared
    log.step("shared_add", "routed + shared", [routed, shared], out)
    return out


def ep_forward(
    shard: Mapping[str, Tensor], spec: FFNSpec, tokens: Tensor, *, rank: int, world_size: int, total_tokens: int, log: StepLog
) -> tuple[Tensor, ExpertStats]:
    """MoE forward of this rank's `tokens` (n, d), its experts reached through two all-to-alls."""
    per_rank = spec.experts // world_size
    route = _route(shard, spec, tokens, log)
    # 1. split sizes first: every owner learns how many rows each source sends to each of its experts.
    recv_counts = all_to_all_rows(route.counts, [per_rank] * world_size, [per_rank] * world_size, log, "split sizes")
    log.step("all_to_all split sizes", "rows per expert, to each expert's owner", [route.counts], recv_counts)
    recv_table = recv_counts.view(world_size, per_rank).tolist()  # [source][local expert]
    send_rows = route.counts.view(world_size, per_rank).sum(dim=1).tolist()
    recv_rows = [sum(row) for row in recv_table]
    # 2. dispatch: rows sorted by expert are already grouped by owning rank.
    send = tokens[route.token_idx]  # (n·k, d)
    log.step("dispatch", "gather rows by expert", [tokens], send)
    received = all_to_all_rows(send, send_rows, recv_rows, log, "dispatch")  # (Σ recv, d)
    log.step("all_to_all dispatch", "rows to the rank owning their expert", [send], received)
    # 3. owned experts, with the capacity the unsharded module computes from all tokens.
    mine = owned_experts(rank, world_size, spec.experts)
    expert_out, computed, dropped = _run_experts(shard, spec, received, recv_table, mine, capacity(spec, total_tokens), log)
    # 4. return: the same split sizes, reversed.
    returned = all_to_all_rows(expert_out, recv_rows, send_rows, log, "return")  # (n·k, d)
    log.step("all_to_all return", "expert outputs back to the token's rank", [expert_out], returned)
    # 5. combine: Σ_k g_k·y_k into each token's row.
    weighted = returned * route.weights[route.token_idx, route.slot].unsqueeze(-1)
    routed = torch.zeros_like(tokens).index_add(0, route.token_idx, weighted)  # (n, d)
    log.step("combine", "Σ_k g_k·y_k", [returned], routed)
    out = _add_shared(shard, spec, tokens, routed, log)
    return out, ExpertStats(tuple(mine), computed, send_rows, recv_rows, dropped)
