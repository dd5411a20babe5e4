"""Name the logical steps of a recorded forward: walk its module calls and fold their ops into
named groups with their formulas. An FFN's ops carry the region of its variant's forward they
ran in, and attention's the region of its module's forward, so their steps need no knowledge of
the op order; the block is grouped here.

A group only says which ops and calls make up a step; `steps` fills in its numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ffn_cli.attention_modules import AttentionModule, LatentAttention, SelfAttention
from ffn_cli.block import TransformerBlock
from ffn_cli.modules import FFNModule
from ffn_cli.trace.expert_summary import describe_tokens
from ffn_cli.trace.recorder import Recording
from ffn_cli.variants import MixtureVariant
from ffn_cli.variants.mixture import EXPERTS_STEP

__all__ = ["StepGroup", "group_calls"]


@dataclass
class StepGroup:
    """A step before its numbers are filled in: its own ops and its top-level calls."""

    name: str
    formula: str
    ops: list[int] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    substeps: list[StepGroup] = field(default_factory=list)
    note: str = ""
    tokens_per_expert: tuple[int, ...] | None = None
    idle_params: int = 0  # the dispatch step: parameters of the experts that did not run


class _Grouper:
    """Walks the call tree and names the steps of each known module family."""

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        self._children: dict[int, list[int]] = {}
        self._own: dict[int, list[int]] = {}
        for c in rec.calls:
            if c.parent is not None:
                self._children.setdefault(c.parent, []).append(c.index)
        for op in rec.ops:
            self._own.setdefault(op.call, []).append(op.record.index)

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
        if isinstance(module, TransformerBlock):
            return self._block(call, prefix)
        if isinstance(module, (SelfAttention, LatentAttention)):
            return self._attention(call, prefix, module)
        if isinstance(module, FFNModule):
            return self._ffn(call, prefix, module)
        return [StepGroup(prefix + "forward", type(module).__name__, calls=[call])]

    def _call_group(self, call: int, prefix: str, formula: str) -> StepGroup:
        return StepGroup(prefix + self.leaf(call), formula, calls=[call])

    # FFNs: each op is labelled by the region of the variant's forward it ran in ---------------

    def _ffn(self, call: int, prefix: str, module: FFNModule) -> list[StepGroup]:
        spec, variant = module.spec, module.variant
        groups: list[StepGroup] = []
        for kind, i in self.segments(call):
            if kind == "op":
                step = self.rec.ops[i].region or "forward"
                _add_op(groups, prefix + step, variant.step_formula(spec, step), i)
                continue
            leaf = self.leaf(i)
            if leaf.startswith(EXPERTS_STEP + "."):
                formula = spec.ffn_variant.formula
                groups.append(StepGroup(prefix + leaf, formula, calls=[i], substeps=self.group(i, prefix + leaf + ".")))
            else:
                groups.append(StepGroup(prefix + leaf, variant.step_formula(spec, leaf), calls=[i]))
        if isinstance(variant, MixtureVariant):
            return self._in_mixture_order(groups, prefix, module, variant)
        return groups

    def _in_mixture_order(self, groups: list[StepGroup], prefix: str, module: FFNModule, variant: MixtureVariant) -> list[StepGroup]:
        """One group per step wherever its ops ran (the loop over experts interleaves them), in
        the variant's step order; the experts stay one group each."""
        merged: dict[str, StepGroup] = {}
        experts: list[StepGroup] = []
        for g in groups:
            step = g.name[len(prefix) :]
            if step.startswith(EXPERTS_STEP + "."):
                experts.append(g)
                continue
            into = merged.setdefault(step, StepGroup(g.name, g.formula))
            into.ops += g.ops
            into.calls += g.calls
        if "dispatch" in merged:
            tokens = _routed(module) or tuple(self._rows(g) for g in experts)
            merged["dispatch"].tokens_per_expert = tokens
            merged["dispatch"].note = _dispatch_note(module, tokens)
            merged["dispatch"].idle_params = _idle_params(module, tokens)
        ordered: list[StepGroup] = []
        for step in variant.step_order:
            ordered += experts if step == EXPERTS_STEP else [merged.pop(step)] if step in merged else []
        return ordered + list(merged.values())

    def _rows(self, g: StepGroup) -> int:
        sources = self.rec.calls[g.calls[0]].sources
        return sources[0][1][0] if sources else 0

    # the block --------------------------------------------------------------------------------

    def _block(self, call: int, prefix: str) -> list[StepGroup]:
        block: TransformerBlock = self.rec.calls[call].module  # type: ignore[assignment]
        norm = "LayerNorm: (x − μ)/σ·γ + β" if block.spec.norm == "layernorm" else "RMSNorm: x/rms(x)·γ"
        groups: list[StepGroup] = []
        last_child = "attn"
        for kind, i in self.segments(call):
            if kind == "op":
                _add_op(groups, f"{prefix}{last_child}_residual", f"x + {last_child}(·)", i)
                continue
            leaf = self.leaf(i)
            last_child = leaf if leaf in ("attn", "ffn") else last_child
            if leaf in ("attn", "ffn"):
                groups += self.group(i, prefix + leaf + ".")
            else:
                groups.append(self._call_group(i, prefix, norm))
        return groups

    def _attention(self, call: int, prefix: str, module: AttentionModule) -> list[StepGroup]:
        """Projections and norms are calls; the head arithmetic's ops carry their region."""
        groups: list[StepGroup] = []
        for kind, i in self.segments(call):
            if kind == "call":
                groups.append(self._call_group(i, prefix, module.step_formula(self.leaf(i))))
                continue
            step = self.rec.ops[i].region or "forward"
            _add_op(groups, prefix + step, module.step_formula(step), i)
        return groups


def _add_op(groups: list[StepGroup], name: str, formula: str, op: int) -> None:
    """Append op to the last group if it has this name, else open a new group."""
    if groups and groups[-1].name == name and not groups[-1].calls:
        groups[-1].ops.append(op)
    else:
        groups.append(StepGroup(name, formula, ops=[op]))


def _routed(module: FFNModule) -> tuple[int, ...] | None:
    """Every expert's rows after capacity, those no token chose too (they have no step)."""
    stats = getattr(module, "last_dispatch", None)
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


def _dispatch_note(module: FFNModule, tokens: tuple[int, ...]) -> str:
    note = describe_tokens(tokens)
    stats = getattr(module, "last_dispatch", None)
    if stats is not None and stats.dropped:
        note += f"; {stats.dropped} dropped over capacity {stats.capacity}"
    if stats is not None and stats.assumed_balanced:
        note += " (meta: balanced routing assumed)"
    return note


def group_calls(rec: Recording, call: int) -> list[StepGroup]:
    """The named groups of one recorded call (any module this package did not build is one group)."""
    return _Grouper(rec).group(call, "")
