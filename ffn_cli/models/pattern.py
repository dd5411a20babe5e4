"""A model's layers in a few words: `3 × sliding 4,096 + 1 × full, × 8`.

The layers of one model can differ (sliding-window and full attention, and in hybrids linear
attention or state-space mixers beside attention); listed one by one they fill a screen. This
writes the shortest repeating unit as runs, how often it repeats, and what is left over.
Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["layer_pattern"]

# A unit of more runs than this is no pattern a reader takes in: the layers are counted instead.
_MAX_RUNS = 6


def _runs(labels: Sequence[str]) -> list[tuple[int, str]]:
    runs: list[tuple[int, str]] = []
    for label in labels:
        if runs and runs[-1][1] == label:
            runs[-1] = (runs[-1][0] + 1, label)
        else:
            runs.append((1, label))
    return runs


def _times(n: int, label: str) -> str:
    """'9 × full', '9 × (Mamba-2 + attention)': a label of two parts in brackets, not read as two runs."""
    return f"{n} × ({label})" if " + " in label else f"{n} × {label}"


def _text(runs: list[tuple[int, str]]) -> str:
    return " + ".join(_times(n, label) for n, label in runs)


def layer_pattern(labels: Sequence[str]) -> str:
    """'3 × sliding + 1 × full, × 8' for 32 layers of that unit; a leftover unit's head follows
    (', then 2 × sliding'); one kind is '32 × full'; no short unit, the counts of each kind."""
    n = len(labels)
    if n == 0:
        return ""
    period = next(p for p in range(1, n + 1) if all(labels[i] == labels[i % p] for i in range(n)))
    unit = _runs(labels[:period])
    if len(unit) > _MAX_RUNS:
        counts: dict[str, int] = {}
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
        return " + ".join(_times(c, label) for label, c in counts.items())
    repeats, rest = divmod(n, period)
    if repeats == 1:  # no unit repeats: the runs themselves ('1 × a + 2 × b', not '…, × 1, then …')
        return _text(_runs(labels))
    if len(unit) == 1:
        return _times(n, unit[0][1])
    text = f"{_text(unit)}, × {repeats}"
    return text + (f", then {_text(_runs(labels[repeats * period :]))}" if rest else "")
