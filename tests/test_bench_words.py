"""ffn bench's warnings in the reader's language, English in --json."""

from __future__ import annotations

import json
import os

from typer.testing import CliRunner

from ffn_cli.cli import app

# More threads than CPUs: a warning on any machine, whatever its speed.
ARGS = ["bench", "-d", "16", "--repeats", "3", "--warmup-ms", "0", "--threads", str((os.cpu_count() or 1) + 1)]


def test_bench_warnings_are_said_in_chinese() -> None:
    result = CliRunner().invoke(app, ["--lang", "zh", *ARGS], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    threads = (os.cpu_count() or 1) + 1
    assert f"警告：{threads} 个线程跑在 {os.cpu_count()} 个可用 CPU 上：线程相互争抢，时间不具代表性" in result.stdout
    assert "threads compete" not in result.stdout


def test_bench_warnings_stay_english_in_json() -> None:
    result = CliRunner().invoke(app, ["--lang", "zh", *ARGS, "--json"])
    warnings = json.loads(result.stdout)["warnings"]
    assert any(w.endswith("available CPUs: threads compete, times are not representative") for w in warnings)
