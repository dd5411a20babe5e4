"""`ffn params --gpu`: the backward of a training step in the roofline (per layer and for the
model, against hand computations, FlopCounterMode on a built FFN's and transformers' own
model's backward, and the bytes autograd saves as `ffn trace --backward` reads them), and the
picture of a batch sweep (`--plot`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.render.roofline import fmt_intensity, fmt_time

runner = CliRunner()

# A small Llama: SwiGLU d 64 → 96, 4 query heads and 2 KV heads of 16, 3 layers, 101 tokens.
TINY = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 101,
    "tie_word_embeddings": False,
}


def _json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _tiny(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return path


def test_llama_8b_ffn_and_attention_backward_by_hand() -> None:
    # Llama-3.1-8B, one sequence of 4,096 tokens in bf16. The FFN (SwiGLU 4,096 → 14,336):
    # forward 2·3·d·ff FLOPs a token, backward twice that; its 3·d·ff weights read again and
    # their gradients written (2 bytes each); dy read and dx written (t·d each); and what
    # autograd saves for SwiGLU: x (d) and gate, up, silu(gate), silu(gate)·up (ff each) a token.
    t, d, ff = 4096, 4096, 14336
    data = _json("params", "--preset", "llama-3.1-8b", "--gpu", "h100", "--backward")
    roof = data["roofline"]
    (case,) = roof["cases"]
    ffn = case["backward"]["ffn_one_layer"]
    assert ffn["flops"] == 2 * (2 * 3 * d * ff * t)
    assert ffn["weight_bytes"] == 3 * d * ff * 2 and ffn["weight_gradient_bytes"] == 3 * d * ff * 2
    assert ffn["activation_bytes"] == 2 * t * d * 2
    assert ffn["saved_activation_bytes"] == t * (d + 4 * ff) * 2
    assert ffn["bytes"] == 2 * 3 * d * ff * 2 + 2 * t * d * 2 + t * (d + 4 * ff) * 2
    assert ffn["bound"] == "compute" and ffn["time_lower_bound_s"] == pytest.approx(ffn["flops"] / 989.5e12)
    assert "kv_cache_bytes" not in ffn
    # Attention: 32 query heads and 8 KV heads of 128. Projections q, o (d × d) and k, v
    # (1,024 × d); causal scores: each query reads (t + 1)/2 keys on average, 2·2·d FLOPs a key.
    kv = 1024
    proj = 2 * (2 * d * d + 2 * kv * d) * t
    scores = 2 * 2 * d * (t * (t + 1) // 2)
    att = case["backward"]["attention_one_layer_mean"]
    assert att["flops"] == 2 * (proj + scores)
    weights = (2 * d * d + 2 * kv * d) * 2
    assert att["weight_bytes"] == weights and att["weight_gradient_bytes"] == weights
    # saved: x (d), Q (d), K and V (kv each), the output before o_proj (d), and a float32
    # log-sum-exp per query and head (32 a token).
    assert att["saved_activation_bytes"] == t * (3 * d + 2 * kv) * 2 + t * 32 * 4
    assert roof["backward_note"].startswith("bwd: the backward of a training step")


def test_llama_8b_model_backward_is_the_sum_of_its_parts_by_hand() -> None:
    t, d, v, layers = 4096, 4096, 128256, 32
    data = _json("params", "--preset", "llama-3.1-8b", "--gpu", "h100", "--backward")
    (case,) = data["roofline"]["cases"]
    b = case["backward"]
    ffn, att, model = b["ffn_one_layer"], b["attention_one_layer_mean"], b["model"]
    # LM head (untied, v × d): 2·(2·t·d·v) FLOPs; weights read and gradient written; dlogits (t·v)
    # read, dx (t·d) written, its saved input (t·d) read. Embeddings: dy read and one gradient
    # row per token written (t·d each), no FLOPs, no weight read.
    head_flops = 2 * 2 * t * d * v
    head_bytes = 2 * v * d * 2 + t * v * 2 + t * d * 2 + t * d * 2
    embed_bytes = 2 * t * d * 2
    assert model["flops"] == layers * (ffn["flops"] + att["flops"]) + head_flops
    assert model["bytes"] == layers * (ffn["bytes"] + att["bytes"]) + head_bytes + embed_bytes
    assert model["weight_gradient_bytes"] == layers * (ffn["weight_gradient_bytes"] + att["weight_gradient_bytes"]) + v * d * 2 + t * d * 2


def test_a_prefill_computes_one_logits_row_a_sequence_a_training_step_every_tokens() -> None:
    # Llama-3.1-8B, 2 sequences of 1,024 tokens: a server's prefill samples each sequence's next token
    # from its last position's logits, 2·d·v FLOPs and a row of v logits a sequence; a training
    # step's forward computes every token's (its loss reads them all).
    d, v, layers, batch, t = 4096, 128256, 32, 2, 2 * 1024
    args = ("params", "--preset", "llama-3.1-8b", "--gpu", "h100", "--batch", str(batch), "--seq-len", "1024")
    for extra, rows in (((), batch), (("--backward",), t)):
        (case,) = _json(*args, *extra)["roofline"]["cases"]
        ffn, att, model = case["ffn_one_layer"], case["attention_one_layer_mean"], case["model"]
        assert model["flops"] == layers * (ffn["flops"] + att["flops"]) + 2 * rows * d * v


def test_a_moe_backward_reads_and_writes_the_experts_it_touches() -> None:
    # gpt-oss-20b (32 experts, top 4, MXFP4 experts): at 4 tokens, 32·(1 − (28/32)^4) experts in
    # expectation; their weights read again, their gradients (5760·2880 + 2880·2880 + 8,640
    # biases a expert) written in bf16, with the router's (32 × 2880 + 32).
    data = _json("params", "--preset", "gpt-oss-20b", "--gpu", "h100", "--tokens", "4", "--backward")
    (case,) = data["roofline"]["cases"]
    forward, backward = case["ffn_one_layer"], case["backward"]["ffn_one_layer"]
    touched = 32 * (1 - (28 / 32) ** 4)
    assert backward["experts_touched_expected"] == pytest.approx(touched)
    assert backward["weight_bytes"] == forward["weight_bytes"]
    expert = 5760 * 2880 + 2880 * 2880 + 8640
    assert backward["weight_gradient_bytes"] == pytest.approx((touched * expert + 32 * 2880 + 32) * 2)
    assert backward["flops"] == 2 * forward["flops"]


def test_ffn_backward_flops_and_saved_bytes_against_the_built_module(tmp_path: Path) -> None:
    """FlopCounterMode on the built SwiGLU's backward, and the bytes autograd saved as
    `ffn trace --backward` read them, for the tiny Llama's FFN over 2 × 3 tokens."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from ffn_cli import build_ffn
    from ffn_cli.spec import FFNSpec

    data = _json("params", "--config", str(_tiny(tmp_path)), "--gpu", "h100", "--batch", "2", "--seq-len", "3", "--backward")
    ffn = data["roofline"]["cases"][0]["backward"]["ffn_one_layer"]
    module = build_ffn(FFNSpec(variant="swiglu", d_model=64, d_ff=96, bias=False), dtype=torch.bfloat16)
    x = torch.randn(2, 3, 64, dtype=torch.bfloat16, requires_grad=True)
    y = module(x)
    with FlopCounterMode(display=False) as counter:
        y.backward(torch.ones_like(y))
    assert ffn["flops"] == counter.get_total_flops()
    trace = ["trace", "-v", "swiglu", "-d", "64", "--d-ff", "96", "--no-bias", "-b", "2", "-s", "3", "--backward", "--dtype", "bfloat16"]
    traced = _json(*trace)
    assert ffn["saved_activation_bytes"] == traced["backward_saved_bytes_read"]


