"""FFNs in the styles of fairseq and Megatron: a plain function called in forward, a
jit-scripted one, a custom autograd.Function with its own backward, linears that return
(output, bias)."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def gelu_accurate(x):  # fairseq's
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


class FairseqFFN(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.fc2(gelu_accurate(self.fc1(x)))


class BiasGeLU(torch.autograd.Function):  # Megatron's fused bias-GeLU, forward and backward by hand
    @staticmethod
    def forward(ctx, x, bias):
        ctx.save_for_backward(x, bias)
        y = x + bias
        return y * 0.5 * (1.0 + torch.tanh(0.79788456 * y * (1 + 0.044715 * y * y)))

    @staticmethod
    def backward(ctx, g):
        x, bias = ctx.saved_tensors
        y = x + bias
        t = torch.tanh(0.79788456 * y * (1 + 0.044715 * y * y))
        slope = 0.5 * y * ((1 - t * t) * (0.79788456 + 0.1070322243 * y * y)) + 0.5 * (1 + t)
        return slope * g, (slope * g).sum(dim=tuple(range(g.dim() - 1)))


class ColumnLinear(nn.Module):  # Megatron's linears return (output, bias): the bias is added later, fused
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) * n_in**-0.5)
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return F.linear(x, self.weight), self.bias


class MegatronMLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.dense_h_to_4h = ColumnLinear(d_model, d_ff)
        self.dense_4h_to_h = ColumnLinear(d_ff, d_model)

    def forward(self, x):
        h, bias = self.dense_h_to_4h(x)
        out, bias2 = self.dense_4h_to_h(BiasGeLU.apply(h, bias))
        return out + bias2


class SwitchGate(nn.Module):  # a Switch Transformer-style router: (l_aux, combine weights, dispatch mask)
    def __init__(self, d_model, experts):
        super().__init__()
        self.wg = nn.Linear(d_model, experts, bias=False)

    def forward(self, x):
        probs = self.wg(x).softmax(-1)
        l_aux = (probs.mean(dim=(0, 1)) ** 2).sum() * probs.shape[-1]
        return l_aux, probs, probs >= probs.amax(-1, keepdim=True)


@torch.jit.script
def bias_gelu(bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # Megatron's jit-scripted bias-GeLU
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


class ScriptedMLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff, bias=False)
        self.bias = nn.Parameter(torch.zeros(d_ff))
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.fc2(bias_gelu(self.bias, self.fc1(x)))
