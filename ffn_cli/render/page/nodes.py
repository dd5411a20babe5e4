"""What the page draws, as plain values: one node per step, read from the `--json` dict of the
run (shapes, counts, FLOPs, statistics) and from the TraceResult only for what `--json` keeps
in English (the formulas' words, the notes, the explanations) and for the histograms.

Nodes are laid out in lanes (the forward, the backward), each a list of rows; a row of more
than one node holds steps that read the same inputs side by side (SwiGLU's gate and up
projections, a mixture's experts)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ffn_cli.i18n import _, shown
from ffn_cli.render.backward import loss_words
from ffn_cli.render.explain import backward_explanation, step_explanation
from ffn_cli.render.format import fmt_shape
from ffn_cli.render.trace import _operation, _shapes
from ffn_cli.tracing.result import TensorStats, TraceResult, TraceStep

__all__ = ["Histogram", "Lane", "Node", "Weight", "backward_lane", "forward_lane"]


@dataclass(frozen=True)
class Weight:
    """A tensor a step reads beside its input: named relative to the step, with its shape."""

    name: str
    shape: tuple[int, ...]
    count: int
    tag: str = ""  # "again", "buffer", "constant" in the reader's language, or ""


@dataclass(frozen=True)
class Histogram:
    """Counts of a tensor's finite values in equal bins between `edges[0]` and `edges[-1]`."""

    counts: tuple[int, ...]
    edges: tuple[float, ...]

    @staticmethod
    def of(stats: TensorStats | None) -> Histogram | None:
        if stats is None or stats.histogram is None or stats.histogram_edges is None:
            return None
        return Histogram(stats.histogram, tuple(stats.histogram_edges))

    def data(self) -> dict[str, list[Any]]:
        return {"counts": list(self.counts), "edges": list(self.edges)}


@dataclass(frozen=True)
class Node:
    """One step as drawn: its box (a bar as long as its output's last dimension), the shapes on
    its arrows as the table writes them, its weights, and what the panel says of it."""

    key: str  # the element id: s3 for the fourth step, s6-2 for a part of it, b1 for a backward step
    number: str  # as the table numbers it; "" for the input and output
    name: str
    operation: str
    inputs: tuple[str, ...]  # distinct input shapes, at most three, then "+N more"
    outputs: tuple[str, ...]
    sources: tuple[str, ...]  # the steps (or "input") whose outputs it read
    width: int  # the output's last dimension; 0 for a 0-d output (a scalar), drawn as ()
    weights: tuple[Weight, ...] = ()
    params: int = 0
    flops: int = 0
    flop_parts: tuple[tuple[str, int], ...] = ()  # (matmul, n), (elementwise, n); a backward's dW and dx
    stats: dict[str, Any] | None = None  # as --json has them
    grad: dict[str, Any] | None = None  # a backward step: the gradient it hands on, as --json has it
    histogram: Histogram | None = None
    notes: tuple[str, ...] = ()
    explanation: str = ""
    tokens: tuple[int, ...] | None = None  # a dispatch: rows each expert got
    parts: tuple[Node, ...] = ()  # the steps inside an expert
    kind: str = "step"  # "input", "output", "step", "expert", "backward"

    @property
    def zeros_share(self) -> float:
        return self.stats["zeros_pct"] / 100 if self.stats and self.stats.get("zeros_pct") else 0.0


@dataclass(frozen=True)
class Lane:
    kind: str  # "forward" or "backward"
    title: str
    rows: tuple[tuple[Node, ...], ...]

    def nodes(self) -> list[Node]:
        return [n for row in self.rows for n in row]


def _last_dim(shape: list[int]) -> int:
    """A bar's length: the last dimension, 0 for a 0-d tensor (as the terminal's width chart has it)."""
    return shape[-1] if shape else 0


def _shape_lines(shapes: list[list[int]]) -> tuple[str, ...]:
    """As the steps table writes a cell of shapes: distinct ones, three at most, then "+N more"."""
    return tuple(_shapes([tuple(s) for s in shapes]).split("\n")) if shapes else ()


def _weights(step: dict[str, Any]) -> tuple[Weight, ...]:
    """As the table names them: relative to the step's module, an expert's layers without ".weight"."""
    prefix = step["name"] + "."
    out = []
    for p in step["params"]:
        name = p["name"].removeprefix(prefix)
        name = name.removesuffix(".weight") if "." in name else name
        tag = _("buffer") if p["buffer"] else _("again") if p["reused"] else ""
        out.append(Weight(name, tuple(p["shape"]), p["count"], tag))
    out += [Weight(c["name"].removeprefix(prefix), tuple(c["shape"]), c["count"], _("constant")) for c in step["constants"]]
    return tuple(out)


