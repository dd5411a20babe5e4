"""The layer of the model `ffn trace` or `ffn bench` names (--preset / --config / --model, with
--layer and the options given over its values). Pure Python: a mistyped preset or layer is
refused before torch loads; torch loads here only to lay out a model no reader knows whose routed
layer is traced on meta (a layout the cache does not hold)."""

from __future__ import annotations

from dataclasses import replace

from ffn_cli.configs.fallback import require_transformers
from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES
from ffn_cli.configs.layer_select import LayerChoice, select_layer
from ffn_cli.configs.source import LoadedModel, load_model
from ffn_cli.configs.unknown import UnknownModelType
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.requests.bench import BenchRequest
from ffn_cli.requests.trace import TraceRequest

__all__ = ["bench_layer", "trace_layer"]


def trace_layer(request: TraceRequest) -> tuple[TraceRequest, LayerChoice | None, UnknownModelType | None]:
    """The request resolved against the model read, and the layer chosen; or, where no reader
    knows the model_type, no layer and the model no reader knows (traced as transformers'
    own FFN module)."""
    try:
        loaded = _named_model(request)
    except UnknownModelType as unknown:
        require_transformers(unknown.value, SUPPORTED_MODEL_TYPES)  # one line, before torch or transformers loads
        routed = _routed_on_meta(request, unknown)
        if routed is not None:
            return request.resolve(own_module=False), routed, None
        return request.resolve(own_module=True), None, unknown
    request = request.resolve(own_module=False)
    return request, select_layer(loaded, request.layer, request.layer_options(), block=request.block, default_dtype="float32"), None


# Said in the trace's header where a model no reader knows has its routed layer traced as ffn's FFN.
_LAID_OUT_ON_META = N_(
    "the model's own router and its rules (its scores, any bias, groups, hashing or scaling): transformers' module "
    "routes by values the meta device does not hold, so ffn's FFN of the layer's shapes stands in, a softmax top-k "
    "router spreading the tokens evenly"
)


def _routed_on_meta(request: TraceRequest, unknown: UnknownModelType) -> LayerChoice | None:
    """A routed layer of a model no reader knows, traced on meta: as a read family's is, ffn's FFN
    of the shapes its layout reads from transformers' modules (meta holds no values to route
    transformers' own module by). None on another device, with --block, or for a dense layer:
    transformers' own module is traced."""
    if request.device != "meta" or request.block:
        return None
    from ffn_cli.configs.layout_cache import layout_cached  # builds one layer of each kind: torch, on a miss

    try:
        layout = layout_cached(unknown.config, name=unknown.name, source=unknown.source, known=SUPPORTED_MODEL_TYPES)
    except (FFNError, FFNRuntimeError):  # a layout ffn cannot read: transformers' module refuses in its own words
        return None
    model = LoadedModel(layout.spec, layout.config, layout.source)
    layer = 0 if request.layer is None else request.layer  # transformers' module's default layer, whatever kind it is
    if layer not in model.spec.moe_layers:
        return None  # a dense layer, or none, or no layer of the model: transformers' own module says what it is
    choice = select_layer(model, layer, request.layer_options(), default_dtype="float32")
    return replace(choice, not_built=(*choice.not_built, Message(_LAID_OUT_ON_META)))


def bench_layer(request: BenchRequest) -> LayerChoice:
    """The layer to time; a model no reader knows is refused (ffn bench times the FFNs it builds)."""
    try:
        loaded = _named_model(request)
        return select_layer(loaded, request.layer, request.layer_options(), default_dtype="float32")
    except UnknownModelType as unknown:
        raise FFNRuntimeError(
            _(
                "model_type {value!r}: ffn bench times the FFNs it builds from the families it reads; ffn "
                "trace --config traces this model's own FFN module, ffn params --config counts it"
            ).format(value=unknown.value)
        ) from None


def _named_model(request: TraceRequest | BenchRequest) -> LoadedModel:
    """The model --preset, --config or --model names (UnknownModelType where no reader knows it)."""
    return load_model(preset=request.preset, config=request.config, model=request.model, revision=request.revision)
