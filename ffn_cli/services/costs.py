"""What `ffn params` adds for a whole model when asked what it costs: the weights as stored
(--weights, --quantize, or the checkpoint's quantization_config), per-GPU memory under
--tp / --ep, and the roofline of a forward pass on --gpu, as data (services/results.py's
ModelCosts): render/presenters/costs.py shows it, the command draws --plot. Pure Python."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ffn_cli.accounting import DTYPE_BYTES
from ffn_cli.configs.built import TOWER_RUNS_ON, described_towers
from ffn_cli.costs.decode_state import decode_state
from ffn_cli.costs.gpu_memory import MemoryCase, gpu_memory
from ffn_cli.costs.parallel_layout import Layout, check_model_parallel
from ffn_cli.costs.rank_memory import rank_memory
from ffn_cli.costs.roofline.model_pass import PassCase, Phase, backward_cost, pass_cost
from ffn_cli.costs.roofline.one_ffn import model_forecasts
from ffn_cli.costs.roofline.per_gpu import gpu_pass
from ffn_cli.costs.shipped import mtp_key, mtp_layers, shipped_tensors, unshipped_mtp_modules, unsized_mtp_layers
from ffn_cli.costs.weights import (
    check_scope,
    checkpoint,
    held_roles,
    plan_from_config,
    plan_from_options,
    quantization_config,
    towers_words,
)
from ffn_cli.errors import FFNError
from ffn_cli.hardware.dtypes import TABLE_DTYPE
from ffn_cli.hardware.formats import FORMATS
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.mixers import UNSIZED_SOURCE
from ffn_cli.models.seq_flops import model_stack
from ffn_cli.outputs import check_plot_file
from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.requests.lists import comma_text
from ffn_cli.requests.view import options_view
from ffn_cli.services.results import DecodeState, FitsAt, ModelCosts, Roofline, StoredWeights
from ffn_cli.spec import check_int

if TYPE_CHECKING:
    from ffn_cli.models.spec import ModelSpec
    from ffn_cli.requests.params import ParamsRequest

__all__ = ["CostOptions", "cost_options", "missing_rate", "model_costs", "pass_cases"]

DEFAULT_SEQ_LEN = 4096
# The --dtype values a whole model's --gpu takes: those a checkpoint format stores (_plan).
WEIGHT_DTYPES = ("float32", "bfloat16", "float16", "float8")


@dataclass(frozen=True)
class CostOptions:
    """What a model's costs are asked by, read off a checked ParamsRequest (cost_options): what
    does not go together is refused there, by requests/params.py's rules."""

    weights: str | None = None
    quantize: str | None = None
    gpu: str | None = None
    batch: tuple[int, ...] | None = None
    tokens: int | None = None
    phase: str = "prefill"
    seq_len: tuple[int, ...] | None = None
    tp: int = 1
    ep: int = 1
    backward: bool = False
    plot: str | None = None
    mtp: bool = True  # count the multi-token-prediction layers the checkpoint ships


def cost_options(request: ParamsRequest) -> CostOptions:
    """The cost options of a whole model, or of one FFN on a GPU, read off the request by name
    (requests/view.py): with --gpu, --seq-len sizes the pass; --no-mtp leaves the MTP layers out."""
    seq_len = request.seq_len if request.gpu is not None else None
    return options_view(CostOptions, request, seq_len=seq_len, mtp=not request.no_mtp)


