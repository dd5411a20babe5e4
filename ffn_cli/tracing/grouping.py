"""Name the logical steps of a recorded forward: walk its module calls and fold their ops into
named groups with their formulas. An FFN's ops carry the region of its variant's forward they
ran in, and attention's the region of its module's forward, so their steps need no knowledge of
the op order; the block is grouped here.

Any other module (the user's own, transformers' MLP) is grouped by its structure: each call of
its children (of their children too, `depth` deep) is a step, and each torch call of its own
between them (`F.gelu`, `x * mask`, `einsum`) is a step named after the call.

A group only says which ops and calls make up a step; `steps` fills in its numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torch import nn

from ffn_cli.i18n import N_, Message
from ffn_cli.regions import NamedSteps, StepNaming
from ffn_cli.tracing.expert_summary import describe_tokens
from ffn_cli.tracing.ops import LAYOUT_OPS
from ffn_cli.tracing.recorder import Recording
from ffn_cli.variants import Variant
from ffn_cli.variants.mixture import EXPERTS_STEP

if TYPE_CHECKING:
    from ffn_cli.attention_modules import AttentionModule
    from ffn_cli.block import TransformerBlock
    from ffn_cli.modules import FFNModule

__all__ = ["StepGroup", "group_calls"]


@dataclass
class StepGroup:
    """A step before its numbers are filled in: its own ops and its top-level calls."""

    name: str
    formula: str | Message  # a Message where the formula has words in it
    ops: list[int] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    substeps: list[StepGroup] = field(default_factory=list)
    note: Message = field(default_factory=Message)
    tokens_per_expert: tuple[int, ...] | None = None
    idle_params: int = 0  # the dispatch step: parameters of the experts that did not run
    serial: int | None = None  # the torch call a group of a module's own ops ran in
    # What the step is, not parsed back from its name: its step in the variant's forward (or the
    # child module's or torch call's own name), and the block part it is in ("attn", "ffn").
    region: str = ""
    part: str = ""


class _Grouper:
    """Walks the call tree and names the steps of each known module family."""

    def __init__(self, rec: Recording, depth: int = 1) -> None:
        self.rec = rec
        self.depth = depth
        self._children: dict[int, list[int]] = {}
        self._own: dict[int, list[int]] = {}
        for c in rec.calls:
            if c.parent is not None:
                self._children.setdefault(c.parent, []).append(c.index)
        for op in rec.ops:
            self._own.setdefault(op.call, []).append(op.record.index)
        # How each module this package built names its steps, as the module declares it.
        self._named: dict[StepNaming, Callable[[int, str, Any], list[StepGroup]]] = {
            StepNaming.BLOCK: self._block,
            StepNaming.REGIONS: self._regions,
            StepNaming.VARIANT: self._ffn,
        }

    def segments(self, call: int) -> list[tuple[str, int]]:
        """Direct children calls and own ops of `call`, in execution order."""
        items = [(self.rec.ops[i].seq, "op", i) for i in self._own.get(call, [])]
        items += [(self.rec.calls[c].seq, "call", c) for c in self._children.get(call, [])]
        return [(kind, i) for _, kind, i in sorted(items)]

    def leaf(self, call: int) -> str:
        c = self.rec.calls[call]
        parent = self.rec.calls[c.parent].path if c.parent is not None else ""
        return c.path[len(parent) + 1 :] if parent else c.path

    def op_name(self, i: int) -> str:
        return self.rec.ops[i].record.name

    def group(self, call: int, prefix: str) -> list[StepGroup]:
        module = self.rec.calls[call].module
        if isinstance(module, NamedSteps):
            return self._named[module.step_naming](call, prefix, module)
        return _unique(self._generic(call, self.depth))

    # any other module: its children's calls and its own torch calls between them ------------

    def _generic(self, call: int, depth: int) -> list[StepGroup]:
        path = self.rec.calls[call].path
        prefix = path + "." if path else ""
        groups: list[StepGroup] = []
        for kind, i in self.segments(call):
            if kind == "call":
                child = self.rec.calls[i]
                if depth > 1 and self._children.get(i):
                    groups += self._generic(i, depth - 1)
                else:
                    groups.append(StepGroup(child.path, module_formula(child.module), calls=[i], region=child.path.rsplit(".", 1)[-1]))
                continue
            op = self.rec.ops[i]
            serial, name, formula = op.function or (None, op.record.name, op.record.op)
            last = groups[-1] if groups else None
            if last is not None and not last.calls and last.serial == serial and (serial is not None or last.name == prefix + name):
                last.ops.append(i)
            elif last is not None and not last.calls and self._weight_view(last):
                # w.t() before F.linear(h, w.t()): a view of a parameter is part of the step that reads it
                last.name, last.formula, last.serial, last.region = prefix + name, formula, serial, name
                last.ops.append(i)
            else:
                groups.append(StepGroup(prefix + name, formula, ops=[i], serial=serial, region=name))
        return groups

    def _weight_view(self, g: StepGroup) -> bool:
        """A group that only reshapes parameters: layout ops, no activation among their inputs."""
        ops = [self.rec.ops[i] for i in g.ops]
        return all(op.record.name in LAYOUT_OPS and not op.sources and op.record.params for op in ops)

    def _call_group(self, call: int, prefix: str, formula: str | Message) -> StepGroup:
        return StepGroup(prefix + self.leaf(call), formula, calls=[call], region=self.leaf(call))

    # FFNs: each op is labelled by the region of the variant's forward it ran in ---------------

    def _ffn(self, call: int, prefix: str, module: FFNModule) -> list[StepGroup]:
        spec, variant = module.spec, module.variant
        groups: list[StepGroup] = []
        for kind, i in self.segments(call):
            if kind == "op":
                step = self.rec.ops[i].region or "forward"
                _add_op(groups, prefix + step, variant.step_formula(spec, step), i, step)
                continue
            leaf = self.leaf(i)
            if leaf.startswith(EXPERTS_STEP + "."):
                formula = spec.ffn_variant.header_formula(spec)  # its bias terms exactly where it has biases
                substeps = self.group(i, prefix + leaf + ".")
                groups.append(StepGroup(prefix + leaf, formula, calls=[i], substeps=substeps, region=leaf))
            else:
                groups.append(StepGroup(prefix + leaf, variant.step_formula(spec, leaf), calls=[i], region=leaf))
        if variant.step_order:
            return self._in_step_order(groups, prefix, module, variant)
        return groups

    def _in_step_order(self, groups: list[StepGroup], prefix: str, module: FFNModule, variant: Variant) -> list[StepGroup]:
        """One group per step wherever its ops ran (a mixture's loop over experts interleaves
        them), in the variant's step order; the experts stay one group each, and the variant's
        dispatch step counts the rows each expert got."""
        merged: dict[str, StepGroup] = {}
        experts: list[StepGroup] = []
        for g in groups:
            step = g.name[len(prefix) :]
            if step.startswith(EXPERTS_STEP + "."):
                experts.append(g)
                continue
            into = merged.setdefault(step, StepGroup(g.name, g.formula, region=g.region))
            into.ops += g.ops
            into.calls += g.calls
        dispatch = merged.get(variant.dispatch_step or "")
        if dispatch is not None:
            tokens = _routed(module) or tuple(self._rows(g) for g in experts)
            dispatch.tokens_per_expert = tokens
            dispatch.note = _dispatch_note(module, tokens)
            dispatch.idle_params = _idle_params(module, tokens)
        ordered: list[StepGroup] = []
        for step in variant.step_order:
            ordered += experts if step == EXPERTS_STEP else [merged.pop(step)] if step in merged else []
        return ordered + list(merged.values())

    def _rows(self, g: StepGroup) -> int:
        sources = self.rec.calls[g.calls[0]].sources
        return sources[0][1][0] if sources else 0

    # the block --------------------------------------------------------------------------------

    def _block(self, call: int, prefix: str, block: TransformerBlock) -> list[StepGroup]:
        norm = "LayerNorm: (x−μ)/σ·γ + β" if block.spec.norm == "layernorm" else "RMSNorm: x/rms(x)·γ"
        groups: list[StepGroup] = []
        last_child = "attn"
        for kind, i in self.segments(call):
            if kind == "op":
                _add_op(groups, f"{prefix}{last_child}_residual", f"x + {last_child}(·)", i, f"{last_child}_residual")
                continue
            leaf = self.leaf(i)
            last_child = leaf if leaf in ("attn", "ffn") else last_child
            if leaf in ("attn", "ffn"):
                inner = self.group(i, prefix + leaf + ".")
                for g in inner:
                    g.part = leaf
                groups += inner
            else:
                groups.append(self._call_group(i, prefix, norm))
        return groups

    def _regions(self, call: int, prefix: str, module: AttentionModule) -> list[StepGroup]:
        """Projections and norms are calls; the head arithmetic's ops carry their region."""
        groups: list[StepGroup] = []
        for kind, i in self.segments(call):
            if kind == "call":
                groups.append(self._call_group(i, prefix, module.step_formula(self.leaf(i))))
                continue
            step = self.rec.ops[i].region or "forward"
            _add_op(groups, prefix + step, module.step_formula(step), i, step)
        return groups


