"""Weights per GPU under --tp / --ep, and with --gpu the whole of one GPU's bytes against the
memory its driver reports: fits or not, what is free, the largest batch and longest context."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ffn_cli.costs.gpu_memory import SEARCH_LIMIT, GPUMemory
from ffn_cli.costs.rank_memory import RankMemory
from ffn_cli.costs.weights import shipped_words
from ffn_cli.hardware import GPU
from ffn_cli.hardware.gpus import DRIVER_SOURCES, SOURCES
from ffn_cli.hardware.reserve import RESERVE_SOURCE
from ffn_cli.i18n import N_, Message, _, ngettext, shown
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_bytes
from ffn_cli.render.literal import literal
from ffn_cli.services.results import FitsAt

__all__ = ["capacity_data", "fewest_gpus_line", "rank_memory_data", "rank_memory_view"]

NOT_COUNTED = N_(
    "weights only: the KV cache, activations, CUDA context and allocator slack, and communication buffers are not "
    "counted, so a model that fits here can still run out of memory"
)
COUNTED = N_(
    "counted: the weights as stored; the KV cache of this GPU's sequences at the context (its share of the KV heads; "
    "MLA's latent whole; a mixer's state split over --tp{whole}); activations: the pass's tokens × ({residual} + the widest "
    "intermediate of a layer on this GPU) and a float32 logits row per sequence; the runtime reserve as vLLM measured "
    "it. Not counted: {context} graphs, fragmentation beyond the reserve"
)
# A layer's input and output on the residual stream: one copy of the hidden state, or the
# hyper-connections' copies (DeepSeek-V4's hc_mult).
RESIDUAL = N_("2 × d_model")
RESIDUAL_COPIES = N_("2 × {n} residual-stream copies × d_model")
_PHASE_WORDS = {"prefill": N_("prefill"), "decode": N_("decode")}
# hardware/reserve.py's words for what the reserve holds (that package translates nothing)
_RESERVE_WORDS = {
    "CUDA context and allocator": N_("CUDA context and allocator"),
    "CUDA context, allocator, NCCL buffers": N_("CUDA context, allocator, NCCL buffers"),
    "HIP context and allocator": N_("HIP context and allocator"),
    "HIP context, allocator, RCCL buffers": N_("HIP context, allocator, RCCL buffers"),
}


# A mixer over the residual stream is on every GPU whole (Inkling's short convolutions).
WHOLE_MIXER = N_(", one over the residual stream whole")


def _counted(fit: GPUMemory, *, translate: bool) -> str:
    """What the memory per GPU counts, in words (English for --json)."""
    say = _ if translate else str
    whole = say(WHOLE_MIXER) if fit.whole_mixer else ""
    return say(COUNTED).format(context=fit.reserve.context, residual=_residual(fit, translate=translate), whole=whole)


def _residual(fit: GPUMemory, *, translate: bool) -> str:
    """The residual stream's part of the activations' width, in words (English for --json)."""
    say = _ if translate else str
    return say(RESIDUAL) if fit.residual_copies == 1 else say(RESIDUAL_COPIES).format(n=fit.residual_copies)


def capacity_data(gpu: GPU) -> dict[str, Any]:
    """The GPU's memory as the fit reads it: the driver's total, or the datasheet's when no source gives one."""
    source: dict[str, Any]
    if gpu.memory_from_driver:
        what, where = DRIVER_SOURCES[gpu.driver_source]
        source = {"kind": "driver", "mib": gpu.driver_mib, "what": what, "where": where}
    else:
        what, where = SOURCES[gpu.source]
        source = {"kind": "datasheet", "gb": gpu.memory_gb, "what": what, "where": where}
    return {"gpu_memory_bytes": gpu.memory_bytes, "gpu_memory_gb_datasheet": gpu.memory_gb, "gpu_memory_source": source}


def _fit_data(fit: GPUMemory) -> dict[str, Any]:
    return {
        "gpu": fit.gpu.key,
        **capacity_data(fit.gpu),
        "phase": fit.case.phase,
        "batch": fit.case.batch,
        "context": fit.case.context,
        "sequences_per_gpu": fit.layout.sequences(fit.case.batch),
        "kv_cache_bytes": fit.kv_cache_bytes,
        "kv_cache_at_its_most": fit.peaks,  # the most on the way to the context (a compressed layer's), not at it
        "activation_bytes": fit.activation_bytes,
        "reserve_bytes": fit.reserve.bytes_,
        "reserve_source": {"what": RESERVE_SOURCE[0], "where": RESERVE_SOURCE[1]},
        "total_bytes": fit.total_bytes,
        "fits": fit.fits,  # the memory's verdict; past_context_limit says whether the model runs the context at all
        "past_context_limit": fit.past_limit,
        "free_bytes": fit.free_bytes,
        "max_batch": None if fit.past_limit else fit.max_batch,  # no batch runs a context past the model's limit
        "max_context": fit.max_context,
        "context_limit": fit.context_limit,
        "search_limit": SEARCH_LIMIT,  # max_batch and max_context reach it where nothing stops them sooner
        "counted": _counted(fit, translate=False),
    }


