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
from ffn_cli.configs.layer_read import read_layout  # noqa: E402

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


def test_zamba_mamba_heads_by_hand() -> None:
    # Zamba's Mamba: in_proj (64 → 256), out_proj (128 → 64), and a matrix a head for x (64 → 4 + 2 · 16)
    # and dt (4 → 64), 2 heads: matmuls a token, by hand; its Linears as FlopCounterMode counts them over
    # 3 tokens (the per-head matrices run inside the scan's module, which the counter does not tell apart).
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
    assert data["roofline"]["layers_rereading_shared_weights"] == 2
    text = CliRunner().invoke(app, args[:-1], env={"COLUMNS": "80"}).output
    assert "layer 1's weights, run again in layer 5; layer 3's weights, run again in layer 7" in " ".join(text.split())
    # The per-layer rows: the layers that run another's weights apart, so a sum over rows counts them once.
    rows = {tuple(row["layers"]): row.get("weights_held", True) for row in data["per_layer"]}  # the layers with an FFN
    assert rows == {(1, 3): True, (5, 7): False}


def test_a_layer_running_attention_beside_its_mixer_all_reduces_both(tmp_path: Path) -> None:
    # At --tp 2 each tensor-parallel part ends in an all-reduce of one token's 64 values (bf16, a ring
    # sends 2 · 1/2 of them): 8 Mamba-2 mixers, 4 attentions beside them in the hybrid layers, 4 FFNs.
    path = tmp_path / "zamba2.json"
    path.write_text(json.dumps(_config("zamba2", _ZAMBA2)))
    args = ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--seq-len", "64", "--batch", "1", "--tp", "2"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    comm = json.loads(result.stdout)["roofline"]["cases"][0]["communication"]
    assert comm["model_bytes_sent"] == pytest.approx((8 + 4 + 4) * 2 * (1 / 2) * 64 * 2)


def test_the_pass_reads_a_shared_block_in_every_layer_that_runs_it() -> None:
    # The roofline's weight reads: as many as the same layers each holding the block, once each.
    from dataclasses import replace

    from ffn_cli.costs.roofline.model_pass import PassCase, pass_cost
    from ffn_cli.costs.weights import plan_from_options
    from ffn_cli.models.seq_flops import model_stack

    layout, spec = _spec(_config("zamba2", _ZAMBA2))
    unshared = replace(spec, weights_from=(), extras=tuple(replace(e, shared=False) for e in spec.extras))
    assert count_model(unshared).total_params > count_model(spec).total_params
    plan = plan_from_options("bf16", None)
    for case in (PassCase("decode", 2, 64), PassCase("prefill", 1, 16)):
        shared, held = (pass_cost(s, model_stack(s, layout.windows, causal=True), plan, case).model for s in (spec, unshared))
        assert shared.weight_bytes == held.weight_bytes and shared.flops == held.flops and shared.kv_bytes == held.kv_bytes


# Inkling 2 Loop of 64 wide, 8 layers alternating sliding (window 4) and full, 4 heads × 16 over 2 KV heads,
# MoE of 4 experts × 32, top-2; layers 2–5 looped, 3 passes, message gates of rank 8.
_LOOP = dict(vocab_size=128, unpadded_vocab_size=120, hidden_size=64, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=2,
             head_dim=16, swa_num_attention_heads=4, swa_num_key_value_heads=2, swa_head_dim=16, sliding_window_size=4, rel_extent=8,
             d_rel=4, moe_intermediate_size=32, n_routed_experts=4, num_experts_per_tok=2, n_layers_per_attn_res_block=2,
             loop_layer_index_start=2, loop_layer_index_end=6, loop_num_passes=3, loop_gate_rank=8,
             layer_types=["hybrid_sliding", "hybrid"] * 4, pad_token_id=0)  # fmt: skip


def test_the_later_passes_of_a_looped_span_hold_nothing() -> None:
    # Passes 2 and 3 of layers 2–5 are layers 8–11 and 12–15, as transformers' cache numbers them.
    config = _config("inkling2_loop_text", _LOOP)
    _layout, spec = _spec(config)
    assert spec.n_layers == 16 and spec.reused_whole
    assert spec.weights_from == tuple((8 + 4 * p + i, 2 + i) for p in range(2) for i in range(4))
    counted = count_model(spec)
    assert counted.total_params == meta_build.count(config, name="x", source="x").total_params
    (again,) = [p for p in counted.parts if p.name == "shared blocks, run again"]
    assert again.params == 0 and again.copies == 8
    # By hand: 4 gates (q, k, v, MLP) a looped layer, each 2 · 64 → 8 and 8 → 64 twice; held by layers 2–5.
    (gates,) = [p for p in counted.parts if p.name == "message gates"]
    assert gates.params == 4 * 4 * (128 * 8 + 2 * 8 * 64) and gates.copies == 4


