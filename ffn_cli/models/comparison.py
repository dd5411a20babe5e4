"""Several variants side by side beside one attention, optionally sized to one parameter count
(--match-params). Apart from models/layer.py: one FFN's report never loads it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ffn_cli.accounting import total_params
from ffn_cli.attention import AttentionSpec
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.layer import FFNReport, ffn_report
from ffn_cli.spec import MAX_DIM, FFNSpec

__all__ = ["Comparison", "compare_variants", "match_d_ff"]


def match_d_ff(spec: FFNSpec, target_params: int, multiple_of: int) -> FFNSpec:
    """`spec` with the d_ff whose parameter count is nearest `target_params`, rounded to a
    multiple of `multiple_of` (at least one multiple).

    A spec's count is affine in d_ff (a·d_ff + c, shared experts included when their width
    follows d_ff), so two evaluations of the accounting give a and c: for a gated FFN without
    biases this is the 2/3 rule, d_ff = target / 3d, where a dense one has target / 2d.
    """
    one, two = total_params(spec.with_(d_ff=1)), total_params(spec.with_(d_ff=2))
    slope, fixed = two - one, 2 * one - two
    exact = (target_params - fixed) / slope
    d_ff = max(multiple_of, int(exact / multiple_of + 0.5) * multiple_of)
    if d_ff > MAX_DIM:
        raise FFNError(
            "match_params",
            target_params,
            _("needs d_ff {d_ff:,} for {variant}, above the limit {max_dim:,}").format(d_ff=d_ff, variant=spec.variant, max_dim=MAX_DIM),
        )
    return spec.with_(d_ff=d_ff)


@dataclass(frozen=True)
class Comparison:
    """Variants side by side beside one attention; `target_params` is set under --match-params."""

    reports: tuple[FFNReport, ...]
    target_params: int | None = None

    def delta(self, report: FFNReport) -> float | None:
        """Relative distance of a report's count from the matched target."""
        if self.target_params is None:
            return None
        return report.total_params / self.target_params - 1


def compare_variants(
    specs: Sequence[FFNSpec], attention: AttentionSpec, dtype: str = "float32", *, match_params: bool = False, multiple_of: int = 256
) -> Comparison:
    """One report per spec; with match_params every spec after the first is resized to the first's count."""
    if not specs:
        raise FFNError("variant", "", _("give at least one variant"))
    target = total_params(specs[0]) if match_params else None
    sized = [specs[0], *(match_d_ff(s, target, multiple_of) for s in specs[1:])] if target is not None else list(specs)
    return Comparison(tuple(ffn_report(s, attention, dtype) for s in sized), target)
