"""One forward pass as one GPU of a --tp / --ep layout runs it: its share of the FLOPs and bytes,
and the communication each layer needs, for the roofline per GPU.

Per GPU (the layout as costs/parallel_layout.py lays it): attention, a mixer, dense and shared
FFNs, embeddings and the LM head split over tp (FLOPs and weights ÷ tp), a MoE's router whole on
every GPU (as the memory holds it: each scores its tokens against every expert), on the sequences of
this GPU's attention group; the KV cache read and written for its share of the KV heads (all of
MLA's latent); the routed experts over the expert ranks: with ep > 1 a rank holds E / ep
experts (each cut over the rank's tp / ep GPUs where ep < tp) and reads those its tokens touch,
the busiest rank's expected count (not the mean: the slowest rank sets the pace), and computes
its share of the routed tokens, T·k / gpus, or a token for each expert it reads where that is
more (a batch below the ranks); with ep = 1 every expert is split over tp.

Communication, per GPU, bytes sent: a tensor-parallel layer ends in an all-reduce of its output
(T · d_model elements; a ring sends 2·(tp − 1)/tp of it), after attention, after a mixer (both
where they run side by side) and after the FFN; an
expert-parallel MoE layer sends each of its tokens' k copies to the experts' ranks and back
(dispatch and combine, (ep − 1)/ep of them off the GPU), the busiest GPU's tokens: its attention
group's over tp, T / gpus where the batch fills every group. Over the link the table gives
(both directions together: half each way), added to the time, not overlapped (the next layer
waits for it), and without per-message latency: a lower bound too. NVLink-bridged cards past
their bridge (the H100 NVL's pairs): a two-level all-reduce, within each bridge over its link and
a shard across the bridges over the PCIe between them, and an all-to-all's copies to another
bridge's GPUs over that PCIe. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ffn_cli.costs.parallel_layout import Layout, held_whole_share
from ffn_cli.costs.rank_memory import REPLICATED_ROLES
from ffn_cli.costs.roofline.bound import busiest_rank_experts
from ffn_cli.costs.roofline.model_pass import (
    PartCost,
    PassCase,
    PassCost,
    assemble,
    attention_cost,
    embedding_cost,
    extras_cost,
    ffn_cost,
    head_cost,
    index_key_bytes,
    layer_keys,
    mixer_cost,
    read_cost,
    routed_expert_tensors,
    total_cost,
)
from ffn_cli.costs.weights import StoragePlan
from ffn_cli.hardware import GPU
from ffn_cli.models.layout import attention_tensors, ffn_tensors
from ffn_cli.models.seq_flops import LayerStack
from ffn_cli.models.spec import ModelSpec
from ffn_cli.spec import FFNSpec

__all__ = ["Communication", "GPUPass", "gpu_pass"]


@dataclass(frozen=True)
class Communication:
    """Bytes one GPU sends in one pass: for one attention layer, one FFN layer (the MoE one), and
    every layer of the model; of the model's, those that cross between the bridges of NVLink-bridged
    cards (over the PCIe between them)."""

    attention_bytes: float
    ffn_bytes: float
    model_bytes: float
    between_domains_bytes: float = 0.0

    def time_s(self, gpu: GPU) -> float | None:
        """Over the GPU's links, half of each both-directions figure each way: the bytes within a
        link domain over its link, those between bridges over the link between them; None where
        the table has no link for it."""
        if gpu.link_gbps is None:
            return None
        within = (self.model_bytes - self.between_domains_bytes) / (gpu.link_gbps / 2 * 1e9)
        between = self.between_domains_bytes / (gpu.beyond_domain_gbps / 2 * 1e9) if gpu.beyond_domain_gbps else 0.0
        return within + between


@dataclass(frozen=True)
class GPUPass:
    layout: Layout
    cost: PassCost  # one GPU's share
    comm: Communication


def _split(p: PartCost, tp: int, kv_share: float) -> PartCost:
    return replace(
        p,
        flops=p.flops / tp,
        weight_bytes=p.weight_bytes / tp,
        kv_bytes=p.kv_bytes * kv_share,
        weight_params=p.weight_params / tp,
    )


def _attention_rank(spec: ModelSpec, stack: LayerStack, layer: int, plan: StoragePlan, case: PassCase, layout: Layout) -> PartCost:
    """One attention layer on a GPU: its work and weights ÷ tp, its KV heads' share of the cache,
    and of fewer KV heads than --tp one head's key and value projections, weights and work (copied)."""
    share = layout.kv_share(spec, layer)
    cost = _split(attention_cost(spec, stack, layer, plan, case), layout.tp, share)
    # an indexer's keys are whole on every GPU, as the memory holds them: the share split off, back
    whole = index_key_bytes(spec, layer, case, layer_keys(stack, layer, case))
    cost = replace(cost, kv_bytes=cost.kv_bytes + whole * (1 - share))
    shared = layer in spec.kv_shared_layers
    for t in attention_tensors(spec, (layer,), shared_kv=shared):
        share = held_whole_share(t.kv_heads, t.whole, layout.tp)
        if share:  # a head's share, or all of it, past the ÷ tp counted
            more = share - 1 / layout.tp
            weights, params = read_cost(plan, [t])
            flops = case.tokens * 2 * t.numel if len(t.shape) == 2 else 0
            cost = replace(cost, flops=cost.flops + flops * more, weight_bytes=cost.weight_bytes + weights * more,
                           weight_params=cost.weight_params + params * more)  # fmt: skip
    return cost


