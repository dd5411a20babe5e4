"""JetMoE's mixture of attention heads laid out: a token's picks of the query-and-output experts as
its attention, the experts it does not pick held beside, out of its active count; against a hand
count, transformers' own cache after a forward, and FlopCounterMode."""

from __future__ import annotations

from typing import Any

import pytest

from ffn_cli.costs.decode_state import decode_state
from ffn_cli.models.count import count_model

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from ffn_cli.configs.layer_read import read_layout  # noqa: E402

# JetMoE of 64 wide, 2 layers: 2 KV heads × 16 (kv_channels), 4 experts, top-2, each MoE expert 48 wide.
_JETMOE = dict(hidden_size=64, num_hidden_layers=2, num_key_value_heads=2, kv_channels=16, num_local_experts=4, num_experts_per_tok=2,
               intermediate_size=48, vocab_size=100, pad_token_id=0, bos_token_id=1, eos_token_id=2)  # fmt: skip


def _config() -> dict[str, Any]:
    return {**transformers.AutoConfig.for_model("jetmoe", **_JETMOE).to_dict(), "model_type": "jetmoe"}


def test_a_tokens_picks_are_its_attention_the_rest_held_beside() -> None:
    layout = read_layout(_config(), name="small", source="small")
    spec = layout.spec
    a = spec.attention
    # 2 KV heads × 16 a pick: 4 query heads scoring 2 KV heads, an output bias of 64
    assert (a.n_heads, a.n_kv_heads, a.head_dim, a.o_bias, a.qkv_bias) == (4, 2, 16, True, False)
    counted = count_model(spec)
    # By hand, a layer: kv_proj 64 → 64, 4 experts' q (64 → 32) and o (32 → 64), the router 64 → 4, the bias 64;
    # the MoE: 4 experts' input_linear (64 → 96) and output_linear (48 → 64), its router 64 → 4, its bias 64;
    # two RMSNorms. Beside: the embeddings (tied head) and the final norm.
    attention = 64 * 64 + 4 * 2 * 64 * 32 + 64 * 4 + 64
    moe = 4 * (64 * 96 + 48 * 64) + 64 * 4 + 64
    assert counted.total_params == 2 * (attention + moe + 2 * 64) + 100 * 64 + 64
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**_config()))
    assert counted.total_params == sum(p.numel() for p in model.parameters())
    # Active: a token's 2 picks of each, the routers and biases all run.
    picked = 64 * 64 + 2 * 2 * 64 * 32 + 64 * 4 + 64
    moe_picked = 2 * (64 * 96 + 48 * 64) + 64 * 4 + 64
    assert counted.active_params == 2 * (picked + moe_picked + 2 * 64) + 100 * 64 + 64


def test_what_decoding_keeps_against_transformers_cache() -> None:
    layout = read_layout(_config(), name="small", source="small")
    context = 9
    kinds = {str.__str__(k.kind): k for k in decode_state(layout.spec, layout.windows, layout.chunks, context)}
    assert kinds["attention"].elements_per_layer == context * 2 * 2 * 16  # K and V of 2 KV heads × 16
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**_config())).eval()
    with torch.no_grad():
        cache = model(torch.randint(3, 100, (1, context)), use_cache=True).past_key_values
    for layer in cache.layers:
        assert layer.keys.numel() + layer.values.numel() == kinds["attention"].elements_per_layer


def test_a_layers_attention_against_flop_counter() -> None:
    # 5 tokens through one layer's attention: kv_proj, the router and 2 picks' q and o a token (by hand,
    # 2 · 64 · (64 + 4 + 2 · (32 + 32)) = 25,088), the scores of
    # 4 query heads over the keys before them (eager: QKᵀ and AV over all 5, masked).
    layout = read_layout(_config(), name="small", source="small")
    spec = layout.spec
    config = transformers.AutoConfig.for_model(**_config())
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    attention = model.model.layers[0].self_attention
    tokens = 5
    hidden = torch.randn(1, tokens, 64)
    positions = model.model.rotary_emb(hidden, torch.arange(tokens)[None])
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        attention(hidden, position_embeddings=positions)
    assert spec.attention_flops_of(0) == 2 * 64 * (64 + 4 + 2 * (32 + 32))
    scores = 2 * 2 * tokens * tokens * 4 * 16
    assert counter.get_total_flops() == tokens * spec.attention_flops_of(0) + scores


def _attention_weights(tokens: int) -> float:
    """The weight bytes one layer's attention reads in a decode step of `tokens` sequences, bf16."""
    from ffn_cli.costs.roofline.model_pass import PassCase, attention_cost
    from ffn_cli.costs.weights import plan_from_options
    from ffn_cli.models.seq_flops import model_stack

    layout = read_layout(_config(), name="small", source="small")
    stack = model_stack(layout.spec, layout.windows, causal=True)
    return attention_cost(layout.spec, stack, 0, plan_from_options("bf16", None), PassCase("decode", tokens, 16)).weight_bytes