def _add_op(groups: list[StepGroup], name: str, formula: str | Message, op: int, region: str) -> None:
    """Append op to the last group if it has this name, else open a new group."""
    if groups and groups[-1].name == name and not groups[-1].calls:
        groups[-1].ops.append(op)
    else:
        groups.append(StepGroup(name, formula, ops=[op], region=region))


def _routed(module: FFNModule) -> tuple[int, ...] | None:
    """Every expert's rows after capacity, those no token chose too (they have no step)."""
    stats = module.last_dispatch
    return tuple(stats.tokens_per_expert) if stats is not None and stats.tokens_per_expert else None


def _idle_params(module: FFNModule, tokens: tuple[int, ...]) -> int:
    """The parameters of the experts that got no token and did not run: no step reads them."""
    experts = getattr(module, "experts", None)
    if experts is None or len(tokens) != len(experts):
        return 0
    # Every expert is built from one spec, so each holds what the first holds: thousands of
    # idle experts are counted without walking each one's modules.
    per_expert = sum(p.numel() for p in experts[0].parameters())
    return per_expert * sum(1 for n in tokens if n == 0)


def _dispatch_note(module: FFNModule, tokens: tuple[int, ...]) -> Message:
    note = describe_tokens(tokens)
    stats = module.last_dispatch
    if stats is not None and stats.dropped:
        note += Message.of(N_("; {dropped} dropped over capacity {capacity}"), dropped=stats.dropped, capacity=stats.capacity)
    if stats is not None and stats.assumed_balanced:
        note += Message.of(N_(" (meta: balanced routing assumed)"))
    return note


