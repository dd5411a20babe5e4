"""The yardstick for `ffn trace` on CPU: the least a script can do to see one forward's output.

    python benchmarks/bare_forward.py [--d-model 2048] [--d-ff 5632] [--batch 2] [--seq-len 256]
        [--device cpu|meta]

It imports torch, builds the same three Linears as SwiGLU (no bias, PyTorch's default init),
runs one forward under inference_mode on a random input, and prints the output's mean and std
(on meta, which holds no values, its shape).
"""

from __future__ import annotations

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-model", type=int, default=2048)
    parser.add_argument("--d-ff", type=int, default=5632)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    torch.manual_seed(0)
    gate = nn.Linear(args.d_model, args.d_ff, bias=False, device=args.device)
    up = nn.Linear(args.d_model, args.d_ff, bias=False, device=args.device)
    down = nn.Linear(args.d_ff, args.d_model, bias=False, device=args.device)
    x = torch.randn(args.batch, args.seq_len, args.d_model, device=args.device)
    with torch.inference_mode():
        y = down(nn.functional.silu(gate(x)) * up(x))
    print(tuple(y.shape) if y.is_meta else f"mean {y.mean().item():.4g} std {y.std().item():.4g}")


if __name__ == "__main__":
    main()
