"""One source for the FFN options: an FFNSpec field with an Option in its metadata is a command
line option of every command that takes the FFN group, a field of the parsed group, and (unless a
model fixes it) an override of a model layer's value — with no other edit.

The spec below is FFNSpec with three fields more, as a new option would add them; what the tests
expect of them is written out here, not read from the code that derives it.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field, fields
from typing import Any

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.cli.ffn_options import VALUES_ONLY, ffn_options
from ffn_cli.cli.option_groups import with_option_groups
from ffn_cli.configs.layer_select import FFN_OVERRIDES, FIXED_BY_MODEL, ffn_overrides, fixed_by_model
from ffn_cli.errors import FFNError
from ffn_cli.spec import MOE_PANEL, FFNSpec, option


@dataclass(frozen=True)
class RouterSpec(FFNSpec):
    """FFNSpec and three options a router might take: a flag, a renamed number, and a size a
    model fixes."""

    router_bias: bool = field(
        default=False, metadata=option("--router-bias/--no-router-bias", help="A bias on the router.", panel=MOE_PANEL)
    )
    router_logit_scale: float = field(default=1.0, metadata=option("--router-scale", help="Scale of the router's logits."))
    router_multiple: int = field(default=64, metadata=option("--router-multiple", help="Round the router up to this.", fixed_by_model=True))
    router_seed: int = 0  # no Option: not a command-line option


def _command(spec_class: type[FFNSpec], seen: list[Any]) -> typer.Typer:
    def run(ffn: Any) -> None:
        seen.append(ffn)

    run.__annotations__["ffn"] = ffn_options(spec_class)  # the group, as a command names FFNOptions
    demo = typer.Typer(add_completion=False)
    demo.command()(with_option_groups(run))
    return demo


def _params(demo: typer.Typer) -> dict[str, Any]:
    return {p.name: p for p in get_command(demo).params}


def test_a_new_spec_field_is_an_option_in_its_panel_with_its_default_and_parser() -> None:
    params = _params(_command(RouterSpec, []))
    flag, scale, multiple = params["router_bias"], params["router_scale"], params["router_multiple"]
    assert (flag.opts, flag.secondary_opts, flag.default, flag.rich_help_panel) == (
        ["--router-bias"],
        ["--no-router-bias"],
        False,
        MOE_PANEL,
    )
    assert (scale.opts, scale.default, scale.rich_help_panel, scale.help) == (
        ["--router-scale"],
        1.0,
        "FFN",
        "Scale of the router's logits.",
    )
    assert multiple.opts == ["--router-multiple"] and multiple.default == 64
    assert "router_seed" not in params and "router_logit_scale" not in params
    # Panel by panel, in field order within one: the FFN panel's new option after --sparsity,
    # the mixture's after --normalize-top-k.
    names = list(params)
    assert names.index("sparsity") < names.index("router_scale") < names.index("router_multiple") < names.index("experts")
    assert names[-1] == "router_bias"
    # The plain FFNSpec's options are the commands' FFN options, in the commands' order.
    ffn_names = [n for n in _params(_command(FFNSpec, [])) if n != "given"]
    trace = [p.name for p in get_command(app).get_command(None, "trace").params]  # type: ignore[attr-defined]
    assert [n for n in trace if n in ffn_names] == ffn_names
    assert [n for n in names if n not in ("router_scale", "router_multiple", "router_bias")] == ffn_names


def test_a_new_spec_field_arrives_parsed_and_reaches_the_spec() -> None:
    seen: list[Any] = []
    demo = _command(RouterSpec, seen)
    runner = CliRunner()
    result = runner.invoke(demo, ["-v", "moe", "-d", "32", "--router-bias", "--router-scale", "0.5"])
    assert result.exit_code == 0, result.output
    (parsed,) = seen
    assert (parsed.router_bias, parsed.router_scale, parsed.router_multiple) == (True, 0.5, 64)
    assert parsed.given == {"variant", "d_model", "router_bias", "router_scale"}
    spec = parsed.spec("moe", 32)
    assert type(spec) is RouterSpec
    assert (spec.variant, spec.d_model, spec.router_bias, spec.router_logit_scale, spec.router_multiple) == ("moe", 32, True, 0.5, 64)
    # Until a variant names the field in its own_options, an option no chosen variant reads is refused.
    with pytest.raises(FFNError, match="moe does not use it"):
        parsed.check_used([spec])
    # A number's parser comes with its type: the project's own words, not pydantic's.
    bad = runner.invoke(demo, ["--router-scale", "abc"])
    assert bad.exit_code == 2 and "not a number" in bad.output and "Input should be" not in bad.output


def test_a_new_spec_field_overrides_a_model_layer_unless_the_model_fixes_it() -> None:
    overrides = ffn_overrides(RouterSpec)
    assert overrides["router_bias"] == "router_bias"
    assert overrides["router_scale"] == "router_logit_scale"  # the option typed → the field it sets
    assert "router_multiple" not in overrides and "router_seed" not in overrides
    assert fixed_by_model(RouterSpec) == ("d_model", "multiple_of", "ffn_dim_multiplier", "router_multiple")
    assert {k: v for k, v in overrides.items() if not k.startswith("router")} == FFN_OVERRIDES


def test_the_ffn_options_a_model_fixes_and_those_params_refuses_are_the_documented_ones() -> None:
    """Written out by hand: a model fixes the options that size an FFN from d_model (README,
    docs/trace.md); params refuses those that change only the values."""
    assert FIXED_BY_MODEL == ("d_model", "multiple_of", "ffn_dim_multiplier")
    assert VALUES_ONLY == ("dropout", "init", "zero_init_output")
    typed = [p.name for p in get_command(app).get_command(None, "trace").params if p.rich_help_panel in ("FFN", MOE_PANEL)]  # type: ignore[attr-defined]
    assert sorted(FFN_OVERRIDES) == sorted({"variant", *typed} - set(FIXED_BY_MODEL))
    assert FFN_OVERRIDES["fused"] == "fused_gate_up"
    assert {f.name for f in fields(FFNSpec)} >= set(FFN_OVERRIDES.values())


def test_the_spec_stays_plain_data() -> None:
    """The Options on FFNSpec are data: importing the spec loads neither typer nor click."""
    code = "import sys, ffn_cli.spec; print(sorted(m for m in ('typer', 'click') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
