"""Weights per GPU when a whole model is split: routed experts divided over --ep ranks (over
--tp like any linear when --ep is 1, each expert over its rank's tp / ep GPUs where --ep is
below --tp), every other matrix (attention, dense and shared FFNs,
embeddings, LM head) divided over --tp, but the key and value projections of fewer KV heads
than --tp, of which a GPU holds one head's (each head copied, as vLLM copies it), and MLA's
down projections, whole on every GPU as vLLM and SGLang hold them, and what is left replicated on every GPU: norms,
linear biases (a routed expert's go with the expert), routers, hash-routing tables and a vision
tower. The layout has max(tp, ep) GPUs. Weights only."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ffn_cli.costs.parallel_layout import held_whole_share, layout_for
from ffn_cli.costs.weights import PART_WORDS, Checkpoint, routed_expert, towers_words
from ffn_cli.i18n import N_
from ffn_cli.models.layout import model_layout
from ffn_cli.models.spec import ModelSpec

__all__ = ["REPLICATED_ROLES", "RankMemory", "rank_memory"]

# Roles held whole on every GPU of --tp (the per-GPU roofline reads them so too).
REPLICATED_ROLES = ("vector", "router", "vision", "source")
# What every GPU holds whole, in words (English ids): a model's own, in this order.
NORMS, BIASES, ROUTERS = N_("norms"), N_("linear biases"), N_("routers")
ENCODER_REST = N_("the encoder's other tensors")


@dataclass(frozen=True)
class RankMemory:
    tp: int
    ep: int
    gpus: int
    expert_bytes: int  # on one GPU
    split_bytes: int  # the other matrices' share on one GPU
    replicated_bytes: int
    total_bytes: int  # the whole checkpoint
    # What the checkpoint ships beside the parameter table (its MTP layers: weights.PART_WORDS' keys),
    # so a checkpoint larger than the summary's weights says why.
    shipped_parts: tuple[str, ...] = ()
    vision_bytes: int = 0  # a vision tower's share of replicated_bytes, named where there is one
    replicated: tuple[str, ...] = (NORMS,)  # what replicated_bytes holds, the words above that the model has
    asked: str = ""  # the --weights format total_bytes is stored in, where the reader chose one (not the checkpoint's own)
    # Key and value projections of fewer KV heads than --tp: a GPU holds one head's, each head
    # copied to tp / heads GPUs (split_bytes holds them where --tp splits them evenly).
    copied_kv_bytes: int = 0
    # MLA's down projections, whole on every GPU (as vLLM and SGLang hold them), and DeepSeek-V4's
    # projections to its latent and to its one shared head (as DeepSeek's reference inference holds them).
    whole_latent_bytes: int = 0
    # The parts the config describes that the model as built holds none of (an omni model's talker
    # where enable_audio_output is false): its checkpoint's files hold them, the GPU does not.
    not_built: tuple[str, ...] = ()

    @property
    def per_gpu_bytes(self) -> int:
        return self.expert_bytes + self.split_bytes + self.replicated_bytes + self.copied_kv_bytes + self.whole_latent_bytes


def rank_memory(stored: Checkpoint, spec: ModelSpec, *, tp: int, ep: int, not_built: tuple[str, ...] = ()) -> RankMemory:
    layout = layout_for(spec, tp=tp, ep=ep)
    bits = {"experts": 0, "split": 0, "replicated": 0}
    vision, copied, whole = 0, 0.0, 0
    for t in stored.tensors:
        held = held_whole_share(t.kv_heads, t.whole, tp)
        if held:  # one KV head's a GPU, copied; or MLA's down projections whole
            copied += stored.bits_of(t) * held if t.kv_heads else 0
            whole += stored.bits_of(t) if not t.kv_heads else 0
            continue
        key = "experts" if t.role == "experts" or t.expert else "replicated" if t.role in REPLICATED_ROLES else "split"
        bits[key] += stored.bits_of(t)
        vision += stored.bits_of(t) if t.role == "vision" else 0
    return RankMemory(
        tp,
        ep,
        layout.gpus,
        ceil(bits["experts"] / 8 / layout.expert_share),
        ceil(bits["split"] / 8 / tp),
        ceil(bits["replicated"] / 8),
        stored.bytes_,
        stored.shipped_parts,
        ceil(vision / 8),
        _replicated_words(spec, stored),
        stored.plan.asked,
        ceil(copied / 8),
        ceil(whole / 8),
        not_built,
    )


def _replicated_words(spec: ModelSpec, stored: Checkpoint) -> tuple[str, ...]:
    """What the model keeps whole on every GPU: its norms (and whatever else is a vector), its
    biases (not a routed expert's, held with the expert), routers, vision tower and the hash-routing
    tables its checkpoint ships, where it has them."""
    placed = [t for t in model_layout(spec) if t.role in REPLICATED_ROLES and not t.tied and t.params and not routed_expert(t)]
    has = {
        BIASES: any(t.role == "vector" and "bias" in t.name and "norm" not in t.name for t in placed),  # a norm's bias is the norm's
        ROUTERS: any(t.role == "router" for t in placed) or spec.router_score_bias,
        towers_words(spec): any(t.role == "vision" for t in placed),
        ENCODER_REST: any(t.role == "source" for t in placed),
        PART_WORDS["table"]: any(t.part == "table" for t in stored.tensors),
    }
    return (NORMS, *(word for word, held in has.items() if held))
