"""What a command loads, in a fresh process: only the command that runs is built, one FFN loads
no model reader, and only a command that runs a module loads torch."""

from __future__ import annotations

import subprocess
import sys

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
        f"print(','.join(m for m in {watched!r} if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return set(filter(None, result.stdout.strip().splitlines()[-1].split(",")))


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
    watched = [*_commands(*COMMAND_MODULES), "torch", "ffn_cli.models.families"]
    loaded = _loaded_after(args, watched)
    assert loaded & set(_commands(*COMMAND_MODULES)) == set(_commands(command))
    assert command == "trace" or "ffn_cli.models.families" not in loaded  # no model named: no model reader
    assert ("torch" in loaded) == (command == "trace")


def test_help_builds_every_command() -> None:
    assert _loaded_after(["--help"], _commands(*COMMAND_MODULES)) == set(_commands(*COMMAND_MODULES))
