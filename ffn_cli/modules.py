"""PyTorch modules for every registry variant, built from an FFNSpec.

Parameter names follow Hugging Face checkpoints so a real layer loads with a rename:
dense `up_proj`, `down_proj`; gated `gate_proj`, `up_proj`, `down_proj` (fused:
`gate_up_proj`, gate rows first, as Phi-3); MoE `router`, `experts.{i}.…`, `shared_experts.…`.
Every forward uses functional ops only, so a dispatch-level recorder sees each step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from ffn_cli.spec import FFNSpec
from ffn_cli.variants import ACTIVATIONS

__all__ = [
    "DenseFFN",
    "DispatchStats",
    "FFNModule",
    "GatedFFN",
    "MoEFFN",
    "SoftMoEFFN",
    "activation_fn",
    "build_ffn",
    "resolve_dtype",
]

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def resolve_dtype(name: str) -> torch.dtype:
    from ffn_cli.errors import FFNError

    if name not in DTYPES:
        raise FFNError("dtype", name, "choose one of " + ", ".join(DTYPES))
    return DTYPES[name]


def _relu2(z: Tensor) -> Tensor:
    return torch.square(F.relu(z))


_ACTIVATION_FNS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": F.relu,
    "relu2": _relu2,
    "gelu": F.gelu,
    "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "identity": lambda z: z,
}
assert set(_ACTIVATION_FNS) == set(ACTIVATIONS), "every registry activation needs a torch function"


def activation_fn(name: str) -> Callable[[Tensor], Tensor]:
    return _ACTIVATION_FNS[name]


class FFNModule(nn.Module):
    """Base: holds the spec and optional gradient checkpointing around the real forward."""

    def __init__(self, spec: FFNSpec) -> None:
        super().__init__()
        self.spec = spec
        self.gradient_checkpointing = False

    def forward(self, x: Tensor) -> Tensor:
        if self.gradient_checkpointing and torch.is_grad_enabled():
            # Recompute the hidden activations in backward instead of keeping them.
            out: Tensor = checkpoint(self._forward, x, use_reentrant=False)
            return out
        return self._forward(x)

    def _forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError


class DenseFFN(FFNModule):
    """up_proj → activation (→ fixed mask for `sparse`) → dropout → down_proj."""

    def __init__(self, spec: FFNSpec, d_ff: int | None = None) -> None:
        super().__init__(spec)
        d, f = spec.d_model, d_ff or spec.hidden
        self.up_proj = nn.Linear(d, f, bias=bool(spec.bias))
        self.down_proj = nn.Linear(f, d, bias=bool(spec.bias))
        self.dropout = nn.Dropout(spec.dropout)
        self.act = activation_fn(spec.ffn_variant.activation)
        if spec.family == "sparse":
            self.register_buffer("hidden_mask", _sparsity_mask(f, spec.sparsity, spec.mask_seed))

    def _forward(self, x: Tensor) -> Tensor:
        h = self.act(self.up_proj(x))  # (B, T, d_ff)
        if self.spec.family == "sparse":
            h = h * self.hidden_mask
        return self.down_proj(self.dropout(h))  # (B, T, d)


def _sparsity_mask(d_ff: int, sparsity: float, seed: int) -> Tensor:
    """1 for kept hidden units, 0 for round(sparsity·d_ff) units drawn once from `seed`."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    dropped = torch.randperm(d_ff, generator=generator, device="cpu")[: round(sparsity * d_ff)]
    mask = torch.ones(d_ff, device="cpu")
    mask[dropped] = 0.0
    return mask


