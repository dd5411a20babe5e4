"""Every causal-LM `model_type` transformers knows, laid out from a small config of its own
(configs/layer_read/) and held to two second paths wherever the layout is read: the whole
model built on meta, parameter for parameter, and transformers' own cache after a forward of 9
tokens, element for element, for the layers that keep keys and values. A type whose small
config ffn refuses, or transformers cannot build or run, is passed over, never counted as
something else. Slow (a few minutes): `pytest -m slow tests/test_layout_sweep.py`."""

from __future__ import annotations

from typing import Any

import pytest

from ffn_cli.costs.decode_state import decode_state
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.models.count import count_model

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from transformers.models.auto import modeling_auto  # noqa: E402

from ffn_cli.configs import meta_build  # noqa: E402
from ffn_cli.configs.layer_read import read_layout  # noqa: E402

pytestmark = pytest.mark.slow

_SMALL = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=128)
_CONTEXT = 9
# Layers that run more than once keep a cache each pass (Dory's n_recurrent_loops): named under the
# verdict, sized once (tests/test_layout_shapes.py).
_LOOPED = {"dory"}
# The most parameters a model may hold to be run here on the CPU, in float32.
_RUN_AT_MOST = 50_000_000


def _small(model_type: str) -> dict[str, Any] | None:
    # An encoder's kin (BERT's) is a causal LM where its config sets is_decoder: laid out so.
    decoder = {"is_decoder": True} if model_type in modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES else {}
    try:
        return {**transformers.AutoConfig.for_model(model_type, **_SMALL, **decoder).to_dict(), "model_type": model_type}
    except Exception:  # transformers' own config class refuses these keys: nothing to lay out
        return None


@pytest.mark.parametrize("model_type", sorted(modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES))
def test_a_small_config_of_every_type(model_type: str) -> None:
    config = _small(model_type)
    if config is None:
        pytest.skip("transformers takes no small config of it")
    try:
        layout = read_layout(config, name="small", source="small")
    except (FFNError, FFNRuntimeError) as refused:  # refused by name: a clear line, never a count
        assert str(refused).strip() and "Traceback" not in str(refused)
        return
    try:
        built = meta_build.count(config, name="small", source="small").total_params
    except (FFNError, FFNRuntimeError):
        pytest.skip("transformers cannot build the whole model")
    assert count_model(layout.spec).total_params == built
    # a cache holds the soft-prompt tokens the model's forward puts before the text (CPM-Ant's) too
    rows = [r for r in decode_state(layout.spec, layout.windows, layout.chunks, _CONTEXT + layout.prefix_tokens) if r.tokens is not None]
    if not rows or any(r.keeps != "kv" or r.compressed or r.conv for r in rows) or layout.spec.mixer is not None or model_type in _LOOPED:
        # latents, compressed and mixer states, windows beside the cache (Zaya's, Inkling's): held to
        # their caches in tests/test_layout_shapes.py and test_layer_read.py
        return
    if built > _RUN_AT_MOST:  # a multimodal config keeps its towers' sizes: too big to run here
        return
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval().requires_grad_(False)
    try:
        with torch.no_grad():
            cache = model(torch.randint(1, 100, (1, _CONTEXT)), use_cache=True).past_key_values
    except Exception:  # transformers' forward of a small config of it
        pytest.skip("transformers cannot run the small model")
    held = sum(
        layer.keys.numel() + layer.values.numel()
        for layer in getattr(getattr(cache, "self_attention_cache", cache), "layers", ())  # a BERT decoder's: its self-attention's
        if isinstance(getattr(layer, "keys", None), torch.Tensor) and isinstance(getattr(layer, "values", None), torch.Tensor)
    )
    assert held == sum(r.elements for r in rows)
