"""`ffn params` of whole models: the presets listed, a model read (one, or several side by
side), and a model_type no reader knows counted or laid out by building it with transformers.
Pure Python: it never imports torch; transformers is imported only by configs/ when it builds."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ffn_cli.configs import built_cache, layout_cache
from ffn_cli.configs.built import BuiltLayout
from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES, model_spec_from_config
from ffn_cli.configs.files import load_preset, preset_names
from ffn_cli.configs.source import LoadedModel, load_models
from ffn_cli.configs.unknown import SeveralTextModels, UnknownModelType
from ffn_cli.costs.weights import quantization_config
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import N_, Message, _, language
from ffn_cli.models.count import count_model
from ffn_cli.models.explain import explain_model
from ffn_cli.models.seq_flops import flops_over_length, model_stack
from ffn_cli.requests.params import EXPLAINS_ONE, ParamsRequest
from ffn_cli.requests.rules import Unused, check_rules
from ffn_cli.services.costs import cost_options, model_costs
from ffn_cli.services.results import BuiltCount, ModelParamsAnswer, ModelsCompared, ParamsResult, PresetList

__all__ = ["COSTS", "models", "presets"]

# Why a model no reader knows was counted by building it: stored with its counts, so a hit says it too.
_NOT_LAID_OUT = N_("its layout is not read ({why}): counted by building the whole model, so no FLOPs or costs are given")

# What a whole model's costs are asked by: refused where there is no one model ffn reads.
COSTS = ("weights", "quantize", "gpu", "batch", "tokens", "backward", "plot", "no_mtp", "source_len", "tp", "ep")


def presets(request: ParamsRequest) -> PresetList:
    """Every preset with its counts; one no reader knows is counted from its layout where the
    cache holds it (read without torch), else listed by its model_type alone."""
    listed: list[tuple[str, Any, str]] = []
    for name in preset_names():
        config = load_preset(name)
        counted: Any = str(config.get("model_type"))
        if config.get("model_type") in SUPPORTED_MODEL_TYPES:
            counted = count_model(model_spec_from_config(config, name=name))
        elif not request.no_cache and (hit := layout_cache.load(config, name=name, source=f"preset {name}")) is not None:
            counted = count_model(hit[0].spec)  # laid out by an earlier call
        listed.append((name, counted, str(config.get("_name_or_path", ""))))
    return PresetList(listed)


# What only one model answers (memory, roofline, stored weights), asked of several side by side.
ONE_MODEL = N_("answers for one model at a time: name one (side by side compares parameters and FLOPs)")


def models(request: ParamsRequest) -> ParamsResult:
    """One model's breakdown (with its FLOPs over --seq-len), or several side by side; a
    model_type no reader knows is laid out from its built layers, or counted by building it
    where its layout cannot be read."""
    names = (request.preset, request.config, request.model)
    if sum(len(n or ()) for n in names) == 1:
        try:
            loaded: list[LoadedModel | BuiltLayout] = [
                *load_models(preset=request.preset, config=request.config, model=request.model, revision=request.revision)
            ]
        except UnknownModelType as unknown:
            return _built(request, unknown)
    else:  # side by side: a model no reader knows by its layout (one that cannot be laid out is refused by name)
        check_rules([Unused(COSTS, ONE_MODEL), Unused("explain", EXPLAINS_ONE)], request.given)  # before any is read
        loaded = load_models(
            preset=request.preset,
            config=request.config,
            model=request.model,
            revision=request.revision,
            unknown=lambda u: _beside(request, u),
        )
    if len(loaded) > 1:
        return _compared(loaded, request.count_dtype, request.seq_lens)
    return _one_model(loaded[0], request)


def _beside(request: ParamsRequest, unknown: UnknownModelType) -> BuiltLayout:
    """A model no reader knows, set beside the others by its layout: a count alone has no FLOPs
    to set beside theirs."""
    if not isinstance(unknown.config.get("model_type"), str):
        raise unknown
    return _layout(request, unknown, _("side by side needs its layout; named alone, ffn params counts it by building it"))


def _built(request: ParamsRequest, unknown: UnknownModelType) -> BuiltCount | ModelParamsAnswer:
    """No reader knows the model_type: the answer a reader's gets, folded over its layout read
    from one built layer of each kind; where that layout cannot be read and no cost was asked,
    the model counted by building it with transformers on meta (or read back from the cache), with why."""
    if not isinstance(unknown.config.get("model_type"), str):
        raise unknown
    # A checkpoint's quantization_config is priced as a read family's is (its stored-weights table):
    # that needs the layout too.
    shipped = quantization_config(unknown.config) is not None
    if shipped or request.seq_lens or any(name in request.given for name in (*COSTS, "explain")):
        return _laid_out(
            request, unknown, _("what it costs needs its layout; named alone, without costs, ffn params counts it by building it")
        )
    counted = built_cache.load(unknown.config, name=unknown.name, source=unknown.source) if not request.no_cache else None
    # Its layout was refused before, and why was said in this language: read back. In another, the
    # layout is read again for why (the counts still come from the cache).
    said = [n for n in counted[0].notes if isinstance(n, Message) and n.msgid == _NOT_LAID_OUT] if counted is not None else []
    if counted is not None and said and all(n.args.get("lang") == language() for n in said):
        return BuiltCount(replace(counted[0], cached_from=str(counted[1])), request.count_dtype)
    try:
        return _laid_out(request, unknown)
    except (FFNError, FFNRuntimeError) as unread:  # a config its whole build may still count
        why = Message(_NOT_LAID_OUT, why=str(unread), lang=language())
    built = built_cache.count_cached(
        unknown.config, name=unknown.name, source=unknown.source, known=SUPPORTED_MODEL_TYPES, use_cache=not request.no_cache, notes=(why,)
    )
    return BuiltCount(built, request.count_dtype)


def _layout(request: ParamsRequest, unknown: UnknownModelType, needed_for: str = "") -> BuiltLayout:
    """The layout of a model no reader knows, read from one built decoder layer of each kind
    (configs/layer_read/; kept in configs/layout_cache.py); where ffn cannot read it, the
    refusal says what needed it (`needed_for`), so the user knows what still answers."""
    try:
        return layout_cache.layout_cached(
            unknown.config, name=unknown.name, source=unknown.source, known=SUPPORTED_MODEL_TYPES, use_cache=not request.no_cache
        )
    except FFNRuntimeError as unread:
        if not needed_for or isinstance(unread, SeveralTextModels):  # built whole, it is refused alike
            raise
        raise FFNRuntimeError(_("{why}; {needed_for}").format(why=unread, needed_for=needed_for)) from None


def _laid_out(request: ParamsRequest, unknown: UnknownModelType, needed_for: str = "") -> ModelParamsAnswer:
    """No reader knows the model_type: the answer is a read family's, folded over its layout,
    with what the layout leaves out named."""
    return _one_model(_layout(request, unknown, needed_for), request)


def _compared(models: list[LoadedModel | BuiltLayout], dtype: str, seq_lens: tuple[int, ...]) -> ModelsCompared:
    compared: list[Any] = []
    left_out: list[str] = []
    notes: list[str] = []
    for m in models:
        _check_lengths(m, seq_lens)
        stack = model_stack(m.spec, m.windows, causal=m.causal, chunks=m.chunks)
        compared.append((m.spec.name, count_model(m.spec), stack, flops_over_length(stack, seq_lens)))
        if isinstance(m, BuiltLayout):
            left_out += [Message(N_("{name}: {what}"), name=m.spec.name, what=what) for what in m.left_out]
            notes += [Message(N_("{name}: {what}"), name=m.spec.name, what=n if isinstance(n, Message) else Message(n)) for n in m.notes]
    return ModelsCompared(compared, dtype, tuple(left_out), tuple(notes))


def _check_lengths(loaded: LoadedModel | BuiltLayout, seq_lens: tuple[int, ...]) -> None:
    """Refuses a length no longer than the soft-prompt tokens the model puts before every
    sequence (CPM-Ant's), which every length counts."""
    prefix = loaded.prefix_tokens if isinstance(loaded, BuiltLayout) else 0
    if short := [n for n in seq_lens if n <= prefix]:
        why = _("is no longer than the {n} soft-prompt tokens {name} puts before every sequence: give more than {n}")
        raise FFNError("seq_len", short[0], why.format(n=f"{prefix:,}", name=loaded.spec.name))


def _one_model(loaded: LoadedModel | BuiltLayout, request: ParamsRequest) -> ModelParamsAnswer:
    """A whole model (a reader's, or laid out by building one layer of each kind): its counts,
    FLOPs over --seq-len, and what it costs as asked (services/costs.py)."""
    dtype = request.count_dtype
    if request.source_len is not None:  # a source of this length, not the most its encoder hands on
        n = request.source_len
        loaded = loaded.with_source_len(n) if isinstance(loaded, BuiltLayout) else replace(loaded, spec=loaded.spec.with_source_tokens(n))
    _check_lengths(loaded, (*request.seq_lens, *(request.seq_len or ())))
    stack = model_stack(loaded.spec, loaded.windows, causal=loaded.causal, chunks=loaded.chunks)
    counted = count_model(loaded.spec)
    rows = flops_over_length(stack, request.seq_lens)
    costs = model_costs(loaded, dtype, cost_options(request))
    block = explain_model(counted) if request.explain else None
    return ModelParamsAnswer(counted, dtype, stack, rows, costs, block, loaded if isinstance(loaded, BuiltLayout) else None)