def _plan(loaded: Any, opts: CostOptions, dtype: str) -> tuple[Any, str]:
    rest = TABLE_DTYPE.get(dtype, "bf16") if dtype != "float8" else "bf16"
    if rest not in FORMATS and (opts.weights is not None or quantization_config(loaded.config) is None):
        allowed = _(
            "no checkpoint format stores {dtype} weights; for --gpu, --tp, --ep or --weights choose float32, bfloat16, float16 or float8"
        )
        raise FFNError("dtype", dtype, allowed.format(dtype=dtype))
    present = held_roles(loaded.spec)  # what a caption may name
    if opts.weights is not None:  # in what the checkpoint quantizes, unless --quantize says
        asked = plan_from_options(opts.weights, opts.quantize, rest, loaded.config, present, towers_words(loaded.spec), loaded.spec)
        if opts.quantize is not None:
            check_scope(loaded.spec, asked, opts.quantize, present)
        return replace(asked, asked=opts.weights), ""
    if opts.quantize is not None:
        raise FFNError("quantize", opts.quantize, _("chooses where --weights FORMAT goes: give --weights too"))
    plan, note = plan_from_config(loaded.config, present, loaded.spec)
    if plan is None:
        origin = Message(N_("{format} everywhere (--dtype)"), format=rest)
        if dtype == "float8":  # computed in fp8, stored as a checkpoint without a quantization_config is: bf16
            said = N_("{format} everywhere: --dtype float8 computes and keeps the cache in fp8; --weights fp8 stores the weights so")
            origin = Message(said, format=rest)
        plan = replace(plan_from_options(rest, None, rest), origin=origin)
    return plan, note


def pass_cases(opts: CostOptions, act_bytes: int) -> list[Any]:
    """The passes --batch / --tokens / --phase / --seq-len ask for."""
    # A str as typed: PassCase refuses any phase but these two, with one clear line.
    phase: Phase = opts.phase  # type: ignore[assignment]
    seq_lens = opts.seq_len if opts.seq_len is not None else (DEFAULT_SEQ_LEN,)
    if len(seq_lens) != 1:
        why = _("with --gpu, one length: the tokens per sequence (prefill) or the context (decode)")
        raise FFNError("seq_len", comma_text(seq_lens), why)  # named as typed: -s 128,512
    seq_len = seq_lens[0]
    if opts.tokens is not None:
        check_int("tokens", opts.tokens, maximum=1 << 40)
        return [PassCase(phase, 1, opts.tokens, act_bytes) if phase == "prefill" else PassCase(phase, opts.tokens, seq_len, act_bytes)]
    batches = opts.batch if opts.batch is not None else (1,)
    return [PassCase(phase, b, seq_len, act_bytes) for b in batches]


def missing_rate(gpu: Any, column: str, named: str | None, takes: tuple[str, ...] = WEIGHT_DTYPES) -> str | None:
    """None when the table has --gpu's dense rate in this column. A row with no dense rate at all
    (its sources disagree): the line that says so in place of the roofline, whose memory answer
    needs no rate. A row with rates, but not this one: refused, naming the --dtype values it has."""
    if gpu.tflops_for(column) is not None:
        return None
    if not gpu.tflops:
        why = _("no roofline on {name}: the table holds none of its peak rates ({note})")
        return why.format(name=gpu.label, note=Message.separated(gpu.notes).shown() or _("no source gives one"))
    have = [dtype for dtype in takes if TABLE_DTYPE.get(dtype) in gpu.tflops]
    if not have:
        raise FFNError(
            "gpu", named, _("{name} has a dense rate in the table for no --dtype this takes: choose another GPU").format(name=gpu.label)
        )
    why = _("{name} has no dense {column} rate in the table; it has one for --dtype {dtypes}")
    raise FFNError("gpu", named, why.format(name=gpu.label, column=column, dtypes=", ".join(have)))


_CONTEXT_KEYS = (
    "max_target_positions",
    "max_decoder_position_embeddings",
    "max_position_embeddings",
    "model_max_length",
    "n_positions",
    "max_seq_len",
)


def context_limit(config: Any, spec: ModelSpec) -> int | None:
    """The longest context the model takes: its config's max_position_embeddings (GPT-2's
    n_positions, MPT's and DBRX's max_seq_len, Kimi-Linear's and Ling's model_max_length (which their
    config classes read as max_position_embeddings), Whisper's decoder's max_target_positions, LED's
    max_decoder_position_embeddings; a
    multimodal config's text_config's; T5Gemma's decoder's own config's; an omni model's thinker's
    text_config, the one of the laid-out decoder's width and vocabulary, not its talker's), less the
    position rows a token never reads (RoBERTa's, up to its padding row), or None when it names none."""
    decoder = config.get("decoder") if config.get("is_encoder_decoder") is True else None
    nested = [v.get("text_config") for k, v in config.items() if k.endswith("_config") and isinstance(v, dict)]
    nested = [t for t in nested if isinstance(t, dict) and (t.get("hidden_size"), t.get("vocab_size")) == (spec.d_model, spec.vocab_size)]
    for c in (config, config.get("text_config") or {}, decoder if isinstance(decoder, dict) else {}, *nested):
        for key in _CONTEXT_KEYS:
            n = c.get(key) if isinstance(c, dict) else None
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                return min(n, spec.max_positions - spec.first_position) if spec.first_position else n
    return None


