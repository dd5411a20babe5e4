"""`ffn trace`'s run, once services/trace.py has checked the request and read the model: the
target built (the user's module, the registry's FFN or block, or transformers' own FFN module
of a model no reader knows) and traced, or the FFN sharded under --tp / --ep."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.block import BlockSpec
from ffn_cli.device import resolve_device_dtype
from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.module_ref import parse_module_ref
from ffn_cli.modules.user import build_user_module
from ffn_cli.requests.trace import TraceRequest
from ffn_cli.services.results import ShardedTrace, TraceAnswer
from ffn_cli.spec import FFNSpec, check_int
from ffn_cli.tracing.any_module import ModuleTarget
from ffn_cli.tracing.check import check_failure
from ffn_cli.tracing.pipeline import Target, run_target
from ffn_cli.tracing.variant_target import VariantTarget

if TYPE_CHECKING:
    from ffn_cli.configs.layer_select import LayerChoice
    from ffn_cli.configs.unknown import UnknownModelType

__all__ = ["run_trace"]


def run_trace(request: TraceRequest, choice: LayerChoice | None, unknown: UnknownModelType | None) -> TraceAnswer | ShardedTrace:
    """The trace of the request's target: `choice` is the layer of the model named, `unknown` a
    model no reader knows (traced as transformers' own module)."""
    dtype = request.dtype
    if request.kind == "module":
        target: Target = _module_target(request)
    elif unknown is not None:
        target = _model_module_target(request, unknown)
    else:
        registry = _registry_target(request, choice)
        dtype = choice.dtype if choice is not None else dtype  # a model's layer runs in the model's dtype
        if request.kind == "parallel":  # a registry FFN's answer
            return _parallel(request, registry.spec, dtype or "float32")
        target = registry
    result = run_target(target, request.run_options(dtype))
    return TraceAnswer(result, choice, request.ops, request.values, request.explain, check_failure(result))


def _module_target(request: TraceRequest) -> Target:
    """--module's module built on the device (its code run once, contained), or the API's own."""
    width, width_from = request.module_width
    if request.own is not None:
        return ModuleTarget(request.own, request.x, width, width_from, request.reference)
    ref = parse_module_ref(str(request.module))
    dev, _dtype = resolve_device_dtype(request.device or "cpu", request.dtype or "float32")
    built = build_user_module(ref, device=dev, seed=request.seed)
    return ModuleTarget(built, request.x, width, width_from, request.reference, origin=ref.describe())


def _registry_target(request: TraceRequest, choice: LayerChoice | None) -> VariantTarget:
    """The FFN of the options, or the layer of the model named, as the registry builds it (in
    its block with --block, or with the model's attention)."""
    spec = choice.ffn if choice is not None else request.one_spec()
    if choice is not None and choice.attention is not None:
        block: BlockSpec | None = BlockSpec(spec, choice.attention, choice.norm, choice.pre_norm, choice.eps)
    elif request.block:
        r = request
        block = BlockSpec.around(spec, n_heads=r.n_heads, n_kv_heads=r.n_kv_heads, head_dim=r.head_dim, norm=r.norm, pre_norm=r.pre_norm)
    else:
        block = None
    return VariantTarget(spec, block, request.check)


def _model_module_target(request: TraceRequest, unknown: UnknownModelType) -> Target:
    """transformers' own FFN module of the model no reader knows (services/model_layer.py has
    found transformers installed)."""
    from ffn_cli.tracing.model_module import model_module_target  # imports transformers: only for such a model

    return model_module_target(
        unknown.config,
        name=unknown.name,
        source=unknown.source,
        layer=request.layer,
        device=request.device or "cpu",
        reference=request.reference,
    )


def _parallel(request: TraceRequest, spec: FFNSpec, dtype: str) -> ShardedTrace:
    """Shard the FFN over tp or ep ranks (spawned, or joined under torchrun), run it, check it
    against the unsharded module on the same weights; only the primary process shows it."""
    # Sharding loads with --tp / --ep: the layout over ranks reads the model spec a plain trace never needs.
    from ffn_cli.parallel import check_parallel
    from ffn_cli.parallel.run import is_primary_process, run_parallel

    tp, ep = request.tp, request.ep
    check_parallel(spec, tp=tp, ep=ep)
    check_int("batch", request.batch)
    check_int("seq_len", request.seq_len)
    result = run_parallel(
        spec,
        max(tp, ep),
        mode="tp" if tp > 1 else "ep",
        batch=request.batch,
        seq_len=request.seq_len,
        dtype=dtype,
        device=request.device or "cpu",
        seed=request.seed,
        **({} if request.rank_timeout is None else {"timeout_s": request.rank_timeout}),
    )
    failure = None
    if not result.passed:
        failure = FFNRuntimeError(
            _("sharded output differs from the unsharded module by {diff:.3g}").format(diff=result.max_abs_diff_vs_unsharded)
        )
    return ShardedTrace(result, shown=is_primary_process(), failure=failure)
