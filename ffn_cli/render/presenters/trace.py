"""The presenters of `ffn trace`'s results (services/results.py): a trace's steps (under the
model layer they are of), its `--json` and its page; one sharded forward's. The model layer's
panel, the page and the sharded run's tables load with the result that shows them: a trace of
one FFN never reads a model (tests/test_cli_startup.py)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType

from ffn_cli.render.json_data import json_ready
from ffn_cli.render.presenters import Presented
from ffn_cli.render.trace import trace_data, trace_view
from ffn_cli.services.results import ShardedTrace, TraceAnswer

__all__ = ["present"]


def present(result: TraceAnswer | ShardedTrace) -> Presented:
    """The view, the `--json` and (a trace's) the page of either of `ffn trace`'s results."""
    if isinstance(result, ShardedTrace):
        from ffn_cli.render.parallel import parallel_json, render_parallel

        sharded = result.result
        return Presented(lambda: render_parallel(sharded), lambda: parallel_json(sharded))
    return Presented(lambda: _view(result), lambda: _data(result), lambda whole: _drawing(result, whole))


def _model(r: TraceAnswer) -> dict[str, Any]:
    return {"model": r.choice.data()} if r.choice is not None else {}


def _view(r: TraceAnswer) -> RenderableType:
    steps = trace_view(r.result, ops=r.ops, values=r.values, explain=r.explain)
    if r.choice is None:
        return steps
    from ffn_cli.render.model_layer import model_layer_view

    return Group(model_layer_view(r.choice), steps)


def _data(r: TraceAnswer) -> dict[str, Any]:
    return trace_data(r.result, ops=r.ops, explain=r.explain) | _model(r)


def _drawing(r: TraceAnswer, whole: bool) -> str:
    """The whole page (`ffn trace --page`), or a notebook cell's fragment: its data is the
    trace's `--json`, explained."""
    from ffn_cli.render.page import trace_fragment, trace_page

    data = json_ready(trace_data(r.result, explain=True) | _model(r))
    return (trace_page if whole else trace_fragment)(r.result, data)
