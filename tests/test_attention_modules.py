"""Every attention kind the block builds, held to independent paths: its parameters to the
accounting's `tensors()` and to transformers' own attention module built on meta; its output to
transformers' module on the same weights (rotary at position 0 is the identity); its trace's
score and matmul FLOPs, forward and backward, to FlopCounterMode."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from typer.testing import CliRunner

from ffn_cli.attention import AnyAttention, AttentionSpec, LatentAttentionSpec
from ffn_cli.attention_modules import LatentAttention, SelfAttention, build_attention
from ffn_cli.block import BlockSpec, build_block
from ffn_cli.cli import app
from ffn_cli.configs.files import load_preset
from ffn_cli.configs.source import preset_model
from ffn_cli.models.count import count_model
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.backward_run import output_grad_maker
from ffn_cli.tracing.run import trace

pytestmark = pytest.mark.usefixtures("one_thread")

D = 64
# Each kind at small sizes: (spec, the transformers config class and keys that build the same).
KINDS: dict[str, AnyAttention] = {
    "MHA": AttentionSpec(D, 4, 4, 16, qkv_bias=True, o_bias=True),
    "GQA": AttentionSpec(D, 8, 2, 8, qkv_bias=False, o_bias=False),
    "MQA": AttentionSpec(D, 4, 1, 24, qkv_bias=False, o_bias=True),
    "qk-norm-head": AttentionSpec(D, 4, 2, 16, qkv_bias=False, o_bias=False, qk_norm="head"),
    "qk-norm-proj": AttentionSpec(D, 4, 2, 16, qkv_bias=False, o_bias=False, qk_norm="proj"),
    "qk-layernorm": AttentionSpec(D, 4, 4, 16, qk_norm="head", qk_norm_bias=True),
    "sinks": AttentionSpec(D, 4, 2, 16, qkv_bias=True, o_bias=True, sinks=True),
    "MLA": LatentAttentionSpec(D, 4, kv_lora_rank=16, qk_nope_head_dim=12, qk_rope_head_dim=8, v_head_dim=10, q_lora_rank=24),
    "MLA-no-q-rank": LatentAttentionSpec(D, 4, kv_lora_rank=16, qk_nope_head_dim=12, qk_rope_head_dim=8, v_head_dim=10),
    "MLA-bias": LatentAttentionSpec(D, 2, kv_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=6, q_lora_rank=8, bias=True),
}
_COMMON = {"hidden_size": D, "num_hidden_layers": 1, "vocab_size": 16, "intermediate_size": 32}
# The same attention as transformers configures it: (model directory, config class, attention class, keys).
TRANSFORMERS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "MHA": ("qwen2", "Qwen2Config", "Qwen2Attention", {"num_attention_heads": 4, "num_key_value_heads": 4}),
    "GQA": ("llama", "LlamaConfig", "LlamaAttention", {"num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 8}),
    "qk-norm-head": ("qwen3", "Qwen3Config", "Qwen3Attention", {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}),
    "qk-norm-proj": ("olmo2", "Olmo2Config", "Olmo2Attention", {"num_attention_heads": 4, "num_key_value_heads": 2}),
    "qk-layernorm": ("phi", "PhiConfig", "PhiAttention", {"num_attention_heads": 4, "qk_layernorm": True}),
    "sinks": ("gpt_oss", "GptOssConfig", "GptOssAttention", {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}),
    "MLA": (
        "deepseek_v3",
        "DeepseekV3Config",
        "DeepseekV3Attention",
        {
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "q_lora_rank": 24,
            "kv_lora_rank": 16,
            "qk_nope_head_dim": 12,
            "qk_rope_head_dim": 8,
            "v_head_dim": 10,
        },
    ),
    "MLA-no-q-rank": (
        "deepseek_v2",
        "DeepseekV2Config",
        "DeepseekV2Attention",
        {
            "num_attention_heads": 4,
            "q_lora_rank": None,
            "kv_lora_rank": 16,
            "qk_nope_head_dim": 12,
            "qk_rope_head_dim": 8,
            "v_head_dim": 10,
        },
    ),
}
# Models whose attention names its tensors as transformers' LLaMA-like classes do (Phi names
# its output `dense` and its norms `q_layernorm`; Qwen2's o_proj has no bias, ours does here).
SAME_NAMES = ("GQA", "qk-norm-head", "qk-norm-proj", "sinks", "MLA", "MLA-no-q-rank")


def _transformers_attention(kind: str, device: str = "meta") -> tuple[torch.nn.Module, Any]:
    """transformers' attention module for `kind`, and its model's rotary embedding (on cpu)."""
    transformers = pytest.importorskip("transformers")
    folder, config_class, attention_class, keys = TRANSFORMERS[kind]
    config = getattr(transformers, config_class)(**{**_COMMON, **keys})
    config._attn_implementation = "eager"
    modeling = importlib.import_module(f"transformers.models.{folder}.modeling_{folder}")
    rotary = getattr(modeling, attention_class.replace("Attention", "RotaryEmbedding"))(config)
    with torch.device(device):
        return getattr(modeling, attention_class)(config, layer_idx=0), rotary


# --- parameters -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(KINDS))
def test_parameters_are_the_specs_tensors(kind: str) -> None:
    spec = KINDS[kind]
    module = build_attention(spec)
    built = {name: tuple(p.shape) for name, p in module.named_parameters()}
    assert built == {t.name: t.shape for t in spec.tensors()}
    assert isinstance(module, LatentAttention if isinstance(spec, LatentAttentionSpec) else SelfAttention)


@pytest.mark.parametrize("kind", list(TRANSFORMERS))
def test_parameter_count_equals_transformers_module(kind: str) -> None:
    theirs, _ = _transformers_attention(kind)
    ours = build_attention(KINDS[kind])
    n_theirs = sum(p.numel() for p in theirs.parameters())
    # Qwen2's o_proj carries no bias, the MHA spec's does; Phi's biases are all on.
    extra = D if kind == "MHA" else 0
    assert sum(p.numel() for p in ours.parameters()) == n_theirs + extra == KINDS[kind].params
    if kind in SAME_NAMES:
        assert {n: tuple(p.shape) for n, p in ours.named_parameters()} == {n: tuple(p.shape) for n, p in theirs.named_parameters()}


# --- values ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", SAME_NAMES)
def test_output_equals_transformers_module_on_the_same_weights(kind: str) -> None:
    """Rotary made the identity (cos 1, sin 0), no mask: both modules attend both ways over
    the same q, k, v."""
    theirs, rotary = _transformers_attention(kind, device="cpu")
    theirs.eval()
    ours = build_attention(KINDS[kind], eps=theirs.config.rms_norm_eps).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in ours.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    theirs.load_state_dict(ours.state_dict(), strict=True)
    x = torch.randn(2, 7, D, generator=generator)
    # Rotary as the identity, whatever scaling the config's rope applies: (cos, sin) = (1, 0), or e^{i·0} = 1.
    shapes = rotary(x, torch.zeros(2, 7, dtype=torch.long))
    at_zero = (torch.ones_like(shapes[0]), torch.zeros_like(shapes[1])) if isinstance(shapes, tuple) else torch.ones_like(shapes)
    with torch.no_grad():
        expected = theirs(x, position_embeddings=at_zero, attention_mask=None)[0]
        torch.testing.assert_close(ours(x), expected, rtol=1e-5, atol=1e-5)


def test_sinks_take_their_share_of_the_softmax() -> None:
    """A sink of logit s in a head whose scores are all 0 over T keys leaves each key
    1/(T + e^s) of the weight: the output is that fraction of the plain attention's."""
    spec = AttentionSpec(D, 2, 2, 32, qkv_bias=False, o_bias=False, sinks=True)
    attn = build_attention(spec).double().eval()
    with torch.no_grad():
        attn.q_proj.weight.zero_()  # every score 0: uniform weights over the keys
        attn.sinks.copy_(torch.tensor([0.0, math.log(3.0)], dtype=torch.float64))
    x = torch.randn(1, 4, D, dtype=torch.float64)
    plain = attn.v_proj(x).mean(dim=1, keepdim=True).expand(1, 4, 64)  # uniform attention: every query reads the mean value
    share = torch.tensor([4 / (4 + 1)] * 32 + [4 / (4 + 3)] * 32, dtype=torch.float64)
    torch.testing.assert_close(attn(x), attn.o_proj(plain * share))


