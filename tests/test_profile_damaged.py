"""A saved profile read as untrusted input: each damaged file (written here by hand) is refused
in one line naming the file, the field and `ffn hardware --measure`, by every command that asks
for it; a command that does not ask (a plain `ffn bench`) runs as if there were none; a
device name is printed as it is, never as terminal escapes or rich markup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.hardware.profile import ProfileError, load_profile, profile_path

# A whole profile as ffn writes it, smallest: one dtype, a grid of 2 × 1 × 1 shapes, two sizes of one op.
GOOD = {
    "format": 1,
    "name": "this",
    "device": "cpu",
    "device_name": "test CPU",
    "threads": 1,
    "torch_version": "2.0",
    "measured_utc": "2026-01-01T00:00:00Z",
    "memory_bytes": 1073741824,
    "cache": "cold",
    "copy_gbps": 10.0,
    "op_call_s": 1e-06,
    "gemm": {
        "fp32": [
            {"m": 1, "n": 256, "k": 256, "seconds": 1e-05, "spread": 0.0},
            {"m": 16, "n": 256, "k": 256, "seconds": 2e-05, "spread": 0.0},
        ]
    },
    "elementwise": {"fp32": {"silu": [{"elements": 1024, "seconds": 1e-06}, {"elements": 1048576, "seconds": 1e-03}]}},
    "ffn_call_s": {"swiglu": 5e-06},
    "seconds_taken": 12.0,
    "passes": 1,
}
GEMM_0 = '{"m": 1, "n": 256, "k": 256, "seconds": 1e-05, "spread": 0.0}'


def _with(old: str, new: str) -> str:
    """The whole profile's JSON with one piece of it written otherwise."""
    text = json.dumps(GOOD)
    assert old in text, old
    return text.replace(old, new)


# (what the file holds, the field the error names): each file as a person or a crash might leave it.
DAMAGED = {
    "a list": ("[1, 2]", "the file"),
    "null": ("null", "the file"),
    "zero time": (_with(GEMM_0, '{"m": 1, "n": 256, "k": 256, "seconds": 0, "spread": 0.0}'), "gemm.fp32[0].seconds"),
    "negative time": (
        _with(GEMM_0, '{"m": 1, "n": 256, "k": 256, "seconds": -0.00046, "spread": 0.0}'),
        "gemm.fp32[0].seconds",
    ),
    "NaN time": (_with('"op_call_s": 1e-06', '"op_call_s": NaN'), "op_call_s"),
    "infinite time": (_with('"seconds": 0.001', '"seconds": Infinity'), "elementwise.fp32.silu[1].seconds"),
    "string time": (_with('"op_call_s": 1e-06', '"op_call_s": "fast"'), "op_call_s"),
    "list for a table": (_with('"ffn_call_s": {"swiglu": 5e-06}', '"ffn_call_s": [5e-06]'), "ffn_call_s"),
    "gemm a list": (json.dumps({**GOOD, "gemm": [[1, 256, 256, 1e-05]]}), "gemm"),
    "unknown dtype": (_with('"gemm": {"fp32"', '"gemm": {"fp33"'), "gemm.fp33"),
    "negative size": (_with('{"m": 16,', '{"m": -16,'), "gemm.fp32[1].m"),
    "a size as text": (_with('{"elements": 1024,', '{"elements": "1024",'), "elementwise.fp32.silu[0].elements"),
    "a grid with a hole": (_with('{"m": 16, "n": 256', '{"m": 16, "n": 512'), "gemm.fp32"),
    "threads as a bool": (_with('"threads": 1', '"threads": true'), "threads"),
    "a field missing": (_with('"copy_gbps": 10.0, ', ""), "copy_gbps"),
    "a field unknown": (json.dumps({**GOOD, "turbo": True}), "turbo"),
    "a device name not text": (json.dumps({**GOOD, "device_name": ["a"]}), "device_name"),
}


def _write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = profile_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_hand_written_profile_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, monkeypatch, json.dumps(GOOD))
    profile = load_profile()
    assert profile.gemm["fp32"][1].seconds == 2e-05 and profile.device_name == "test CPU"


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_damaged_profile_names_its_file_and_field(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, field = DAMAGED[case]
    path = _write(tmp_path, monkeypatch, text)
    with pytest.raises(ProfileError) as raised:
        load_profile()
    message = str(raised.value)
    assert str(path) in message and field in message and "ffn hardware --measure" in message
    assert "\n" not in message


@pytest.mark.parametrize("case", ["a list", "zero time", "negative time", "NaN time", "string time", "gemm a list"])
@pytest.mark.parametrize(
    "args", [["hardware", "--gpu", "this"], ["params", "-v", "swiglu", "-d", "256", "--gpu", "this"]], ids=["hardware", "params"]
)
def test_commands_asking_for_it_stop_in_one_line(case: str, args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, field = DAMAGED[case]
    path = _write(tmp_path, monkeypatch, text)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    (line,) = result.stderr.strip().splitlines()
    assert str(path) in line and field in line and "ffn hardware --measure" in line
    assert "Error:" not in line and "--debug" not in line  # not the catch-all line of an unforeseen exception


TINY = ["bench", "-v", "relu", "-d", "16", "-b", "1", "-s", "4", "--repeats", "2", "--warmup-ms", "0", "--cache", "hot", "--threads", "1"]


def test_bench_gpu_this_stops_plain_bench_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, field = DAMAGED["negative time"]
    path = _write(tmp_path, monkeypatch, text)
    asked = CliRunner().invoke(app, [*TINY, "--gpu", "this"])
    assert asked.exit_code == 1
    (line,) = asked.stderr.strip().splitlines()
    assert str(path) in line and field in line
    plain = CliRunner().invoke(app, [*TINY, "--json"])
    assert plain.exit_code == 0, plain.output
    data = json.loads(plain.stdout)
    assert data["results"][0]["predicted_ms"] is None  # no forecast from a profile that does not read
    (note,) = [w for w in data["warnings"] if "no forecast" in w]  # and a note that says why
    assert str(path) in note and field in note and "ffn hardware --measure" in note


def test_plain_bench_runs_past_a_profile_that_is_not_a_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, monkeypatch, "[1, 2]")
    result = CliRunner().invoke(app, TINY)
    assert result.exit_code == 0, result.output


DEVICE_NAME = "\x1b[2J\x1b]0;title\x07[bold red]X[/]"


@pytest.mark.parametrize(
    "args", [["hardware", "--gpu", "this"], ["params", "-v", "swiglu", "-d", "256", "--gpu", "this"]], ids=["hardware", "params"]
)
def test_a_device_name_is_shown_as_it_is(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, monkeypatch, json.dumps({**GOOD, "device_name": DEVICE_NAME}))
    result = CliRunner().invoke(app, args, env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout  # no clear-screen, no window title
    assert "\\x1b[2J\\x1b]0;title\\x07[bold red]X[/]" in result.stdout  # spelt out, markup and all