@pytest.mark.parametrize("context", [3, 11])
def test_each_pass_keeps_its_own_cache_against_transformers(context: int) -> None:
    # Each pass keeps its layers' K and V (3 tokens in a sliding layer, every token in a full one)
    # and their convolutions' windows: transformers' cache holds 16 layers, a later pass's as its first's.
    config = _config("inkling2_loop_text", _LOOP)
    layout, spec = _spec(config)
    kinds = {str.__str__(k.kind): k for k in decode_state(spec, layout.windows, layout.chunks, context)}
    assert (kinds["attention, sliding 4"].layers, kinds["attention"].layers, kinds["short convolutions"].layers) == (8, 8, 16)
    cache = _cache_after(config, context)
    assert len(cache.layers) == spec.n_layers
    held = [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers]  # 2 sequences
    sliding, full = min(context, 3) * 2 * 2 * 16, context * 2 * 2 * 16
    assert held == [sliding, full] * 8
    assert kinds["attention, sliding 4"].tokens == min(context, 3) and kinds["attention"].tokens == context


def test_a_looped_span_against_flop_counter() -> None:
    # FlopCounterMode over 5 tokens: layer 2's projections run 3 times, once a pass; its message
    # gates twice, in the later passes alone.
    config = _config("inkling2_loop_text", _LOOP)
    _layout, spec = _spec(config)
    counted = module_flops(config, torch.randint(1, 100, (1, 5)))
    assert counted["layers.2.self_attn.q_proj.linear"] == 3 * 5 * 2 * 64 * 64
    (gates,) = [e for e in spec.extras if e.name == "message gates"]
    assert gates.flops == 4 * 2 * (128 * 8 + 2 * 8 * 64) and spec.layers_of(gates) == tuple(range(8, 16))
    ran = sum(counted[f"layers.{i}.{g}_message_gate"] for i in range(2, 6) for g in ("q", "k", "v", "mlp"))
    assert ran == 5 * gates.flops * len(spec.layers_of(gates) or ())
    # The FLOPs a token: one pass's (whose message gates never run), and the looped layers' again, twice, with their gates.
    flat = _spec(_config("inkling2_loop_text", {**_LOOP, "loop_num_passes": 1}))[1]
    assert flat.n_layers == 8 and not flat.weights_from
    (unrun,) = [e for e in flat.extras if e.name == "message gates"]
    assert unrun.flops == 0 and unrun.params_each == gates.params_each
    looped = count_model(spec).matmul_flops_per_token - count_model(flat).matmul_flops_per_token
    moe = spec.moe_ffn
    assert moe is not None and spec.mixer is not None
    one_pass = sum(spec.attention_flops_of(i) for i in range(2, 6)) + 4 * (spec.ffn_matmul_flops(moe) + spec.mixer.projection_flops)
    assert looped == 2 * one_pass + 8 * gates.flops


def test_blocks_each_applied_once_keep_their_adapters_apart() -> None:
    # Four blocks for four hybrid layers: none tied, each applied once; the adapters are still each
    # application's own, a row of their own, not counted with the attention.
    config = _config("zamba2", {**_ZAMBA2, "num_mem_blocks": 4})
    _layout, spec = _spec(config)
    counted = count_model(spec)
    assert not spec.weights_from and counted.total_params == meta_build.count(config, name="x", source="x").total_params
    parts = {p.name: p for p in counted.parts}
    # By hand: q, k, v (128 → 128) and o (128 → 64) a block, 4 blocks; 3 × (128 · 8 + 8 · 128) + 64 · 8 + 8 · 192 an application.
    assert parts["attention"].params == 4 * (3 * 128 * 128 + 128 * 64)
    assert parts["per-application adapters"].params == 4 * (3 * 2 * 128 * 8 + 64 * 8 + 8 * 192)


def test_a_looped_span_past_the_layers_is_refused(tmp_path: Path) -> None:
    # transformers builds it, and its cache fails on the first token: its layout refused by the key,
    # exit 2 where --gpu asks for it; counted by building where only a count is asked, the note saying why.
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(_config("inkling2_loop_text", {**_LOOP, "loop_layer_index_end": 10})))
    result = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h200"])
    assert result.exit_code == 2 and "loop_layer_index_end" in result.output and "Traceback" not in result.output
    counted = CliRunner().invoke(app, ["params", "--config", str(path)], env={"COLUMNS": "200"})
    assert counted.exit_code == 0 and "its layout is not read (loop_layer_index_end=10" in counted.output


def test_message_gates_one_pass_never_runs_are_not_active() -> None:
    # One pass: the message gates are held and never run, in the total, not the active count.
    spec = _spec(_config("inkling2_loop_text", {**_LOOP, "loop_num_passes": 1}))[1]
    counted = count_model(spec)
    (gates,) = [p for p in counted.parts if p.name == "message gates"]
    assert gates.params == 4 * 4 * (128 * 8 + 2 * 8 * 64) and gates.active_params == 0
    held_alike = count_model(spec).total_params - gates.params
    assert counted.active_params < held_alike  # the routed experts a token skips, and the gates
    looped = count_model(_spec(_config("inkling2_loop_text", _LOOP))[1])
    assert looped.active_params - counted.active_params == gates.params


