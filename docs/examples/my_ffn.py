# Article 001's TransformerFFN, as the article prints it.
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
