"""What a command loads, in a fresh process: only the command that runs is built, one FFN loads
no model reader, and only a command that runs a module loads torch (nor NumPy, which torch brings)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMAND_MODULES = ("trace", "params", "bench", "variants")


def _loaded_after(args: list[str], watched: list[str]) -> set[str]:
    """Which of `watched` are in sys.modules after `ffn ARGS` runs, as `ffn` runs it."""
    code = (
        "import sys\n"
        f"sys.argv = ['ffn', *{args!r}]\n"
        "from ffn_cli.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        f"print('loaded:' + ','.join(m for m in {watched!r} if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    last = result.stdout.rstrip("\n").splitlines()[-1]  # marked: none loaded is an empty list, not the output's last line
    assert last.startswith("loaded:"), result.stdout[-2000:]
    return set(filter(None, last.removeprefix("loaded:").split(",")))


def _commands(*names: str) -> list[str]:
    return [f"ffn_cli.cli.{name}_cmd" for name in names]


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["params", "--variant", "swiglu"], "params"),
        (["params", "-v", "relu,moe", "-d", "1024", "--ffn-dim-multiplier", "1.3"], "params"),
        (["variants"], "variants"),
        (["trace", "-v", "swiglu", "-d", "64", "--d-ff", "96", "-b", "2", "-s", "4", "--device", "meta"], "trace"),
    ],
)
def test_a_command_builds_itself_alone(args: list[str], command: str) -> None:
    watched = [*_commands(*COMMAND_MODULES), "torch", "ffn_cli.configs.families"]
    loaded = _loaded_after(args, watched)
    assert loaded & set(_commands(*COMMAND_MODULES)) == set(_commands(command))
    assert "ffn_cli.configs.families" not in loaded  # no model named: no model reader
    assert ("torch" in loaded) == (command == "trace")


def test_help_builds_every_command() -> None:
    assert _loaded_after(["--help"], _commands(*COMMAND_MODULES)) == set(_commands(*COMMAND_MODULES))


# What a command with no model and no --gpu has no use for: the model spec and its counting, and
# the GPU table. `ffn hardware` is about GPUs alone: it has no use for torch.
MODEL_AND_GPU_TABLE = ["ffn_cli.models.spec", "ffn_cli.models.count", "ffn_cli.hardware.gpus"]


@pytest.mark.parametrize("args", [["params", "--variant", "swiglu"], ["--help"]])
def test_a_pure_command_loads_neither_torch_nor_numpy_nor_what_it_does_not_use(args: list[str]) -> None:
    assert _loaded_after(args, ["torch", "numpy", *MODEL_AND_GPU_TABLE]) == set()


def test_a_default_trace_loads_no_model_spec_and_no_gpu_table() -> None:
    assert _loaded_after(["trace"], ["torch", *MODEL_AND_GPU_TABLE]) == {"torch"}


def test_a_block_trace_loads_no_dynamo() -> None:
    """The block's trace records torch calls, as the plain trace does, and needs no Dynamo."""
    assert _loaded_after(["trace", "--block"], ["torch", "torch._dynamo"]) == {"torch"}


def test_hardware_loads_the_gpu_table_and_not_torch() -> None:
    assert _loaded_after(["hardware"], ["torch", "numpy", "ffn_cli.hardware.gpus"]) == {"ffn_cli.hardware.gpus"}


# What one FFN's counts have no use for: FLOPs over length (--seq-len), --explain's block, the
# comparison of variants, the costs of a model or a GPU, the file checks of --svg / --html, the
# API's one-spec wrapper.
ONE_FFN_UNUSED = [
    "ffn_cli.models.seq_flops",
    "ffn_cli.render.seq_flops",
    "ffn_cli.models.explain",
    "ffn_cli.models.comparison",
    "ffn_cli.services.costs",
    "ffn_cli.services.ffn_gpu",
    "ffn_cli.requests.ffn",
]


def test_one_ffn_loads_only_what_its_counts_use() -> None:
    assert _loaded_after(["params", "--variant", "swiglu"], ONE_FFN_UNUSED) == set()


def test_seq_len_and_explain_load_what_they_print() -> None:
    loaded = _loaded_after(["params", "--variant", "swiglu", "--seq-len", "128", "--explain"], ONE_FFN_UNUSED)
    assert loaded == {"ffn_cli.models.seq_flops", "ffn_cli.render.seq_flops", "ffn_cli.models.explain"}


OTHER_VARIANTS = ["ffn_cli.variants.relu", "ffn_cli.variants.geglu", "ffn_cli.variants.moe", "ffn_cli.variants.xielu"]


def test_one_variant_loads_its_own_file_alone() -> None:
    assert _loaded_after(["params", "--variant", "swiglu"], ["ffn_cli.variants.swiglu", *OTHER_VARIANTS]) == {"ffn_cli.variants.swiglu"}
    loaded = _loaded_after(["params", "--variant", "moe"], ["ffn_cli.variants.swiglu", *OTHER_VARIANTS])
    assert loaded == {"ffn_cli.variants.moe", "ffn_cli.variants.swiglu"}  # its experts' variant


