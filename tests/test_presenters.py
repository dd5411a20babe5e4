"""A service returns data; its presenter shows it (render/presenters/). `--json` builds no table:
the view's renderers are never called for it. The command and the API show one result through
the same presenter, so their `--json` and `to_dict()` are one object."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, NoReturn

import pytest
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from ffn_cli.render.presenters import costs as costs_presenter
from ffn_cli.render.presenters import params as params_presenter
from ffn_cli.requests.params import ParamsRequest
from ffn_cli.services.params import params as answer_params
from ffn_cli.services.results import ModelCosts, ModelParamsAnswer

COSTS = ["params", "--preset", "llama-3.1-8b", "--gpu", "h100", "--tp", "2", "--phase", "decode", "--batch", "1,8"]


def _no_table(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise AssertionError("a table was built for --json")


@pytest.mark.parametrize("name", ["checkpoint_view", "rank_memory_view", "roofline_view", "decode_state_view"])
def test_json_builds_no_cost_table(runner: CliRunner, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr(costs_presenter, name, _no_table)
    result = runner.invoke(app, [*COSTS, "--weights", "fp8", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"checkpoint", "per_gpu_memory", "roofline", "decode_state"} <= set(data)
    # The table is still what the command prints without --json: the patched renderer is reached.
    assert runner.invoke(app, [*COSTS, "--weights", "fp8"]).exit_code != 0


def test_a_model_s_costs_are_data() -> None:
    result = answer_params(ParamsRequest(preset=("llama-3.1-8b",), gpu="h100", tp=2, phase="decode", batch=(1, 8)))
    assert isinstance(result, ModelParamsAnswer) and isinstance(result.costs, ModelCosts)
    assert result.costs.roofline is not None and result.costs.decode is not None and result.costs.ranks is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.costs.fit = None  # type: ignore[misc]
    # Each GPU of a tp=2 layout holds half of Llama 3.1 8B's published 8,030,261,248 parameters
    # at 2 bytes (bfloat16): only the norms are held whole on both, some 0.5 MB.
    assert result.costs.ranks.per_gpu_bytes == pytest.approx(8_030_261_248 * 2 / 2, rel=1e-3)


def test_the_command_and_the_api_show_one_result_alike(runner: CliRunner) -> None:
    command = runner.invoke(app, [*COSTS, "--json"])
    assert command.exit_code == 0, command.output
    api = ffn_cli.params("llama-3.1-8b", gpu="h100", tp=2, phase="decode", batch=[1, 8])
    assert api.to_dict() == json.loads(command.output)
    request = ParamsRequest(preset=("llama-3.1-8b",), gpu="h100", tp=2, phase="decode", batch=(1, 8))
    assert params_presenter.present(answer_params(request)).data() == api.data()