class GatedFFN(FFNModule):
    """down_proj(act(gate_proj(x)) ⊙ up_proj(x)), Shazeer's GLU family."""

    def __init__(self, spec: FFNSpec, d_ff: int | None = None) -> None:
        super().__init__(spec)
        d, f = spec.d_model, d_ff or spec.hidden
        bias = bool(spec.bias)
        if spec.fused_gate_up:
            self.gate_up_proj = nn.Linear(d, 2 * f, bias=bias)
        else:
            self.gate_proj = nn.Linear(d, f, bias=bias)
            self.up_proj = nn.Linear(d, f, bias=bias)
        self.down_proj = nn.Linear(f, d, bias=bias)
        self.dropout = nn.Dropout(spec.dropout)
        self.act = activation_fn(spec.ffn_variant.activation)

    def _forward(self, x: Tensor) -> Tensor:
        if self.spec.fused_gate_up:
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)  # gate rows come first
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)  # (B, T, d_ff) each
        return self.down_proj(self.dropout(self.act(gate) * up))


def _make_ffn(spec: FFNSpec, d_ff: int) -> FFNModule:
    if spec.ffn_variant.family == "gated":
        return GatedFFN(spec, d_ff)
    return DenseFFN(spec, d_ff)


def _gate_dtype(tokens: Tensor) -> torch.dtype:
    # Mixtral takes the router softmax in float32 even under bf16; float64 runs stay float64.
    return torch.promote_types(tokens.dtype, torch.float32)


@dataclass
class DispatchStats:
    """What the last MoE forward routed: tokens per expert, after capacity, and drops."""

    tokens: int
    tokens_per_expert: list[int] = field(default_factory=list)
    dropped: int = 0
    capacity: int | None = None
    assumed_balanced: bool = False  # meta tensors have no values to route by


class MoEFFN(FFNModule):
    """Top-k routing: float32 softmax over all experts, top-k, optional renormalisation
    (Mixtral), optional capacity with dropped tokens (Switch), shared experts (DeepSeek-MoE)."""

    def __init__(self, spec: FFNSpec) -> None:
        super().__init__(spec)
        self.router = nn.Linear(spec.d_model, spec.experts, bias=False)
        self.experts = nn.ModuleList(_make_ffn(spec, spec.hidden) for _ in range(spec.experts))
        self.shared_experts = _make_ffn(spec, spec.shared_hidden) if spec.shared_hidden else None
        self.shared_expert_gate = nn.Linear(spec.d_model, 1, bias=False) if spec.shared_hidden and spec.shared_expert_gate else None
        self.last_dispatch: DispatchStats | None = None

    def capacity(self, n_tokens: int) -> int | None:
        if self.spec.capacity_factor is None:
            return None
        return math.ceil(self.spec.capacity_factor * n_tokens * self.spec.top_k / self.spec.experts)

    def _forward(self, x: Tensor) -> Tensor:
        tokens = x.reshape(-1, x.shape[-1])  # (N, d)
        probs = torch.softmax(self.router(tokens), dim=-1, dtype=_gate_dtype(tokens))  # (N, E)
        weights, chosen = torch.topk(probs, self.spec.top_k, dim=-1)  # (N, k)
        if self.spec.normalize_top_k:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        weights = weights.to(tokens.dtype)
        stats = DispatchStats(tokens=tokens.shape[0], capacity=self.capacity(tokens.shape[0]), assumed_balanced=x.is_meta)
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            token_idx, slot = self._assigned(chosen, e, stats)
            expert_out = expert(tokens[token_idx]) * weights[token_idx, slot].unsqueeze(-1)  # (n_e, d)
            out = out.index_add(0, token_idx, expert_out)
        self.last_dispatch = stats
        return self._add_shared(tokens, out).reshape(x.shape)

    def _assigned(self, chosen: Tensor, expert: int, stats: DispatchStats) -> tuple[Tensor, Tensor]:
        """Token rows routed to `expert` and which of their k slots chose it, in token order."""
        if chosen.is_meta:
            n = math.ceil(chosen.numel() / self.spec.experts)
            token_idx = torch.arange(n, device=chosen.device)
            slot = torch.zeros(n, dtype=torch.long, device=chosen.device)
        else:
            token_idx, slot = torch.where(chosen == expert)
        if stats.capacity is not None and token_idx.shape[0] > stats.capacity:
            stats.dropped += token_idx.shape[0] - stats.capacity
            token_idx, slot = token_idx[: stats.capacity], slot[: stats.capacity]
        stats.tokens_per_expert.append(int(token_idx.shape[0]))
        return token_idx, slot

    def _add_shared(self, tokens: Tensor, routed: Tensor) -> Tensor:
        if self.shared_experts is None:
            return routed
        shared = self.shared_experts(tokens)
        if self.shared_expert_gate is not None:
            shared = torch.sigmoid(self.shared_expert_gate(tokens)) * shared  # Qwen2-MoE
        return routed + shared


