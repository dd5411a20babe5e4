"""Layers that run an earlier layer's shared blocks (Zamba's and Zamba2's shared transformers,
ffn_cli/configs/shared_blocks.py), checked by second paths: the whole model built on meta (its
parameters() total, each tied tensor once), transformers' own cache after a real forward (a KV
cache for every application of a block), FlopCounterMode on transformers' own modules, and hand
counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.costs.decode_state import decode_state
from ffn_cli.models.count import count_model
from ffn_cli.models.spec import ModelSpec
from tests.module_flops import module_flops

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from ffn_cli.configs import meta_build  # noqa: E402  (torch and transformers)
from ffn_cli.configs.layer_build import read_layout  # noqa: E402

# Zamba2 of 64 wide, 8 layers, every other one hybrid: two shared blocks in turn (layers 1 and 3
# hold them, 5 and 7 run them again), their attention reading 2 · 64 with 4 heads × 32, LoRA
# adapters of rank 8 on q, k, v (128 → 8 → 128) and on gate_up_proj (64 → 8 → 192).
_ZAMBA2 = dict(hidden_size=64, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=4, intermediate_size=96, mamba_d_state=16,
               n_mamba_heads=4, mamba_ngroups=1, num_mem_blocks=2, adapter_rank=8, use_shared_attention_adapter=True, vocab_size=100,
               layers_block_type=["linear_attention", "hybrid"] * 4, pad_token_id=0)  # fmt: skip
# Zamba of 64 wide, 8 layers: one shared block, applied in layers 2, 4 and 7, its Mamba layers two heads of 64 channels.
_ZAMBA = dict(hidden_size=64, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=4, intermediate_size=96, mamba_d_state=16,
              n_mamba_heads=2, vocab_size=100, attn_layer_period=3, attn_layer_offset=1, pad_token_id=0)  # fmt: skip


def _config(model_type: str, keys: dict[str, Any]) -> dict[str, Any]:
    return {**transformers.AutoConfig.for_model(model_type, **keys).to_dict(), "model_type": model_type}


def _spec(config: dict[str, Any]) -> tuple[Any, ModelSpec]:
    layout = read_layout(config, name="small", source="small")
    return layout, layout.spec


def _cache_after(config: dict[str, Any], context: int) -> Any:
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval().requires_grad_(False)
    with torch.no_grad():
        return model(torch.randint(1, 100, (2, context)), use_cache=True).past_key_values


@pytest.mark.parametrize(("model_type", "keys", "reused", "total"), [
    # By hand, Zamba2: per block, q, k, v (128 → 128) and o (128 → 64), gate_up (64 → 192) and down (96 → 64),
    # its two norms (128 + 64): 2 blocks. Per hybrid layer its linear (64 × 64) and its adapters,
    # 3 × (128 · 8 + 8 · 128) + 64 · 8 + 8 · 192. Per layer a Mamba-2 and its norm: in_proj (64 → 2 · 128 + 2 · 16 + 4),
    # conv (160 × 4 + bias), 3 vectors of 4 heads, its gated norm (128), out_proj (128 → 64), the norm (64).
    ("zamba2", _ZAMBA2, ((5, 1), (7, 3)),
     2 * (3 * 128 * 128 + 128 * 64 + 64 * 192 + 96 * 64 + 192) + 4 * (64 * 64 + 3 * 2 * 128 * 8 + 64 * 8 + 8 * 192)
     + 8 * (64 * 292 + 160 * 5 + 12 + 128 + 128 * 64 + 64) + 100 * 64 + 64),
    ("zamba", _ZAMBA, ((4, 2), (7, 2)), None),
])  # fmt: skip
def test_a_shared_block_is_held_once(model_type: str, keys: dict[str, Any], reused: tuple[tuple[int, int], ...], total: int | None) -> None:
    config = _config(model_type, keys)
    _layout, spec = _spec(config)
    assert spec.weights_from == reused
    counted = count_model(spec)
    assert counted.total_params == meta_build.count(config, name="x", source="x").total_params
    if total is not None:
        assert counted.total_params == total
    (again,) = [p for p in counted.parts if p.name == "shared blocks, run again"]
    assert again.params == 0 and again.copies == len(reused)
    # what a token touches: each block's weights once, however many layers run it
    assert counted.active_params == counted.total_params


@pytest.mark.parametrize("context", [2, 30])
@pytest.mark.parametrize(("model_type", "keys", "hybrid"), [("zamba2", _ZAMBA2, (1, 3, 5, 7)), ("zamba", _ZAMBA, (2, 4, 7))])
def test_each_application_keeps_its_own_cache_against_transformers(model_type: str, keys: dict[str, Any], hybrid: tuple[int, ...],
                                                                    context: int) -> None:  # fmt: skip
    # By hand: the shared attention's 4 KV heads × 32 (2 · 64 / 4 heads), K and V, each token, in every
    # layer that runs a block, the first or again; every layer's Mamba state beside it.
    config = _config(model_type, keys)
    layout, spec = _spec(config)
    kinds = {str.__str__(k.kind): k for k in decode_state(spec, layout.windows, layout.chunks, context)}
    assert kinds["attention"].layers == len(hybrid) and kinds["attention"].elements_per_layer == context * 4 * 32 * 2
    mixer = spec.mixer
    assert mixer is not None and mixer.layers == tuple(range(8)) and spec.beside_attention == hybrid
    # Mamba-2: 4 heads × 32 channels × a state of 16, its conv over 128 + 2 · 16 channels; Zamba's
    # Mamba: 2 heads × 64 channels × 16, its conv over the 128 channels; kernel 4 less one.
    channels = 160 if model_type == "zamba2" else 128
    assert (mixer.recurrent_state_elements, mixer.conv_state_elements) == (128 * 16, channels * 3)
    cache = _cache_after(config, context)
    for i in range(8):
        layer = cache.layers[i]
        keys = getattr(layer, "keys", None)
        keys_held = 0 if keys is None else (keys.numel() + layer.values.numel()) // 2
        assert keys_held == (kinds["attention"].elements_per_layer if i in hybrid else 0)
        conv = cache.get_conv_state(i, state_idx=0)  # the conv's kernel width of inputs, one more than decoding needs
        assert conv.numel() // 2 - conv.shape[1] == mixer.conv_state_elements
        assert cache.get_recurrent_state(i, state_idx=0).numel() // 2 == mixer.recurrent_state_elements


def test_a_shared_block_run_again_against_flop_counter() -> None:
    # FlopCounterMode on transformers' own modules, 5 tokens, in layer 5, which runs layer 1's block
    # with its own adapters (its third application, slot 2) and its own linear.
    config = _config("zamba2", _ZAMBA2)
    _layout, spec = _spec(config)
    ffn = spec.ffn_of(5)
    assert ffn is not None
    extras = {e.name: e for e in spec.extras}
    adapters, linear = extras["per-application adapters"], extras["tensors beside the layer's parts"]
    # By hand: q, k, v read 128, o writes 64; the adapters and the linear; gate_up and down.
    assert spec.attention_flops_of(5) == 2 * 128 * 3 * 128 + 2 * 128 * 64
    assert adapters.flops == 2 * (3 * (128 * 8 + 8 * 128) + 64 * 8 + 8 * 192) and linear.flops == 2 * 64 * 64
    assert spec.ffn_matmul_flops(ffn) == 2 * (64 * 192 + 96 * 64)
    counted = module_flops(config, torch.randint(1, 100, (1, 5)))
    block = "layers.5.shared_transformer"
    projections = [f"{block}.self_attn.{p}" for p in ("q_proj", "k_proj", "v_proj", "o_proj")]
    lists = [f"{block}.self_attn.linear_{p}_adapter_list.2" for p in "qkv"]  # its own slot, the third
    ran = sum(counted.get(m, 0) for m in [*projections, *lists, f"{block}.feed_forward", "layers.5.linear"])
    assert ran == 5 * (spec.attention_flops_of(5) + adapters.flops + linear.flops + spec.ffn_matmul_flops(ffn))
    # each application runs a block's whole projections: four of them a token, two blocks held
    mamba_only = _spec(_config("zamba2", {**_ZAMBA2, "layers_block_type": ["linear_attention"] * 8}))[1]
    beyond = count_model(spec).matmul_flops_per_token - count_model(mamba_only).matmul_flops_per_token
    assert beyond == 4 * (spec.attention_flops_of(5) + adapters.flops + linear.flops + spec.ffn_matmul_flops(ffn))


def test_zamba_mamba_heads_against_flop_counter() -> None:
    # Zamba's Mamba: in_proj (64 → 256), out_proj (128 → 64), and a matrix a head for x (64 → 4 + 2 · 16)
    # and dt (4 → 64), 2 heads: matmuls a token, as FlopCounterMode counts them over 3 tokens, the
    # selective scan apart.
    config = _config("zamba", _ZAMBA)
    _layout, spec = _spec(config)
    mixer = spec.mixer
    assert mixer is not None
    assert mixer.projection_flops == 2 * (64 * 256 + 128 * 64) + 2 * 2 * (36 * 64 + 64 * 4)
    counted = module_flops(config, torch.randint(1, 100, (1, 3)))
    linears = counted["layers.0.mamba.in_proj"] + counted["layers.0.mamba.out_proj"]
    assert linears == 3 * 2 * (64 * 256 + 128 * 64)


def test_the_deployment_answer_holds_each_block_once(tmp_path: Path) -> None:
    path = tmp_path / "zamba2.json"
    path.write_text(json.dumps(_config("zamba2", _ZAMBA2)))
    args = ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--seq-len", "64", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # The checkpoint: every parameter once, 2 bytes; the KV cache: 4 applications × 64 tokens × 2 × 128, the 8
    # Mamba-2 states beside them (2,048 + 480), 2 bytes.
    assert data["config"]["weights_from"] == [[5, 1], [7, 3]] and data["attention"]["input_width"] == 128
    memory = data["per_gpu_memory"]
    assert memory["checkpoint_bytes"] == memory["per_gpu_bytes"] == 2 * data["total_params"]
    assert memory["kv_cache_bytes"] == 2 * (4 * 64 * 2 * 128 + 8 * (2048 + 480))
    # The pass reads a block's weights in each layer that runs it: layers 5 and 7 read layers 1's and 3's again.
    (case,) = data["roofline"]["cases"]
    assert data["roofline"]["layers_rereading_shared_weights"] == 2
    text = CliRunner().invoke(app, args[:-1], env={"COLUMNS": "80"}).output
    assert "layer 1's weights, run again in layer 5; layer 3's weights, run again in layer 7" in " ".join(text.split())
    assert case["model"]["weight_bytes"] > memory["per_gpu_bytes"]
