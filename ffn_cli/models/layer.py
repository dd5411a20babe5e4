"""One FFN beside the attention of its layer: parameters, FLOPs, activation memory, the
FFN/attention ratio (several side by side: models/comparison.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ffn_cli import accounting
from ffn_cli.accounting import (
    DTYPE_BYTES,
    FlopStep,
    ParamTensor,
    activation_elements_per_token,
    active_params,
    flop_steps,
    matmul_flops_formula,
    param_formula,
    param_tensors,
    total_params,
)
from ffn_cli.attention import AnyAttention, AttentionSpec, LatentAttentionSpec
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.names import unknown_name
from ffn_cli.spec import FFNSpec

__all__ = [
    "BACKWARD_FACTOR",
    "FFNReport",
    "TensorGroup",
    "attention_formula",
    "attention_summary",
    "check_dtype",
    "ffn_report",
    "group_tensors",
]

# Backward costs about twice the forward (a gradient for the input and one for the weights),
# so a training step is 3× the forward FLOPs.
BACKWARD_FACTOR = 3


@dataclass(frozen=True)
class TensorGroup:
    """A parameter tensor, or the same tensor of every expert (`copies` > 1, name `experts.*.…`)."""

    name: str
    shape: tuple[int, ...]
    copies: int
    count: int  # all copies together


def group_tensors(tensors: Sequence[ParamTensor]) -> tuple[TensorGroup, ...]:
    """Fold experts.{i}.x into one experts.*.x row, keeping first-seen order."""
    groups: dict[str, list[ParamTensor]] = {}
    for t in tensors:
        parts = t.name.split(".")
        key = ".".join(["experts", "*", *parts[2:]]) if parts[0] == "experts" and parts[1].isdigit() else t.name
        groups.setdefault(key, []).append(t)
    return tuple(TensorGroup(name, ts[0].shape, len(ts), sum(t.count for t in ts)) for name, ts in groups.items())


@dataclass(frozen=True)
class FFNReport:
    """Everything `ffn params` says about one FFN and the attention it sits beside."""

    spec: FFNSpec
    attention: AttentionSpec
    dtype: str
    tensors: tuple[TensorGroup, ...]
    steps: tuple[FlopStep, ...]
    total_params: int
    active_params: int
    param_formula: str
    matmul_formula: str
    activation_elements: int
    all_experts_flops: int | None  # MoE: the forward FLOPs if every expert ran on every token

    @property
    def bytes(self) -> int:
        return self.total_params * DTYPE_BYTES[self.dtype]

    @property
    def forward_flops(self) -> int:
        return sum(s.flops for s in self.steps)

    @property
    def matmul_flops(self) -> int:
        return sum(s.matmul_flops for s in self.steps)

    @property
    def elementwise_flops(self) -> int:
        return sum(s.elementwise_flops for s in self.steps)

    @property
    def training_flops(self) -> int:
        return BACKWARD_FACTOR * self.forward_flops

    @property
    def activation_bytes(self) -> int:
        """Per token, each saved tensor at its own width (float32 router probabilities, int64 indices)."""
        return accounting.activation_bytes(self.spec, 1, self.dtype)

    @property
    def attention_params(self) -> int:
        return self.attention.params

    @property
    def ffn_attention_ratio(self) -> float:
        return self.total_params / self.attention_params

    @property
    def ffn_active_attention_ratio(self) -> float:
        return self.active_params / self.attention_params

    @property
    def ffn_share_of_block(self) -> float:
        """The FFN's share of the layer's attention + FFN parameters (norms left out)."""
        return self.total_params / (self.total_params + self.attention_params)


def attention_formula(attention: AnyAttention) -> str:
    """The closed form of attention.params: '4·d² + 4·d' for plain multi-head attention with
    biases; with grouped-query heads or a head_dim ≠ d/heads, in q = heads·head_dim and kv."""
    a = attention
    if isinstance(a, LatentAttentionSpec):
        q = "d·r_q + r_q + r_q·h·(n + r)" if a.q_lora_rank is not None else "d·h·(n + r)"
        if a.q_gate:  # A.X K2's: the queries and an output gate from the latent and its norm
            q = "d·r_q + r_q + 2·r_q·h·(n + r + v)"
        return Message.join(f"{q} + d·(r_kv + r) + r_kv + r_kv·h·(n + v) + h·v·d", Message(N_(" + biases")) if a.bias else "")
    if isinstance(a, CompressedAttentionSpec):
        return Message(N_("the tensors as built"))
    bias = {(True, True): ("4·d", "q + 2·kv + d"), (True, False): ("3·d", "q + 2·kv"), (False, True): ("d", "d")}
    plain = a.q_dim == a.d_model and a.kv_dim == a.d_model and a.input_width is None
    text = "4·d²" if plain else "2·d·q + 2·d·kv"
    if a.input_width is not None:  # q, k, v read more than d (Zamba's 2·d), o writes d
        reads = "2·d" if a.input_width == 2 * a.d_model else f"{a.input_width:,}"
        text = f"{reads}·(q + 2·kv) + q·d"
    if a.qkv_bias or a.o_bias:
        text += " + " + bias[(a.qkv_bias, a.o_bias)][0 if plain else 1]
    # The words of the formula in the reader's language: its symbols as they are.
    return Message.join(text, Message(N_(" + q/k norms")) if a.qk_norm != "none" else "", Message(N_(" + heads")) if a.sinks else "")


def attention_summary(attention: AnyAttention) -> Message:
    """'32 heads × 128, 8 KV heads, no bias': the shape of an attention in words."""
    a = attention
    if isinstance(a, LatentAttentionSpec):
        q = f"q {a.d_model:,}→{a.q_lora_rank:,}→{a.q_dim:,}" if a.q_lora_rank is not None else f"q {a.d_model:,}→{a.q_dim:,}"
        kv = f"kv {a.d_model:,}→{a.kv_lora_rank:,}+{a.qk_rope_head_dim}→{a.n_heads * (a.qk_nope_head_dim + a.v_head_dim):,}"
        heads = f"{a.qk_nope_head_dim}+{a.qk_rope_head_dim}"
        said = Message(N_("MLA, {heads} heads × {dim} (v {v}), {q}, {kv}"), heads=a.n_heads, dim=heads, v=a.v_head_dim, q=q, kv=kv)
        if a.q_gate:  # A.X K2's: the latent and its norm side by side, to the queries and an output gate
            gated = N_("; q from the latent and its norm ({width}), with an output gate of {gate}")
            said = Message.join(said, Message(gated, width=f"2 × {a.q_lora_rank:,}", gate=f"{a.n_heads * a.v_head_dim:,}"))
        return said
    if isinstance(a, CompressedAttentionSpec):
        return compressed_summary(a)
    text = Message(N_("{heads} heads × {dim}"), heads=a.n_heads, dim=a.head_dim)
    if a.v_width != a.head_width:  # MiMo-V2-Flash: values narrower than keys
        text = Message(N_("{heads} heads × {dim} (v {v})"), heads=a.n_heads, dim=a.head_dim, v=a.v_width)
    kv_said = N_(", {kv} KV head") if a.n_kv_heads == 1 else N_(", {kv} KV heads")
    kv_heads = Message(kv_said, kv=a.n_kv_heads) if a.n_kv_heads != a.n_heads else ""
    if a.values_from_keys:
        kv_heads = Message.join(kv_heads, Message(N_(", values from k_proj")))
    if a.input_width is not None:  # Zamba's shared attention reads the hidden state and the embeddings side by side
        kv_heads = Message.join(kv_heads, Message(N_(", q, k, v read {width}"), width=f"{a.input_width:,}"))
    bias = (
        N_(", biases")
        if a.qkv_bias and a.o_bias
        else N_(", bias on q, k, v")
        if a.qkv_bias
        else N_(", bias on o")
        if a.o_bias
        else N_(", no bias")
    )
    norms = {"head": N_(", q/k norms per head"), "proj": N_(", q/k norms"), "none": ""}[a.qk_norm]
    return Message.join(text, kv_heads, Message(bias), Message(norms) if norms else "", Message(N_(", sinks")) if a.sinks else "")


def compressed_summary(a: CompressedAttentionSpec) -> Message:
    """'CSA, 64 heads × 512, K = V, window 128, an entry per 4 tokens, top-512 by an indexer of 64 × 128'."""
    text = Message(N_("{kind}, {heads} heads × {dim}, K = V, window {window}"), kind=a.kind, heads=f"{a.n_heads:,}",
                   dim=f"{a.head_dim:,}", window=f"{a.window:,}")  # fmt: skip
    if a.rate:
        text = Message.join(text, Message(N_(", an entry per {rate} tokens"), rate=f"{a.rate:,}"))
    if a.index_heads:
        by = Message(N_(", top-{k} by an indexer of {heads} × {dim}"), k=f"{a.index_topk:,}", heads=f"{a.index_heads:,}",
                     dim=f"{a.index_dim:,}")  # fmt: skip
        text = Message.join(text, by)
    return text


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPE_BYTES:
        raise unknown_name("dtype", dtype, list(DTYPE_BYTES), what=N_("dtype"))
    return dtype


def ffn_report(spec: FFNSpec, attention: AttentionSpec, dtype: str = "float32") -> FFNReport:
    if attention.d_model != spec.d_model:
        raise FFNError(
            "d_model", attention.d_model, _("the attention must have the FFN's d_model ({d_model})").format(d_model=spec.d_model)
        )
    all_experts = None
    every_expert = spec.info.all_experts_options(spec)  # None: every expert runs already, or there are none
    if every_expert is not None:
        all_experts = sum(s.flops for s in flop_steps(spec.with_(**every_expert)))
    return FFNReport(
        spec=spec,
        attention=attention,
        dtype=check_dtype(dtype),
        tensors=group_tensors(param_tensors(spec)),
        steps=tuple(flop_steps(spec)),
        total_params=total_params(spec),
        active_params=active_params(spec),
        param_formula=param_formula(spec),
        matmul_formula=matmul_flops_formula(spec),
        activation_elements=activation_elements_per_token(spec),
        all_experts_flops=all_experts,
    )
