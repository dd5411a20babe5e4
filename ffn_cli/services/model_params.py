"""`ffn params` of whole models: the presets listed, a model read (one, or several side by
side), and a model_type no reader knows counted or laid out by building it with transformers.
Pure Python: it never imports torch; transformers is imported only by configs/ when it builds."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ffn_cli.configs.built import BuiltLayout
from ffn_cli.configs.built_cache import count_cached
from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES, model_spec_from_config
from ffn_cli.configs.files import load_preset, preset_names
from ffn_cli.configs.layout_cache import layout_cached
from ffn_cli.configs.source import LoadedModel, load_models
from ffn_cli.configs.unknown import UnknownModelType
from ffn_cli.costs.weights import quantization_config
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.models.count import count_model
from ffn_cli.models.explain import explain_model
from ffn_cli.models.seq_flops import flops_over_length, model_stack
from ffn_cli.requests.params import EXPLAINS_ONE, ParamsRequest
from ffn_cli.requests.rules import Unused, check_rules
from ffn_cli.services.costs import cost_options, model_costs
from ffn_cli.services.results import BuiltCount, ModelParamsAnswer, ModelsCompared, ParamsResult, PresetList

__all__ = ["COSTS", "models", "presets"]

# What a whole model's costs are asked by: refused where there is no one model ffn reads.
COSTS = ("weights", "quantize", "gpu", "batch", "tokens", "backward", "plot", "no_mtp", "tp", "ep")


def presets(request: ParamsRequest) -> PresetList:
    """Every preset with its counts; one no reader knows is listed by its model_type alone."""
    listed: list[tuple[str, Any, str]] = []
    for name in preset_names():
        config = load_preset(name)
        # A preset no reader knows is counted by building it when named: listed without counts.
        known = config.get("model_type") in SUPPORTED_MODEL_TYPES
        counted = count_model(model_spec_from_config(config, name=name)) if known else str(config.get("model_type"))
        listed.append((name, counted, str(config.get("_name_or_path", ""))))
    return PresetList(listed)


def models(request: ParamsRequest) -> ParamsResult:
    """One model's breakdown (with its FLOPs over --seq-len), or several side by side; a
    model_type no reader knows is counted by building it with transformers."""
    try:
        loaded = load_models(preset=request.preset, config=request.config, model=request.model, revision=request.revision)
    except UnknownModelType as unknown:
        return _built(request, unknown)
    if len(loaded) > 1:
        check_rules([Unused(COSTS, N_("is asked of one model: name one")), Unused("explain", EXPLAINS_ONE)], request.given)
        return _compared(loaded, request.count_dtype, request.seq_lens)
    return _one_model(loaded[0], request)


def _built(request: ParamsRequest, unknown: UnknownModelType) -> BuiltCount | ModelParamsAnswer:
    """No reader knows the model_type: count it by building it with transformers on meta (or
    read the counts of an earlier build of the same config from the cache)."""
    named = [*(request.preset or ()), *(request.config or ()), *(request.model or ())]
    if len(named) > 1:  # counted by building it: alone, not in a comparison
        why = _("model_type {value!r} has no reader: ffn params counts it by building it, alone; drop it from the comparison")
        raise FFNError(*_named_by(request, unknown), why.format(value=unknown.value)) from None
    if not isinstance(unknown.config.get("model_type"), str):
        raise unknown
    # A checkpoint's quantization_config is priced as a read family's is (its stored-weights table):
    # that needs the layout too.
    shipped = quantization_config(unknown.config) is not None
    if shipped or request.seq_lens or any(name in request.given for name in (*COSTS, "explain")):
        return _laid_out(request, unknown)
    built = count_cached(
        unknown.config, name=unknown.name, source=unknown.source, known=SUPPORTED_MODEL_TYPES, use_cache=not request.no_cache
    )
    return BuiltCount(built, request.count_dtype)


def _named_by(request: ParamsRequest, unknown: UnknownModelType) -> tuple[str, str]:
    """The option that named the model no reader knows, and the name it was given as."""
    if unknown.source in (request.config or ()):
        return "config", unknown.source
    if unknown.source == f"preset {unknown.name}":  # configs/source.py's label of a preset
        return "preset", unknown.name
    return "model", unknown.source


def _laid_out(request: ParamsRequest, unknown: UnknownModelType) -> ModelParamsAnswer:
    """No reader knows the model_type, and what it costs is asked: its layout is read from one
    built decoder layer of each kind (configs/layer_build.py; kept in configs/layout_cache.py), and the answer is a read family's,
    folded over that spec, with what the layout leaves out named."""
    layout = layout_cached(
        unknown.config, name=unknown.name, source=unknown.source, known=SUPPORTED_MODEL_TYPES, use_cache=not request.no_cache
    )
    return replace(_one_model(layout, request), layout=layout)


def _compared(models: list[LoadedModel], dtype: str, seq_lens: tuple[int, ...]) -> ModelsCompared:
    compared = []
    for m in models:
        stack = model_stack(m.spec, m.windows, causal=m.causal, chunks=m.chunks)
        compared.append((m.spec.name, count_model(m.spec), stack, flops_over_length(stack, seq_lens)))
    return ModelsCompared(compared, dtype)


def _one_model(loaded: LoadedModel | BuiltLayout, request: ParamsRequest) -> ModelParamsAnswer:
    """A whole model (a reader's, or laid out by building one layer of each kind): its counts,
    FLOPs over --seq-len, and what it costs as asked (services/costs.py)."""
    dtype = request.count_dtype
    stack = model_stack(loaded.spec, loaded.windows, causal=loaded.causal, chunks=loaded.chunks)
    counted = count_model(loaded.spec)
    rows = flops_over_length(stack, request.seq_lens)
    costs = model_costs(loaded, dtype, cost_options(request))
    block = explain_model(counted) if request.explain else None
    return ModelParamsAnswer(counted, dtype, stack, rows, costs, block)
