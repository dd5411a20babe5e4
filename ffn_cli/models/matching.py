"""Where `--match-params` cannot come close: d_ff moves in steps of --multiple-of, and for a
wide step (or a MoE, whose every expert grows with one step) the nearest count can be far
from the target. Each miss names a finer --multiple-of that comes within the tolerance."""

from __future__ import annotations

from dataclasses import dataclass

from ffn_cli.accounting import total_params
from ffn_cli.i18n import N_, Message
from ffn_cli.models.comparison import Comparison, match_d_ff

__all__ = ["MISS_TOLERANCE", "MatchMiss", "match_misses"]

MISS_TOLERANCE = 0.01  # a match further off than 1 % is reported
_FINER = (128, 64, 32, 16, 8, 4, 2, 1)


@dataclass(frozen=True)
class MatchMiss:
    """A variant whose matched count is off by `delta`; `multiple_of` (when some finer step
    does) would bring it to `finer_delta` at d_ff `finer_d_ff`."""

    variant: str
    delta: float
    multiple_of: int | None
    finer_d_ff: int | None
    finer_delta: float | None

    def message(self, given: int) -> str:
        """The warning, a Message: English in --json, the reader's language when printed."""
        head = Message(
            N_("--match-params: {variant} is {delta} % off the target with --multiple-of {given}"),
            variant=self.variant,
            delta=f"{100 * self.delta:+.2f}",
            given=given,
        )
        if self.multiple_of is None:
            return Message.join(head, Message(N_("; no finer --multiple-of comes within 1 %")))
        finer = Message(
            N_("; --multiple-of {multiple} reaches {delta} % (d_ff {d_ff})"),
            multiple=self.multiple_of,
            delta=f"{100 * (self.finer_delta or 0):+.2f}",
            d_ff=f"{self.finer_d_ff:,}",
        )
        return Message.join(head, finer)


def match_misses(comparison: Comparison, multiple_of: int) -> list[MatchMiss]:
    target = comparison.target_params
    if target is None:
        return []
    misses = []
    for report in comparison.reports[1:]:
        delta = comparison.delta(report) or 0.0
        if abs(delta) <= MISS_TOLERANCE:
            continue
        found: tuple[int, int, float] | None = None
        for step in (m for m in _FINER if m < multiple_of):
            spec = match_d_ff(report.spec, target, step)
            finer = total_params(spec) / target - 1
            if abs(finer) <= MISS_TOLERANCE:
                found = (step, spec.hidden, finer)
                break
        misses.append(MatchMiss(report.spec.variant, delta, *(found or (None, None, None))))
    return misses