# --- FLOPs -------------------------------------------------------------------------------------


def _block(kind: str) -> BlockSpec:
    return BlockSpec(FFNSpec(variant="swiglu", d_model=D, d_ff=96), KINDS[kind], "rmsnorm", True)


@pytest.mark.parametrize("kind", list(KINDS))
def test_trace_flops_equal_flop_counter_mode(kind: str) -> None:
    """The trace's score steps against FlopCounterMode's bmm count and the accounting's formula;
    its matmul total against FlopCounterMode's total; every op in exactly one step."""
    block = _block(kind)
    batch, seq_len = 3, 5
    result = trace(block.ffn, block=block, batch=batch, seq_len=seq_len, device="meta")
    module = build_block(block, device="meta")
    with FlopCounterMode(display=False) as counter:
        module(torch.empty(batch, seq_len, D, device="meta"))
    counts = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    steps = {s.name: s for s in result.steps}
    scores = steps["attn.scores"].matmul_flops + steps["attn.context"].matmul_flops
    assert scores == counts["aten.bmm"] == block.attention.score_flops_per_token(seq_len) * batch * seq_len
    assert result.matmul_flops == counter.get_total_flops()
    projections = sum(s.matmul_flops for s in result.steps if s.name.startswith("attn.")) - scores
    assert projections == block.attention.projection_flops_per_token() * batch * seq_len
    assert sum(s.flops for s in result.steps) == result.total_flops == sum(op.flops for op in result.ops)
    assert sorted(i for s in result.steps for i in s.op_indices) == list(range(len(result.ops)))