# HRM-Text of 64 wide: two stacks of 2 layers (4 heads × 16, as many KV heads, gated; a SwiGLU MLP of 96),
# run in 2 H cycles of 2 L cycles each: the low-level stack twice, then the high-level one, twice over.
_HRM = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, head_dim=16, vocab_size=100,
            num_layers_per_stack=2, H_cycles=2, L_cycles=2, num_hidden_layers=12, pad_token_id=0)  # fmt: skip


def test_each_run_of_a_cycled_stack_is_a_layer_that_holds_nothing() -> None:
    # transformers' cache slots, in the order the stacks run: L (0–1), L (2–3), H (4–5), L (6–7), L (8–9), H (10–11).
    # Layers 0–1 hold the low-level stack's weights, 4–5 the high-level one's; every other run holds none.
    config = _config("hrm_text", _HRM)
    layout, spec = _spec(config)
    assert spec.n_layers == 12 and spec.reused_whole
    assert spec.weights_from == ((2, 0), (3, 1), (6, 0), (7, 1), (8, 0), (9, 1), (10, 4), (11, 5))
    counted = count_model(spec)
    assert counted.total_params == meta_build.count(config, name="x", source="x").total_params
    # By hand: q, k, v and the gate (64 → 64 each), o (64 → 64); gate, up (64 → 96), down (96 → 64);
    # 4 layers that hold weights, norms without any; the token table and the head (100 × 64 each) and z_L_init (64).
    assert counted.total_params == 4 * (5 * 64 * 64 + 3 * 64 * 96) + 2 * 100 * 64 + 64
    (again,) = [p for p in counted.parts if p.name == "shared blocks, run again"]
    assert again.params == 0 and again.copies == 8
    said = " ".join(layout.notes)
    assert "the low-level stack (L_module) in layers 0–3, 6–9, the high-level one (H_module) in layers 4–5, 10–11" in said


@pytest.mark.parametrize("context", [3, 7])
def test_each_run_of_a_cycled_stack_keeps_its_own_cache_against_transformers(context: int) -> None:
    config = _config("hrm_text", _HRM)
    layout, spec = _spec(config)
    (kind,) = decode_state(spec, layout.windows, layout.chunks, context)
    assert (kind.layers, kind.elements_per_layer) == (12, context * 2 * 4 * 16)
    cache = _cache_after(config, context)
    held = [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers]  # 2 sequences
    assert held == [kind.elements_per_layer] * 12


def test_a_cycled_stack_against_flop_counter() -> None:
    # FlopCounterMode over 5 tokens: each low-level layer's projections and MLP run 4 times, each high-level one's twice.
    config = _config("hrm_text", _HRM)
    _layout, spec = _spec(config)
    counted = module_flops(config, torch.randint(1, 100, (1, 5)))
    one_layer = 2 * (5 * 64 * 64 + 3 * 64 * 96)
    parts = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.gate_proj", "self_attn.o_proj", "mlp")
    for stack, runs in (("L_module", 4), ("H_module", 2)):
        for j in range(2):
            assert sum(counted[f"{stack}.layers.{j}.{p}"] for p in parts) == runs * 5 * one_layer
    head = 2 * 64 * 100
    assert count_model(spec).matmul_flops_per_token == 12 * one_layer + head


def test_fewer_layers_than_a_cycled_stacks_runs_are_refused(tmp_path: Path) -> None:
    # transformers builds it, and its forward fails past 10 cache slots of the 12 runs: refused by the key.
    path = tmp_path / "hrm.json"
    path.write_text(json.dumps(_config("hrm_text", {**_HRM, "num_hidden_layers": 10})))
    result = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h200"])
    assert result.exit_code == 2 and "num_hidden_layers" in result.output and "= 12" in result.output
    assert "Traceback" not in result.output


def test_more_layers_than_a_cycled_stacks_runs_are_the_runs() -> None:
    # num_hidden_layers 16: transformers runs it, its cache filling the 12 runs' slots alone; laid out as those 12.
    config = _config("hrm_text", {**_HRM, "num_hidden_layers": 16})
    layout, spec = _spec(config)
    assert spec.n_layers == 12 and count_model(spec).total_params == meta_build.count(config, name="x", source="x").total_params
    assert "num_hidden_layers (16) names more cache slots than the stacks' runs (12)" in " ".join(layout.notes)
    (kind,) = decode_state(spec, layout.windows, layout.chunks, 3)
    cache = _cache_after(config, 3)
    held = [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers if layer.keys is not None and layer.keys.numel()]
    assert held == [kind.elements_per_layer] * 12


def test_the_deployment_answer_of_a_cycled_stack(tmp_path: Path) -> None:
    # Every run keeps K and V of its own: batch 4 at 1,000 tokens, 12 layers of 4 KV heads × 16, K and V, 2 B each.
    path = tmp_path / "hrm.json"
    path.write_text(json.dumps(_config("hrm_text", _HRM)))
    result = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--batch", "4",
                                      "--seq-len", "1000", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    memory = json.loads(result.stdout)["per_gpu_memory"]
    assert memory["kv_cache_bytes"] == 4 * 1000 * 12 * 2 * 4 * 16 * 2
