"""The FFN classes of the tutorials ffn grew from, exactly as printed there: article 001's
`TransformerFFN`, article 002's `FFN`, `FP16SafeFFN`, `GLUFFN`, `MoEFFN` and `SparseFFN`
(comments and docstrings in the articles' own language)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class TransformerFFN(nn.Module):
    """
    Transformer前馈神经网络

    结构:
    - 线性变换1 (d_model → d_ff)
    - ReLU激活函数
    - Dropout层
    - 线性变换2 (d_ff → d_model)
    """
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()

        # 线性变换1: d_model → d_ff
        self.linear1 = nn.Linear(d_model, d_ff)

        # ReLU激活函数
        self.activation = nn.ReLU()

        # Dropout层
        self.dropout = nn.Dropout(dropout)

        # 线性变换2: d_ff → d_model
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        """
        前向传播

        Args:
            x: 输入张量 (batch_size, seq_len, d_model)

        Returns:
            output: 输出张量 (batch_size, seq_len, d_model)
        """
        # 线性变换1
        x = self.linear1(x)

        # ReLU激活
        x = self.activation(x)

        # Dropout
        x = self.dropout(x)

        # 线性变换2
        x = self.linear2(x)

        return x


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
