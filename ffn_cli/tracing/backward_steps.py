"""Fold a recorded backward into steps: consecutive ops that ran for the same forward step (or
recomputed it) make one step, in the order autograd ran them; each with the gradients flowing
in and out, the parameter gradients it made, its matmul FLOPs split into weight-gradient and
input-gradient, the saved tensors it read, and the gradient's statistics and flags."""

from __future__ import annotations

from ffn_cli.tracing.backward import BackwardRecording
from ffn_cli.tracing.ops import LAYOUT_OPS, UNINITIALISED_OPS
from ffn_cli.tracing.recorder import Producer, RecordedOp
from ffn_cli.tracing.result import BackwardStep, ParamGrad, ParamInfo, SavedRead, Shape
from ffn_cli.tracing.stats import value_flags
from ffn_cli.variants.mixture import expert_of

__all__ = ["MAX_SUMMED_NAMES", "fold_backward"]

# A sum of gradients is named after the steps it adds, this many at most (then "…").
MAX_SUMMED_NAMES = 3


def _groups(rec: BackwardRecording) -> list[list[RecordedOp]]:
    groups: list[list[RecordedOp]] = []
    last: tuple[str, bool] | None = None
    for op in rec.ops:
        i = op.record.index
        key = (_recomputed_step(op) if i in rec.recompute else rec.stamps.get(i, ""), i in rec.recompute)
        if key != last:
            groups.append([])
            last = key
        groups[-1].append(op)
    return _fold_deferred_moves(groups, rec)


# Ops that only move or store gradients already computed: a transpose, the copy into `.grad`.
_MOVE_OPS = frozenset((*LAYOUT_OPS, *UNINITIALISED_OPS, "copy_"))


def _fold_deferred_moves(groups: list[list[RecordedOp]], rec: BackwardRecording) -> list[list[RecordedOp]]:
    """The engine may run a step's last moves late, after other steps: the transpose of a
    weight's gradient and its copy into `.grad`, or the copy of dL/dx into `x.grad` (its node
    stamped by the first step that read x). A move of values an earlier run of the same step
    made joins that run; a run of moves alone, named after a step that already ran, is no step
    of its own: each of its ops joins the step whose values it moves."""
    group_of = {op.record.index: n for n, g in enumerate(groups) for op in g}
    names = [rec.stamps.get(g[0].record.index, "") if g[0].record.index not in rec.recompute else None for g in groups]
    seen: set[str | None] = set()
    for n, group in enumerate(groups):
        if names[n] is None:
            continue
        moves = _tail_moves(group)
        placed = dict(group_of)
        homes = {}
        for op in moves:
            home = _home(op, placed, n)
            if home is not None:
                placed[op.record.index] = home
                homes[op.record.index] = home
        if len(moves) == len(group) == len(homes) and names[n] in seen:
            group_of.update(homes)  # a run of moves alone: each to the step it serves
        else:
            group_of.update({i: home for i, home in homes.items() if names[home] == names[n]})
        seen.add(names[n])
    folded: dict[int, list[RecordedOp]] = {}
    for op in (op for g in groups for op in g):
        folded.setdefault(group_of[op.record.index], []).append(op)
    return [folded[n] for n in sorted(folded)]


def _tail_moves(group: list[RecordedOp]) -> list[RecordedOp]:
    """The moves in a group that no computation of the group reads, directly or through
    other moves (a transpose of dy that a matmul here reads is part of this step)."""
    needed: set[int] = set()
    for op in reversed(group):
        if op.record.name not in _MOVE_OPS or op.record.index in needed:
            needed.update(j for (kind, j), _shape in op.sources if kind == "op")
    return [op for op in group if op.record.name in _MOVE_OPS and op.record.index not in needed]


def _home(op: RecordedOp, group_of: dict[int, int], n: int) -> int | None:
    """The group an op that moves values belongs to: that of the op whose values it moves (a
    copy's source is its last argument), followed through moves already placed."""
    for (kind, j), _shape in reversed(op.sources):
        if kind == "op" and j in group_of and group_of[j] != n:
            return group_of[j]
    return None


