"""A learner's FFN whose dropout is written as a function call: `F.dropout(h, p)` without
`training=self.training`, so it keeps dropping after `model.eval()`."""

import torch.nn.functional as F
from torch import nn


class DropoutFFN(nn.Module):
    def __init__(self, d_model, d_ff, p=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.p = p

    def forward(self, x):
        h = F.relu(self.linear1(x))
        h = F.dropout(h, self.p)  # training= left out: True, whatever the module's mode
        return self.linear2(h)