def test_a_comparison_loads_the_comparison_alone() -> None:
    loaded = _loaded_after(["params", "-v", "relu,swiglu", "--match-params"], ONE_FFN_UNUSED)
    assert loaded == {"ffn_cli.models.comparison"}


_FROZEN_AT_EXIT = """
import gc, sys
sys.argv = ['ffn', *sys.argv[1:]]
from ffn_cli.cli import main
try:
    main()
except SystemExit as exc:
    print('exit', exc.code, 'frozen', gc.get_freeze_count(), 'tracked', len(gc.get_objects()))
"""


@pytest.mark.parametrize(("args", "code"), [(["params", "--variant", "swiglu"], 0), (["params", "--variant", "nope"], 2)])
def test_the_process_ends_with_its_objects_frozen(args: list[str], code: int) -> None:
    """`main` freezes what is alive as it ends, done or failed, so Python's exit-time
    collections do not walk it (docs/benchmarks.md)."""
    result = subprocess.run([sys.executable, "-c", _FROZEN_AT_EXIT, *args], capture_output=True, text=True, timeout=300)
    words = result.stdout.split()[-6:]
    assert words[0] == "exit" and int(words[1]) == code, result.stdout[-2000:] + result.stderr[-2000:]
    assert int(words[3]) > 10_000  # Typer, rich and ffn's modules: all of it frozen
    assert int(words[5]) < 1_000  # left for a collection: what the lines above made


def test_output_is_whole_when_the_process_ends_frozen(tmp_path: Path) -> None:
    """What `ffn` wrote, to the terminal and to a file, is what the same command writes when
    run by the Typer app alone, whose process ends with nothing frozen."""

    def run(entry: str, svg: Path) -> str:
        code = f"import sys\nsys.argv = ['ffn', *sys.argv[1:]]\n{entry}"
        args = ["params", "--variant", "swiglu", "--svg", str(svg)]
        result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    frozen = run("from ffn_cli.cli import main\nmain()", tmp_path / "frozen.svg")
    plain = run("from ffn_cli.cli import app\napp()", tmp_path / "plain.svg")
    assert "swiglu" in frozen and frozen == plain
    assert (tmp_path / "frozen.svg").read_bytes() == (tmp_path / "plain.svg").read_bytes()
    assert (tmp_path / "frozen.svg").read_text(encoding="utf-8").rstrip().endswith("</svg>")


@pytest.mark.parametrize(
    "package", ["ffn_cli", "ffn_cli.tracing", "ffn_cli.benchmark", "ffn_cli.parallel", "ffn_cli.models", "ffn_cli.costs"]
)
def test_a_package_surface_needs_no_torch(package: str) -> None:
    """What a package names at its top needs no torch: what runs a module is imported from its
    own module (`ffn_cli.tracing.run`, `ffn_cli.benchmark.run`, `ffn_cli.parallel.run`)."""
    code = f"import sys, {package}\nprint('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.stdout.split() == ["False"], result.stderr[-2000:]


@pytest.mark.parametrize("columns", ["0", "²"])
def test_the_environment_is_left_as_it_is(columns: str) -> None:
    """An unusable COLUMNS is passed over by ffn's consoles (tests/test_cli_inputs.py), not
    deleted: nothing of ffn edits the environment as it loads or runs."""
    code = (
        "import os, sys\n"
        "sys.argv = ['ffn', 'params', '--variant', 'swiglu']\n"
        "from ffn_cli.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code, repr(os.environ.get('COLUMNS')))\n"
    )
    env = {**os.environ, "COLUMNS": columns}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert result.stdout.split()[-3:] == ["exit", "0", repr(columns)], result.stdout[-2000:] + result.stderr[-2000:]


# Mistakes `ffn trace` can see without torch, refused before torch loads (it costs some 2 s):
# option parsing, variant and preset names, --device and --dtype spelling, numbers.
REFUSED_BEFORE_TORCH = [
    ["trace", "--bogus"],
    ["trace", "-v", "nope"],
    ["trace", "-v", "relu,gelu"],
    ["trace", "--dtype", "flaot32"],
    ["trace", "--dtype", "float8"],
    ["trace", "--device", "cdua"],
    ["trace", "--device", "cuda:x"],
    ["trace", "-d", "abc"],
    ["trace", "-d", "0"],
    ["trace", "--seq-len", "-3"],
    ["trace", "--values", "99"],
    ["trace", "--mode", "x"],
    ["trace", "--loss", "mse"],
    ["trace", "--preset", "nope"],
    ["trace", "--preset", "gpt2", "--layer", "99"],
    ["trace", "--module", "no_such_file.py:FFN(512, 2048)"],
    ["trace", "--module", "tests/data/module_styles.py"],
    ["trace", "--module", "tests/data/module_styles.py:FusedSwiGLU(d_model=)"],
    ["bench", "-v", "nope"],
]


@pytest.mark.parametrize("args", REFUSED_BEFORE_TORCH, ids=" ".join)
def test_a_mistake_is_refused_before_torch_loads(args: list[str]) -> None:
    code = (
        "import sys\n"
        f"sys.argv = ['ffn', *{args!r}]\n"
        "from ffn_cli.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code, 'torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.stdout.split()[-3:] == ["exit", "2", "False"], result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
