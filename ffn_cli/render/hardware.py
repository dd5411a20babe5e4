"""`ffn hardware`: the GPU table (and this CPU as measured), as a fitted table or JSON."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.hardware import DTYPES, GPU, SOURCES
from ffn_cli.hardware.cpu import MeasuredCPU
from ffn_cli.hardware.gpus import DRIVER_SOURCES
from ffn_cli.i18n import N_, _
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.literal import literal

__all__ = ["cpu_data", "gpu_data", "hardware_data", "hardware_view"]

# Columns that leave a narrow terminal first: fp64, then fp16 (bf16's twin but on V100/T4), then tf32.
_DROP = {"fp64": 1, "fp16": 2, "tf32": 3, "int8": 4}
_LINK_DROP = 5  # after the rates a reader can do without; fp32, bf16, fp8 and fp4 never leave
NOTE = N_(
    "TFLOP/s (int8: TOP/s), DENSE: a datasheet's 'with sparsity' figure is 2:4 structured sparsity, "
    "which a dense GEMM never uses, so it is halved; — where the source gives no rate. memory GB and "
    "bandwidth GB/s are 10⁹ bytes; link: GB/s GPU to GPU, both directions, over the link named under the GPU; "
    "driver MiB (2²⁰ bytes) is what nvidia-smi reports. Sources: docs/hardware.md."
)


def _rate(value: float | None) -> str:
    # The source's own figure, whole (1670.5 stays 1670.5), without thousands separators.
    return "—" if value is None else f"{value}".removesuffix(".0")


def gpu_data(gpu: GPU) -> dict[str, Any]:
    title, where = SOURCES[gpu.source]
    return {
        "key": gpu.key,
        "name": gpu.full_name,
        "aliases": list(gpu.aliases),
        "memory_gb": gpu.memory_gb,
        "driver_memory_mib": gpu.driver_mib,
        "memory_bytes": gpu.memory_bytes,
        "memory_from": "driver" if gpu.memory_from_driver else "datasheet",
        **({"driver_source": dict(zip(("what", "where"), DRIVER_SOURCES[gpu.driver_source], strict=True))} if gpu.driver_source else {}),
        "bandwidth_gbps": gpu.bandwidth_gbps,
        "link_gbps": gpu.link_gbps,
        "link": gpu.link or None,
        "dense_tflops": {d: gpu.tflops.get(d) for d in DTYPES},
        "ridge_flop_per_byte": {d: gpu.ridge(d) for d in DTYPES if d in gpu.tflops},
        "source": {"key": gpu.source, "title": title, "where": where},
        "notes": list(gpu.notes),
    }


def cpu_data(cpu: MeasuredCPU) -> dict[str, Any]:
    return {
        "name": cpu.name,
        "threads": cpu.threads,
        "memory_bytes": cpu.memory_bytes,
        "dtype": cpu.dtype,
        "gemm_n": cpu.gemm_n,
        "gemm_tflops": cpu.gemm_tflops,
        "copy_gbps": cpu.copy_gbps,
        "ridge_flop_per_byte": cpu.ridge_flop_per_byte,
        "source": f"measured here: the best {cpu.dtype} GEMM call over three shapes of {cpu.gemm_n}³ multiply-adds, and a float32 copy",
    }


def hardware_data(gpus: list[GPU], cpu: MeasuredCPU | None) -> dict[str, Any]:
    return {"gpus": [gpu_data(g) for g in gpus], "cpu": None if cpu is None else cpu_data(cpu), "note": NOTE}


def _gpu_table(gpus: list[GPU]) -> FitTable:
    # "link": GPU to GPU, what --tp and --ep communicate over; the roofline prices comm at it.
    columns = [Col(_("gpu"), "text", floor=17), Col("GB"), Col("GB/s"), Col(_("link"), drop=_LINK_DROP)]
    columns += [Col(d, drop=_DROP.get(d)) for d in DTYPES]
    rows: list[Any] = []
    for g in gpus:
        # The memory a process can allocate, as the driver reports it, under the datasheet's GB.
        driver = "" if g.driver_mib is None else "\n[dim]" + _("driver: {mib} MiB").format(mib=f"{g.driver_mib:,}") + "[/]"
        link = "" if g.link_gbps is None else "\n[dim]" + _(g.link) + "[/]"
        rows.append(
            [
                f"{g.key}\n[dim]{literal(g.label)}[/]{driver}{link}",
                f"{g.memory_gb:,.0f}",
                f"{g.bandwidth_gbps:,.0f}",
                "—" if g.link_gbps is None else f"{g.link_gbps:,.0f}",
                *(_rate(g.tflops.get(d)) for d in DTYPES),
            ]
        )
    return FitTable(_("GPUs: dense peak TFLOP/s per dtype (--gpu KEY)"), columns, rows, caption=Text(_(NOTE), style="dim"))


def _cpu_table(cpu: MeasuredCPU) -> FitTable:
    memory = "—" if cpu.memory_bytes is None else f"{cpu.memory_bytes / 1e9:,.0f}"
    threads = _("{n} threads").format(n=cpu.threads)
    rows = [[f"{cpu.name}\n[dim]{threads}[/]", memory, f"{cpu.copy_gbps:,.3g}", cpu.dtype, f"{cpu.gemm_tflops:.3g}"]]
    columns = [Col(_("this CPU"), "text"), Col("GB"), Col("GB/s"), Col("dtype", "fixed"), Col("TFLOP/s")]
    caption = Text(
        _(
            "measured here: the best {dtype} GEMM call over three shapes of {n}³ multiply-adds, and the best float32 copy (read + write)"
        ).format(dtype=cpu.dtype, n=cpu.gemm_n),
        style="dim",
    )
    return FitTable(_("this machine, as measured"), columns, rows, caption=caption)


def hardware_view(gpus: list[GPU], cpu: MeasuredCPU | None) -> RenderableType:
    parts: list[RenderableType] = [_gpu_table(gpus)]
    if cpu is not None:
        parts += [Text(""), _cpu_table(cpu)]
    else:
        parts.append(Text(_("this CPU: ffn hardware --measure-cpu measures its GEMM rate and copy bandwidth"), style="dim"))
    return Group(*parts)


def hardware_markdown(gpus: list[GPU]) -> str:
    """The table as docs/hardware.md prints it: one row per GPU with its source key."""
    head = ["key", "GPU", "memory GB", "driver MiB", "GB/s", "GPU↔GPU GB/s", *DTYPES, "source"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for g in gpus:
        cells = [
            f"`{g.key}`",
            g.full_name,
            f"{g.memory_gb:,.0f}",
            "—" if g.driver_mib is None else f"{g.driver_mib:,} (`{g.driver_source}`)",
            f"{g.bandwidth_gbps:,.0f}",
            "—" if g.link_gbps is None else f"{g.link_gbps:,.0f} ({g.link})",
            *(_rate(g.tflops.get(d)) for d in DTYPES),
            f"`{g.source}`",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def sources_markdown() -> str:
    lines = ["| key | document | where |", "|---|---|---|"]
    lines += [f"| `{key}` | {title} | {where} |" for key, (title, where) in SOURCES.items()]
    return "\n".join(lines) + "\n"


def driver_sources_markdown() -> str:
    """Where each driver-reported memory total comes from."""
    lines = ["| key | what it shows | where |", "|---|---|---|"]
    lines += [f"| `{key}` | {what} | {where} |" for key, (what, where) in DRIVER_SOURCES.items()]
    return "\n".join(lines) + "\n"
