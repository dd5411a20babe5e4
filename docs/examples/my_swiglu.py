"""SwiGLU written as Meta's reference code writes it (w1 the gate, w2 down, w3 up), and two slips."""

import torch.nn.functional as F
from torch import nn


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # gate
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # down
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # up

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class GeluSlip(SwiGLU):
    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)) * self.w3(x))  # gelu where silu was meant


class SumSlip(SwiGLU):
    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) + self.w3(x))  # + where ⊙ was meant
