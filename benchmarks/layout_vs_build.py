"""The layout of a model no reader knows, read from one built decoder layer of each kind
(ffn_cli/configs/layer_read/), against transformers building the whole model on meta.

Each measurement is a fresh process (a cold answer: nothing imported, nothing cached) that
imports torch and transformers, reads transformers' default config of the model_type, and then
imports the model's modeling module (both paths need it; ffn's own modules too for the layout),
then times the work alone: either `read_layout` (the config, one layer of each kind and the last
of each kind again, the model built with no layers) or `AutoModelForCausalLM.from_config` under
`torch.device("meta")` (the whole model). The two alternate, round after round; the medians are
reported, with the imports' time beside them.

    python benchmarks/layout_vs_build.py                 # the default list, 3 rounds
    python benchmarks/layout_vs_build.py --rounds 5 deepseek_v3 glm_moe_dsa
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The largest default configs transformers 5.25 ships among the model_types no reader knows
# (and deepseek_v3, which one does, for scale).
DEFAULT = ["deepseek_v3", "glm_moe_dsa", "deepseek_v32", "qwen3_5_moe", "kimi_linear", "llama4_text"]

_CHILD = """
import importlib, json, sys, time, warnings
warnings.simplefilter("ignore")
start = time.perf_counter()
import torch, transformers
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.models.auto import modeling_auto
transformers.logging.set_verbosity_error()
mode, model_type = sys.argv[1], sys.argv[2]
config = {**AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}
# The model's modeling module: both paths import it, and under load it is most of a cold answer.
model_class = getattr(transformers, modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type])
importlib.import_module(model_class.__module__)
if mode == "layout":
    from ffn_cli.configs.layer_read import read_layout
    from ffn_cli.models.count import count_model
imported = time.perf_counter()
if mode == "layout":
    params = count_model(read_layout(config, name=model_type, source=model_type).spec).total_params
else:
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type), attn_implementation="eager")
    params = sum(p.numel() for p in model.parameters())
done = time.perf_counter()
print(json.dumps({"seconds": done - imported, "imports": imported - start, "params": params}))
"""


def _run(mode: str, model_type: str) -> tuple[float, float, int]:
    """(the work's seconds, the imports' seconds, the parameters it counted)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, model_type], capture_output=True, text=True, env=env, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data["seconds"], data["imports"], data["params"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_types", nargs="*", default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs; {args.rounds} rounds, medians")
    print("| model_type | parameters | one layer a kind | whole model on meta | ratio | imports, layout | imports, whole |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for model_type in args.model_types:
        runs: dict[str, list[tuple[float, float, int]]] = {"layout": [], "build": []}
        for _ in range(args.rounds):
            for mode in ("layout", "build"):
                runs[mode].append(_run(mode, model_type))
        layout, build = runs["layout"], runs["build"]
        if {r[2] for r in layout} != {r[2] for r in build}:
            raise SystemExit(f"{model_type}: the layout counts {layout[0][2]:,}, the whole build {build[0][2]:,}")
        work = [statistics.median(r[0] for r in rs) for rs in (layout, build)]
        imports = [statistics.median(r[1] for r in rs) for rs in (layout, build)]
        print(
            f"| {model_type} | {layout[0][2]:,} | {work[0] * 1000:,.0f} ms | {work[1] * 1000:,.0f} ms | {work[0] / work[1]:.2f} "
            f"| {imports[0]:.2f} s | {imports[1]:.2f} s |"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
