"""The cases of a sweep, counted before any is made and made one at a time.

A sweep is the product of its lists, so a few long lists make millions of cases: they are counted
by arithmetic first and refused above a cap, then generated lazily (never held in a list).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ffn_cli.benchmark.case import Case
from ffn_cli.benchmark.implementations import Impl
from ffn_cli.errors import FFNError
from ffn_cli.spec import FFNSpec, check_int

__all__ = ["DEFAULT_MAX_CASES", "MAX_CASES_LIMIT", "SweepPlan", "SweepTooLarge"]

# At least half a second of timing per case: 1,000 cases are a quarter of an hour or more.
DEFAULT_MAX_CASES = 1_000
MAX_CASES_LIMIT = 10_000_000


class SweepTooLarge(FFNError):
    """More cases than the cap; the message gives the count, how it arises, and the cap."""

    def __init__(self, count: int, breakdown: str, cap: int) -> None:
        super().__init__("max_cases", cap, "")
        self.args = (
            f"the sweep has {count:,} cases ({breakdown}), more than the cap of {cap:,}: "
            "shorten the comma lists, or raise the cap with --max-cases",
        )

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class SweepPlan:
    """Every (dtype, spec, seq_len, impl[, checkpoint]) case, in that order, without building them."""

    specs: Sequence[FFNSpec]
    impls: Sequence[Impl]
    dtypes: Sequence[str]
    batch: int
    seq_lens: Sequence[int]
    checkpoint: bool

    @staticmethod
    def _runs(spec: FFNSpec, impl: Impl) -> bool:
        return not impl.fused or "fused_gate_up" in spec.info.options_used(spec)

    @property
    def count(self) -> int:
        pairs = sum(self._runs(s, i) for s in self.specs for i in self.impls)
        return pairs * len(self.dtypes) * len(self.seq_lens) * (2 if self.checkpoint else 1)

    @property
    def skipped(self) -> list[str]:
        """Why some (spec, impl) pairs have no case; each reason once."""
        return list(
            dict.fromkeys(
                f"{s.variant} {i.name}: the fused gate/up layout needs a gated variant"
                for s in self.specs
                for i in self.impls
                if not self._runs(s, i)
            )
        )

    def check_size(self, max_cases: int) -> None:
        check_int("max_cases", max_cases, maximum=MAX_CASES_LIMIT)
        count = self.count
        if count > max_cases:
            raise SweepTooLarge(count, self._breakdown(count), max_cases)

    def _breakdown(self, count: int) -> str:
        """'1 variant × 4 d_model': each list's length, and the pairs that do not run."""
        variants, widths = len({s.variant for s in self.specs}), len({s.d_model for s in self.specs})
        ffns = [(variants, "variant"), (widths, "d_model")] if variants * widths == len(self.specs) else [(len(self.specs), "FFN")]
        axes = [*ffns, (len(self.seq_lens), "seq_len"), (len(self.dtypes), "dtype"), (len(self.impls), "impl")]
        axes.append((2 if self.checkpoint else 1, "checkpoint"))
        text = " × ".join(f"{n:,} {what}" for n, what in axes if n > 1) or "1"
        product = 1
        for n, _what in axes:
            product *= n
        if product != count:
            text += f", less {product - count:,} the fused layout skips"
        return text

    def cases(self) -> Iterator[Case]:
        for dtype in self.dtypes:
            for spec in self.specs:
                for seq_len in self.seq_lens:
                    for impl in self.impls:
                        if not self._runs(spec, impl):
                            continue
                        for ckpt in (False, True) if self.checkpoint else (False,):
                            yield Case(spec, impl, dtype, self.batch, seq_len, ckpt)
