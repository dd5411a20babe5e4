"""`ffn params` and `ffn_cli.params(...)`: a checked ParamsRequest answered, by the answer its
checks chose (request.kind), as one of services/results.py's results. Pure Python: it never
imports torch.

Whole models are answered by services/model_params.py. The imports inside functions keep
`ffn params` of one FFN to what it counts (tests/test_cli_startup.py): a model's answers, FLOPs
over length, --explain's block, the comparison and the GPU costs load only with the answer
that uses them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.layer import ffn_report
from ffn_cli.requests.params import ParamsRequest
from ffn_cli.services.results import (
    FFNOnGPU,
    FFNParams,
    ParamsResult,
    PresetList,
    RanksHeld,
    VariantsCompared,
)

if TYPE_CHECKING:
    from ffn_cli.models.explain import BlockExplain
    from ffn_cli.models.layer import FFNReport
    from ffn_cli.models.seq_flops import OverLengths

__all__ = ["params"]


def params(request: ParamsRequest) -> ParamsResult:
    """What `ffn params` answers for `request`: the result its checks chose."""
    answers: dict[str, Callable[[ParamsRequest], ParamsResult]] = {
        "presets": _presets,
        "models": _models,
        "ffn_gpu": _ffn_gpu,
        "ranks": _ranks,
        "ffn": _ffn,
        "comparison": _comparison,
    }
    return answers[request.kind](request)


def _ffn_gpu(request: ParamsRequest) -> FFNOnGPU:
    # The GPU's costs load with a --gpu: one FFN's counts never need them.
    from ffn_cli.services.ffn_gpu import ffn_on_gpu

    return ffn_on_gpu(request)


def _ffn(request: ParamsRequest) -> FFNParams:
    """One FFN's report, with its FLOPs over --seq-len and --explain's block."""
    spec = request.specs[0]
    assert request.attention is not None  # read for every "ffn" request
    report = ffn_report(spec, request.attention, request.count_dtype)
    over = _one_layer_over_lengths(request) if request.seq_lens else None
    block = _explain_ffn(report) if request.explain else None
    return FFNParams(report, over, block)


# FLOPs over length and --explain's block load when asked for (--seq-len, --explain): one FFN's
# counts alone never read them.
def _one_layer_over_lengths(request: ParamsRequest) -> OverLengths:
    """The FFN as one decoder layer beside its attention, and its FLOPs at each --seq-len."""
    from ffn_cli.models.seq_flops import flops_over_length, single_layer

    assert request.attention is not None  # set for one FFN by the request's checks
    stack = single_layer(request.specs[0], request.attention)
    return stack, flops_over_length(stack, request.seq_lens)


def _explain_ffn(report: FFNReport) -> BlockExplain:
    from ffn_cli.models.explain import explain_ffn

    return explain_ffn(report)


def _comparison(request: ParamsRequest) -> VariantsCompared:
    """Variants side by side (--match-params: sized to the first's parameters)."""
    from ffn_cli.models.comparison import compare_variants
    from ffn_cli.models.matching import match_misses

    multiple_of = request.ffn.multiple_of if request.ffn is not None else request.specs[0].multiple_of
    specs = list(request.specs)
    assert request.attention is not None  # read for every "comparison" request
    comparison = compare_variants(specs, request.attention, request.count_dtype, match_params=request.match_params, multiple_of=multiple_of)
    warnings = [miss.message(multiple_of) for miss in match_misses(comparison, multiple_of)]
    return VariantsCompared(comparison, warnings)


def _ranks(request: ParamsRequest) -> RanksHeld:
    """What each of the tp or ep ranks holds, from the spec alone (no processes, no torch)."""
    from ffn_cli.parallel.accounting import check_parallel, per_rank_params

    tp, ep = request.tp, request.ep
    if len(request.specs) != 1:
        raise FFNError("tp" if tp != 1 else "ep", tp if tp != 1 else ep, _("splits one FFN: give a single --variant"))
    spec = request.specs[0]
    check_parallel(spec, tp=tp, ep=ep)
    ranks = per_rank_params(spec, tp=tp, ep=ep, dtype=request.count_dtype)
    return RanksHeld(spec, ranks)


# A whole model's answers load with a model named: one FFN's counts never read a config.
def _presets(request: ParamsRequest) -> PresetList:
    from ffn_cli.services import model_params

    return model_params.presets(request)


def _models(request: ParamsRequest) -> ParamsResult:
    from ffn_cli.services import model_params

    return model_params.models(request)