def _mtp(loaded: Any, opts: CostOptions) -> int:
    """The multi-token-prediction layers counted: the checkpoint's, unless --no-mtp."""
    return mtp_layers(loaded.spec, loaded.config) if opts.mtp else 0


def _fit(loaded: Any, ranks: Any, gpu: Any, opts: CostOptions, act_bytes: int) -> Any:
    """One GPU's bytes at the pass asked (the largest batch of a sweep) against its memory, the
    cache of the MTP layers a speculative decoder runs counted."""
    case = max(pass_cases(opts, act_bytes), key=lambda c: c.batch)
    memory_case = MemoryCase(case.phase, case.batch, case.seq_len, act_bytes)
    layout = Layout(opts.tp, opts.ep)
    limit = context_limit(loaded.config, loaded.spec)
    return gpu_memory(
        loaded.spec, ranks, loaded.windows, loaded.chunks, gpu, layout, memory_case, limit, causal=loaded.causal, mtp=_mtp(loaded, opts)
    )


def model_costs(loaded: Any, dtype: str, opts: CostOptions) -> ModelCosts:
    """What the cost options ask of the model (nothing when none is asked and the checkpoint
    stores its weights as --dtype). With no --seq-len, a pass is DEFAULT_SEQ_LEN tokens long, or
    as long as the model takes where that is shorter (GPT-2's 1,024)."""
    limit = context_limit(loaded.config, loaded.spec)
    if opts.seq_len is None and limit is not None and limit < DEFAULT_SEQ_LEN:
        opts = replace(opts, seq_len=(limit,))
    if opts.tp != 1 or opts.ep != 1:
        check_model_parallel(loaded.spec, tp=opts.tp, ep=opts.ep)
    plot = None
    if opts.plot is not None:
        if opts.tokens is not None or opts.batch is None or len(opts.batch) < 2:
            raise FFNError("plot", opts.plot, _("draws a sweep over batch: give --batch a comma list (1,8,64,512)"))
        plot = check_plot_file(opts.plot)
    plan, note = _plan(loaded, opts, dtype)
    spec = loaded.spec
    quantized = opts.weights is not None or quantization_config(loaded.config) is not None
    shipped = shipped_tensors(spec, loaded.config, mtp=opts.mtp)
    # MTP layers the config declares: sized and shipped, of a shape ffn does not know, or shipped by none
    unsized_mtp, unshipped_mtp = unsized_mtp_layers(spec, loaded.config), unshipped_mtp_modules(loaded.config)
    if not opts.mtp and not (mtp_layers(spec, loaded.config) or unsized_mtp or unshipped_mtp):
        raise FFNError("no_mtp", True, _("{name}'s config declares no multi-token-prediction layers to leave out").format(name=spec.name))
    stored = checkpoint(spec, plan, shipped)
    weights = None
    if quantized or note:
        weights = StoredWeights(stored, checkpoint(spec, plan_from_options("bf16", None), shipped).bytes_, note)
    gpu = resolve_gpu(opts.gpu) if opts.gpu is not None else None
    ranks = fit = None
    left_out: tuple[str, ...] = ()
    if opts.tp != 1 or opts.ep != 1 or gpu is not None:
        ranks = rank_memory(stored, spec, tp=opts.tp, ep=opts.ep, not_built=_not_built(loaded))
        fit = _fit(loaded, ranks, gpu, opts, DTYPE_BYTES[dtype]) if gpu is not None else None
        # A layout read from built layers names what it does not size: said beside the verdict.
        left_out = tuple(getattr(loaded, "left_out", ())) + _unsized_source(spec) if fit is not None else ()
        declared = mtp_key(loaded.config)
        if unsized_mtp and opts.mtp and fit is not None and declared is not None:
            why = _("the checkpoint's multi-token-prediction layers ({key} {n}), whose shape ffn does not know for "
                    "{model_type}: not in the weights (--no-mtp serves without them)")  # fmt: skip
            left_out += (why.format(key=declared[0], n=unsized_mtp, model_type=spec.model_type),)
        if unshipped_mtp and opts.mtp and fit is not None:
            why = _("the {n} multi-token-prediction modules its config declares (use_mtp, num_mtp_modules): its "
                    "published checkpoints ship no weights for them, so speculative decoding takes a draft model of its own")  # fmt: skip
            left_out += (why.format(n=unshipped_mtp),)
    # No layout runs a context past the model's limit: no fewest GPUs to name for it.
    unfit = fit is not None and not fit.fits and not fit.past_limit
    fits_at = _fewest_gpus(loaded, stored, gpu, opts, DTYPE_BYTES[dtype]) if unfit else None
    if gpu is None:
        return ModelCosts(weights, ranks, fit, left_out)
    column = TABLE_DTYPE.get(dtype, dtype)
    missing = missing_rate(gpu, column, opts.gpu)
    cases = pass_cases(opts, DTYPE_BYTES[dtype])
    roofline = None
    if missing is None:
        roofline = _roofline(loaded, plan, gpu, column, dtype, cases, opts, plot)
    elif plot is not None:
        raise FFNError("plot", opts.plot, missing)
    return ModelCosts(
        weights,
        ranks,
        fit,
        left_out,
        roofline,
        missing,
        Message.separated(gpu.notes) if missing is not None else "",
        _decode(loaded, cases, opts),
        fits_at,
    )


