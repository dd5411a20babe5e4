"""The one error path: every failure is one stderr line and exit 1 or 2; --debug shows the traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from ffn_cli import __version__
from ffn_cli.cli import app
from ffn_cli.cli.common import emit_json, settings
from ffn_cli.tracing import variant_target


@pytest.fixture(autouse=True)
def no_debug() -> None:
    settings.debug = False


def _one_line(text: str) -> bool:
    return text.startswith("error: ") and text.count("\n") == 1


def test_version(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"ffn {__version__}"


@pytest.mark.parametrize(
    "args",
    [
        ["trace", "--d-model", "abc"],
        ["trace", "--no-such-option"],
        ["no-such-command"],
        ["params", "--d-model", "0"],
        ["bench", "--dtype", "int8"],
        ["trace", "--variant", "moe", "--experts", "2", "--top-k", "3"],
        ["trace", "--seed", "99999999999999999999999"],
    ],
)
def test_usage_errors_exit_2_with_one_line(runner: CliRunner, args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert _one_line(result.stderr), result.stderr


def test_what_the_user_typed_is_printed_as_typed(runner: CliRunner) -> None:
    # rich would turn ":x:" into an emoji; the message must name the device given.
    result = runner.invoke(app, ["trace", "--device", "cuda:x"])
    assert result.exit_code in (1, 2) and _one_line(result.stderr)
    assert "cuda:x" in result.stderr


def test_json_output_is_strict_json(capsys: pytest.CaptureFixture[str]) -> None:
    # A NaN or Inf (an overflowed float16 step, a failed --check) is null, not a bare NaN.
    emit_json({"max_rel_error": float("nan"), "values": [float("inf"), 1.5], "n": np.float32("nan")})
    data = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"{name} in the JSON"))
    assert data == {"max_rel_error": None, "values": [None, 1.5], "n": None}


def test_runtime_refusal_exits_1(runner: CliRunner) -> None:
    result = runner.invoke(app, ["trace", "--variant", "swiglu", "--d-model", "65536", "--batch", "4096", "--seq-len", "4096"])
    assert result.exit_code == 1
    assert _one_line(result.stderr) and "--device meta" in result.stderr


def _raise(exc: BaseException):  # type: ignore[no-untyped-def]
    def fail(*args: object, **kwargs: object) -> None:
        raise exc

    return fail


def test_out_of_memory_during_a_run_is_reported_cleanly(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    # torch.cuda.OutOfMemoryError: torch.OutOfMemoryError, its alias, is newer than torch 2.4.
    monkeypatch.setattr(variant_target, "build_ffn", _raise(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")))
    result = runner.invoke(app, ["trace"])
    assert result.exit_code == 1
    assert _one_line(result.stderr) and "out of memory" in result.stderr and "--device meta" in result.stderr


def test_unexpected_exceptions_are_one_line_and_debug_shows_them(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(variant_target, "build_ffn", _raise(KeyError("boom")))
    result = runner.invoke(app, ["trace"])
    assert result.exit_code == 1
    assert _one_line(result.stderr) and "KeyError" in result.stderr and "--debug" in result.stderr
    debug = runner.invoke(app, ["--debug", "trace"])
    assert isinstance(debug.exception, KeyError)


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        (RuntimeError(), "RuntimeError"),  # was `RuntimeError: ` and a dangling space
        (ValueError("shapes differ\n  at frame 3\n"), "ValueError: shapes differ"),
    ],
)
def test_an_unexpected_exception_is_its_kind_and_first_line(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, exc: Exception, said: str
) -> None:
    monkeypatch.setattr(variant_target, "build_ffn", _raise(exc))
    result = runner.invoke(app, ["trace"])
    assert result.exit_code == 1
    assert result.stderr == f"error: {said} (run `ffn --debug …` for the traceback)\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["params", "--preset", "llama-3-70b"], "--preset llama-3-70b: no such preset; did you mean llama-3.3-70b, llama-3.1-70b"),
        (["params", "--preset", "LLAMA-2-7", "--json"], "did you mean llama-2-7b"),
        (["params", "--variant", "swiglue"], "--variant swiglue: no such variant; did you mean swiglu"),
        (["params", "-v", "moe", "--expert-variant", "gelu-tanh"], "--expert-variant gelu-tanh: did you mean gelu_tanh"),
        (["trace", "--dtype", "bf16"], "--dtype bf16: did you mean bfloat16? choose one of"),
        (["params", "--dtype", "flaot8"], "--dtype flaot8: did you mean float8?"),
        (["trace", "--device", "cdua"], "--device cdua: did you mean cuda?"),
        (["trace", "--device", "gpu"], "--device gpu: did you mean cuda?"),
    ],
)
def test_a_wrong_name_gets_the_closest_names_in_one_short_line(runner: CliRunner, args: list[str], said: str) -> None:
    # A wrong preset used to list all 50 presets on one ~1,300-character line.
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and _one_line(result.stderr), result.output
    assert said in result.stderr and len(result.stderr) < 200, result.stderr


def test_a_preset_no_name_is_near_points_to_the_list(runner: CliRunner) -> None:
    result = runner.invoke(app, ["params", "--preset", "zzz"])
    assert result.exit_code == 2 and "did you mean" not in result.stderr
    assert "`ffn params --list-presets` lists all" in result.stderr and len(result.stderr) < 120


# --- what a script reads: `error: ` in every language, and a JSON object under --json -------------

FAILURES = [
    (["params", "--d-model", "0"], 2, "--d-model"),  # an option's value
    (["params", "--bogus"], 2, "--bogus"),  # click's own usage error
    (["params", "--preset", "nope"], 2, "--preset"),
    (["trace", "--module", "no_such_file.py:M"], 2, "--module"),
    (["params", "--config", "/no/such/folder/config.json"], 2, "--config"),
]


@pytest.mark.parametrize(("args", "code", "option"), FAILURES, ids=lambda a: " ".join(a) if isinstance(a, list) else str(a))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_error_line_starts_with_error_in_both_languages(
    runner: CliRunner, args: list[str], code: int, option: str, lang: str
) -> None:
    # Chinese errors began `错误：`: a script matching ^error: missed them.
    result = runner.invoke(app, ["--lang", lang, *args])
    assert result.exit_code == code and result.stdout == "", result.output
    assert _one_line(result.stderr), result.stderr
    said = result.stderr.removeprefix("error: ")
    assert not said.startswith(("错误", "error")), result.stderr
    if lang == "zh" and option != "--module":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in said), result.stderr  # the words after it are Chinese


@pytest.mark.parametrize(("args", "code", "option"), FAILURES, ids=lambda a: " ".join(a) if isinstance(a, list) else str(a))
def test_a_json_run_that_fails_prints_the_error_as_json(runner: CliRunner, args: list[str], code: int, option: str) -> None:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == code and _one_line(result.stderr), result.output
    assert json.loads(result.stdout) == {
        "error": {"message": result.stderr.removeprefix("error: ").rstrip("\n"), "option": option, "exit_code": code}
    }


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--lang", "xx", "params"], "--lang"),  # was null: ffn's own usage errors named no option
        (["params", "--lang"], "--lang"),
        (["--version", "params"], "--version"),
    ],
)
def test_a_json_error_of_ffns_own_options_names_the_option(runner: CliRunner, args: list[str], option: str) -> None:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 2 and _one_line(result.stderr), result.output
    assert json.loads(result.stdout) == {
        "error": {"message": result.stderr.removeprefix("error: ").rstrip("\n"), "option": option, "exit_code": 2}
    }


def test_a_json_error_about_no_option_says_null(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FFN_LANG", "xx")  # the environment's, not an option typed
    result = runner.invoke(app, ["params", "--json"])
    assert result.exit_code == 2 and json.loads(result.stdout)["error"]["option"] is None, result.output


def test_a_json_error_from_a_config_key_names_the_file_option(runner: CliRunner, tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": True}))
    result = runner.invoke(app, ["params", "--config", str(config), "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error == {
        "message": f"{config}: key hidden_size = True: must be an integer in [1, 16,777,216]",
        "option": "--config",
        "exit_code": 2,
    }


def test_a_json_runtime_error_has_no_option(runner: CliRunner) -> None:
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    result = runner.invoke(app, ["trace", "--device", "cuda", "--json"])
    assert result.exit_code == 1 and _one_line(result.stderr), result.output
    error = json.loads(result.stdout)["error"]
    assert error["option"] is None and error["exit_code"] == 1 and result.stderr == f"error: {error['message']}\n"