def _expert_parts(spec: ModelSpec, ffn: FFNSpec, plan: StoragePlan) -> tuple[float, float, int]:
    """One routed expert's stored bytes, matmul FLOPs per token and parameters."""
    tensors = routed_expert_tensors(spec, ffn)
    bytes_, params = read_cost(plan, tensors)
    flops = sum(2 * t.numel for t in tensors if len(t.shape) == 2)
    return bytes_, flops, params


def _beside_experts(spec: ModelSpec, ffn: FFNSpec, plan: StoragePlan) -> tuple[float, int, int]:
    """What the FFN holds beside its routed experts: the router and its vectors (its bias, a score
    bias) and a latent MoE's projections, whole on every GPU as the memory holds them, their stored
    bytes and parameters; and the matmul FLOPs per token of the rest every token runs (shared
    experts), split over tp."""
    beside = [t for t in ffn_tensors(spec, ffn) if not t.name.startswith("experts.")]
    whole = [t for t in beside if t.role in REPLICATED_ROLES or t.whole]
    split_flops = sum(2 * t.numel for t in beside if t not in whole and len(t.shape) == 2)
    return (*read_cost(plan, whole), split_flops)


def _moe_rank(spec: ModelSpec, ffn: FFNSpec, plan: StoragePlan, case: PassCase, local: PassCase, layout: Layout) -> PartCost:
    """A MoE layer on the busiest expert rank (see the module's docstring)."""
    whole = ffn_cost(spec, ffn, plan, local)  # the router, shared experts and routed ones, this group's tokens
    expert_bytes, expert_flops, expert_params = _expert_parts(spec, ffn, plan)
    router_bytes, router_params, fixed_flops = _beside_experts(spec, ffn, plan)
    k = spec.real_picks(ffn)  # the real experts a token runs: zero-computation picks run none
    # the router's scores, every expert's for each token, on every GPU: what the FFN's count holds
    # beside the experts and the shared matrices
    router_flops = spec.mean_ffn_flops(ffn) - k * expert_flops - fixed_flops
    fixed_bytes = whole.weight_bytes - whole.experts_touched * expert_bytes - router_bytes
    fixed_params = whole.weight_params - whole.experts_touched * expert_params - router_params
    experts, ep, tp = whole.experts, layout.ep, layout.tp
    if ep > 1:  # the busiest rank's experts, each cut over its tp / ep GPUs where --ep is below --tp
        touched = busiest_rank_experts(experts, k, case.tokens, ep)
        # the rank's share of the T·k routed copies, and at least one copy for each expert it reads (at a
        # batch below the ranks, the busiest rank runs more than the mean's fraction of a copy)
        routed_flops = max(case.tokens * k / ep, touched) / layout.expert_split * expert_flops
        weights, params = touched * expert_bytes / layout.expert_split, touched * expert_params / layout.expert_split
    else:
        touched = whole.experts_touched
        routed_flops = case.tokens * k * expert_flops / tp
        weights, params = touched * expert_bytes / tp, touched * expert_params / tp
    return PartCost(
        whole.name,
        local.tokens * (router_flops + fixed_flops / tp) + routed_flops,
        router_bytes + fixed_bytes / tp + weights,
        whole.activation_bytes,
        0.0,
        experts // max(ep, 1),
        touched,
        weight_params=router_params + fixed_params / tp + params,
    )


