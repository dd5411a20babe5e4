"""`ffn trace` and `ffn_cli.trace(...)`: a checked TraceRequest traced, through the one
pipeline (`tracing/pipeline.py`) for every target, or as one sharded forward under --tp / --ep.
Returns services/results.py's TraceAnswer or ShardedTrace. Imports torch, after checking the
folders it writes to and the options torch-free: hence the imports inside functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.services.environment import require_temp_dir
from ffn_cli.services.results import ShardedTrace, TraceAnswer

if TYPE_CHECKING:
    from ffn_cli.configs.layer_select import LayerChoice
    from ffn_cli.requests.trace import TraceRequest
    from ffn_cli.spec import FFNSpec
    from ffn_cli.tracing.pipeline import Target

__all__ = ["trace"]


def trace(request: TraceRequest) -> TraceAnswer | ShardedTrace:
    """What `ffn trace` answers for `request`; a failed --check is the result's `failure`,
    raised once the result is shown."""
    require_temp_dir()  # before torch is imported; the request was checked whole as it was made
    choice: LayerChoice | None = None
    dtype = request.dtype
    if request.kind == "module":
        target: Target = _module_target(request)
    else:
        request, choice, target = _registry_or_model_target(request)
        dtype = choice.dtype if choice is not None else dtype  # a model's layer runs in the model's dtype
        if request.kind == "parallel":
            from ffn_cli.tracing.variant_target import VariantTarget

            assert isinstance(target, VariantTarget)  # "parallel" is a registry FFN's answer
            return _parallel(request, target.spec, dtype or "float32")
    from ffn_cli.tracing.check import check_failure
    from ffn_cli.tracing.pipeline import run_target

    result = run_target(target, request.run_options(dtype))
    return TraceAnswer(result, choice, request.ops, request.values, request.explain, check_failure(result))


def _module_target(request: TraceRequest) -> Target:
    """--module's module built on the device (its code run once, contained), or the API's own."""
    from ffn_cli.tracing.any_module import ModuleTarget

    width, width_from = request.module_width
    if request.own is not None:
        return ModuleTarget(request.own, request.x, width, width_from, request.reference)
    from ffn_cli.device import resolve_device_dtype
    from ffn_cli.modules.user import build_user_module, parse_module_ref

    ref = parse_module_ref(str(request.module))
    dev, _dtype = resolve_device_dtype(request.device or "cpu", request.dtype or "float32")
    built = build_user_module(ref, device=dev, seed=request.seed)
    return ModuleTarget(built, request.x, width, width_from, request.reference, origin=ref.describe())


def _registry_or_model_target(request: TraceRequest) -> tuple[TraceRequest, LayerChoice | None, Target]:
    """The FFN of the options, or the layer of the model named: as the registry builds it (in
    its block with --block) when a family reads the model, else transformers' own module; with
    the request resolved against the model read."""
    choice = None
    if request.names_model:
        from ffn_cli.configs.layer_select import select_layer  # the model readers load with a model
        from ffn_cli.configs.source import load_model
        from ffn_cli.configs.unknown import UnknownModelType

        try:
            loaded = load_model(preset=request.preset, config=request.config, model=request.model, revision=request.revision)
        except UnknownModelType as unknown:  # no reader: the model's own FFN module, built by transformers
            request = request.resolve(own_module=True)
            return request, None, _model_module_target(request, unknown)
        request = request.resolve(own_module=False)
        choice = select_layer(loaded, request.layer, request.layer_options(), block=request.block, default_dtype="float32")
    spec = choice.ffn if choice is not None else request.one_spec()
    from ffn_cli.block import BlockSpec  # torch: the layer is chosen, the FFN checked
    from ffn_cli.tracing.variant_target import VariantTarget

    if choice is not None and choice.attention is not None:
        block: BlockSpec | None = BlockSpec(spec, choice.attention, choice.norm, choice.pre_norm, choice.eps)
    elif request.block:
        r = request
        block = BlockSpec.around(spec, n_heads=r.n_heads, n_kv_heads=r.n_kv_heads, head_dim=r.head_dim, norm=r.norm, pre_norm=r.pre_norm)
    else:
        block = None

    return request, choice, VariantTarget(spec, block, request.check)


def _model_module_target(request: TraceRequest, unknown: Any) -> Target:
    from ffn_cli.configs.fallback import require_transformers
    from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES

    require_transformers(unknown.value, SUPPORTED_MODEL_TYPES)  # before model_module imports it
    from ffn_cli.tracing.model_module import model_module_target

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
    from ffn_cli.parallel import check_parallel
    from ffn_cli.parallel.run import is_primary_process, run_parallel
    from ffn_cli.spec import check_int

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
