"""How a model is laid over GPUs by --tp and --ep, and what that makes one GPU hold and see.

max(tp, ep) GPUs: attention, dense and shared FFNs, embeddings and the LM head split over the
tp ranks; routed experts over the ep ranks (over tp when ep is 1). Where ep > tp, the
attention is replicated over gpus / tp groups (data-parallel attention, as DeepSeek serves
V3): each group runs its own share of the batch's sequences, and the experts see them all.

One GPU's KV cache: K and V of ceil(n_kv / tp) of the n_kv KV heads (one each, replicated, when
tp > n_kv); multi-head latent attention's compressed latent is one per token, not per head, so
every tp rank keeps all of it. A mixer's state is split by its heads, over tp. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, prod

from ffn_cli.attention import LatentAttentionSpec
from ffn_cli.errors import FFNError
from ffn_cli.i18n import Message, _
from ffn_cli.models.layout import attention_tensors, ffn_tensors
from ffn_cli.models.mixers import DeltaRuleScan, SSDScan
from ffn_cli.models.spec import ModelSpec
from ffn_cli.spec import check_int
from ffn_cli.variants.base import DOWN_PROJ
from ffn_cli.variants.moe import LATENT_UP

__all__ = ["MAX_WORLD_SIZE", "Layout", "check_model_parallel", "held_whole_share", "intermediate_width", "layout_for"]


def held_whole_share(kv_heads: int, whole: bool, tp: int) -> float:
    """The fraction of a tensor a GPU of --tp holds where it is not split evenly: a key or value
    projection of fewer KV heads than tp, one head's (copied, as vLLM copies it); MLA's down
    projections, all of it. 0.0 for a tensor --tp divides as its role says."""
    if 0 < kv_heads < tp:
        return ceil(kv_heads / tp) / kv_heads
    return 1.0 if whole and tp > 1 else 0.0


MAX_WORLD_SIZE = 1024  # GPUs one split may name: beyond any serving layout, below a number that hangs a loop


@dataclass(frozen=True)
class Layout:
    tp: int = 1
    ep: int = 1

    @property
    def gpus(self) -> int:
        return max(self.tp, self.ep)

    @property
    def dp(self) -> int:
        """Attention replicas: the groups of tp GPUs the batch's sequences are spread over."""
        return self.gpus // self.tp

    @property
    def expert_share(self) -> int:
        """The GPUs the routed experts are divided over: every one. By expert over the --ep ranks,
        each expert's matrices over the tp / ep GPUs of its rank where --ep is below --tp (SGLang's
        expert tensor parallelism, moe-tp), over --tp like any matrix where --ep is 1."""
        return self.gpus

    @property
    def expert_split(self) -> int:
        """The GPUs one routed expert's matrices are cut over: tp / ep where --ep is below --tp."""
        return max(self.tp // self.ep, 1)

    def sequences(self, batch: int) -> int:
        """Sequences one GPU's attention holds: the busiest group's share of the batch."""
        return ceil(batch / self.dp)

    def kv_share(self, spec: ModelSpec, layer: int | None = None) -> float:
        """The fraction of a token's cached K and V one GPU keeps in layer `layer` (the model's
        `attention` when None): MLA's latent whole on each GPU, KV heads split over tp."""
        a = spec.attention if layer is None else spec.attention_of(layer)
        return 1.0 if isinstance(a, LatentAttentionSpec) else self.kv_heads_share(a.kv_heads)

    def kv_heads_share(self, heads: int) -> float:
        """The fraction of `heads` KV heads one GPU keeps (a head fewer than tp copied); 0 heads: all of it."""
        return ceil(heads / self.tp) / heads if heads else 1.0


def layout_for(spec: ModelSpec, *, tp: int, ep: int) -> Layout:
    """The layout --tp / --ep ask for, refused where the model cannot be split so."""
    check_model_parallel(spec, tp=tp, ep=ep)
    if max(tp, ep) % min(tp, ep):
        raise FFNError("ep", ep, _("must divide --tp {tp}, or --tp divide it: the layout has max(tp, ep) GPUs").format(tp=tp))
    experts = spec.moe_ffn.experts if spec.moe_ffn is not None and spec.moe_layers else 0
    if ep > 1 and not experts:
        raise FFNError("ep", ep, _("{name} has no routed experts to divide: use --tp").format(name=spec.name))
    if ep > 1 and experts % ep:
        raise FFNError("ep", ep, _("must divide the {experts} experts").format(experts=experts))
    return Layout(tp, ep)


# The FFN's matrices that write back what it read (the residual; a latent MoE's experts, its latent):
# their outputs are no intermediate. Every other weight's output is (gate, up, a latent projection in).
_WRITES_BACK = (f"{DOWN_PROJ}.weight", f"{LATENT_UP}.weight")
# A token mixer's projection back to the residual stream (Mamba-2's and LFM2's out_proj, attention's
# o_proj, DeepSeek-V4's grouped o_b_proj, RWKV's output, RecurrentGemma's linear_out): the layer's
# output, no intermediate.
_MIXER_OUTPUTS = frozenset({"out_proj", "o_proj", "o_b_proj", "output", "linear_out", "dense", "c_proj"})


def _intermediate(name: str, shape: tuple[int, ...]) -> int:
    """The elements a token's output of this FFN weight holds, 0 where it is no intermediate."""
    return shape[0] if len(shape) == 2 and prod(shape) > 0 and not name.endswith(_WRITES_BACK) else 0


def _mixed(name: str, shape: tuple[int, ...]) -> int:
    """The elements a token's output of this token mixer's matrix holds: every projection but the
    one back to the residual stream (q, k, v, MLA's latents and their up-projections, a low rank's)."""
    module, _dot, leaf = name.rpartition(".")
    matrix = leaf.startswith("weight") and len(shape) == 2 and prod(shape) > 0  # not a position bias, a conv's taps
    return shape[0] if matrix and module.rpartition(".")[2] not in _MIXER_OUTPUTS else 0


def intermediate_width(spec: ModelSpec, layout: Layout) -> float:
    """Elements per token of the widest intermediate one GPU holds in one layer: the outputs of
    the matrices that read the layer's input or feed another (attention's q, k, v or latents; a
    mixer's projections; an FFN's gate and up, a latent MoE's projection into its latent), on this GPU's
    share. A MoE layer's routed experts: gate and up of top-k of them per token (a latent MoE's
    read its latent), the tokens of all dp groups arriving at the expert_share ranks."""
    # every attention matrix that does not write the residual (MLA: its latents and their up-projections too)
    widest = 0.0
    for _attention, _extra, layers in spec.attention_groups:  # the widest of each attention shape
        attention = sum(_mixed(t.name, t.shape) for t in attention_tensors(spec, layers[:1]))
        widest = max(widest, attention / layout.tp)
    mixer = spec.mixer
    if mixer is not None:  # its projections (Mamba-2's in_proj: x, z, B, C and dt), cut over tp by heads
        projected = sum(_mixed(t.name, t.shape) for t in mixer.tensors)
        widest = max(widest, projected / (1 if mixer.whole_on_each_gpu else layout.tp))
    ffns = [f for f, _layers in spec.dense_groups] + ([spec.moe_ffn] if spec.moe_ffn is not None and spec.moe_layers else [])
    for ffn in ffns:
        tensors = [t for t in ffn_tensors(spec, ffn) if t.role != "router"]
        routed = sum(_intermediate(t.name, t.shape) for t in tensors if t.role == "experts")  # one routed expert's
        shared = sum(_intermediate(t.name, t.shape) for t in tensors if t.role in ("shared", "dense_ffn"))
        latent = sum(_intermediate(t.name, t.shape) for t in tensors if t.role == "latent")  # held whole on each GPU
        k = ffn.active_experts if ffn.info.experts_held(ffn) else 0
        width = k * routed * layout.dp / layout.expert_share + shared / layout.tp + latent
        widest = max(widest, width)
    return widest


def _split_sizes(model: ModelSpec, ep: int) -> list[tuple[str, int]]:
    """What --tp cuts across GPUs in a whole model, each with its size: the attention heads,
    every FFN's hidden units (the routed experts' too, when --ep does not spread them), and a
    Mamba-2's or Gated DeltaNet's heads (and Mamba-2's groups, more than one), as vLLM cuts them."""
    heads = dict.fromkeys(a.heads for a, _extra, layers in model.attention_groups if layers) if _has_attention(model) else {}
    sizes = [(_("{n} attention heads"), n) for n in heads]
    if any(e.kind == "attention" and e.routed[0] for e in model.extras):  # JetMoE's: each expert's query is the KV heads' width
        sizes.append((_("{n} query heads an attention expert"), model.attention.kv_heads))
    widths = [ffn.hidden for ffn, _layers in model.dense_groups]
    if model.moe_ffn is not None and model.moe_layers:
        widths += [model.moe_ffn.hidden] if ep == 1 else []
        widths += [model.moe_ffn.shared_hidden] if model.moe_ffn.shared_hidden else []
    sizes += [("d_ff {n:,}", w) for w in dict.fromkeys(widths)]
    mixer = model.mixer
    scan = mixer.scan if mixer is not None else None
    if mixer is not None and isinstance(scan, (SSDScan, DeltaRuleScan)):  # a mixer's heads are cut as attention's are
        sizes.append((_("{n} {kind} heads").format(n=scan.heads, kind=mixer.kind), scan.heads))
        if isinstance(scan, SSDScan) and scan.groups > 1:  # vLLM's Mamba-2 cuts B and C by group (one group is copied)
            sizes.append((_("{n} {kind} groups").format(n=scan.groups, kind=mixer.kind), scan.groups))
    return sizes


def _has_attention(model: ModelSpec) -> bool:
    return bool(model.attention_layers)


def check_model_parallel(model: ModelSpec, *, tp: int, ep: int) -> None:
    """--tp / --ep sizing a whole model's GPUs: the bounds a traced split has, and a --tp that
    cuts every attention head and FFN hidden unit evenly. KV heads fewer than --tp are copied,
    each to tp/kv GPUs (as Megatron and vLLM do), so --tp must then be a multiple of them."""
    check_int("tp", tp, maximum=MAX_WORLD_SIZE)
    check_int("ep", ep, maximum=MAX_WORLD_SIZE)
    if tp == 1:
        return
    sizes = _split_sizes(model, ep)
    if any(n % tp for _label, n in sizes):
        fits = [str(k) for k in range(2, 65) if all(n % k == 0 for _label, n in sizes)]
        shown = Message.listed([label.format(n=n) for label, n in sizes]).shown()
        if fits:
            divisors = Message.listed(fits).shown()
            allowed = _("must divide what it splits across GPUs ({sizes}); {divisors} do").format(sizes=shown, divisors=divisors)
        else:
            allowed = _("must divide what it splits across GPUs ({sizes}); no --tp above 1 does").format(sizes=shown)
        raise FFNError("tp", tp, allowed)
    for a, _extra, layers in model.attention_groups:
        kv = a.kv_heads
        if layers and _has_attention(model) and kv % tp and tp % kv:
            raise FFNError(
                "tp", tp, _("must divide the {kv} KV heads, or be a multiple of them (each then held by tp/{kv} GPUs)").format(kv=kv)
            )