@pytest.mark.parametrize("kind", ["qk-norm-head", "sinks", "MLA", "MLA-no-q-rank"])
def test_backward_flops_equal_flop_counter_mode(kind: str) -> None:
    block = _block(kind)
    result = trace(block.ffn, block=block, backward=True, check=True, dtype="float64")
    assert result.backward is not None and result.backward.check is not None and result.backward.check.passed
    module = build_block(block, dtype=torch.float64).eval()
    x = torch.randn(2, 5, D, dtype=torch.float64, requires_grad=True)
    out = module(x)
    with FlopCounterMode(display=False) as counter:
        out.backward(output_grad_maker("random", 0)(out.detach()))
    assert result.backward.matmul_flops == counter.get_total_flops()
    assert result.backward.grad_norm("attn.") > 0


# --- steps -------------------------------------------------------------------------------------

STEPS = {
    "qk-norm-head": ["q_proj", "k_proj", "v_proj", "q_norm", "k_norm", "heads", "scores", "softmax", "context", "merge", "o_proj"],
    "sinks": ["q_proj", "k_proj", "v_proj", "heads", "scores", "sinks", "softmax", "context", "merge", "o_proj"],
    "MLA": [
        *("q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa", "kv_split", "kv_a_layernorm", "kv_b_proj"),
        *("heads", "scores", "softmax", "context", "merge", "o_proj"),
    ],
    "MLA-no-q-rank": [
        *("q_proj", "kv_a_proj_with_mqa", "kv_split", "kv_a_layernorm", "kv_b_proj"),
        *("heads", "scores", "softmax", "context", "merge", "o_proj"),
    ],
}


@pytest.mark.parametrize("kind", list(STEPS))
def test_steps_are_named_in_order_with_their_shapes(kind: str) -> None:
    block = _block(kind)
    result = trace(block.ffn, block=block, batch=2, seq_len=3, device="meta")
    attn = [s for s in result.steps if s.name.startswith("attn.")]
    assert [s.name.removeprefix("attn.") for s in attn] == STEPS[kind]
    assert all(s.op and s.op != s.name.removeprefix("attn.") for s in attn)  # each has its formula
    steps = {s.name: s for s in result.steps}
    a = block.attention
    if isinstance(a, LatentAttentionSpec):
        h = a.n_heads
        assert steps["attn.kv_split"].output_shapes == ((2, 3, a.kv_lora_rank), (2, 3, a.qk_rope_head_dim))
        assert set(steps["attn.heads"].output_shapes) == {(2 * h, 3, a.qk_head_dim), (2 * h, a.qk_head_dim, 3), (2 * h, 3, a.v_head_dim)}
        assert steps["attn.merge"].output_shape == (2, 3, h * a.v_head_dim)
    elif a.sinks:
        assert steps["attn.sinks"].output_shape == (2 * int(a.n_heads or 0), 3, 4)  # T keys + the sink
        assert steps["attn.softmax"].output_shape == (2 * int(a.n_heads or 0), 3, 3)  # the sink's column dropped


# --- a real model's MLA on the CLI --------------------------------------------------------------


def test_deepseek_v2_lite_block_on_cpu() -> None:
    """V2-Lite's MLA (one q_proj) with values: forward, backward, and the FFN's check inside it;
    its attention counted as `ffn params` counts the model's."""
    args = ["trace", "--preset", "deepseek-v2-lite", "--block", "--layer", "0", "--d-ff", "64", "--seq-len", "3"]
    result = CliRunner().invoke(app, [*args, "--backward", "--check", "--dtype", "float64", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["check_passed"] is True and data["grad_check_passed"] is True and data["grad_norm_parts"]["attn"] > 0
    parts = {p.name: p.params_each for p in count_model(preset_model("deepseek-v2-lite")).parts}
    assert data["param_groups"]["attn"] == parts["attention"]
    assert data["block"]["attention"]["kind"] == "MLA" and data["block"]["attention"]["q_lora_rank"] is None
    softmax = next(s["stats"] for s in data["steps"] if s["name"] == "attn.softmax")
    assert softmax["mean"] == pytest.approx(1 / 3, abs=1e-12)  # each row of weights sums to 1 over 3 keys


def test_yarn_mscale_is_named_not_built(tmp_path: Path) -> None:
    """DeepSeek-V3's released config scales its scores by yarn's mscale²: a note says the block does not."""
    config = {**load_preset("deepseek-v3"), "rope_scaling": {"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0}}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    result = CliRunner().invoke(app, ["trace", "--config", str(tmp_path), "--layer", "0", "--block", "--device", "meta", "--json"])
    assert result.exit_code == 0, result.output
    assert any("mscale" in note for note in json.loads(result.stdout)["model"]["not_built"])
    plain = CliRunner().invoke(app, ["trace", "--preset", "deepseek-v3", "--layer", "0", "--block", "--device", "meta", "--json"])
    assert not any("mscale" in note for note in json.loads(plain.stdout)["model"]["not_built"])