def rank_memory_data(r: RankMemory, fit: GPUMemory | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "tp": r.tp,
        "ep": r.ep,
        "gpus": r.gpus,
        "expert_bytes": r.expert_bytes,
        "split_bytes": r.split_bytes,
        "copied_kv_projection_bytes": r.copied_kv_bytes,
        "whole_latent_projection_bytes": r.whole_latent_bytes,
        "replicated_bytes": r.replicated_bytes,
        "replicated": list(r.replicated),
        "vision_bytes": r.vision_bytes,
        "per_gpu_bytes": r.per_gpu_bytes,
        "checkpoint_bytes": r.total_bytes,  # in the format --weights asked for, where it did (weights_asked)
        "not_built": list(r.not_built),  # the config's parts the model as built holds none of: not in checkpoint_bytes
        "weights_asked": r.asked or None,
    }
    return data | (_fit_data(fit) if fit is not None else {"not_counted": NOT_COUNTED})


def fewest_gpus_line(fits_at: FitsAt | None, past_limit: int | None = None) -> Text:
    """Under a "does not fit" verdict: the fewest GPUs of the kind that hold the same pass, one
    layout or copies of one sharing the batch; none where the context is past the model's limit
    (`past_limit`), which no layout runs."""
    if past_limit is not None:
        return Text(_("no layout runs this pass: its context is past the model's {limit}").format(limit=f"{past_limit:,}"), style="yellow")
    if fits_at is None:
        return Text(
            _("no layout tried (up to 64 GPUs: 1, 2, 4 or a multiple of 8; and the one asked) holds one sequence of this pass"),
            style="yellow",
        )
    if fits_at.copies == 1:
        said = _(
            "fits at --tp {tp} --ep {ep}: {gpus} GPUs, the fewest of the layouts tried (up to 64 GPUs a copy: 1, 2, 4 or a multiple of 8)"
        )
    else:
        said = _("fits as {copies} copies of --tp {tp} --ep {ep}, the batch's sequences shared among them: {gpus} GPUs, the fewest "
                 "of the layouts tried (up to 64 GPUs a copy: 1, 2, 4 or a multiple of 8)")  # fmt: skip
    return Text(said.format(gpus=f"{fits_at.gpus:,}", tp=fits_at.tp, ep=fits_at.ep, copies=f"{fits_at.copies:,}"), style="yellow")


def _capacity_label(gpu: GPU) -> str:
    if gpu.memory_from_driver:
        return _("{gpu}: {mib} MiB (driver)").format(gpu=literal(gpu.label), mib=f"{gpu.driver_mib:,}")
    return _("{gpu}: {gb} GB (datasheet; no driver figure)").format(gpu=literal(gpu.label), gb=f"{gpu.memory_gb:g}")


def _fit_rows(fit: GPUMemory) -> list[Any]:
    c = fit.case
    seqs = fit.layout.sequences(c.batch)
    kv = _("KV cache: {n} × {context} tokens").format(n=f"{seqs:,}", context=f"{c.context:,}")
    if fit.peaks:  # the decode-state table's figure is at the context; this one the most on the way
        kv = _("KV cache: {n} × {context} tokens, at its most").format(n=f"{seqs:,}", context=f"{c.context:,}")
    if not fit.attends:  # a recurrence keeps a state a sequence, whatever the context
        kv = ngettext("recurrent state: {n} sequence", "recurrent state: {n} sequences", seqs).format(n=f"{seqs:,}")
    if fit.layout.dp > 1:  # --ep past --tp: the attention is copied, each copy keeping its share of the batch
        kv += _(" (its share of the batch's {batch}: --ep {ep} over --tp {tp} is {dp} copies of the attention)").format(
            batch=f"{c.batch:,}", ep=fit.layout.ep, tp=fit.layout.tp, dp=f"{fit.layout.dp:,}"
        )
    acts = _("activations ({phase})").format(phase=_(_PHASE_WORDS[c.phase]))
    share = f"{100 * fit.total_bytes / fit.capacity_bytes:,.1f}%"
    if fit.fits and fit.past_limit:  # memory holds it, the model does not run it
        verdict = _("fits in memory ({share} used, {free} free), at a context the model does not run").format(
            share=share, free=fmt_bytes(fit.free_bytes)
        )
    elif fit.fits:
        verdict = _("fits: {share} used, {free} free").format(share=share, free=fmt_bytes(fit.free_bytes))
    else:
        verdict = _("[bold]does not fit[/]: {share} of it, {over} over").format(share=share, over=fmt_bytes(-fit.free_bytes))
    longest = _("longest context at batch {batch}").format(batch=f"{c.batch:,}")
    most = f"{fit.max_context:,}"
    if fit.max_context == fit.context_limit:
        longest = _("longest context at batch {batch}: the model's limit").format(batch=f"{c.batch:,}")
    elif fit.max_context >= SEARCH_LIMIT:  # every layer's state stops growing (windows, recurrences) and no limit is named
        longest = _("longest context at batch {batch}: memory sets no limit").format(batch=f"{c.batch:,}")
        most = f"≥ {SEARCH_LIMIT:,}"
    past = []
    if fit.past_limit:
        past = [
            [
                _("[yellow]context {context} is past the model's {limit}[/]").format(
                    context=f"{c.context:,}", limit=f"{fit.context_limit:,}"
                ),
                "",
            ]
        ]
    return [
        [kv, fmt_bytes(fit.kv_cache_bytes)],
        [acts, fmt_bytes(fit.activation_bytes)],
        [
            _("runtime reserve: {what}").format(what=_(_RESERVE_WORDS.get(fit.reserve.what, fit.reserve.what))),
            fmt_bytes(fit.reserve.bytes_),
        ],
        None,
        ["[bold]" + _("total per GPU") + "[/]", f"[bold]{fmt_bytes(fit.total_bytes)}[/]"],
        [_capacity_label(fit.gpu), fmt_bytes(fit.capacity_bytes)],
        [verdict, ""],
        [
            _("largest batch at context {context}").format(context=f"{c.context:,}"),
            # past the model's limit no batch runs, whatever memory holds
            "—" if fit.past_limit else f"{fit.max_batch:,}" if fit.max_batch else _("none fits"),
        ],
        [longest, most if fit.max_context else _("none fits")],
        *past,
    ]


