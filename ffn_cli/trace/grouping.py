"""Name the logical steps of a recorded forward: walk its module calls and fold each known
family's ops (dense, gated, MoE, attention, the block) into named groups with their formulas.

A group only says which ops and calls make up a step; `steps` fills in its numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ffn_cli.block import SelfAttention, TransformerBlock
from ffn_cli.modules import DenseFFN, GatedFFN, MoEFFN, SoftMoEFFN
from ffn_cli.trace.ops import LAYOUT_OPS, SPLIT_OPS
from ffn_cli.trace.recorder import Recording
from ffn_cli.variants import ACTIVATIONS

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
        if isinstance(module, SelfAttention):
            return self._attention(call, prefix, module)
        if isinstance(module, (MoEFFN, SoftMoEFFN)):
            return self._moe(call, prefix, module)
        if isinstance(module, GatedFFN):
            return self._gated(call, prefix, module)
        if isinstance(module, DenseFFN):
            return self._dense(call, prefix, module)
        return [StepGroup(prefix + "forward", type(module).__name__, calls=[call])]

    # FFNs -----------------------------------------------------------------------------------

    def _call_group(self, call: int, prefix: str, formula: str) -> StepGroup:
        return StepGroup(prefix + self.leaf(call), formula, calls=[call])

    def _dense(self, call: int, prefix: str, module: DenseFFN) -> list[StepGroup]:
        spec, groups = module.spec, []
        act = ACTIVATIONS[spec.ffn_variant.activation]
        b = bool(spec.bias)
        for kind, i in self.segments(call):
            if kind == "call":
                leaf = self.leaf(i)
                formula = {
                    "up_proj": "x·W_upᵀ" + (" + b_up" if b else ""),
                    "down_proj": "h·W_downᵀ" + (" + b_down" if b else ""),
                    "dropout": f"dropout(h), p = {spec.dropout:g}",
                }.get(leaf, leaf)
                groups.append(self._call_group(i, prefix, formula))
            elif any(p.rsplit(".", 1)[-1] == "hidden_mask" for p in self.rec.ops[i].record.params):
                _add_op(groups, prefix + "mask", "m ⊙ h, fixed mask", i)
            else:
                _add_op(groups, prefix + "activation", f"{act.name}(h) = {act.formula.replace('z', 'h')}", i)
        return groups

    def _gated(self, call: int, prefix: str, module: GatedFFN) -> list[StepGroup]:
        spec, groups = module.spec, []
        act = ACTIVATIONS[spec.ffn_variant.activation]
        b = " + b" if spec.bias else ""
        own = [i for kind, i in self.segments(call) if kind == "op"]
        multiply = max((i for i in own if self.op_name(i) == "mul"), default=None)
        for kind, i in self.segments(call):
            if kind == "call":
                leaf = self.leaf(i)
                formula = {
                    "gate_proj": f"x·W_gateᵀ{b}",
                    "up_proj": f"x·W_upᵀ{b}",
                    "gate_up_proj": f"x·W_gate_upᵀ{b}",
                    "down_proj": f"h·W_downᵀ{b}",
                    "dropout": f"dropout(h), p = {spec.dropout:g}",
                }.get(leaf, leaf)
                groups.append(self._call_group(i, prefix, formula))
            elif self.op_name(i) in SPLIT_OPS:
                _add_op(groups, prefix + "split", "chunk into gate g, up u", i)
            elif i == multiply:
                gate = "g" if act.name == "identity" else f"{act.name}(g)"
                _add_op(groups, prefix + "multiply", f"h = {gate} ⊙ u", i)
            else:
                _add_op(groups, prefix + "activation", f"{act.name}(g) = {act.formula.replace('z', 'g')}", i)
        return groups

    def _moe(self, call: int, prefix: str, module: MoEFFN | SoftMoEFFN) -> list[StepGroup]:
        spec, routed = module.spec, isinstance(module, MoEFFN)
        expert = spec.ffn_variant
        k = spec.top_k if routed else spec.experts
        formulas = {
            "flatten": "tokens: (B, T, d) → (B·T, d)",
            "router": "x·W_routerᵀ",
            "softmax": "g = softmax over E experts, float32",
            "top_k": f"top-{k} of E by g",
            "renormalise": "ĝ = g / Σ_top-k g",
            "dispatch": "gather each expert's tokens",
            "combine": "Σ_k ĝ_k·expert_k(x)" if routed else "Σ_E g_e·expert_e(x)",
            "shared_experts": expert.formula,
            "shared_add": "routed + shared",
            "shared_expert_gate": "σ(x·w_g)·shared + routed",
            "unflatten": "(B·T, d) → (B, T, d)",
        }
        by_name: dict[str, StepGroup] = {}
        experts: list[StepGroup] = []
        segments = self.segments(call)
        last_op = max((n for n, (kind, _) in enumerate(segments) if kind == "op"), default=-1)
        phase = "flatten"
        for n, (kind, i) in enumerate(segments):
            if kind == "call":
                leaf = self.leaf(i)
                if leaf.startswith("experts."):
                    experts.append(StepGroup(prefix + leaf, expert.formula, calls=[i], substeps=self.group(i, prefix + leaf + ".")))
                    phase = "combine"
                    continue
                phase = {"router": "softmax", "shared_experts": "shared_add", "shared_expert_gate": "shared_expert_gate"}.get(leaf, phase)
                name = "shared_expert_gate" if leaf == "shared_expert_gate" else leaf
                by_name.setdefault(name, StepGroup(prefix + name, formulas.get(name, leaf))).calls.append(i)
                continue
            op = self.op_name(i)
            if phase == "flatten":
                step = "flatten"
            elif n == last_op and op in LAYOUT_OPS:
                step = "unflatten"
            elif op == "topk":
                step, phase = "top_k", "after_top_k"
            elif op == "zeros_like":
                step, phase = "combine", ("dispatch" if routed else "combine")
            elif phase == "after_top_k":
                step = "renormalise" if spec.normalize_top_k else "top_k"
            elif phase == "combine":
                step = "combine"
                if routed and op == "index_add":
                    phase = "dispatch"
            else:
                step = phase
            by_name.setdefault(step, StepGroup(prefix + step, formulas.get(step, step))).ops.append(i)
        if "dispatch" in by_name:
            tokens = tuple(self.rec.calls[g.calls[0]].sources[0][1][0] if self.rec.calls[g.calls[0]].sources else 0 for g in experts)
            by_name["dispatch"].tokens_per_expert = tokens
            by_name["dispatch"].note = _dispatch_note(module, tokens)
        head = ["flatten", "router", "softmax", "top_k", "renormalise", "dispatch"]
        tail = ["combine", "shared_experts", "shared_expert_gate", "shared_add", "unflatten"]
        return [by_name[s] for s in head if s in by_name] + experts + [by_name[s] for s in tail if s in by_name]

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

    def _attention(self, call: int, prefix: str, module: SelfAttention) -> list[StepGroup]:
        h, kv, dh = module.n_heads, module.n_kv_heads, module.head_dim
        gqa = f"; K, V repeated {h // kv}× (GQA)" if kv < h else ""
        heads = f"split into heads: (B, T, H·d_h) → (B·H, T, d_h), H={h}, d_h={dh}{gqa}"
        formulas = {
            "heads": heads,
            "scores": "S = Q·Kᵀ/√d_h",
            "softmax": "P = softmax(S) over keys",
            "context": "P·V",
            "merge": "concat heads: (B·H, T, d_h) → (B, T, H·d_h)",
        }
        proj = {"q_proj": "x·W_Qᵀ", "k_proj": "x·W_Kᵀ", "v_proj": "x·W_Vᵀ", "o_proj": "·W_Oᵀ"}
        groups: list[StepGroup] = []
        bmm_seen = 0
        phase = "heads"
        for kind, i in self.segments(call):
            if kind == "call":
                leaf = self.leaf(i)
                bias = " + b" if getattr(module, leaf).bias is not None else ""
                groups.append(self._call_group(i, prefix, proj.get(leaf, leaf) + bias))
                continue
            op = self.op_name(i)
            if op == "bmm":
                bmm_seen += 1
                phase = "scores" if bmm_seen == 1 else "context"
            elif op == "_softmax":
                phase = "softmax"
            elif phase == "context" and op in LAYOUT_OPS:
                phase = "merge"
            _add_op(groups, prefix + phase, formulas[phase], i)
        return groups


def _add_op(groups: list[StepGroup], name: str, formula: str, op: int) -> None:
    """Append op to the last group if it has this name, else open a new group."""
    if groups and groups[-1].name == name and not groups[-1].calls:
        groups[-1].ops.append(op)
    else:
        groups.append(StepGroup(name, formula, ops=[op]))


def _dispatch_note(module: MoEFFN | SoftMoEFFN, tokens: tuple[int, ...]) -> str:
    note = "tokens per expert: " + ", ".join(str(t) for t in tokens)
    stats = getattr(module, "last_dispatch", None)
    if stats is not None and stats.dropped:
        note += f"; {stats.dropped} dropped over capacity {stats.capacity}"
    if stats is not None and stats.assumed_balanced:
        note += " (meta: balanced routing assumed)"
    return note


def group_calls(rec: Recording, call: int) -> list[StepGroup]:
    """The named groups of one recorded call (any module this package did not build is one group)."""
    return _Grouper(rec).group(call, "")