def _unique(groups: list[StepGroup]) -> list[StepGroup]:
    """Steps named apart: a module called twice, or a second `mul`, becomes `mul#2`."""
    seen: Counter[str] = Counter()
    for g in groups:
        seen[g.name] += 1
        if seen[g.name] > 1:
            g.name = f"{g.name}#{seen[g.name]}"
    return groups


def module_formula(module: nn.Module) -> str:
    """What a submodule computes, for torch's own layers; any other module by its class."""
    if isinstance(module, nn.Linear):
        return "x·Wᵀ + b" if module.bias is not None else "x·Wᵀ"
    if isinstance(module, nn.Dropout):
        return Message(N_("dropout (p = {p})"), p=f"{module.p:g}")
    if isinstance(module, nn.GELU):
        return N_("GELU(x), tanh approximation") if module.approximate == "tanh" else "GELU(x) = x·Φ(x)"
    simple = {nn.ReLU: "max(x, 0)", nn.SiLU: "x·σ(x)", nn.Sigmoid: "σ(x)", nn.Tanh: "tanh(x)", nn.Identity: "x"}
    for kind, text in simple.items():
        if isinstance(module, kind):
            return text
    return type(module).__name__


def group_calls(rec: Recording, call: int, depth: int = 1) -> list[StepGroup]:
    """The named groups of one recorded call; a module this package did not build is grouped by
    its children (`depth` levels deep) and its own torch calls."""
    return _Grouper(rec, depth).group(call, "")