def rank_memory_view(r: RankMemory, fit: GPUMemory | None = None) -> FitTable:
    experts = _("routed experts ÷ {ranks}").format(ranks=r.gpus)
    rows: list[Any] = []
    if fit is not None and r.gpus == 1:  # nothing is split: the checkpoint whole
        rows.append(["[bold]" + _("weights") + "[/]", f"[bold]{fmt_bytes(r.per_gpu_bytes)}[/]"])
    else:
        if r.expert_bytes:  # a dense model has none: its matrices are one row
            rows.append([experts, fmt_bytes(r.expert_bytes)])
        rows += [
            # "other" beside the routed experts' row; a model without them splits all its matrices so
            [(_("other matrices ÷ {ranks}") if r.expert_bytes else _("matrices ÷ {ranks}")).format(ranks=r.tp), fmt_bytes(r.split_bytes)],
            *([[_("key and value projections: one KV head's, copied"), fmt_bytes(r.copied_kv_bytes)]] if r.copied_kv_bytes else []),
            *([[_("projections to a latent or a shared head, whole"), fmt_bytes(r.whole_latent_bytes)]] if r.whole_latent_bytes else []),
            [
                _("replicated: {what}").format(what=Message.listed([Message(w) for w in r.replicated]).shown()),
                fmt_bytes(r.replicated_bytes),
            ],
            None,
            ["[bold]" + _("weights per GPU") + "[/]", f"[bold]{fmt_bytes(r.per_gpu_bytes)}[/]"],
        ]
    checkpoint = fmt_bytes(r.total_bytes)
    if r.shipped_parts:  # more than the summary's weights: say what
        parts = shown(shipped_words(r.shipped_parts))
        checkpoint = _("{bytes}, with {parts}").format(bytes=checkpoint, parts=parts)
    if r.not_built:  # less than the checkpoint's files: the parts the model as built leaves out
        checkpoint = _("{bytes}, without its {keys}: not built").format(bytes=checkpoint, keys=", ".join(r.not_built))
    # the weights whole: the checkpoint as it ships, or the model in the format --weights asked
    whole = (
        _("in --weights {format}: {bytes}").format(format=r.asked, bytes=checkpoint)
        if r.asked
        else _("checkpoint {bytes}").format(bytes=checkpoint)
    )
    if fit is None:
        title = _("per GPU: --tp {tp} --ep {ep} on {gpus} GPUs ({whole})").format(tp=r.tp, ep=r.ep, gpus=r.gpus, whole=whole)
        caption = _(NOT_COUNTED)
    else:
        rows += _fit_rows(fit)
        if r.gpus == 1:
            title = _("memory of one GPU ({whole})").format(whole=whole)
        else:
            title = _("memory per GPU: --tp {tp} --ep {ep} on {gpus} GPUs ({whole})").format(tp=r.tp, ep=r.ep, gpus=r.gpus, whole=whole)
        caption = _counted(fit, translate=True)
    columns = [Col(_("weights"), "text"), Col(_("bytes"))]
    if fit is not None:
        columns[0] = Col(_("per GPU"), "text")
    return FitTable(Text(title), columns, rows, caption=Text(caption, style="dim"))