def test_the_experts_a_pass_touches_are_the_ones_it_reads() -> None:
    # At batch 1 a decode step reads its 2 picks' experts alone: kv_proj, their q and o, the router, the
    # bias (2 bytes each); at a batch large enough every expert, 2 more q and o.
    picked = 2 * (64 * 64 + 2 * 2 * 64 * 32 + 64 * 4 + 64)
    assert _attention_weights(1) == picked
    assert _attention_weights(4096) == pytest.approx(picked + 2 * 2 * (2 * 64 * 32))


def test_the_attention_experts_are_stored_and_split_as_attention(tmp_path: Any) -> None:
    # --weights fp8 stores every query-and-output expert as the picks' (the attention's projections), the
    # attention's router as the FFN's (a router, bf16); --ep divides the FFN's experts alone: each
    # data-parallel copy of the attention holds all of its experts.
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    path = tmp_path / "jetmoe.json"
    path.write_text(json.dumps(_config()))
    stored = json.loads(CliRunner().invoke(app, ["params", "--config", str(path), "--weights", "fp8", "--json"]).stdout)["checkpoint"]
    roles = {r["role"]: r for r in stored["roles"]}
    # by hand, 2 layers: kv_proj 64 × 64 and 4 experts' q (32 × 64) and o (64 × 32); the routers 4 × 64, the MoA's and the MoE's
    assert roles["attention"]["params"] == 2 * (64 * 64 + 4 * 2 * 32 * 64) and roles["attention"]["format"] == "fp8"
    assert roles["router"]["params"] == 2 * 2 * 4 * 64 and roles["router"]["format"] == "bf16"
    split = json.loads(CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--ep", "2", "--json"]).stdout)
    memory = split["per_gpu_memory"]
    assert memory["expert_bytes"] == 2 * 2 * 4 * (64 * 96 + 48 * 64) // 2  # the MoE's 4 experts in each of 2 layers, half a GPU


def test_the_active_ratio_counts_what_a_token_runs() -> None:
    # FFN over attention, active: the MoE's 2 picks of 4 against the attention's 2 picks of 4, both by hand.
    counted = count_model(read_layout(_config(), name="small", source="small").spec)
    ffn_active = 2 * (2 * (64 * 96 + 48 * 64) + 64 * 4 + 64)
    attention_active = 2 * (64 * 64 + 2 * 2 * 64 * 32 + 64 * 4 + 64)
    assert counted.ffn_active_attention_ratio == pytest.approx(ffn_active / attention_active)
    # --explain says the same: the attention a token runs beside the FFN it runs
    from ffn_cli.models.explain import explain_model

    explained = explain_model(counted)
    assert (explained.ffn_active_params, explained.attention_active) == (ffn_active, attention_active)


def test_a_routed_part_picks_fewer_than_it_holds() -> None:
    from ffn_cli.errors import FFNError
    from ffn_cli.models.spec import ExtraPart

    with pytest.raises(FFNError, match="must pick fewer experts"):
        ExtraPart("experts", "attention", "", (), per_layer=True, routed=(4, 4))


def test_a_middle_batch_reads_the_experts_it_is_expected_to_touch() -> None:
    # 3 decode tokens: each expert touched with 1 − (1 − 2/4)³ = 7/8, so 3.5 of 4 in expectation, 1.5 beyond the 2 picks.
    one_expert = 2 * (2 * 64 * 32)  # its q and o, 2 bytes
    assert _attention_weights(3) == pytest.approx(_attention_weights(1) + 1.5 * one_expert)


def test_no_kv_heads_is_refused_by_its_key(tmp_path: Any) -> None:
    # transformers builds JetMoE with num_key_value_heads 0; its attention would attend to nothing
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    path = tmp_path / "jetmoe.json"
    path.write_text(json.dumps({**_config(), "num_key_value_heads": 0}))
    result = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h100"])
    assert result.exit_code == 2 and "key num_key_value_heads = 0: must be 1 or more" in result.output


def test_tp_divides_each_attention_experts_query_heads(tmp_path: Any) -> None:
    # 4 query heads (2 KV heads × 2 picks): --tp 4 would cut each expert's 2 query heads in halves
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    path = tmp_path / "jetmoe.json"
    path.write_text(json.dumps(_config()))
    assert CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h100", "--tp", "2"]).exit_code == 0
    refused = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h100", "--tp", "4"])
    assert refused.exit_code == 2 and "2 query heads an attention expert" in " ".join(refused.output.split())