def _notes(step: TraceStep) -> tuple[str, ...]:
    return tuple(shown(f) for f in step.flags) + ((step.note.shown(),) if step.note else ())


def _step_node(result: TraceResult, step: TraceStep, data: dict[str, Any], key: str, number: str) -> Node:
    outputs = data["output_shapes"] if len(data["output_shapes"]) > 1 else [data["output_shape"]]
    why = step_explanation(result, step)
    parts = tuple(
        _step_node(result, sub, sub_data, f"{key}-{j}", f"{number}.{j + 1}")
        for j, (sub, sub_data) in enumerate(zip(step.substeps, data.get("substeps", []), strict=True))
    )
    return Node(
        key=key,
        number=number,
        name=data["name"],
        operation=_operation(step),
        inputs=_shape_lines(data["input_shapes"]),
        outputs=_shape_lines(outputs),
        sources=tuple(data["inputs_from"]),
        width=_last_dim(data["output_shape"]),
        weights=_weights(data),
        params=data["param_count"] if data["params"] and len(step.buffers) < len(step.params) else 0,
        flops=data["flops"],
        flop_parts=(("matmul", data["matmul_flops"]), (_("elementwise"), data["elementwise_flops"])),
        stats=data["stats"],
        histogram=Histogram.of(step.stats),
        notes=_notes(step),
        explanation=why.shown() if why is not None else "",
        tokens=tuple(data["tokens_per_expert"]) if "tokens_per_expert" in data else None,
        parts=parts,
        kind="expert" if parts else "step",
    )


def _rows(nodes: list[Node]) -> tuple[tuple[Node, ...], ...]:
    """Consecutive steps that read the same inputs, and not each other, share a row."""
    rows: list[list[Node]] = []
    for node in nodes:
        last = rows[-1] if rows else None
        if last and last[0].kind != "input" and last[0].sources == node.sources and not {n.name for n in last} & set(node.sources):
            last.append(node)
        else:
            rows.append([node])
    return tuple(tuple(r) for r in rows)


def forward_lane(result: TraceResult, data: dict[str, Any]) -> Lane:
    """The input, every step of the run in its order, the output."""
    shape = fmt_shape(data["input_shape"])
    first = Node(
        "input", "", _("input"), "", (), (shape,), (), _last_dim(data["input_shape"]),
        stats=data["input_stats"], histogram=Histogram.of(result.input_stats), kind="input",
    )  # fmt: skip
    steps = [_step_node(result, s, d, f"s{i}", str(i + 1)) for i, (s, d) in enumerate(zip(result.steps, data["steps"], strict=True))]
    out = fmt_shape(data["output_shape"])
    last = Node("output", "", _("output"), "", (out,), (out,), (), _last_dim(data["output_shape"]), kind="output")
    return Lane("forward", _("Forward"), _rows([first, *steps, last]))


def backward_lane(result: TraceResult, data: dict[str, Any]) -> Lane | None:
    """With --backward: the steps autograd ran, from dL/dy back to dL/dx, as the backward table lists them."""
    if result.backward is None or "backward_steps" not in data:
        return None
    nodes = []
    for i, (step, d) in enumerate(zip(result.backward.steps, data["backward_steps"], strict=True)):
        name = d["of"] + (" " + _("(recompute)") if d["recompute"] else "")
        produced = [s for s in d["grad_out"] if tuple(s) not in {tuple(w["shape"]) for w in d["weight_grads"]}] or d["grad_out"]
        weights = tuple(
            Weight(w["name"].removeprefix(d["of"] + "."), tuple(w["shape"]), math.prod(w["shape"]), "dW") for w in d["weight_grads"]
        )
        nodes.append(
            Node(
                key=f"b{i}",
                number=str(i + 1),
                name=name,
                operation="",
                explanation=backward_explanation(step).shown(),
                inputs=_shape_lines(d["grad_in"]),
                outputs=_shape_lines(d["grad_out"]),
                sources=tuple("dL/dy" if n == 0 else f"{n} {data['backward_steps'][n - 1]['of']}" for n in d["inputs_from"]),
                width=_last_dim(produced[0] if produced else []),
                weights=weights,
                flops=d["flops"],
                flop_parts=(("dW", d["weight_grad_flops"]), ("dx", d["input_grad_flops"]), (_("elementwise"), d["elementwise_flops"])),
                grad=d["grad_stats"],
                notes=tuple(shown(f) for f in step.flags),
                kind="backward",
            )
        )
    title = _("Backward, as autograd ran it (dL/dy: {loss})").format(loss=loss_words(data["loss"]))
    return Lane("backward", title, tuple((n,) for n in nodes))
