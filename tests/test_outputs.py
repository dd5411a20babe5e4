"""Output files: refused before the work when they cannot be written, the table printed before
any file is written, and no temp file left behind, even by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ffn_cli.benchmark.run as bench_run
import ffn_cli.render.bench as render_bench
from ffn_cli.cli import app
from ffn_cli.errors import FFNError
from ffn_cli.outputs import check_output_file, write_atomically

ROOT = Path(__file__).resolve().parent.parent
TINY = ["bench", "-d", "8", "-b", "1", "-s", "2", "--repeats", "3", "--warmup-ms", "0", "--cache", "hot", "--threads", "1"]


@pytest.fixture
def never_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake(case: object, sweep: object) -> object:
        raise AssertionError("a case was timed")

    monkeypatch.setattr(bench_run, "bench_case", fake)


def _unwritable(tmp_path: Path) -> dict[str, tuple[str, str]]:
    folder = tmp_path / "a-folder.png"
    folder.mkdir()
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    return {
        "proc": ("/proc/ffn-bench.png", "cannot write in its folder /proc"),
        "directory": (str(folder), "is a directory"),
        "fifo": (str(fifo), "is not a regular file"),
        "missing-folder": (str(tmp_path / "nope" / "b.png"), "does not exist"),
    }


@pytest.mark.parametrize("case", ["proc", "directory", "fifo", "missing-folder"])
def test_an_unwritable_plot_is_refused_before_any_timing(runner: CliRunner, tmp_path: Path, never_timed: None, case: str) -> None:
    pytest.importorskip("matplotlib")
    path, message = _unwritable(tmp_path)[case]
    result = runner.invoke(app, [*TINY, "--plot", path])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: --plot ") and message in result.stderr and result.stderr.count("\n") == 1


def test_the_table_is_printed_before_the_plot_is_written(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")

    def failing(report: object, path: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(render_bench, "write_plot", failing)
    result = runner.invoke(app, [*TINY, "--plot", str(tmp_path / "b.png")])
    assert result.exit_code == 1
    assert "median" in result.stdout and "No space left" in result.stderr


def test_write_atomically_leaves_nothing_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "out.svg"

    def half(tmp: str) -> None:
        Path(tmp).write_text("half")
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        write_atomically(target, half, option="svg")
    assert list(tmp_path.iterdir()) == []
    write_atomically(target, lambda tmp: Path(tmp).write_text("whole"), option="svg")
    assert [p.name for p in tmp_path.iterdir()] == ["out.svg"] and target.read_text() == "whole"


def test_check_output_file_wants_a_known_suffix(tmp_path: Path) -> None:
    with pytest.raises(FFNError, match=r"ending in \.svg, \.html"):
        check_output_file("svg", str(tmp_path / "x.txt"), (".svg", ".html"))
    assert check_output_file("svg", str(tmp_path / "x.svg"), (".svg",)) == tmp_path / "x.svg"
    assert list(tmp_path.iterdir()) == []  # the write check leaves nothing behind


# savefig writes part of the file, then the process receives SIGTERM while "still writing".
_SIGTERM_WHILE_WRITING = """
import os, signal, sys, time
from matplotlib.figure import Figure

def savefig(self, fname, **kwargs):
    with open(fname, "wb") as f:
        f.write(b"partial")
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)

Figure.savefig = savefig
from ffn_cli.cli import main
sys.argv = ["ffn", *sys.argv[1:]]
main()
"""


def test_sigterm_while_writing_the_plot_leaves_no_temp_file(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", textwrap.dedent(_SIGTERM_WHILE_WRITING), *TINY, "--plot", str(out / "bench.png")]
    done = subprocess.run(args, env=env, capture_output=True, timeout=120)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr.decode()
    assert list(out.iterdir()) == []


def test_a_failed_export_write_is_one_line_naming_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder checked before the work is gone when the file is written: one line, no traceback."""
    import shutil

    from typer.testing import CliRunner

    from ffn_cli.cli import app, export

    folder = tmp_path / "out"
    folder.mkdir()
    real = export._save

    def save_after_removing(targets, title):
        shutil.rmtree(folder)
        return real(targets, title)

    monkeypatch.setattr(export, "_save", save_after_removing)
    result = CliRunner().invoke(app, ["params", "--svg", str(folder / "x.svg")])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == f"error: --svg {folder / 'x.svg'}: cannot be written: No such file or directory"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["params", "--json"], ["params"], ["variants"]])
def test_standard_output_on_a_full_disk_is_one_line(args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "ffn_cli", *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["error: cannot write to standard output: No space left on device"]
