"""The cold deployment answer as a user runs it, against transformers building the whole model on
meta, each a whole process from the shell: what a user waits for, imports included.

    ffn      python -m ffn_cli params --config X --gpu h200 --json --no-cache
             (a model no reader knows is laid out from one built layer of each kind; a family a
             reader knows is answered by its reader, without torch)
    second   the same command again with the cache on, after one call stored the layout
    build    python -c "...the class `architectures` names (else AutoModelForCausalLM.from_config(cfg)) under torch.device('meta')..."
             (AutoConfig.for_model(model_type, **config), then the parameters counted)

Each config is either a preset (ffn_cli/presets/NAME.json, its `_` keys dropped) or `default:TYPE`,
transformers' own default config of a model_type. The three alternate round after round; the
medians are reported, and the script stops if ffn's total and the whole build's differ.

    python benchmarks/cold_answer.py                         # the default list, 3 rounds
    python benchmarks/cold_answer.py --rounds 5 glm-5 default:qwen3_5_moe
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["deepseek-v3", "kimi-k2", "glm-5", "qwen3.5-35b-a3b", "kimi-linear-48b-a3b", "default:qwen3_5_moe", "default:deepseek_v4"]

_BUILD = """
import json, sys, warnings
warnings.simplefilter("ignore")
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM
data = json.load(open(sys.argv[1]))
named = getattr(transformers, (data.get("architectures") or [""])[0], None)  # the class the checkpoint says it is
config = AutoConfig.for_model(data.pop("model_type"), **data)
with torch.device("meta"):
    model = named(config) if named is not None else AutoModelForCausalLM.from_config(config)
print(sum(p.numel() for p in model.parameters()))
"""

_DEFAULT = """
import json, sys
from transformers import AutoConfig
print(json.dumps({**AutoConfig.for_model(sys.argv[1]).to_dict(), "model_type": sys.argv[1]}))
"""


def _config_file(name: str, folder: Path) -> Path:
    """The config as a file: a preset without its `_` keys, or transformers' default of a model_type."""
    if name.startswith("default:"):
        text = subprocess.run([sys.executable, "-c", _DEFAULT, name.split(":", 1)[1]], capture_output=True, text=True, check=True).stdout
        data = json.loads(text)
    else:
        data = {k: v for k, v in json.loads((ROOT / "ffn_cli" / "presets" / f"{name}.json").read_text()).items() if not k.startswith("_")}
    path = folder / f"{name.replace(':', '-')}.json"
    path.write_text(json.dumps(data))
    return path


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs; {args.rounds} rounds, medians of whole processes")
    print("| config | model_type | parameters | answered by | ffn, cold | second call | whole model on meta | cold / whole |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(folder / "cache")}
        for name in args.configs:
            path = _config_file(name, folder)
            model_type = json.loads(path.read_text())["model_type"]
            ffn = [sys.executable, "-m", "ffn_cli", "params", "--config", str(path), "--gpu", "h200", "--json"]
            build = [sys.executable, "-c", _BUILD, str(path)]
            times: dict[str, list[float]] = {"cold": [], "second": [], "build": []}
            total = whole = None
            refused = ""
            for _ in range(args.rounds):
                seconds, out = _timed([*ffn, "--no-cache"], env)
                if out.returncode != 0:
                    refused = f"refused (exit {out.returncode})"
                else:
                    total = json.loads(out.stdout)["total_params"]
                times["cold"].append(seconds)
                if not refused:
                    _timed(ffn, env)  # stores the layout (a reader's family: nothing to store)
                    times["second"].append(_timed(ffn, env)[0])
                seconds, out = _timed(build, env)
                if out.returncode != 0:
                    raise SystemExit(f"{name}: the whole build failed: {out.stderr.strip()[-500:]}")
                whole = int(out.stdout.strip().splitlines()[-1])
                times["build"].append(seconds)
            if not refused and total != whole:
                raise SystemExit(f"{name}: ffn counts {total:,}, the whole build {whole:,}")
            cold, full = statistics.median(times["cold"]), statistics.median(times["build"])
            second = f"{statistics.median(times['second']):.2f} s" if times["second"] else "—"
            path_name = refused if refused else ("layout" if model_type not in _read_families() else "reader")
            print(
                f"| {name} | {model_type} | {whole:,} | {path_name} | {cold:.2f} s | {second} | {full:.2f} s | {cold / full:.2f} |",
                flush=True,
            )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


def _read_families() -> tuple[str, ...]:
    sys.path.insert(0, str(ROOT))
    from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES

    return tuple(SUPPORTED_MODEL_TYPES)


if __name__ == "__main__":
    main()