# The GPU counts a layout of a "does not fit" verdict tries: 2 and 4 on one board, then whole
# 8-GPU nodes (an HGX board) up to 64, the largest deployments.
_TRY_GPUS = (2, 4, 8, 16, 24, 32, 40, 48, 56, 64)


def _layouts(gpus: int, moe: bool) -> list[tuple[int, int]]:
    """The (tp, ep) layouts of `gpus` GPUs, in the order tried: all tensor-parallel; then, with
    routed experts, --ep as wide and ever fewer GPUs a copy of the attention (more sequences spread)."""
    if not moe:
        return [(gpus, 1)]
    found, tp = [(gpus, 1), (gpus, gpus)], gpus // 2
    while tp >= 1:
        found.append((tp, gpus))
        tp //= 2
    return found


def _fewest_gpus(loaded: Any, stored: Any, gpu: Any, opts: CostOptions, act_bytes: int) -> FitsAt | None:
    """The fewest GPUs of the kind that hold the pass asked, whatever layout was asked: one
    layout of 1, 2, 4 or a multiple of 8 up to 64 GPUs, or copies of one (of those, or the one asked), each holding as
    many of the batch's sequences as fit it at the context; the fewer copies where the GPUs tie.
    A layout the model cannot split is passed over."""
    asked = (opts.tp, opts.ep)
    batch = max(c.batch for c in pass_cases(opts, act_bytes))
    moe = loaded.spec.moe_ffn is not None
    tried = list(dict.fromkeys(layout for gpus in (1, *_TRY_GPUS) for layout in _layouts(gpus, moe)))
    best: FitsAt | None = None
    for tp, ep in [*tried, *([asked] if asked not in tried else [])]:
        try:
            ranks = rank_memory(stored, loaded.spec, tp=tp, ep=ep)  # refused where the layout cannot divide the model
        except FFNError:
            continue
        fit = _fit(loaded, ranks, gpu, replace(opts, tp=tp, ep=ep), act_bytes)
        if fit.fits:
            found = FitsAt(tp, ep)
        elif fit.max_batch:  # a copy holds max_batch of the sequences at this context
            found = FitsAt(tp, ep, -(-batch // fit.max_batch))
        else:
            continue
        if best is None or (found.gpus, found.copies) < (best.gpus, best.copies):
            best = found
    return best


def _decode(loaded: Any, cases: list[Any], opts: CostOptions) -> DecodeState | None:
    """What decoding keeps, by layer kind (no rate needed), the MTP layers' too; None for a prefill."""
    if cases[0].phase != "decode":
        return None
    case = cases[0]
    kinds = decode_state(loaded.spec, loaded.windows, loaded.chunks, case.seq_len, mtp=_mtp(loaded, opts))
    return DecodeState(kinds, case.seq_len, [c.batch for c in cases], case.act_bytes)


def _roofline(
    loaded: Any, plan: Any, gpu: Any, column: str, dtype: str, cases: list[Any], opts: CostOptions, plot: Path | None
) -> Roofline:
    """The roofline of the passes asked on --gpu, their forecasts, and the file --plot draws them to."""
    spec = loaded.spec
    stack = model_stack(spec, loaded.windows, causal=loaded.causal, chunks=loaded.chunks)
    costs = [pass_cost(spec, stack, plan, case, training=opts.backward) for case in cases]
    per_gpu = None
    if opts.tp != 1 or opts.ep != 1:  # the roofline of one GPU of the layout, and what it sends
        bridge = gpu.link_domain if gpu.beyond_domain_gbps is not None else 0  # NVLink-bridged cards: PCIe between bridges
        per_gpu = [gpu_pass(spec, stack, plan, case, Layout(opts.tp, opts.ep), bridge) for case in cases]
        costs = [g.cost for g in per_gpu]
    backward = None
    if opts.backward:
        backward = [backward_cost(spec, stack, plan, case) for case in cases]
    forecasts = model_forecasts(gpu.key, spec, cases, dtype)
    dense = len(spec.dense_layers) if spec.moe_layers else 0
    return Roofline(
        costs,
        gpu,
        column,
        plan.origin,
        spec.name,
        spec.n_layers,
        backward,
        per_gpu,
        forecasts,
        plot,
        _real_picks(spec),
        dense,
        _mtp(loaded, opts),
        len(spec.reused_layers),
        tuple(getattr(loaded, "flops_left_out", ())) + _unsized_source(spec),
    )


def _not_built(loaded: Any) -> tuple[str, ...]:
    """The parts a checkpoint holds that the model as built holds none of, by their keys: the towers
    the config describes (an omni model's talker and vocoder where enable_audio_output is false, a
    vision tower a causal-LM class leaves out), and what a layout read names beside them (another
    model its config describes, an LM head its class does not build). A GPU serving it loads none."""
    spec = loaded.spec
    built = spec.vision.runs_on if spec.vision is not None else frozenset()
    towers = tuple(key for key in described_towers(loaded.config) if TOWER_RUNS_ON[key] not in built)
    return tuple(dict.fromkeys(towers + tuple(getattr(loaded, "not_built", ()))))


def _unsized_source(spec: ModelSpec) -> tuple[str, ...]:
    """An encoder's output of a length the config does not say, and no --source-len: what the
    cross-attention keeps of it and its scores over it, named as left out."""
    return (Message(UNSIZED_SOURCE),) if spec.source_unsized else ()


def _real_picks(spec: Any) -> Message | None:
    """With zero-computation experts in the router's pool, what the roofline's k is: the real
    experts a token runs on average (ModelSpec.real_picks), with the least and the most."""
    ffn = spec.moe_ffn
    if ffn is None or not spec.zero_experts:
        return None
    return Message(
        N_("k = {k} · {e} / ({e} + {z}) = {picks} real experts a token on average: top-{k} of a pool of {pool}, {z} of them "
           "zero-computation, each picked equally often (at least {least}, at most {k}); FLOPs and expert reads count those"),
        k=ffn.active_experts, e=f"{ffn.experts:,}", z=f"{spec.zero_experts:,}", picks=f"{spec.real_picks(ffn):.4g}",
        pool=f"{ffn.experts + spec.zero_experts:,}",
        least=spec.least_picks(ffn),
    )  # fmt: skip
