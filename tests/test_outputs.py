"""Output files: refused before the work when they cannot be written, or when two outputs (or an
output and an input) name one file; the table printed before any file is written; the target's
mode kept; no temp file left behind, even by SIGTERM or Ctrl-C; a link never followed."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import BinaryIO

import pytest
from typer.testing import CliRunner

import ffn_cli.benchmark.run as bench_run
import ffn_cli.render.bench as render_bench
from ffn_cli.cli import app
from ffn_cli.errors import FFNError
from ffn_cli.outputs import NAME_MAX, check_output_file, temp_name, write_file, write_text

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

    def half(handle: BinaryIO) -> None:
        handle.write(b"half")
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        write_file(target, half, option="svg")
    assert list(tmp_path.iterdir()) == []
    write_text(target, "whole", option="svg")
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
    fname.write(b"partial")
    fname.flush()
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


# --- one writer: outputs that collide, outputs over inputs, the temporary file, the mode ---------

LLAMA_CONFIG = (
    '{"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, '
    '"num_attention_heads": 4, "vocab_size": 100}'
)


@pytest.mark.parametrize(
    ("args", "first", "second"),
    [
        (["trace", "-d", "8", "--page", "{d}/out.html", "--html", "{d}/out.html"], "--page", "--html"),
        (["trace", "-d", "8", "--page", "{d}/out.html", "--html", "{d}/sub/../out.html"], "--page", "--html"),
        ([*TINY, "--plot", "{d}/same.svg", "--svg", "{d}/same.svg"], "--plot", "--svg"),
    ],
)
def test_two_outputs_naming_one_file_are_refused_before_the_work(
    runner: CliRunner, tmp_path: Path, never_timed: None, args: list[str], first: str, second: str
) -> None:
    pytest.importorskip("matplotlib")
    (tmp_path / "sub").mkdir()
    result = runner.invoke(app, [a.format(d=tmp_path) for a in args])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.count("\n") == 0 and line.startswith(f"error: {first} ") and second in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]  # nothing written, no page then an export over it


def test_outputs_reaching_one_file_through_a_link_are_refused(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text("the page")
    (tmp_path / "link.html").symlink_to(tmp_path / "page.html")
    result = runner.invoke(app, ["trace", "-d", "8", "--page", str(tmp_path / "page.html"), "--html", str(tmp_path / "link.html")])
    assert result.exit_code == 2 and "--html" in result.stderr
    assert (tmp_path / "page.html").read_text() == "the page"


@pytest.mark.parametrize("reach", ["same-name", "symlink", "hardlink", "folder"])
def test_an_output_over_the_config_it_reads_is_refused(runner: CliRunner, tmp_path: Path, reach: str) -> None:
    config = tmp_path / ("config.json" if reach == "folder" else "cfg.html")
    config.write_text(LLAMA_CONFIG)
    given = {"same-name": config, "folder": tmp_path}.get(reach, config)
    output = {"same-name": config, "symlink": tmp_path / "link.html", "hardlink": tmp_path / "hard.html"}.get(reach)
    if reach == "symlink":
        output.symlink_to(config)
    if reach == "hardlink":
        os.link(config, output)
    if reach == "folder":
        output = tmp_path / "page.html"
        output.symlink_to(config)
    result = runner.invoke(app, ["trace", "--config", str(given), "--device", "meta", "--page", str(output)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: --page ") and "--config" in result.stderr and result.stderr.count("\n") == 1
    assert config.read_text() == LLAMA_CONFIG


def test_an_export_over_the_users_module_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    module = tmp_path / "my_ffn.py"
    module.write_text((ROOT / "docs" / "examples" / "my_ffn.py").read_text())
    (tmp_path / "module.html").symlink_to(module)
    result = runner.invoke(app, ["trace", "--module", f"{module}:TransformerFFN(8, 16)", "--html", str(tmp_path / "module.html")])
    assert result.exit_code == 2 and "--module" in result.stderr, result.output
    assert module.read_text() == (ROOT / "docs" / "examples" / "my_ffn.py").read_text()


def test_an_export_over_the_profile_gpu_this_reads_is_refused(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ffn_cli.hardware.profile import profile_path, save_profile
    from tests.test_predict import _profile

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    save_profile(_profile())
    before = profile_path().read_text()
    (tmp_path / "p.svg").symlink_to(profile_path())
    result = runner.invoke(app, ["params", "-v", "swiglu", "--gpu", "this", "--svg", str(tmp_path / "p.svg")])
    assert result.exit_code == 2 and "--gpu" in result.stderr, result.output
    assert profile_path().read_text() == before


@pytest.mark.parametrize("option", ["--page", "--html", "--svg"])
def test_rewriting_a_private_file_keeps_its_mode(runner: CliRunner, tmp_path: Path, option: str) -> None:
    target = tmp_path / ("out.svg" if option == "--svg" else "out.html")
    target.write_text("old")
    target.chmod(0o600)
    result = runner.invoke(app, ["trace", "-d", "8", option, str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text() != "old" and stat.S_IMODE(target.stat().st_mode) == 0o600


def test_rewriting_a_private_plot_keeps_its_mode(runner: CliRunner, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "b.png"
    target.write_text("old")
    target.chmod(0o640)
    assert runner.invoke(app, [*TINY, "--plot", str(target)]).exit_code == 0
    assert target.read_bytes().startswith(b"\x89PNG") and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_new_file_gets_the_mode_the_umask_leaves(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_text(tmp_path / "new.svg", "x", option="svg")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.svg").stat().st_mode) == 0o666 & ~0o027


@pytest.mark.parametrize("stem", ["a" * (NAME_MAX - 5), "é" * ((NAME_MAX - 5) // 2)])
def test_a_page_with_the_longest_name_is_written(runner: CliRunner, tmp_path: Path, stem: str) -> None:
    target = tmp_path / f"{stem}.html"
    result = runner.invoke(app, ["trace", "-d", "8", "--page", str(target)])
    assert result.exit_code == 0, result.output
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_the_temporary_name_always_fits() -> None:
    for name in ["x.svg", "a" * 255, "é" * 127 + ".", "日本" * 42 + ".html"]:
        tmp = temp_name(name)
        assert len(os.fsencode(tmp)) <= NAME_MAX and tmp.startswith(".") and tmp.endswith(".tmp")
    assert temp_name("x.svg") != temp_name("x.svg")  # a random part: two runs never share one


def test_a_link_planted_at_the_temporary_name_is_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ffn_cli.outputs as outputs

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    planted = tmp_path / ".out.svg.planted.tmp"
    planted.symlink_to(victim)
    names = iter([planted.name, ".out.svg.fresh.tmp"])
    monkeypatch.setattr(outputs, "temp_name", lambda name, name_max=NAME_MAX: next(names))
    write_text(tmp_path / "out.svg", "<svg/>", option="svg")
    assert victim.read_text() == "keep me" and planted.is_symlink()
    assert (tmp_path / "out.svg").read_text() == "<svg/>" and not (tmp_path / ".out.svg.fresh.tmp").exists()


def test_ctrl_c_while_writing_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "out.html").write_text("before")

    def interrupted(handle: BinaryIO) -> None:
        handle.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_file(tmp_path / "out.html", interrupted, option="page")
    assert [p.name for p in tmp_path.iterdir()] == ["out.html"] and (tmp_path / "out.html").read_text() == "before"


def test_bench_draws_its_plot_under_json(runner: CliRunner, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    result = runner.invoke(app, [*TINY, "--plot", str(tmp_path / "b.svg"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"]  # stdout is the JSON alone
    assert (tmp_path / "b.svg").read_text().lstrip().startswith("<?xml") and "b.svg" in result.stderr


def test_the_api_writes_its_page_without_the_cli(tmp_path: Path) -> None:
    """api.py writes the page by ffn_cli.outputs; the CLI package is never imported for it."""
    code = (
        "import sys, ffn_cli\n"
        f"r = ffn_cli.trace(ffn_cli.FFNSpec(variant='relu', d_model=8))\nr.page({str(tmp_path / 'p.html')!r})\n"
        "assert 'ffn_cli.cli' not in sys.modules, sorted(m for m in sys.modules if m.startswith('ffn_cli.cli'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "p.html").read_text().lstrip().lower().startswith("<!doctype html")


# --- the profile `ffn hardware --measure` writes -------------------------------------------------


@pytest.fixture
def never_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    import ffn_cli.services.hardware_measure as measure  # where ffn hardware --measure calls it

    def fake(*args: object, **kwargs: object) -> object:
        raise AssertionError("the device was measured")

    monkeypatch.setattr(measure, "measure_device", fake)


def _cache_cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    a_file = tmp_path / "cache-file"
    a_file.write_text("not a folder")
    folder = tmp_path / "folder-cache"
    (folder / "ffn" / "profiles" / "this.json").mkdir(parents=True)
    return {
        "cache-is-a-file": (a_file, "cannot write the profile to"),
        "profile-is-a-folder": (folder, "is a directory"),
        "proc": (Path("/proc"), "cannot write the profile to /proc/ffn/profiles/this.json"),
    }


@pytest.mark.parametrize("case", ["cache-is-a-file", "profile-is-a-folder", "proc"])
def test_measure_checks_where_the_profile_goes_before_measuring(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, never_measured: None, case: str
) -> None:
    cache, message = _cache_cases(tmp_path)[case]
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    result = runner.invoke(app, ["hardware", "--measure", "--quick"])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: ") and message in result.stderr and result.stderr.count("\n") == 1


def test_measure_refuses_a_full_disk_before_measuring(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, never_measured: None
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    real = os.statvfs

    def full(path: object) -> os.statvfs_result:
        fs = real(path)  # type: ignore[arg-type]
        return os.statvfs_result((fs.f_bsize, fs.f_frsize, fs.f_blocks, 0, 0, *fs[5:]))

    monkeypatch.setattr(os, "statvfs", full)
    result = runner.invoke(app, ["hardware", "--measure", "--quick"])
    assert result.exit_code == 1 and "No space left on device" in result.stderr, result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder")
def test_measure_refuses_a_read_only_profiles_folder(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, never_measured: None
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "ffn" / "profiles"
    folder.mkdir(parents=True)
    folder.chmod(0o500)
    try:
        result = runner.invoke(app, ["hardware", "--measure", "--quick"])
    finally:
        folder.chmod(0o700)
    assert result.exit_code == 1 and "cannot write the profile" in result.stderr, result.output


def test_the_measured_profile_is_written_where_checked(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ffn_cli.services.hardware_measure as measure  # where ffn hardware --measure calls it
    from ffn_cli.hardware.profile import load_profile, profile_path
    from tests.test_predict import _profile

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(measure, "measure_device", lambda *args, **kwargs: _profile())
    result = runner.invoke(app, ["hardware", "--measure", "--quick", "--json"])
    assert result.exit_code == 0, result.output
    assert load_profile() == _profile() and os.listdir(profile_path().parent) == ["this.json"]


def test_a_link_at_the_old_temporary_name_is_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ffn_cli.hardware.profile import profile_path, save_profile
    from tests.test_predict import _profile

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    profile_path().parent.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (profile_path().parent / "this.json.tmp").symlink_to(victim)
    save_profile(_profile())
    assert victim.read_text() == "keep me"


def test_a_failed_profile_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ffn_cli.errors import FFNRuntimeError
    from ffn_cli.hardware.profile import profile_path, save_profile
    from tests.test_predict import _profile

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def cross_device(src: object, dst: object) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "replace", cross_device)
    with pytest.raises((FFNRuntimeError, RuntimeError), match="cross-device"):
        save_profile(_profile())
    assert os.listdir(profile_path().parent) == []


def test_measure_with_gpu_is_still_its_own_refusal(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, never_measured: None
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    result = runner.invoke(app, ["hardware", "--measure", "--gpu", "this"])
    assert result.exit_code == 2 and result.stderr == "error: --measure: profiles this device alone: drop --gpu and --measure-cpu\n"


def test_no_module_but_the_writer_writes_a_file() -> None:
    # The fallback's count cache once wrote its entries with a temporary file of its own: every
    # file ffn writes goes through ffn_cli/outputs.py (cache entries through configs/cache_files.py).
    import re

    root = Path(__file__).resolve().parent.parent / "ffn_cli"
    writes = re.compile(
        r"os\.replace\(|os\.rename\(|mkstemp\(|NamedTemporaryFile\(|\.write_text\(|\.write_bytes\(|open\([^)]*,\s*['\"][wax]b?\+?['\"]"
    )
    found = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for path in root.rglob("*.py")
        if path.name != "outputs.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if writes.search(line) and "/proc/self/clear_refs" not in line  # a kernel knob, not a file ffn makes
    ]
    assert not found, found
