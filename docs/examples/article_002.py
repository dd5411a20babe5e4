# Article 002's FFN classes, as the article prints them.
import torch
import torch.nn as nn
import torch.nn.functional as F


class FFN(nn.Module):
    def __init__(self, d_model=512, hidden_dim=2048, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, hidden_dim)
        self.linear2 = nn.Linear(hidden_dim, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(F.gelu(self.linear1(x))))


class FP16SafeFFN(nn.Module):
    def __init__(self, d_model, hidden_dim):
        super().__init__()
        self.linear1 = nn.Linear(d_model, hidden_dim)
        self.linear2 = nn.Linear(hidden_dim, d_model)
        self.scale = hidden_dim ** -0.5  # 缩放因子防止FP16下溢出

    def forward(self, x):
        x = F.gelu(self.linear1(x)) * self.scale
        return self.linear2(x)


class GLUFFN(nn.Module):
    def __init__(self, d_model, hidden_dim):
        super().__init__()
        self.linear1 = nn.Linear(d_model, hidden_dim * 2)
        self.linear2 = nn.Linear(hidden_dim, d_model)

    def forward(self, x):
        x = self.linear1(x)
        x = F.glu(x, dim=-1)  # 门控机制
        return self.linear2(x)


class MoEFFN(nn.Module):
    def __init__(self, d_model, hidden_dim, num_experts=4):
        super().__init__()
        self.experts = nn.ModuleList([
            FFN(d_model, hidden_dim) for _ in range(num_experts)
        ])
        self.gate = nn.Linear(d_model, num_experts)

    def forward(self, x):
        gates = F.softmax(self.gate(x), dim=-1)  # [..., num_experts]
        outputs = torch.stack([e(x) for e in self.experts], dim=-1)  # [..., d_model, num_experts]
        return torch.einsum('...e,...de->...d', gates, outputs)


class SparseFFN(nn.Module):
    def __init__(self, d_model, hidden_dim, sparsity=0.5):
        super().__init__()
        self.linear1 = nn.Linear(d_model, hidden_dim)
        self.linear2 = nn.Linear(hidden_dim, d_model)
        self.mask = torch.rand(hidden_dim) > sparsity

    def forward(self, x):
        x = self.linear1(x)
        x = x * self.mask.to(x.device)  # 硬性稀疏化
        return self.linear2(F.gelu(x))


# 梯度检查点技术 (3.1): the article prints this forward alone; its layers are FFN's.
from torch.utils.checkpoint import checkpoint


class MemoryEfficientFFN(FFN):
    def forward(self, x):
        def create_custom_forward(module):
            def custom_forward(*inputs):
                return module(inputs[0])
            return custom_forward

        return checkpoint(create_custom_forward(self.linear2),
                         checkpoint(create_custom_forward(self.linear1), x))