def _communication(spec: ModelSpec, case: PassCase, local: PassCase, layout: Layout, bridge: int) -> Communication:
    """What one GPU sends; `bridge`: the cards an NVLink bridge joins (0: the link joins them all), past
    which a two-level all-reduce runs (within each bridge, then across them) and an all-to-all's copies
    to another bridge's GPUs cross between them."""
    d, b, tp, ep = spec.d_model, case.act_bytes, layout.tp, layout.ep
    size = local.tokens * d * b
    all_reduce = 2 * (tp - 1) / tp * size if tp > 1 else 0.0
    across = 0.0
    if bridge and tp > bridge:
        # reduce-scatter and all-gather within the bridge, an all-reduce of each GPU's 1/bridge shard across
        # the D bridges: 2·(bridge − 1)/bridge of it within, 2·(D − 1)/D of a shard between
        bridges = -(-tp // bridge)
        across = 2 * (bridges - 1) / bridges * size / bridge
        all_reduce = 2 * (bridge - 1) / bridge * size + across
    moe = spec.moe_ffn
    a2a = a2a_across = 0.0
    if ep > 1 and moe is not None:
        # dispatch and combine, to the real experts picked: a zero-computation pick stays on its GPU.
        # The busiest GPU's tokens, its attention group's over its tp GPUs: with fewer sequences than
        # groups, the GPU that holds one sends it all (the mean GPU's share would be a fraction of it).
        # A latent MoE (Nemotron 3's) sends its tokens in the latent its experts read, projected on the token's GPU.
        width = moe.expert_shape().d_model
        a2a = 2 * local.tokens / tp * spec.real_picks(moe) * width * b * (ep - 1) / ep
        if bridge and layout.gpus > bridge:  # the ranks spread over the GPUs: those of other bridges are across
            near = min(ep, max(1, ep * bridge // layout.gpus))
            a2a_across = a2a * (ep - near) / (ep - 1)
    # A layer whose mixer runs beside attention (Zamba's, Falcon-H1's) all-reduces each one's output
    mixers = sum(1 for i in range(spec.n_layers) if spec.mixer_label(i)) + len(spec.beside_attention)
    moe_layers = len(spec.moe_layers) if moe is not None else 0
    ffn_layers = len(spec.ffn_layers)
    one_ffn = all_reduce + (a2a if moe_layers else 0.0)
    model = mixers * all_reduce + ffn_layers * all_reduce + moe_layers * a2a
    between = (mixers + ffn_layers) * across + moe_layers * a2a_across
    return Communication(all_reduce, one_ffn, model, between)


def gpu_pass(spec: ModelSpec, stack: LayerStack, plan: StoragePlan, case: PassCase, layout: Layout, bridge: int = 0) -> GPUPass:
    """One GPU's share of the pass `case` (the whole batch) under `layout`, and what it sends: on
    NVLink-bridged cards, `bridge` of them to a bridge, what crosses between bridges apart."""
    tp = layout.tp
    local = replace(case, batch=layout.sequences(case.batch))  # this GPU's attention group
    ffn_of = {i: spec.ffn_of(i) for i in spec.ffn_layers}
    unique = {id(f): f for f in ffn_of.values() if f is not None}
    ffn_costs = {
        key: _moe_rank(spec, f, plan, case, local, layout) if f.info.experts_held(f) else _split(ffn_cost(spec, f, plan, local), tp, 1)
        for key, f in unique.items()
    }
    mixer = None
    if spec.mixer is not None:  # a convolution over the residual stream runs whole on each GPU
        whole = spec.mixer.whole_on_each_gpu
        mixer = _split(mixer_cost(spec, plan, local), 1 if whole else tp, 1.0 if whole else 1 / tp)
    attention: list[PartCost] = []
    for i in range(spec.n_layers):
        label = spec.mixer_label(i)
        if label == "attention":
            attention.append(_attention_rank(spec, stack, i, plan, local, layout))
        elif label and mixer is not None and i in spec.beside_attention:  # both side by side: one layer's token mixing
            attention.append(total_cost("attention", [_attention_rank(spec, stack, i, plan, local, layout), mixer]))
        elif label and mixer is not None:
            attention.append(mixer)
    layers = [ffn_costs[id(ffn_of[i])] for i in spec.ffn_layers]
    head = _split(head_cost(spec, plan, local), tp, 1)  # the vocabulary split over tp
    embed = _split(embedding_cost(spec, plan, local), tp, 1)
    extras = [_split(extras_cost(spec, plan, local), tp, 1)] if spec.extras else []
    cost = assemble(spec, case, ffn_costs, layers, attention, head, embed, extras)
    return GPUPass(layout, cost, _communication(spec, case, local, layout, bridge))
