"""What `ffn hardware --measure` measured, as a table and as JSON, and where it was saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.hardware.profile import DeviceProfile
from ffn_cli.i18n import _
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.literal import visible

__all__ = ["profile_data", "profile_view"]


def profile_data(profile: DeviceProfile, path: Path) -> dict[str, Any]:
    return {
        "path": str(path),
        "peak_tflops": {d: profile.peak_tflops(d) for d in profile.dtypes},
        "gemm_points": {d: len(points) for d, points in profile.gemm.items()},
        **profile.to_dict(),
    }


def profile_view(profile: DeviceProfile, path: Path) -> RenderableType:
    columns = [Col(_("measured"), "fixed"), Col(_("value")), Col(_("how"), "text", drop=1)]
    rows: list[Any] = []
    for dtype, points in profile.gemm.items():
        best = max(points, key=lambda p: p.tflops)
        shape = f"{best.m}×{best.n}×{best.k}"
        how = _("best of {n} shapes (M×N×K), cold cache; best at {shape}").format(n=len(points), shape=shape)
        rows.append([_("GEMM {dtype}").format(dtype=dtype), f"{best.tflops * 1e3:,.1f} GFLOP/s", how])
    rows.append([_("copy"), f"{profile.copy_gbps:,.1f} GB/s", _("best call, read + write")])
    ops = sorted({op for d in profile.elementwise.values() for op in d})
    rows.append([_("elementwise"), _("{n} ops").format(n=len(ops)), ", ".join(ops)])
    rows.append([_("one op call"), f"{profile.op_call_s * 1e6:,.2f} µs", _("a one-element multiply")])
    if profile.ffn_call_s:
        low, high = min(profile.ffn_call_s.values()), max(profile.ffn_call_s.values())
        rows.append(
            [
                _("one FFN call"),
                f"{low * 1e6:,.1f}–{high * 1e6:,.1f} µs",
                _("{n} variants, beyond their ops").format(n=len(profile.ffn_call_s)),
            ]
        )
    spreads = sorted(profile.spreads())
    if profile.passes > 1 and spreads:
        median, worst = spreads[len(spreads) // 2], spreads[-1]
        rows.append(
            [
                _("passes"),
                str(profile.passes),
                _("each point at its fastest pass; its slowest pass {median:.0%} slower (median), at most {worst:.0%}").format(
                    median=median, worst=worst
                ),
            ]
        )
    title = Text(
        _("profile '{name}' of {device} ({threads} threads, torch {torch}), measured in {s:.0f} s").format(
            name=profile.name,
            device=visible(profile.device_name),
            threads=profile.threads,
            torch=profile.torch_version,
            s=profile.seconds_taken,
        )
    )
    saved = Text(_("saved to {path}; --gpu {name} uses it").format(path=visible(path), name=profile.name), style="dim")
    return Group(FitTable(title, columns, rows), saved)
