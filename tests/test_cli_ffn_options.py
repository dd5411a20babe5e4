"""The FFN options: declared once, parsed once, the same in `trace`, `params` and `bench`.

The parsed values are read from what each command prints, against fields and defaults written
out by hand in the test (and against FFNSpec built directly, for the spec's own resolution).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Annotated, Any

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.cli.ffn_options import FFNOptions
from ffn_cli.cli.option_groups import with_option_groups
from ffn_cli.spec import FFNSpec

COMMANDS = ("trace", "params", "bench")
OPTION_NAMES = [f.name for f in fields(FFNOptions) if f.name != "given"]
SPEC_FIELD = {"fused": "fused_gate_up"}
MOE_ARGS = ("-v", "moe", "-d", "32", "-E", "4", "-k", "1", "--shared-experts", "1", "--capacity-factor", "1.5", "--expert-variant", "geglu")


def _params(command: str) -> dict[str, Any]:
    group = get_command(app)
    return {p.name: p for p in group.get_command(None, command).params}  # type: ignore[attr-defined]


def _spec(runner: CliRunner, command: str, *args: str) -> dict[str, Any]:
    result = runner.invoke(app, [command, *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["spec"]


# Every FFN option at a value other than its default, in three runs a command can take whole,
# with the spec fields each run must give, written out by hand. d_ff in the first is LLaMA's
# rule: 2/3 · 4 · 96 = 256, · 1.3 = 332.8 → 332, up to a multiple of 32 → 352.
OPTION_RUNS: list[tuple[tuple[str, ...], tuple[str, ...], dict[str, Any]]] = [
    (
        ("-v", "swiglu", "-d", "96", "--multiple-of", "32", "--ffn-dim-multiplier", "1.3", "--bias", "--fused"),
        ("--dropout", "0.25"),
        {
            "variant": "swiglu",
            "d_model": 96,
            "d_ff": 352,
            "multiple_of": 32,
            "ffn_dim_multiplier": 1.3,
            "bias": True,
            "fused_gate_up": True,
        },
    ),
    (("-v", "relu", "-d", "32", "--d-ff", "48"), ("--init", "xavier_normal", "--zero-init-output"), {"d_ff": 48}),
    (
        ("-v", "sparse", "-d", "32", "--d-ff", "48", "--sparsity", "0.25", "--no-bias"),
        (),
        {"variant": "sparse", "sparsity": 0.25, "bias": False},
    ),
    (
        (*MOE_ARGS, "--no-normalize-top-k"),
        (),
        {"experts": 4, "top_k": 1, "shared_experts": 1, "capacity_factor": 1.5, "expert_variant": "geglu", "normalize_top_k": False},
    ),
]
# The options of the middle column change only the values: `ffn params` refuses them, and the
# other two show them as these fields.
VALUE_FIELDS = {"--dropout": ("dropout", 0.25), "--init": ("init", "xavier_normal"), "--zero-init-output": ("zero_init_output", True)}
BENCH = ("bench", "-b", "2", "-s", "4", "--repeats", "2", "--warmup-ms", "0", "--cache", "hot", "--threads", "1", "--json")


def test_every_ffn_option_is_in_a_run_below() -> None:
    """A new FFN option is not covered until a run gives it a value other than its default."""
    given = {token for args, values, _ in OPTION_RUNS for token in (*args, *values) if token.startswith("-")}
    for name in OPTION_NAMES:
        flags = {*_params("trace")[name].opts, *_params("trace")[name].secondary_opts}
        assert flags & given, f"no run in OPTION_RUNS gives {name} ({', '.join(sorted(flags))})"


@pytest.mark.parametrize(("args", "values", "expected"), OPTION_RUNS)
def test_trace_params_and_bench_parse_every_ffn_option_alike(
    runner: CliRunner, args: tuple[str, ...], values: tuple[str, ...], expected: dict[str, Any]
) -> None:
    """Each command, given the same options, shows the spec worked out by hand in its JSON."""
    counted = _spec(runner, "params", *args)
    assert {k: counted[k] for k in expected} == expected
    value_fields = dict(VALUE_FIELDS[v] for v in values if v in VALUE_FIELDS)
    traced = _spec(runner, "trace", *args, *values, "--device", "meta")
    assert traced == {**counted, **value_fields}
    result = runner.invoke(app, [*BENCH, *args, *values])
    assert result.exit_code == 0, result.output
    timed = json.loads(result.stdout)["results"][0]
    # bench times the layout --fused names (its `fused` field) on the spec as given.
    assert timed["fused"] is expected.get("fused_gate_up", False)
    assert timed["spec"] == {**traced, "fused_gate_up": False}


def test_defaults_are_the_documented_ones(runner: CliRunner) -> None:
    """No options: a ReLU FFN at d_model 512 with 4·512 = 2048 hidden units and biases (the
    original Transformer's), written out here, not read from FFNSpec."""
    spec = _spec(runner, "params")
    assert spec == {
        "variant": "relu",
        "d_model": 512,
        "d_ff": 2048,
        "bias": True,
        "dropout": 0.0,
        "init": "default",
        "zero_init_output": False,
        "multiple_of": 256,
        "ffn_dim_multiplier": None,
        "fused_gate_up": False,
        "experts": 8,
        "top_k": 2,
        "shared_experts": 0,
        "shared_d_ff": None,
        "shared_expert_gate": False,
        "latent": None,
        "expert_variant": "swiglu",
        "capacity_factor": None,
        "normalize_top_k": True,
        "sparsity": 0.5,
        "mask_seed": 0,
    }
    assert _spec(runner, "trace", "--device", "meta") == spec


@pytest.mark.parametrize(
    ("args", "fields_"),
    [
        ((), {}),
        (
            ("-v", "swiglu", "-d", "96", "--multiple-of", "32", "--ffn-dim-multiplier", "1.3", "--bias", "--fused"),
            {"variant": "swiglu", "d_model": 96, "multiple_of": 32, "ffn_dim_multiplier": 1.3, "bias": True, "fused_gate_up": True},
        ),
        (
            MOE_ARGS,
            dict(variant="moe", d_model=32, experts=4, top_k=1, shared_experts=1, capacity_factor=1.5, expert_variant="geglu"),
        ),
    ],
)
def test_trace_and_params_parse_the_same_spec(runner: CliRunner, args: tuple[str, ...], fields_: dict[str, Any]) -> None:
    expected = FFNSpec(**fields_).as_dict()
    assert _spec(runner, "params", *args) == expected
    assert _spec(runner, "trace", *args, "--device", "meta") == expected


def test_bench_takes_the_options_it_once_lacked(runner: CliRunner) -> None:
    tiny = ["bench", "-d", "16", "-b", "2", "-s", "4", "--repeats", "2", "--warmup-ms", "0", "--cache", "hot", "--threads", "1", "--json"]
    args = ["-v", "moe", "-E", "4", "--shared-experts", "1", "--capacity-factor", "1.25", "--no-normalize-top-k", "--bias"]
    result = runner.invoke(app, [*tiny, *args])
    assert result.exit_code == 0, result.output
    timed = json.loads(result.stdout)["results"][0]
    expected = FFNSpec(variant="moe", d_model=16, experts=4, shared_experts=1, capacity_factor=1.25, normalize_top_k=False, bias=True)
    assert timed["spec"] == expected.as_dict()
    assert timed["settings"] == "bias · 4 experts of swiglu · top-2 · 1 shared · capacity factor 1.25"
    table = runner.invoke(app, [*tiny[:-1], *args], env={"COLUMNS": "120"}).stdout
    assert "4 experts of swiglu · top-2 · 1 shared" in table.replace("\n", " ")
    # LLaMA's rule, worked by hand: 2/3 · 4 · 96 = 256, · 1.3 = 332.8 → 332, up to a multiple of 32 → 352.
    gated = runner.invoke(app, [*tiny, "-v", "swiglu", "-d", "96", "--multiple-of", "32", "--ffn-dim-multiplier", "1.3"])
    assert gated.exit_code == 0, gated.output
    assert json.loads(gated.stdout)["results"][0]["d_ff"] == 352


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trace", "-v", "relu,gelu"], "--variant relu,gelu: ffn trace runs one FFN"),
        (["trace", "-d", "64,128"], "--d-model 64,128: ffn trace runs one FFN"),
        (["trace", "-v", ""], "--variant"),
        (["params", "-d", "64,128"], "--d-model 64,128: ffn params compares variants at one width"),
        (["params", "--dropout", "0.1"], "--dropout 0.1: changes the values, not one count"),
        (["params", "--init", "xavier"], "--init xavier: changes the values"),
        (["params", "--preset", "gpt2", "--sparsity", "0.3"], "--sparsity 0.3: sizes one FFN"),
        (["bench", "-d", "16,x"], "--d-model 16,x"),
    ],
)
def test_refusals_name_the_option(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output


@dataclass(frozen=True)
class _Group:
    width: Annotated[int, typer.Option("--width")] = 3
    name: Annotated[str, typer.Option("--name")] = "x"
    given: frozenset[str] = frozenset()


def test_a_group_parameter_becomes_its_options_and_arrives_parsed_once() -> None:
    seen: list[_Group] = []
    demo = typer.Typer()

    @demo.command()
    @with_option_groups
    def run(group: _Group, other: Annotated[int, typer.Option("--other")] = 0) -> None:
        seen.append(group)

    runner = CliRunner()
    assert runner.invoke(demo, ["--width", "5"]).exit_code == 0
    assert runner.invoke(demo, ["--other", "1"]).exit_code == 0
    assert seen == [_Group(5, "x", frozenset({"width"})), _Group(3, "x", frozenset())]
    assert "--name" in runner.invoke(demo, ["--help"]).stdout


def test_the_readme_table_lists_every_ffn_option_with_its_default() -> None:
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    rows = {}
    for line in readme.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `--") and len(cells) == 3:
            rows[cells[0].split("`")[1].split("/")[0]] = cells[1]
    declared = {f.name: f.default for f in fields(FFNSpec)}
    for name in OPTION_NAMES:
        default = declared[SPEC_FIELD.get(name, name)]
        shown = rows["--" + name.replace("_", "-")]
        if isinstance(default, bool):
            assert shown == ("on" if default else "off"), name
        elif default is None:
            assert shown in ("none", "the variant's", "the variant's rule"), name
        elif isinstance(default, str):
            assert shown == f"`{default}`", name
        else:
            assert shown == f"{default:g}", name


def test_what_changes_nothing_is_accepted_and_names_in_any_case(runner: CliRunner) -> None:
    assert runner.invoke(app, ["params", "--dropout", "0", "--init", "default"]).exit_code == 0
    assert _spec(runner, "params", "-v", "SwiGLU", "--multiple-of", "256")["variant"] == "swiglu"
    assert _spec(runner, "trace", "-v", "MoE", "--expert-variant", "GeGLU", "--device", "meta")["expert_variant"] == "geglu"


def test_trace_block_takes_head_dim_and_names_overrides_as_typed(runner: CliRunner) -> None:
    result = runner.invoke(app, ["trace", "--block", "--n-heads", "4", "--head-dim", "32", "-d", "64", "--device", "meta", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["block"]["head_dim"] == 32
    flags = ["trace", "--preset", "llama-3-8b", "--block", "--post-norm", "--head-dim", "64", "--device", "meta", "--json"]
    model = json.loads(runner.invoke(app, flags).stdout)["model"]
    assert model["overrides"] == ["--head-dim 64", "--post-norm"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trace", "-s", "4,8"], "Invalid value for '--seq-len' / '-s': not an integer"),
        (["trace", "--dropout", "abc"], "Invalid value for '--dropout': not a number"),
        (["params", "--d-ff", "1e3x"], "Invalid value for '--d-ff': not an integer"),
    ],
)
def test_a_value_of_the_wrong_type_is_said_plainly(args: list[str], message: str) -> None:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "ffn_cli", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and message in result.stderr and "Input should be" not in result.stderr


@pytest.mark.parametrize("command", ["trace", "params", "bench"])
@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["-v", "relu", "--experts", "4", "--top-k", "3", "--sparsity", "0.9"], "--experts"),
        (["-v", "relu", "--top-k", "3"], "--top-k"),
        (["-v", "swiglu", "--sparsity", "0.3"], "--sparsity"),
        (["-v", "soft_moe", "--top-k", "1"], "--top-k"),
        (["-v", "swiglu", "--expert-variant", "geglu"], "--expert-variant"),
        (["-v", "relu", "--multiple-of", "128"], "--multiple-of"),
        (["-v", "moe", "--expert-variant", "relu", "--fused"], "--fused"),
    ],
)
def test_an_option_the_variant_does_not_use_is_refused(runner: CliRunner, command: str, args: list[str], option: str) -> None:
    """Each variant declares the options it reads; one it does not read is one error line naming it."""
    result = runner.invoke(app, [command, *args, "-d", "16", *(["--repeats", "2"] if command == "bench" else [])])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith((f"error: {option} ", f"error: {option}:")), line
    assert "does not use it" in line or "needs a gated variant" in line, line


def test_an_option_one_variant_of_a_list_uses_is_accepted(runner: CliRunner) -> None:
    result = runner.invoke(app, ["params", "-v", "relu,swiglu", "--multiple-of", "128", "--json"])
    assert result.exit_code == 0, result.output
