"""What a newcomer meets first: bare `ffn`, `--debug` anywhere, errors that name the option
typed, shell completion, `--svg` / `--html`, and the notes under a table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app, common
from ffn_cli.cli.common import settings
from ffn_cli.cli.complete import complete_devices, complete_dtypes, complete_impls, complete_presets, complete_variants
from ffn_cli.errors import FFNError


@pytest.fixture(autouse=True)
def no_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FFN_DEBUG", raising=False)
    settings.debug = False


def test_bare_ffn_prints_help_and_where_to_start(runner: CliRunner) -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 0, result.output
    assert "Commands" in result.stdout and "Try:" in result.stdout and "ffn trace" in result.stdout
    assert not result.stderr


@pytest.mark.parametrize("args", [["trace", "--d-model", "0", "--debug"], ["--debug", "trace", "--d-model", "0"]])
def test_debug_anywhere_shows_the_exception(runner: CliRunner, args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert isinstance(result.exception, FFNError)


def test_debug_from_the_environment(runner: CliRunner) -> None:
    result = runner.invoke(app, ["params", "--d-model", "0"], env={"FFN_DEBUG": "1"})
    assert isinstance(result.exception, FFNError)
    plain = runner.invoke(app, ["params", "--d-model", "0"], env={"FFN_DEBUG": "0"})
    assert plain.exit_code == 2 and plain.exception is not None and not isinstance(plain.exception, FFNError)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["params", "--d-model", "0"], "error: --d-model 0: must be an integer"),
        (["params", "-d", "0"], "error: --d-model 0: must be an integer"),
        (["params", "--variant", "relu", "--fused"], "error: --fused: relu does not use it"),
        (["params", "--variant", "relu", "--match-params"], "error: --match-params: needs two or more variants"),
        (["trace", "--variant", "moe", "--experts", "2", "--top-k", "3"], "error: --top-k 3: must be at most experts (2)"),
        (["trace", "--mode", "test"], "error: --mode test: choose one of eval, train"),
        (["bench", "--warmup-ms", "nan", "--repeats", "1"], "error: --warmup-ms nan:"),
    ],
)
def test_errors_name_the_option_typed(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and result.stderr.startswith(message), result.stderr
    assert "_" not in result.stderr.split(":")[1]  # no Python field names (d_model, top_k)


def test_a_config_error_names_the_files_key(runner: CliRunner, tmp_path: Path) -> None:
    config = json.loads((Path(__file__).parent / "data/configs/llama-2-7b.json").read_text())
    config["hidden_size"] = 0
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = runner.invoke(app, ["params", "--config", str(path)])
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {path}: key hidden_size = 0:"), result.stderr
    # A field that is also an option (--n-kv-heads) but came from the file is named as the file's.
    config["hidden_size"], config["num_key_value_heads"] = 4096, 3
    path.write_text(json.dumps(config))
    result = runner.invoke(app, ["params", "--config", str(path)])
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {path}: key num_key_value_heads = 3:"), result.stderr


# --- completion -------------------------------------------------------------------------------


def test_completion_of_variants_presets_devices() -> None:
    from ffn_cli.configs.files import preset_names
    from ffn_cli.variants import VARIANTS

    assert complete_variants(None, "sw") == ["swiglu", "swiglu_clamp"]  # type: ignore[arg-type]
    assert complete_variants(None, "relu,xi") == ["relu,xielu"]  # type: ignore[arg-type]
    assert set(complete_variants(None, "")) == {*VARIANTS, "all"}  # type: ignore[arg-type]
    assert "relu,relu" not in complete_variants(None, "relu,")  # type: ignore[arg-type]
    presets = complete_presets(None, "mixtral")  # type: ignore[arg-type]
    assert presets == [n for n in preset_names() if n.startswith("mixtral")] and presets
    assert {"cpu", "meta"} <= set(complete_devices(None, ""))  # type: ignore[arg-type]
    assert complete_dtypes(None, "bf") == ["bfloat16"]  # type: ignore[arg-type]


def _completed(words: str) -> list[str]:
    """What bash completion offers for `words` (the last word being completed), as the shell asks."""
    env = {**os.environ, "_FFN_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split(" ")) - 1)}
    code = "import sys; sys.argv = ['ffn']; from ffn_cli.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize(
    ("words", "offered", "not_offered"),
    [
        ("ffn bench --device ", {"cpu"}, {"meta"}),  # bench refuses meta: it times real computation
        ("ffn trace --device ", {"cpu", "meta"}, set()),
        ("ffn trace --dtype ", {"float32", "bfloat16"}, {"float8"}),  # only params counts float8
        ("ffn params --dtype f", {"float8"}, set()),
        ("ffn bench --dtype float32,", {"float32,bfloat16"}, {"float32,float32", "float32,float8"}),
        ("ffn trace --dtype float32,", set(), {"float32,bfloat16"}),  # trace runs one dtype
        ("ffn trace -v ", {"swiglu", "moe"}, {"all"}),
        ("ffn params -v relu,", {"relu,swiglu"}, {"relu,all", "relu,relu"}),
        ("ffn params --preset llama-2-7b,gpt", {"llama-2-7b,gpt2"}, set()),
        ("ffn trace --preset llama-2-7b,gpt", set(), {"llama-2-7b,gpt2"}),
        ("ffn params -v moe --expert-variant ", {"swiglu", "relu"}, {"moe", "soft_moe", "sparse"}),
    ],
)
def test_completion_offers_only_what_the_command_takes(words: str, offered: set[str], not_offered: set[str]) -> None:
    got = set(_completed(words))
    assert offered <= got and not (not_offered & got), got


def test_completion_lists_every_implementation() -> None:
    from ffn_cli.benchmark.implementations import IMPLS

    assert set(complete_impls("")) == {*IMPLS, "all"}


def test_completion_is_installable(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    result = runner.invoke(app, ["--help"])
    assert "--install-completion" in result.stdout and "--show-completion" in result.stdout
    # Typer's own switch, read when the command is built: the shell is named, not detected from the process tree.
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    shown = runner.invoke(app, ["--show-completion", "bash"])
    assert shown.exit_code == 0 and "complete -o default -F _ffn_completion ffn" in shown.stdout, shown.output


# --- --svg / --html ----------------------------------------------------------------------------


def test_svg_and_html_hold_what_was_printed(runner: CliRunner, tmp_path: Path) -> None:
    svg, html = tmp_path / "v.svg", tmp_path / "v.html"
    result = runner.invoke(app, ["params", "-v", "swiglu", "-d", "4096", "--svg", str(svg), "--html", str(html)])
    assert result.exit_code == 0, result.output
    assert svg.read_text().startswith("<svg") and "135,266,304" in svg.read_text().replace("&#160;", " ")
    assert "135,266,304" in html.read_text() and "<html" in html.read_text().lower()
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--svg", "{tmp}/no/such/folder/x.svg"], "error: --svg {tmp}/no/such/folder/x.svg: its folder"),
        (["--html", "{tmp}/x.txt"], "error: --html {tmp}/x.txt: a file name ending in .html"),
        (["--svg", "{tmp}/x.svg", "--json"], "error: --json: --svg saves the tables as printed; drop --json"),
    ],
)
def test_a_bad_destination_is_refused_before_the_work(runner: CliRunner, tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["trace", *[a.format(tmp=tmp_path) for a in args]])
    assert result.exit_code == 2 and result.stderr.startswith(message.format(tmp=tmp_path)), result.stderr
    assert not list(tmp_path.iterdir())
    # A --json run's error is a JSON object on stdout too (README, Common errors); else stdout stays empty.
    assert json.loads(result.stdout)["error"]["exit_code"] == 2 if "--json" in args else not result.stdout


def test_each_command_measures_the_terminal_as_it_starts(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """A console made while COLUMNS said 80 (as under a test runner's workers, or a notebook
    started in a narrow terminal) still draws the next command at the width it starts with."""
    monkeypatch.setattr(common.console, "width", 80)
    widths = {}
    for columns in (60, 200):  # its note is one line of over 100 characters where it fits
        out = runner.invoke(app, ["params", "-v", "relu,swiglu", "--match-params"], env={"COLUMNS": str(columns)}).stdout
        widths[columns] = max(len(line) for line in out.splitlines())
    assert widths[60] <= 60 < 100 < widths[200] <= 200


# --- notes a table carries ---------------------------------------------------------------------


def test_match_params_says_what_a_finer_multiple_reaches(runner: CliRunner) -> None:
    result = runner.invoke(app, ["params", "--variant", "relu,swiglu", "--match-params", "-d", "512"], env={"COLUMNS": "200"})
    # By hand: relu holds 2·512·2048 + 2048 + 512 = 2,099,712; swiglu holds 3·512·d_ff, so at
    # --multiple-of 256 d_ff is 1,280 (1,966,080, -6.36 %) and at 32 it is 1,376 (2,113,536, +0.66 %).
    assert "swiglu is -6.36 % off the target with --multiple-of 256; --multiple-of 32 reaches +0.66 % (d_ff 1,376)" in result.stdout
    data = json.loads(runner.invoke(app, ["params", "--variant", "relu,swiglu", "--match-params", "--json"]).stdout)
    assert len(data["warnings"]) == 1 and "--multiple-of 32" in data["warnings"][0]


def test_moe_header_shows_shared_experts_only_when_there_are_some(runner: CliRunner) -> None:
    none = runner.invoke(app, ["trace", "-v", "moe", "--device", "meta"], env={"COLUMNS": "120"}).stdout
    some = runner.invoke(app, ["trace", "-v", "moe", "--device", "meta", "--shared-experts", "1"], env={"COLUMNS": "120"}).stdout
    assert "shared(x)" not in none and "+ shared(x)" in some


def test_dropout_is_said_to_be_off_in_eval_mode(runner: CliRunner) -> None:
    out = runner.invoke(app, ["trace", "--device", "meta", "--dropout", "0.1"], env={"COLUMNS": "120"}).stdout
    assert "dropout 0.1 (off in eval mode)" in out
    default = runner.invoke(app, ["trace", "--device", "meta"], env={"COLUMNS": "120"}).stdout
    assert "no dropout" in default and "dropout 0." not in default  # FFNSpec's default, 0


def test_iqr_warning_names_a_few_and_counts_the_rest() -> None:
    from ffn_cli.benchmark.run import _some

    assert _some(["a", "b"]) == "a, b"
    assert _some([f"case{i}" for i in range(40)]).startswith("case0, case1, case2 and 37 more of 40")


def test_one_implementation_gets_no_star(runner: CliRunner) -> None:
    args = ["bench", "--variant", "relu", "-d", "16", "-s", "4", "--repeats", "3", "--warmup-ms", "1"]
    out = runner.invoke(app, args, env={"COLUMNS": "200"}).stdout
    assert "★" not in out and "peak mem" in out and "extra mem" in out
    (result,) = json.loads(runner.invoke(app, [*args, "--json"]).stdout)["results"]
    assert result["fastest"] is True  # the only implementation of its case is its fastest


# --- help ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["trace", "params", "bench", "variants"])
def test_help_reads_at_80_columns(runner: CliRunner, command: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "<bool>" not in text  # flags are flags: --json, not --json <bool>
    assert all(len(line) <= 80 for line in text.splitlines())
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    examples = lines[lines.index("Examples") + 1 :]  # the help ends with its examples
    assert 2 <= len(examples) <= 3 and all(line.startswith(f"ffn {command}") for line in examples), examples
    # Descriptions get the width: a description is never cut into a column of a few words.
    json_row = next(line for line in text.splitlines() if "--json" in line)
    assert "Print JSON instead of tables." in json_row


def test_long_flags_leave_their_descriptions_the_width(runner: CliRunner) -> None:
    text = runner.invoke(app, ["params", "--help"], env={"COLUMNS": "80"}).stdout
    # Typer's own table put --normalize-top-k's description in ~25 columns ("[default:\n normalize-top-k]").
    rows = [line.strip("│ ").split(None, 1) for line in text.splitlines() if "-normalize-top-k " in line]
    assert "Renormalise the top-k weights (Mixtral)." in rows[0][1]
    # The default follows in the description column (rich 14 breaks it one word earlier than 15).
    assert "[default: normalize-top-k]" in " ".join(" ".join(row[1] for row in rows).split())
    trace = " ".join(runner.invoke(app, ["trace", "--help"], env={"COLUMNS": "200"}).stdout.split())
    assert "ffn bench sweeps one" not in trace and "ffn bench times each; ffn trace runs one" in trace


@pytest.mark.parametrize("args", [["--version", "true"], ["--version", "trace"], ["--version", "--", "x"]])
def test_version_takes_no_value(runner: CliRunner, args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and result.stdout == "" and "--version takes no value" in result.stderr


def test_root_help_shows_flags_as_flags(runner: CliRunner) -> None:
    text = runner.invoke(app, ["--help"], env={"COLUMNS": "80"}).stdout
    assert "--version" in text and "<bool>" not in text
