"""Fold a recording's ops into the variant's logical steps (`up_proj`, `activation`,
`experts.3`, `attn.scores`, …), each with its FLOPs, weights, dataflow, statistics and flags."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from torch import nn

from ffn_cli.i18n import N_, Message
from ffn_cli.tracing.grouping import StepGroup, group_calls
from ffn_cli.tracing.ops import LAYOUT_OPS, still_drops
from ffn_cli.tracing.recorder import Producer, RecordedOp, Recording
from ffn_cli.tracing.result import ParamInfo, Shape, TensorStats, TraceStep
from ffn_cli.tracing.stats import pooled_stats, value_flags

__all__ = ["group_steps"]


class _StepBuilder:
    """Turns groups into TraceSteps: FLOPs, parameters, dataflow, statistics and flags."""

    def __init__(self, rec: Recording, groups: list[StepGroup]) -> None:
        self.rec = rec
        self.groups = groups
        self.op_step: dict[int, str] = {}
        self.call_step: dict[int, str] = {}
        for g in groups:
            self._claim(g, g.name)

    def _claim(self, g: StepGroup, name: str) -> None:
        for i in g.ops:
            self.op_step[i] = name
        for c in g.calls:
            call = self.rec.calls[c]
            for i in range(call.first_op, call.end_op):
                self.op_step[i] = name
            # Calls are recorded in pre-order: c's descendants are the calls right after it.
            for d in range(c, len(self.rec.calls)):
                if d != c and not self._descends(d, c):
                    break
                self.call_step[d] = name

    def _descends(self, call: int, ancestor: int) -> bool:
        parent = self.rec.calls[call].parent
        while parent is not None:
            if parent == ancestor:
                return True
            parent = self.rec.calls[parent].parent
        return False

    def producer_step(self, producer: Producer) -> str | None:
        kind, i = producer
        if kind == "input":
            return "input"
        if kind == "op":
            return self.op_step.get(i)
        if kind == "call":
            if i in self.call_step:
                return self.call_step[i]
            call = self.rec.calls[i]  # a container (the FFN inside a block): its last op's step
            return self.op_step.get(call.end_op - 1) if call.end_op > call.first_op else None
        return None

    def build(self, fallback: _StepBuilder | None = None) -> list[TraceStep]:
        self._read: set[str] = set()  # parameters an earlier step read
        self._read_ops: set[int] = set()  # ops whose output another step reads
        consumed: dict[str, list[Shape]] = {}
        for g in self.groups:
            for producer, shape in self._sources(g):
                name = self.producer_step(producer)
                if name and name != g.name:
                    consumed.setdefault(name, []).append(shape)
                    if producer[0] == "op":
                        self._read_ops.add(producer[1])
        return [self._step(g, fallback, consumed.get(g.name, ())) for g in self.groups]

    def _sources(self, g: StepGroup) -> list[tuple[Producer, Shape]]:
        out = [s for i in g.ops for s in self.rec.ops[i].sources]
        out += [s for c in g.calls for s in self.rec.calls[c].sources]
        return out

    def _ops_of(self, g: StepGroup) -> list[int]:
        ops = list(g.ops)
        for c in g.calls:
            call = self.rec.calls[c]
            ops += range(call.first_op, call.end_op)
        return sorted(ops)

    def _step(self, g: StepGroup, fallback: _StepBuilder | None, consumed: Sequence[Shape]) -> TraceStep:
        ops = [self.rec.ops[i] for i in self._ops_of(g)]
        inputs: dict[tuple[str, Shape], None] = {}
        for producer, shape in self._sources(g):
            name = self.producer_step(producer) or (fallback.producer_step(producer) if fallback else None) or "input"
            if name != g.name:
                inputs[(name, shape)] = None
        params = tuple(dict.fromkeys(p for op in ops for p in op.record.params))
        constants = tuple(dict.fromkeys(c for op in ops for c in op.record.constants))
        reused = {p for p in params if p in self._read}
        self._read.update(params)
        module_class = type(self.rec.calls[g.calls[0]].module).__name__ if len(g.calls) == 1 and not g.ops else ""
        main = self._main(g)
        substeps = tuple(_StepBuilder(self.rec, g.substeps).build(fallback=self)) if g.substeps else ()
        input_stats = self._input_stats(g)
        changed, zeroed, dropout_note = self._dropout(g, main[2])
        step = TraceStep(
            name=g.name,
            op=str(g.formula),
            op_words=g.formula if isinstance(g.formula, Message) else None,
            input_shapes=tuple(shape for _, shape in inputs),
            output_shape=main[0],
            output_shapes=tuple(dict.fromkeys(consumed or [main[0]])),
            inputs_from=tuple(dict.fromkeys(name for name, _ in inputs)),
            params=tuple(ParamInfo(p, self.rec.param_shapes[p], buffer=p in self.rec.buffer_names, reused=p in reused) for p in params),
            constants=tuple(ParamInfo(c, self.rec.constant_shapes[c]) for c in constants),
            module_class=module_class,
            matmul_flops=sum(op.record.matmul_flops for op in ops),
            elementwise_flops=sum(op.record.elementwise_flops for op in ops),
            aten_ops=tuple(op.record.op for op in ops),
            op_indices=tuple(op.record.index for op in ops),
            dtype=main[1],
            stats=main[2],
            input_stats=input_stats,
            values=main[3],
            tokens_per_expert=g.tokens_per_expert,
            idle_params=g.idle_params,
            substeps=substeps,
            dropout_changed=changed,
            dropout_zeroed=zeroed,
            region=g.region,
            part=g.part,
        )
        note = g.note or dropout_note or _note(step)
        flags = _flags(step, ops)
        return replace(step, flags=flags, note=note) if flags or note else step

    def _main(self, g: StepGroup) -> tuple[Shape, str, TensorStats | None, tuple[float, ...] | None]:
        """The step's output: its last call's, or its last own op's, whichever ran last. A step
        whose output is several tensors of the last one's kind (a mixture's dispatch: each
        expert's rows) has the statistics of all of them together."""
        last_call = self.rec.calls[g.calls[-1]] if g.calls else None
        last_op = self.rec.ops[g.ops[-1]] if g.ops else None
        if last_call is not None and (last_op is None or last_call.seq > last_op.seq):
            return last_call.output_shape, last_call.dtype, last_call.stats, last_call.values
        assert last_op is not None
        stats = last_op.stats
        outputs = [op.stats for op in self._outputs(g) if op.record.dtype == last_op.record.dtype]
        if len(outputs) > 1 and stats is not None and all(s is not None for s in outputs):
            stats = pooled_stats([s for s in outputs if s is not None])
        return last_op.record.output_shapes[0], last_op.record.dtype, stats, last_op.values

    def _outputs(self, g: StepGroup) -> list[RecordedOp]:
        """The step's own ops whose outputs later steps read, views of another's left out."""
        return [self.rec.ops[i] for i in g.ops if i in self._read_ops and self.rec.ops[i].record.name not in LAYOUT_OPS]

    def _input_stats(self, g: StepGroup) -> TensorStats | None:
        for producer, _ in self._sources(g):
            kind, i = producer
            if kind == "op" and self.op_step.get(i) != g.name:
                return self.rec.ops[i].stats
            if kind == "call" and self.call_step.get(i) != g.name:
                return self.rec.calls[i].stats
            if kind == "input":
                return self.rec.input_stats
        return None

    def _dropout(self, g: StepGroup, stats: TensorStats | None) -> tuple[int | None, int | None, Message]:
        """What a dropout call changed, and the note that says so (real devices only)."""
        for c in g.calls:
            call, module = self.rec.calls[c], self.rec.calls[c].module
            if not isinstance(module, nn.Dropout) or call.dropout_changed is None or stats is None:
                continue
            if not module.training:
                note = Message.of(N_("unchanged (dropout is off in eval mode)"))
            elif call.dropout_changed == 0:
                note = Message.of(N_("unchanged (p = {p})"), p=f"{module.p:g}")
            else:
                text = N_("changed {changed:,} of {numel:,}: {zeroed:,} zeroed, the rest scaled by 1/(1−p)")
                note = Message.of(text, changed=call.dropout_changed, numel=stats.numel, zeroed=call.dropout_zeroed)
            return call.dropout_changed, call.dropout_zeroed, note
        if stats is not None and self._in_eval_mode() and still_drops(op.record for op in (self.rec.ops[i] for i in self._ops_of(g))):
            return None, None, Message.of(N_("still drops in eval mode: F.dropout without training=self.training"))
        return None, None, Message()

    def _in_eval_mode(self) -> bool:
        root = next((c for c in self.rec.calls if c.parent is None), None)
        return root is not None and not root.module.training


def _flags(step: TraceStep, ops: list[RecordedOp]) -> tuple[str, ...]:
    """NaN / Inf anywhere in the step; overflow and underflow for float16 / bfloat16."""
    # Layout ops (views of an input) would repeat the previous step's values: skip them.
    stats = [op.stats for op in ops if op.stats is not None and op.record.name not in LAYOUT_OPS]
    stats += [step.stats] if step.stats else []
    return value_flags(stats, step.dtype, step.input_stats)


def _note(step: TraceStep) -> Message:
    """An activation's effect on the sign of its input."""
    if step.region == "activation" and step.stats and step.input_stats:
        return Message.of(N_("negatives {before:,} → {after:,}"), before=step.input_stats.negatives, after=step.stats.negatives)
    return Message()


def group_steps(rec: Recording, depth: int = 1) -> list[TraceStep]:
    """The logical steps of a recorded forward: an FFN or block built by this package by its
    variant's steps, any other module by its children (`depth` levels deep) and its own calls."""
    root = next((c.index for c in rec.calls if c.parent is None), None)
    if root is None:
        return []
    return _StepBuilder(rec, group_calls(rec, root, depth)).build()
