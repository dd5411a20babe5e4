"""Drive every command with random option combinations, valid and invalid.

Whatever a user types, `ffn` answers with exit code 0, 1 or 2, never a traceback and never
the catch-all ("run `ffn --debug`"): a non-zero exit always comes with its own message, and a
value that is never valid (an empty string, a superscript digit, 5000 digits, a malformed
device) is never accepted. Text from config files (markup, escape sequences) never reaches the
output raw. The fast profile runs in CI; the long one (`pytest -m slow`, several thousand
invocations) explores far more combinations.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.variants import variant_names

COMMAND = typer.main.get_command(app)
# Options that start processes or write files are exercised by their own tests.
SKIPPED = {"--tp", "--ep", "--plot", "--help", "--update-golden"}
# Keep every timed run short: these open each `ffn bench` call (a drawn value given later wins).
BENCH_LIMITS = ["--repeats", "3", "--warmup-ms", "1"]

HUGE = "9" * 5000
# Never valid for any option that takes a value: accepting one is a bug.
NEVER_VALID = ("", "²", "16,²", HUGE, "cuda:x", "cuda:-1", "[/]oops", "\x1b[2J")
CATCH_ALL = "ffn --debug"

_ints = st.one_of(st.integers(-2, 40), st.sampled_from([2**31, 2**62, 10**30]))
_small = st.one_of(st.integers(-1, 6), st.sampled_from([2**40]))
_floats = st.sampled_from(["-0.5", "0", "0.1", "0.5", "0.99", "1", "1.5", "nan", "inf", "abc"])
_variants = st.sampled_from([*variant_names(), "relu,swiglu,moe", "all", "bogus", ",", "RELU"])
_never_valid = st.sampled_from(NEVER_VALID)


LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4}
LLAMA["vocab_size"] = 100


def _config_values(tmp: Path) -> list[str]:
    bad = {
        "not_json.json": "{not json",
        "list.json": "[1, 2]",
        "empty.json": "{}",
        "unknown.json": json.dumps({"model_type": "t9000", "hidden_size": 8}),
        "partial.json": json.dumps({"model_type": "llama", "hidden_size": 64}),
        "markup.json": json.dumps({**LLAMA, "_name_or_path": "[/]oops [link=x]y[/link] \x1b[2J\x1b]0;t\x07"}),
        "huge.json": '{"model_type": "llama", "hidden_size": ' + HUGE + "}",
        # quantization_config values of the wrong JSON type, and names that would drive the terminal.
        "not_a_list.json": json.dumps({**LLAMA, "quantization_config": {"quant_method": "fp8", "modules_to_not_convert": 5}}),
        "bool_list.json": json.dumps({**LLAMA, "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": True}}),
        "one_string.json": json.dumps({**LLAMA, "quantization_config": {"quant_method": "fp8", "modules_to_not_convert": "lm_head"}}),
        "bool_block.json": json.dumps({**LLAMA, "quantization_config": {"quant_method": "fp8", "weight_block_size": [True, True]}}),
        "bool_group.json": json.dumps({**LLAMA, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": True}}),
        "escape_names.json": json.dumps(
            {**LLAMA, "quantization_config": {"quant_method": "fp8", "modules_to_not_convert": ["\x1b[2J", "\x1b]0;t\x07\u202e"]}}
        ),
        # A config whose name an output could take: --html to it must be refused, not written over it.
        "llama.html": json.dumps(LLAMA),
        "negative.json": json.dumps(
            {
                "model_type": "llama",
                "hidden_size": -64,
                "intermediate_size": 96,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "vocab_size": 100,
            }
        ),
    }
    for name, text in bad.items():
        (tmp / name).write_text(text)
    folder = tmp / "[blink]evil"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA))
    return [str(tmp / n) for n in bad] + [str(tmp / "missing.json"), str(tmp), str(folder)]


def _value_strategy(option: str, configs: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(_typical_value(option, configs), _never_valid) if option != "--config" else _typical_value(option, configs)


def _typical_value(option: str, configs: list[str]) -> st.SearchStrategy[str]:
    if option in ("--variant", "--expert-variant"):
        return _variants
    if option == "--device":
        return st.sampled_from(["cpu", "meta", "cuda", "cuda:7", "tpu", "", "cpu,meta", "cuda:²", "cuda:99999"])
    if option == "--dtype":
        return st.sampled_from(["float32", "float64", "float16", "bfloat16", "int8", "float32,bfloat16"])
    if option == "--config":
        return st.sampled_from(configs)
    if option in ("--svg", "--html", "--page"):  # files in the configs' folder: the inputs among them, and new ones
        folder = Path(configs[0]).parent
        return st.sampled_from([*configs, str(folder / "out.svg"), str(folder / "out.html"), str(folder / "missing" / "out.html")])
    if option == "--preset":
        # Small models: trace and bench now run a preset's layer at its real size (and dtype).
        return st.sampled_from(["gpt2", "qwen2-0.5b", "nope", ""])
    if option in ("--batch", "--seq-len", "--values", "--repeats", "--threads"):
        return _small.map(str)
    if option in ("--dropout", "--sparsity", "--capacity-factor", "--ffn-dim-multiplier", "--warmup-ms", "--min-time"):
        return _floats
    return st.one_of(_ints.map(str), st.sampled_from(["", "x", "cpu", "relu"]))


def _options(command_name: str) -> list[tuple[str, bool]]:
    """(option, is_flag) for each option of a command, flags with their --no- forms too."""
    found = []
    for param in COMMAND.get_command(None, command_name).params:
        for opt in [*param.opts, *param.secondary_opts]:
            if opt.startswith("--") and opt not in SKIPPED:
                found.append((opt, bool(getattr(param, "is_flag", False))))
    return found


@st.composite
def invocations(draw: st.DrawFn, configs: list[str]) -> list[str]:
    name = draw(st.sampled_from(sorted(COMMAND.list_commands(None))))
    options = _options(name)
    chosen = draw(st.lists(st.sampled_from(options), max_size=6, unique=True)) if options else []
    args = [name, *(BENCH_LIMITS if name == "bench" else [])]
    for opt, is_flag in chosen:
        args.append(opt)
        if not is_flag:
            args.append(draw(_value_strategy(opt, configs)))
    if draw(st.booleans()):
        args.append(draw(st.sampled_from(["--json", "--bogus-option", "extra-argument"])))
    return args


def _check(args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    shown = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (args, repr(result.exception))
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, shown)
    assert "Traceback" not in shown, (args, shown)
    assert CATCH_ALL not in shown, (args, "an error reached the catch-all", shown)
    assert not {"\x1b", "\x07", "\u202e"} & set(shown), (args, "a control character reached the output")
    if result.exit_code != 0:
        assert result.stderr.strip(), (args, "non-zero exit without a message")
    values = set(args[1:])
    if values & set(NEVER_VALID):
        assert result.exit_code != 0, (args, "a value that is never valid was accepted")


def _fuzz(tmp_path_factory: pytest.TempPathFactory, examples: int) -> None:
    configs = _config_values(tmp_path_factory.mktemp("configs"))

    @settings(max_examples=examples, deadline=None)
    @given(invocations(configs))
    def run(args: list[str]) -> None:
        _check(args)

    run()


def test_random_invocations_fast(tmp_path_factory: pytest.TempPathFactory) -> None:
    _fuzz(tmp_path_factory, examples=40)


@pytest.mark.slow
def test_random_invocations_long(tmp_path_factory: pytest.TempPathFactory) -> None:
    _fuzz(tmp_path_factory, examples=4000)


# Invocations once accepted or sent to the catch-all, run with every draw's checks besides the
# random ones; tests/test_cli_inputs.py and tests/test_literal_names.py hold their exact lines.
# `{configs}` is the folder of _config_values' files. Each is a usage error (exit 2) but the
# names spelled out, which print.
SPELLED_OUT = ["params", "--config", "{configs}/escape_names.json", "--gpu", "h100"]
CORPUS = [
    ["params", "--config", "{configs}/not_a_list.json"],
    ["params", "--config", "{configs}/bool_list.json", "--gpu", "h100"],
    ["params", "--config", "{configs}/one_string.json"],
    ["params", "--config", "{configs}/bool_block.json", "--json"],
    ["params", "--config", "{configs}/bool_group.json"],
    SPELLED_OUT,
    ["params", "--preset", "llama-2-7b", "--tp", "3"],
    ["params", "--preset", "llama-2-7b", "--tp", "99999999999999999999"],
    ["params", "--preset", "phi-4", "--tp", "4"],
    ["params", "--preset", "llama-2-7b", "--weights", "int4", "--quantize", "experts"],
    ["params", "--preset", "llama-2-7b", "--dtype", "float64", "--gpu", "h100"],
    ["params", "--preset", "llama-2-7b", "--dtype", "float64", "--weights", "int4"],
    ["trace", "--module", "docs/examples/my_ffn.py:TransformerFFN(64, 128)", "--depth", "0"],
    # An output over another output, or over the file an input names: refused before the work.
    ["trace", "-d", "8", "--page", "{configs}/same.html", "--html", "{configs}/same.html"],
    ["params", "--config", "{configs}/llama.html", "--html", "{configs}/llama.html"],
    ["trace", "--config", "{configs}/llama.html", "--device", "meta", "--page", "{configs}/llama.html"],
]
# --module names only modules, and what cannot run is refused before anything is allocated;
# tests/test_module_inputs.py holds each one's exact line. With the exit code each gets.
MODULE_CORPUS = [
    (["trace", "--module", "os:system('echo called')"], 2),
    (["trace", "--module", "builtins:exec('print(1)')"], 2),
    (["trace", "--module", "sys:exit(0)"], 2),
    (["trace", "--module", "shutil:rmtree('/nonexistent')"], 2),
    (["trace", "--module", "docs/examples/my_ffn.py:TransformerFFN(d_model=1, d_model=2)"], 2),
    (["trace", "--module", "docs/examples/my_ffn.py:TransformerFFN({[1]: 2})"], 2),
    (["trace", "--module", "docs/examples/my_ffn.py:TransformerFFN(512, 2048)", "--seed", "-1"], 2),
    (["trace", "--module", "docs/examples/my_ffn.py:TransformerFFN(512, 2048)", "--reference", "--device", "meta"], 2),
    (["trace", "--module", "torch.nn:Linear(8, 8)", "--batch", "100000", "--seq-len", "100000"], 1),
    (["trace", "--module", "docs/examples/my_ffn.py:TransformerFFN(512, 2048)", "--d-model", "256"], 1),
]


@pytest.mark.parametrize("args", CORPUS, ids=lambda a: " ".join(a[:5]))
def test_the_corpus(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    _config_values(configs)
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    args = [a.format(configs=configs) for a in args]
    _check(args)
    assert CliRunner().invoke(app, args).exit_code == (0 if args == [a.format(configs=configs) for a in SPELLED_OUT] else 2), args


@pytest.mark.parametrize(("args", "code"), MODULE_CORPUS, ids=[" ".join(a[:3]) for a, _c in MODULE_CORPUS])
def test_the_module_corpus(args: list[str], code: int, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    _check(args)
    assert CliRunner().invoke(app, args).exit_code == code, args
    assert "called" not in capfd.readouterr().out  # os.system never ran
