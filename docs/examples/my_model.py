"""A gated FFN of your own: one fused projection split in two, a learned scale on the output."""

import torch
import torch.nn.functional as F
from torch import nn


class MyFFN(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_up = nn.Linear(d_model, 2 * d_ff, bias=False)  # gate and up in one matmul
        self.down = nn.Linear(d_ff, d_model, bias=False)
        self.scale = nn.Parameter(torch.ones(d_model))

    def forward(self, x):  # x: (B, T, d_model)
        gate, up = self.gate_up(x).chunk(2, dim=-1)  # (B, T, d_ff) each
        return self.down(F.silu(gate) * up) * self.scale