def _weight_grad_flops(op: RecordedOp) -> int:
    """What an op that made a weight's gradient spent on it: all its matmul FLOPs, but of an op
    that made the input's gradient too (a convolution's backward), the weight's part alone."""
    split = op.record.weight_grad_flops
    return op.record.matmul_flops if split is None else split


def _recomputed_step(op: RecordedOp) -> str:
    """A recomputed op's forward step: its region, else the module it ran in."""
    return op.region or op.record.path.rsplit(".", 1)[-1] or "forward"


class _Builder:
    def __init__(self, rec: BackwardRecording) -> None:
        self.rec = rec
        self._sums: dict[int, list[str]] = {}  # an unstamped op → the steps whose gradients it has added
        self.groups = _groups(rec)
        self.by_index = {op.record.index: op for op in rec.ops}
        self.group_of = {op.record.index: n for n, g in enumerate(self.groups, 1) for op in g}
        # Storage of each parameter's gradient → parameter; what made dL/dx.
        self.grad_param = {storage: name for name, (_, storage, _) in rec.param_grads.items() if storage is not None}
        self.weight_ops = {rec.made_by[s] for s in self.grad_param if s in rec.made_by}
        self.param_step = {name: self.group_of.get(rec.made_by.get(s, -1)) for s, name in self.grad_param.items()}
        self.step_params: dict[int | None, list[str]] = {}  # the inverse: one look-up per step, not a scan
        for name, step in self.param_step.items():
            self.step_params.setdefault(step, []).append(name)
        input_storage = rec.input_grad[0]
        # dL/dx leaves the step of the last op that wrote its storage (AccumulateGrad's copy, if any).
        writers = [i for i, storages in rec.writes.items() if input_storage is not None and input_storage in storages]
        self.input_group = self.group_of[max(writers)] if writers else None
        self.consumed: dict[int, int] = {}  # op → the last group that read its output
        for n, g in enumerate(self.groups, 1):
            for op in g:
                for producer, _ in op.sources:
                    i = self._op_of(producer)
                    if i is not None and self.group_of[i] != n:
                        self.consumed[i] = n

    def _op_of(self, producer: Producer) -> int | None:
        """The backward (or recomputed) op behind a producer; a recomputed module call's is its
        last op, or, if it ran none (eval-mode dropout), its input's."""
        for _ in range(len(self.rec.calls) + 1):
            kind, i = producer
            if kind == "op":
                return i if i in self.by_index else None
            if kind != "call":
                return None
            call = self.rec.calls[i]
            if call.end_op > call.first_op:
                return call.end_op - 1 if call.end_op - 1 in self.by_index else None
            if not call.sources:
                return None
            producer = call.sources[0][0]
        return None

    def _origin(self, i: int) -> RecordedOp:
        """The recomputed op whose values op i holds: through views and module calls."""
        op = self.by_index[i]
        for _ in range(len(self.by_index)):
            source = self._op_of(op.sources[0][0]) if op.record.name in LAYOUT_OPS and op.sources else None
            if source is None:
                break
            op = self.by_index[source]
        return op

    def build(self) -> list[BackwardStep]:
        return [self._step(n, g) for n, g in enumerate(self.groups, 1)]

    def _inputs(self, n: int, ops: list[RecordedOp], recompute: bool) -> tuple[dict[tuple[int, Shape], None], dict[int, SavedRead]]:
        """(the gradients step n reads, by source step and shape; the recomputed activations it reads)."""
        grad_in: dict[tuple[int, Shape], None] = {}
        reads: dict[int, SavedRead] = {}
        for op in ops:
            for producer, shape in op.sources:
                i = self._op_of(producer)
                if producer[0] != "input" and i is None:
                    continue  # a saved tensor, not a gradient
                source = 0 if i is None else self.group_of[i]
                if source == n:
                    continue
                if i is None or i not in self.rec.recompute or recompute:
                    grad_in[(source, shape)] = None
                    continue
                # An activation the checkpoint recomputed, read where autograd would have kept it.
                made = self._origin(i)
                if made.record.name not in LAYOUT_OPS:
                    reads.setdefault(-i, SavedRead(_recomputed_step(made), shape, made.record.dtype, 0, recomputed=True))
                elif not made.record.params:  # a view of what the checkpoint kept: its input
                    reads.setdefault(-i, SavedRead("input", shape, made.record.dtype, 0))
        return grad_in, reads

    def _summed(self, ops: list[RecordedOp]) -> str:
        """The name of a step no forward step owns: the forward steps whose gradients it adds
        (up_proj + gate_proj, which both read x; the engine adds them one at a time, so a sum
        of sums names them all), else the output's own (dL/dy)."""
        steps: list[str] = []
        for op in ops:
            for (kind, j), _shape in op.sources:
                if kind == "op":
                    stamp = self.rec.stamps.get(j, "")
                    steps += [stamp] if stamp else self._sums.get(j, [])
            self._sums[op.record.index] = steps = list(dict.fromkeys(steps))
        if len(steps) < 2:
            return "output"
        return " + ".join(steps) if len(steps) <= MAX_SUMMED_NAMES else " + ".join([*steps[: MAX_SUMMED_NAMES - 1], "…"])

    def _step(self, n: int, ops: list[RecordedOp]) -> BackwardStep:
        first = ops[0].record.index
        recompute = first in self.rec.recompute
        grad_in, reads = self._inputs(n, ops, recompute)
        # What later steps read of this step's own values (a view of a weight is the weight).
        handed_on = [op for op in ops if op.record.index in self.consumed and not (op.record.params and op.record.name in LAYOUT_OPS)]
        grad_out = tuple(dict.fromkeys(op.record.output_shapes[0] for op in handed_on))
        if n == self.input_group:
            grad_out += (self.rec.input_grad[2],)
        main = next((op for op in reversed(handed_on) if op.record.name not in LAYOUT_OPS), handed_on[-1] if handed_on else None)
        weight = sum(_weight_grad_flops(op) for op in ops if op.record.index in self.weight_ops)
        for op in ops:
            for storage, read in self.rec.reads.get(op.record.index, ()):
                reads.setdefault(storage, read)
        made = self.step_params.get(n, [])
        stats = [op.stats for op in ops if op.stats is not None and op.record.name not in LAYOUT_OPS]
        dtype = ops[-1].record.dtype
        return BackwardStep(
            of=_recomputed_step(ops[0]) if recompute else self.rec.stamps.get(first, "") or self._summed(ops),
            recompute=recompute,
            grad_in=tuple(shape for _, shape in grad_in),
            grad_out=grad_out,
            inputs_from=tuple(dict.fromkeys(source for source, _ in grad_in)),
            weight_grads=tuple(ParamInfo(name, self.rec.param_grads[name][0]) for name in made),
            params_read=tuple(dict.fromkeys(p for op in ops for p in op.record.params)),
            reads=tuple(reads.values()),
            weight_grad_flops=weight,
            input_grad_flops=sum(op.record.matmul_flops for op in ops) - weight,
            elementwise_flops=sum(op.record.elementwise_flops for op in ops),
            aten_ops=tuple(op.record.op for op in ops),
            op_indices=tuple(op.record.index for op in ops),
            dtype=dtype,
            stats=self.rec.input_grad[1] if n == self.input_group else main.stats if main is not None else None,
            flags=value_flags(stats, dtype, None),
        )


def fold_backward(rec: BackwardRecording) -> tuple[list[BackwardStep], list[ParamGrad]]:
    """The backward's steps, in the order autograd ran them, and every parameter's gradient
    (in registration order) with the step that made it."""
    builder = _Builder(rec)
    steps = builder.build()
    params = []
    for name, (shape, _, stats) in rec.param_grads.items():
        step = builder.param_step.get(name)
        dtype = steps[step - 1].dtype if step else rec.forward.ops[0].record.dtype if rec.forward.ops else "float32"
        flags = value_flags([stats], dtype, None) if stats is not None else ()
        params.append(ParamGrad(name, shape, stats, step, flags, expert_of(name)))
    return steps, params