class SoftMoEFFN(FFNModule):
    """The dense mixture: every expert runs on every token, weighted by a softmax gate."""

    def __init__(self, spec: FFNSpec) -> None:
        super().__init__(spec)
        self.router = nn.Linear(spec.d_model, spec.experts, bias=False)
        self.experts = nn.ModuleList(_make_ffn(spec, spec.hidden) for _ in range(spec.experts))

    def _forward(self, x: Tensor) -> Tensor:
        tokens = x.reshape(-1, x.shape[-1])  # (N, d)
        gates = torch.softmax(self.router(tokens), dim=-1, dtype=_gate_dtype(tokens)).to(tokens.dtype)  # (N, E)
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            out = out + gates[:, e : e + 1] * expert(tokens)
        return out.reshape(x.shape)


def _init_linear(linear: nn.Linear, spec: FFNSpec, gain_name: str) -> None:
    if spec.init == "xavier_normal":
        nn.init.xavier_normal_(linear.weight, gain=nn.init.calculate_gain(gain_name))
    elif spec.init == "kaiming_normal":
        nonlinearity = "relu" if gain_name == "relu" else "linear"
        nn.init.kaiming_normal_(linear.weight, nonlinearity=nonlinearity)
    elif spec.init == "normal":
        nn.init.normal_(linear.weight, mean=0.0, std=0.02)
    if spec.init != "default" and linear.bias is not None:
        nn.init.zeros_(linear.bias)


def apply_init(module: nn.Module, spec: FFNSpec) -> None:
    """Apply spec.init to every projection: layers feeding the activation get its gain, the
    output projection a linear gain; zero_init_output zeroes down_proj (as GPT-style residual init)."""
    gain = ACTIVATIONS[spec.ffn_variant.activation].init_gain
    for name, sub in module.named_modules():
        if not isinstance(sub, nn.Linear):
            continue
        leaf = name.rsplit(".", 1)[-1]
        feeds_activation = leaf in ("up_proj", "gate_proj", "gate_up_proj") and not (
            leaf == "up_proj" and spec.ffn_variant.family == "gated"
        )
        _init_linear(sub, spec, gain if feeds_activation else "linear")
        if spec.zero_init_output and leaf == "down_proj":
            nn.init.zeros_(sub.weight)
            if sub.bias is not None:
                nn.init.zeros_(sub.bias)


def build_ffn(
    spec: FFNSpec,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | str = torch.float32,
    seed: int = 0,
) -> FFNModule:
    """Build the module for `spec` on `device` (cpu, cuda, cuda:N or meta) in `dtype`.

    Weights are drawn from `seed`, so two builds of one spec on one device are identical.
    """
    if isinstance(dtype, str):
        dtype = resolve_dtype(dtype)
    torch.manual_seed(seed)
    with torch.device(device):
        module: FFNModule
        if spec.variant == "moe":
            module = MoEFFN(spec)
        elif spec.variant == "soft_moe":
            module = SoftMoEFFN(spec)
        else:
            module = _make_ffn(spec, spec.hidden)
        apply_init(module, spec)
    return module.to(device=device, dtype=dtype)