def test_model_backward_flops_against_transformers_own_model(tmp_path: Path) -> None:
    """The whole tiny Llama's backward under FlopCounterMode (eager attention), 3 sequences of one
    token (where the causal scores read every key, as eager attention computes them)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from torch.utils.flop_counter import FlopCounterMode

    data = _json("params", "--config", str(_tiny(tmp_path)), "--gpu", "h100", "--batch", "3", "--seq-len", "1", "--backward")
    model_bwd = data["roofline"]["cases"][0]["backward"]["model"]
    config = transformers.AutoConfig.for_model(**TINY)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    logits = model(torch.zeros(3, 1, dtype=torch.long)).logits
    with FlopCounterMode(display=False) as counter:
        logits.backward(torch.ones_like(logits))
    assert model_bwd["flops"] == counter.get_total_flops()


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["--preset", "gpt2", "--backward"], "--gpu"),
        (["--preset", "gpt2", "--gpu", "h100", "--phase", "decode", "--backward"], "prefill"),
        (["-v", "swiglu", "--backward"], "whole model"),
    ],
)
def test_backward_where_it_does_not_apply_is_refused(args: list[str], word: str) -> None:
    result = runner.invoke(app, ["params", *args])
    assert result.exit_code == 2 and word in result.stderr and "Traceback" not in result.output


def test_backward_rows_stay_whole_at_80_columns_in_both_languages() -> None:
    for lang in ("en", "zh"):
        result = runner.invoke(
            app,
            ["--lang", lang, "params", "--preset", "llama-3.1-8b", "--gpu", "h100", "--batch", "1,8", "--backward"],
            env={"COLUMNS": "80"},
        )
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        bwd = [line for line in lines if "bwd" in line or "反向" in line]
        assert len(bwd) >= 6 and all("…" not in line for line in bwd)
        assert any(line.rstrip().endswith("1.07 s") for line in bwd)  # the model's 8-sequence backward, uncropped


# --- the batch sweep's picture ------------------------------------------------------------------


def test_ridge_batch_by_hand() -> None:
    from ffn_cli.render.plot import ridge_batch

    # Intensity 1 at batch 1 and 1,000 at batch 1,000 (a power law of exponent 1): the ridge 100 at batch 100.
    assert ridge_batch([1, 1000], [1.0, 1000.0], 100.0) == pytest.approx(100)
    # Intensity 10 at 8, 40 at 64: log-log, 20 is half way in log, at √(8·64) = 22.6.
    assert ridge_batch([1, 8, 64], [2.0, 10.0, 40.0], 20.0) == pytest.approx((8 * 64) ** 0.5)
    assert ridge_batch([1, 8], [2.0, 10.0], 50.0) is None  # never reached
    assert ridge_batch([1, 8], [60.0, 100.0], 50.0) is None  # past it from the start


def test_the_sweep_plot_marks_where_decode_turns_compute_bound(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "sweep.svg"
    args = ["params", "--preset", "llama-3.1-70b", "--gpu", "h100", "--phase", "decode", "--batch", "1,8,64,512", "--plot", str(target)]
    data = _json(*args)
    assert data["roofline"]["plot"] == str(target)
    text = target.read_text(encoding="utf-8")
    # Llama-3.1-70B's FFN at decode: intensity ≈ batch (bf16 weights, 2 FLOPs per 2 bytes), so it
    # meets the H100's ridge of 989.5 / 3.35 = 295.4 FLOP/B near batch 295 (298 with its input and output).
    assert "295.4 FLOP/B" in text and "batch ≈ 298" in text
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.svg"]


@pytest.mark.parametrize(
    ("extra", "word"),
    [
        (["--gpu", "h100", "--batch", "8"], "comma list"),
        (["--gpu", "h100", "--tokens", "8"], "comma list"),
        (["--batch", "1,8"], "--gpu"),
    ],
)
def test_a_plot_without_a_sweep_is_refused(tmp_path: Path, extra: list[str], word: str) -> None:
    target = str(tmp_path / "x.png")
    result = runner.invoke(app, ["params", "--preset", "gpt2", *extra, "--plot", target])
    assert result.exit_code == 2 and word in result.stderr and "Traceback" not in result.output
    assert not list(tmp_path.iterdir())


def test_a_plot_to_a_format_it_cannot_write_is_refused_before_the_work(tmp_path: Path) -> None:
    result = runner.invoke(app, ["params", "--preset", "gpt2", "--gpu", "h100", "--batch", "1,8", "--plot", str(tmp_path / "x.txt")])
    assert result.exit_code == 2 and ".png" in result.stderr


def test_a_chinese_sweep_plot_draws_no_missing_glyph(tmp_path: Path) -> None:
    import warnings

    pytest.importorskip("matplotlib")
    target = tmp_path / "sweep.png"
    args = ["--lang", "zh", "params", "--preset", "llama-3.1-8b", "--gpu", "h100", "--batch", "1,8", "--backward", "--plot", str(target)]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Glyph .* missing")
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert target.stat().st_size > 0 and "图已写入" in result.stdout


def test_mla_attention_backward_reads_its_latents_by_hand() -> None:
    # DeepSeek-V2-Lite: d 2,048, 16 heads, no q latent, kv latent 512, q/k heads 128 + 64 rope,
    # v heads 128. Saved a token: x (2,048), the kv latent (512), Q and K (16·192 each), V and the
    # output before o_proj (16·128 each), in bf16; and 16 float32 log-sum-exps.
    data = _json("params", "--preset", "deepseek-v2-lite", "--gpu", "h100", "--tokens", "10", "--backward")
    att = data["roofline"]["cases"][0]["backward"]["attention_one_layer_mean"]
    assert att["saved_activation_bytes"] == 10 * ((2048 + 512 + 2 * 16 * 192 + 2 * 16 * 128) * 2 + 16 * 4)


@pytest.mark.parametrize(("phase", "per_key"), [("decode", 2 * 8 * (2 * 512 + 64)), ("prefill", 2 * 8 * (192 + 128))])
def test_mla_scores_a_key_on_its_latent_at_decode_expanded_in_prefill(phase: str, per_key: int) -> None:
    # Kimi K2.5 at --tp 8: 64 heads, 8 a GPU; kv latent 512, rotary key 64, q/k heads 128 + 64, v heads 128.
    # A decode step's kernel (kv_b_proj absorbed) reads each cached key's latent and rotary part and sums
    # the latents: 2 · 8 · (512 + 64 + 512) FLOPs a key. A prefill expands K and V: 2 · 8 · (192 + 128).
    def flops(seq_len: int) -> float:
        data = _json("params", "--preset", "kimi-k2.5", "--gpu", "b300", "--tp", "8", "--phase", phase, "--seq-len", str(seq_len))
        return data["roofline"]["cases"][0]["attention_one_layer_mean"]["flops"]  # type: ignore[no-any-return]

    n = 1024
    if phase == "decode":  # one query, n more keys at 2n; its projections the same
        assert flops(2 * n) - flops(n) == per_key * n
    else:  # L queries read 1 … L keys, L(L + 1)/2 in all: a second difference over n leaves n² keys, the projections gone
        assert flops(3 * n) - 2 * flops(2 * n) + flops(n) == per_key * n * n


def test_dsa_reads_its_top_k_keys_on_the_latent_in_prefill_too() -> None:
    # GLM-5 at --tp 8: DeepSeek Sparse Attention's prefill runs MLA's MQA form (FlashMLA's sparse
    # kernels), 2 · 8 heads · (2 · 512 + 64) FLOPs a key read, beside its indexer's score of every key,
    # 2 · 32 / 8 heads · 128. Below the top-2,048 each query reads every key before it: a second
    # difference over n = 512 leaves n² keys of each.
    def flops(seq_len: int) -> float:
        data = _json("params", "--preset", "glm-5", "--gpu", "b300", "--tp", "8", "--phase", "prefill", "--seq-len", str(seq_len))
        return data["roofline"]["cases"][0]["attention_one_layer_mean"]["flops"]  # type: ignore[no-any-return]

    n = 512
    assert flops(3 * n) - 2 * flops(2 * n) + flops(n) == (2 * 8 * (2 * 512 + 64) + 2 * 4 * 128) * n * n


def test_a_hybrids_backward_is_refused_not_guessed() -> None:
    result = runner.invoke(app, ["params", "--preset", "nemotron-h-8b", "--gpu", "h100", "--backward"])
    assert (
        result.exit_code == 2
        and "the backward of its token mixer (Mamba-2) is not counted" in result.stderr
        and "Traceback" not in result.output
    )


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0.000421, "0.421 ms"), (0.0419, "41.9 ms"), (0.9994, "999 ms"), (2.349, "2.35 s"), (37.5, "37.5 s"), (1234.4, "1,234 s")],
)
def test_times_read_without_an_exponent(seconds: float, shown: str) -> None:
    assert fmt_time(seconds) == shown


@pytest.mark.parametrize(
    ("intensity", "shown"), [(0.998, "0.998"), (63.43, "63.4"), (999.4, "999"), (1950.2, "1,950"), (32_400.0, "32,400")]
)
def test_intensities_read_without_an_exponent(intensity: float, shown: str) -> None:
    assert fmt_intensity(intensity) == shown
