"""A yardstick for `ffn trace` with no options: the same forward counted by torch's own
FlopCounterMode.

    python benchmarks/flop_counter_forward.py [--d-model 512] [--d-ff 2048] [--batch 2]
        [--seq-len 5] [--device cpu|meta]

It imports torch, builds the default trace's module (Linear → ReLU → Linear, with bias,
PyTorch's default init), runs one forward under inference_mode inside FlopCounterMode on a
random input of the default shape, and prints the total FLOPs, so the dispatch-mode start-up
that torch pays for counting is on this side too.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--d-ff", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    torch.manual_seed(0)
    module = nn.Sequential(
        nn.Linear(args.d_model, args.d_ff, device=args.device),
        nn.ReLU(),
        nn.Linear(args.d_ff, args.d_model, device=args.device),
    )
    x = torch.randn(args.batch, args.seq_len, args.d_model, device=args.device)
    counter = FlopCounterMode(display=False)
    with torch.inference_mode(), counter:
        module(x)
    print(f"{counter.get_total_flops()} FLOPs")


if __name__ == "__main__":
    main()
