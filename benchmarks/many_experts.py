"""A mixture with thousands of experts on the meta device: the trace against its floors.

    python benchmarks/many_experts.py [--experts 4096] [--rounds 3]

Runs, as whole processes, alternating within each round so that other jobs' load falls on
all alike: `python -c "import torch"`; the bare work (build the same MoE with `build_ffn` on
meta and run one forward with autograd on, as the trace does, with no recorder); `ffn trace`,
`ffn trace --ops`, `ffn trace --json` and `ffn trace --backward`. Prints the median wall time of each and the bytes
each `ffn` command printed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

PY = sys.executable
BARE = (
    "import torch\n"
    "from ffn_cli import build_ffn\n"
    "from ffn_cli.spec import FFNSpec\n"
    "module = build_ffn(FFNSpec(variant='moe', experts={experts}), device='meta')\n"
    "module(torch.empty(2, 5, 512, device='meta'))\n"
)


def _run(command: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True).stdout
    return time.perf_counter() - start, len(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experts", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trace = [PY, "-m", "ffn_cli", "trace", "--variant", "moe", "--experts", str(args.experts), "--device", "meta"]
    cases = {
        'python -c "import torch"': [PY, "-c", "import torch"],
        "build + forward on meta, no recorder": [PY, "-c", BARE.format(experts=args.experts)],
        "ffn trace": trace,
        "ffn trace --ops": [*trace, "--ops"],
        "ffn trace --json": [*trace, "--json"],
        "ffn trace --backward": [*trace, "--backward"],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    sizes: dict[str, int] = {}
    for r in range(args.rounds):
        order = list(cases) if r % 2 == 0 else list(reversed(cases))
        for name in order:
            seconds, sizes[name] = _run(cases[name])
            times[name].append(seconds)
    print(f"--experts {args.experts} --device meta, {args.rounds} rounds, median wall time")
    for name in cases:
        printed = f", {sizes[name]:,} bytes printed" if name.startswith("ffn") else ""
        print(f"  {name}: {statistics.median(times[name]):.2f} s{printed}")


if __name__ == "__main__":
    main()
