"""FFN modules written in the styles people write them, for `ffn trace --module` tests: each is
traced as a user's file would be, and its numbers held against the module itself,
FlopCounterMode and forward hooks."""

import torch
import torch.nn.functional as F
from torch import nn


def sequential_ffn(d_model=32, d_ff=128):
    """A factory function returning nn.Sequential: steps named 0, 1, 2."""
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))


class FunctionalFFN(nn.Module):
    """Parameters of its own, used through F.linear: no submodule at all."""

    def __init__(self, d_model=32, d_ff=128):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(d_ff, d_model) * 0.02)
        self.b1 = nn.Parameter(torch.zeros(d_ff))
        self.w2 = nn.Parameter(torch.randn(d_model, d_ff) * 0.02)

    def forward(self, x):
        return F.linear(F.silu(F.linear(x, self.w1, self.b1)), self.w2)


class FusedSwiGLU(nn.Module):
    """One fused gate/up projection split with chunk, as LLaMA-style code often does."""

    def __init__(self, d_model=32, d_ff=96):
        super().__init__()
        self.gate_up = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Conv1D(nn.Module):
    """GPT-2's Conv1D as transformers writes it: weight (in, out), addmm on the flattened input."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)  # noqa: RUF005 (as transformers writes it)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2MLP(nn.Module):
    def __init__(self, d_model=32, d_ff=128):
        super().__init__()
        self.c_fc = Conv1D(d_ff, d_model)
        self.c_proj = Conv1D(d_model, d_ff)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class TiedFFN(nn.Module):
    """One weight used twice: up with W, down with Wᵀ (counted once, multiplied twice)."""

    def __init__(self, d_model=32, d_ff=128):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d_ff, d_model) * 0.02)

    def forward(self, x):
        h = F.relu(F.linear(x, self.w))
        return F.linear(h, self.w.t())


class LoopMoE(nn.Module):
    """Top-k routing with a Python loop over experts, as Mixtral's reference code does."""

    def __init__(self, d_model=32, d_ff=64, experts=4, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(d_model, experts, bias=False)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(d_model, d_ff, bias=False), nn.SiLU(), nn.Linear(d_ff, d_model, bias=False)) for _ in range(experts)
        )

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        weights, chosen = torch.topk(F.softmax(self.router(flat), dim=-1), self.top_k, dim=-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == e)
            if rows.numel():
                out.index_add_(0, rows, expert(flat[rows]) * weights[rows, slot, None])
        return out.reshape(x.shape)


class EinsumFFN(nn.Module):
    """Projections written as einsum on parameters of its own."""

    def __init__(self, d_model=32, d_ff=128):
        super().__init__()
        self.w_in = nn.Parameter(torch.randn(d_model, d_ff) * 0.02)
        self.w_out = nn.Parameter(torch.randn(d_ff, d_model) * 0.02)

    def forward(self, x):
        h = torch.einsum("btd,df->btf", x, self.w_in)
        return torch.einsum("btf,fd->btd", F.gelu(h), self.w_out)


class BrokenFFN(nn.Module):
    """Its second linear expects the wrong width: the forward raises in `down`."""

    def __init__(self, d_model=32, d_ff=128):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.down(F.relu(self.up(x)))


tied_instance = TiedFFN(16, 48)
