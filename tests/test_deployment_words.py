"""The words of a deployment answer hold to its numbers: what the replicated row holds, why no
layout is named past a model's context, whose rows the decode state counts under --tp, and a
quantization method's lists without repeats."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app

pytest.importorskip("transformers")  # the 2026 presets are laid out from transformers' modules


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, ["params", *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def _json(*args: str) -> Any:
    result = CliRunner().invoke(app, ["params", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_replicated_row_names_a_vision_tower_and_holds_its_bytes() -> None:
    # Gemma 4 26B-A4B's tower stays whole on each GPU of --tp 2, in bf16: 2 bytes a parameter.
    data = _json("--preset", "gemma-4-26b-a4b", "--gpu", "h100", "--tp", "2")
    memory = data["per_gpu_memory"]
    assert memory["vision_bytes"] == 2 * data["vision_params"] > 0
    assert memory["replicated_bytes"] > memory["vision_bytes"]
    assert "replicated: norms, routers, vision tower" in _run("--preset", "gemma-4-26b-a4b", "--gpu", "h100", "--tp", "2")
    assert "vision tower" not in _run("--preset", "qwen3-30b-a3b", "--gpu", "h100", "--tp", "2").split("replicated:")[1][:40]


def test_no_layout_is_named_for_a_context_past_the_models_limit() -> None:
    said = _run("--preset", "llama-3.1-8b", "--gpu", "h100", "--seq-len", "1000000")
    assert "is past the model's 131,072" in said and "no layout runs this pass" in said and "fits at --tp" not in said
    # Memory holding it is not the model running it: a "fits" past the limit says so in the verdict itself.
    held = _run("--preset", "qwen3-8b", "--gpu", "h100", "--seq-len", "300000")
    assert "fits in memory (" in held and "at a context the model does not run" in held and "fits: " not in held
    memory = _json("--preset", "qwen3-8b", "--gpu", "h100", "--seq-len", "300000")["per_gpu_memory"]
    assert memory["max_batch"] is None and memory["fits"] and memory["past_context_limit"]  # Qwen3-8B runs 40,960
    assert not _json("--preset", "qwen3-8b", "--gpu", "h100", "--seq-len", "40960")["per_gpu_memory"]["past_context_limit"]


@pytest.mark.parametrize(("tp", "said"), [(1, False), (8, True)])
def test_the_decode_state_says_its_rows_are_the_models_under_tp(tp: int, said: bool) -> None:
    text = _run("--preset", "llama-3.1-70b", "--gpu", "h100", "--tp", str(tp), "--phase", "decode", "--batch", "1,64")
    assert ("each GPU of --tp 8 keeps its share of the KV heads" in text) is said
    data = _json("--preset", "llama-3.1-70b", "--gpu", "h100", "--tp", str(tp), "--phase", "decode", "--batch", "1,64")
    # The table's rows are the whole model's: 80 layers × 2 × 8 KV heads × 128 × 4,096 tokens × 2 bytes.
    assert data["decode_state"]["bytes_per_sequence"] == 80 * 2 * 8 * 128 * 4096 * 2


def test_a_methods_lists_do_not_repeat_a_role() -> None:
    # MiniMax-M2.5-NVFP4 keeps its routers out of the quantization by name: said once, as not converted.
    said = _run("--preset", "minimax-m2.5-nvfp4", "--gpu", "h100", "--tp", "4", "--ep", "4")
    clause = said.split("quantization_config: modelopt")[1].split(". nvfp4")[0]
    assert clause.count("routers") == 1 and "not converted:" in clause


def test_a_compressed_cache_is_counted_at_its_most_and_said_so() -> None:
    # DeepSeek-V4's compressed layers shrink their cache as a window closes: the memory of one GPU
    # counts the most on the way to the context, at least what the decode state holds there
    # (one head: the whole cache on every GPU of --tp), and its row says so; a plain cache is counted at it.
    args = ("--gpu", "h200", "--tp", "8", "--phase", "decode", "--seq-len", "100000", "--batch", "2")
    data = _json("--preset", "deepseek-v4-flash", *args)
    memory = data["per_gpu_memory"]
    assert memory["kv_cache_at_its_most"] is True
    assert memory["kv_cache_bytes"] >= 2 * data["decode_state"]["bytes_per_sequence"]
    assert "KV cache: 2 × 100,000 tokens, at its most" in _run("--preset", "deepseek-v4-flash", *args)
    plain = _json("--preset", "llama-3.1-70b", *args)["per_gpu_memory"]
    assert plain["kv_cache_at_its_most"] is False


def test_weights_the_reader_chose_are_never_called_the_checkpoint() -> None:
    # DeepSeek-V4-Flash ships its experts in mxfp4 (148.28 GiB); --weights fp8 sizes it as it would
    # be stored in fp8, which is no checkpoint's size: every place says whose format it is.
    shipped = _json("--preset", "deepseek-v4-flash", "--gpu", "h200", "--tp", "8")["per_gpu_memory"]
    asked = _json("--preset", "deepseek-v4-flash", "--gpu", "h200", "--tp", "8", "--weights", "fp8")["per_gpu_memory"]
    assert asked["checkpoint_bytes"] > shipped["checkpoint_bytes"]
    assert (asked["weights_asked"], shipped["weights_asked"]) == ("fp8", None)
    text = _run("--preset", "deepseek-v4-flash", "--gpu", "h200", "--tp", "8", "--weights", "fp8")
    assert "as the checkpoint stores them" not in text and "(checkpoint " not in text
    assert text.count("in --weights fp8") == 3  # the summary, the stored table's total, the memory's title
    assert "as the checkpoint stores them" in _run("--preset", "deepseek-v4-flash", "--gpu", "h200", "--tp", "8")


def test_a_hybrids_stored_projections_are_said_as_token_mixing() -> None:
    # Nemotron 3 Super's Mamba-2 in/out projections are stored beside its attention's: the row is
    # token mixing, not attention (its attention alone is a twentieth of it); a dense model's stays attention.
    hybrid = _json("--preset", "nemotron-3-super-120b-a12b", "--weights", "nvfp4")["checkpoint"]["roles"]
    (mixing,) = [r for r in hybrid if r["role"] == "attention"]
    assert mixing["what"] == "token-mixing projections"
    assert "token-mixing projections" in _run("--preset", "nemotron-3-super-120b-a12b", "--weights", "nvfp4")
    dense = _json("--preset", "qwen3-8b", "--weights", "fp8")["checkpoint"]["roles"]
    assert [r["what"] for r in dense if r["role"] == "attention"] == ["attention projections"]


def test_side_by_side_a_zero_expert_models_active_count_is_said_to_be_its_most() -> None:
    # LongCat-Flash routes to zero-computation experts: beside another model its active count is the
    # range's most, and the same least and mean the model alone gives are said under the table.
    alone = _json("--preset", "longcat-flash-chat")
    (longcat, qwen) = _json("--preset", "longcat-flash-chat,qwen3-8b")["models"]
    assert longcat["active_params"] == alone["active_params"]
    assert (longcat["least_active_params"], longcat["mean_active_params"]) == (alone["least_active_params"], alone["mean_active_params"])
    assert "mean_active_params" not in qwen
    assert "longcat-flash-chat: its active count is the most" in _run("--preset", "longcat-flash-chat,qwen3-8b")


def test_the_roofline_says_the_mtp_layers_the_memory_counts_are_not_in_its_pass() -> None:
    # GLM-5's checkpoint holds one MTP layer (num_nextn_predict_layers): its weights and cache are in
    # the memory, and the pass the roofline prices is the model's 78 layers without it.
    args = ("--preset", "glm-5", "--gpu", "h200", "--tp", "8", "--phase", "decode")
    assert _json(*args)["roofline"]["mtp_layers_not_run"] == 1
    assert _json(*args, "--no-mtp")["roofline"]["mtp_layers_not_run"] == 0
    assert "1 multi-token-prediction layer, which the memory counts, is not in this pass" in _run(*args)


def test_what_one_model_answers_is_refused_side_by_side_before_any_model_is_read() -> None:
    # Two models and --gpu: refused by the option, before the second (a file that is not there) is read.
    result = CliRunner().invoke(app, ["params", "--preset", "qwen3-8b", "--config", "/nonexistent/config.json", "--gpu", "h100"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--gpu h100: answers for one model at a time" in result.stderr and "nonexistent" not in result.stderr


def test_float8_compute_says_its_weights_stay_bf16() -> None:
    # --dtype float8 on a checkpoint with no quantization_config: the weights as stored are bf16
    # (8,030,261,248 parameters × 2 B), the cache at 1 B an element (32 layers × 8 KV heads × 128, K and V,
    # 4,096 tokens); the caption says which is which, not "bf16 (--dtype)".
    data = _json("--preset", "llama-3.1-8b", "--gpu", "h800", "--dtype", "float8", "--batch", "1")
    memory = data["per_gpu_memory"]
    assert memory["checkpoint_bytes"] == 8_030_261_248 * 2
    assert memory["kv_cache_bytes"] == 32 * 8 * 128 * 2 * 4096
    said = _run("--preset", "llama-3.1-8b", "--gpu", "h800", "--dtype", "float8", "--batch", "1")
    assert "bf16 everywhere: --dtype float8 computes and keeps the cache in fp8" in said and "(--dtype)" not in said


def test_a_quantization_caption_names_only_what_the_model_holds() -> None:
    # Gemma 4 31B's ModelOpt checkpoint: its config's ignore list names lm_head, but the head is tied
    # to the token embeddings (no tensor of its own), and a dense model has no routers: neither is
    # named. gpt-oss-120b holds both, and its caption names both.
    gemma = _run("--preset", "gemma-4-31b-it-nvfp4", "--gpu", "h200")
    said = gemma[gemma.index("quantization_config: modelopt") :].split(". ")[0]
    assert "attention projections" in said and "LM head" not in said and "routers" not in said
    gpt = _run("--preset", "gpt-oss-120b", "--gpu", "h200")
    assert "not converted: attention projections, embeddings, LM head, routers" in gpt


def test_a_scope_of_the_layers_linears_names_the_towers_it_leaves() -> None:
    # --weights fp8 on the layers' linears (its default scope): Gemma 3's vision tower and Qwen3-Omni's
    # towers and speech output keep the checkpoint's bf16, as the stored table's row says; Llama
    # 3.1 has no tower to name.
    gemma = _run("--preset", "gemma-3-4b", "--gpu", "h200", "--weights", "fp8")
    assert "not the embeddings, routers or LM head); the vision tower left unquantized (--quantize's default)" in gemma
    assert re.search(r" vision tower +[\d,]+ +bf16 +16 ", gemma)
    omni = _run("--preset", "qwen3-omni-30b-a3b-instruct", "--gpu", "h200", "--weights", "fp8")
    assert "LM head); the towers and speech output left unquantized (--quantize's default)" in omni
    assert re.search(r" towers and speech output +4,727,171,633 +bf16 +16 ", omni)
    # a scope that names only what it stores (the routed experts alone) lists nothing it leaves
    experts = _run("--preset", "qwen3-omni-30b-a3b-instruct", "--gpu", "h200", "--weights", "fp8", "--quantize", "experts")
    assert "--quantize experts: the routed experts alone." in experts and "left unquantized" not in experts
    assert "left unquantized" not in _run("--preset", "llama-3.1-8b", "--gpu", "h200", "--weights", "fp8")


def test_quantize_all_says_what_it_stores_and_what_stays() -> None:
    # int4 on every linear of the model: Llama 3.1's head is its own and its table is no router's; a
    # dense model has no router, and Gemma 3's vision tower stays in bf16 as the vectors do. A float
    # format covers every tensor. --weights on a quantized checkpoint names no tied head (Gemma 4's).
    llama = _run("--preset", "llama-3.1-8b", "--gpu", "h200", "--weights", "int4", "--quantize", "all")
    assert "--quantize all: the layers' linears, embeddings, LM head (biases and norms stay unquantized)" in llama
    gemma = _run("--preset", "gemma-3-4b", "--gpu", "h200", "--weights", "int4", "--quantize", "all")
    assert "--quantize all: the layers' linears, embeddings (biases, norms and the vision tower stay unquantized)" in gemma
    assert "--quantize all: every tensor" in _run("--preset", "llama-3.1-8b", "--gpu", "h200", "--weights", "bf16", "--quantize", "all")
    gemma4 = _run("--preset", "gemma-4-31b-it-nvfp4", "--gpu", "h200", "--weights", "int4")
    assert "quantization_config quantizes (not converted: attention projections, vision tower)" in gemma4
