"""`--reference`'s answer: which registry FFN the user's module computes, in a few lines of
text and in `--json`'s `reference`."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text

from ffn_cli.i18n import _
from ffn_cli.render.fit import Wide
from ffn_cli.render.literal import visible
from ffn_cli.tracing.result import ReferenceMatch, VariantFit

__all__ = ["reference_data", "reference_view"]


def reference_view(match: ReferenceMatch) -> Group:
    title = Text(_("Against ffn's reference (--reference)"), style="bold")
    name = visible(match.module)
    best = match.best
    notes = [Wide(Text(match.note, style="dim"))] if match.note else []
    if best is None:
        return Group(title, Text(_("your {name} matches no registry FFN: {reason}").format(name=name, reason=match.reason)), *notes)
    lines = [title]
    if match.matched:
        head = _("your {name} is ffn's {variant} FFN: {formula}").format(name=name, variant=best.variant, formula=best.formula)
        lines.append(Text(head, style="green"))
        agree = _("outputs agree to {abs_error} (max |Δ|; {rel_error} of the largest output, {dtype} allows {threshold:g})")
        lines.append(Text(agree.format(**_errors(best, match))))
    else:
        if best.max_rel_error <= FAR:
            head = _("your {name} matches no registry FFN; the closest is {variant}: {formula}")
        else:
            head = _("your {name} matches no registry FFN, nor comes close; the least far is {variant}: {formula}")
        head = head.format(name=name, variant=best.variant, formula=best.formula)
        lines.append(Text(head, style="yellow"))
        part = _(
            "outputs differ by up to {abs_error} ({rel_error} of the largest output, {dtype} allows {threshold:g}); "
            "{share} of them by more than {dtype} allows, the largest at token {token}, feature {feature}: "
            "yours {yours:.6g}, {variant}'s {theirs:.6g}"
        )
        token, feature, yours, theirs = best.worst
        lines.append(
            Text(
                part.format(
                    **_errors(best, match),
                    share=f"{best.parted_fraction:.0%}",
                    token=token,
                    feature=feature,
                    yours=yours,
                    theirs=theirs,
                    variant=best.variant,
                )
            )
        )
    placed = _(", ").join(
        f"{visible(own)} → {_placed(layout, transposed, swapped, _(' (halves swapped)'))}"
        for own, layout, transposed, swapped in best.placed
    )
    lines.append(Text(_("weights placed: {placed}").format(placed=placed), style="dim"))
    return Group(*(Wide(line) for line in lines), *notes)


FAR = 0.1  # off by more than a tenth of the largest output: no variant is close to it
SWAPPED = " (halves swapped)"  # a fused gate/up matrix stored up first


def _placed(layout: str, transposed: bool, swapped: bool, swapped_words: str = SWAPPED) -> str:
    """`up_proj.weight`, `down_proj.weightᵀ` (stored (in, out)), `gate_up_proj.weight (halves swapped)`."""
    return layout + ("ᵀ" if transposed else "") + (swapped_words if swapped else "")


def _errors(best: VariantFit, match: ReferenceMatch) -> dict[str, Any]:
    return {
        "abs_error": f"{best.max_abs_error:.2g}",
        "rel_error": f"{best.max_rel_error:.2g}",
        "dtype": match.dtype,
        "threshold": match.threshold,
    }


def reference_data(match: ReferenceMatch) -> dict[str, Any]:
    best = match.best
    fit = None
    if best is not None:
        fit = {
            "variant": best.variant,
            "formula": best.formula,
            "max_abs_error": best.max_abs_error,
            "max_rel_error": best.max_rel_error,
            "placed": {own: _placed(layout, transposed, swapped) for own, layout, transposed, swapped in best.placed},
            "parted_fraction": best.parted_fraction,
            "worst": {"token": best.worst[0], "feature": best.worst[1], "module": best.worst[2], "reference": best.worst[3]},
        }
    return {
        "variant": best.variant if match.matched and best is not None else None,
        "matched": match.matched,
        "max_abs_error": best.max_abs_error if match.matched and best is not None else None,
        "closest": fit,
        "threshold": match.threshold,
        "layouts_tried": match.tried,
        "reason": match.reason or None,
        **({"note": match.note} if match.note else {}),
    }
