"""One GPU's bytes in a deployment (weights, KV cache, activations, reserve) against the memory
its driver reports, and the largest batch and longest context: each worked out by hand here."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.hardware import GPUS, find_gpu
from ffn_cli.hardware.gpus import DRIVER_SOURCES
from ffn_cli.hardware.reserve import runtime_reserve
from tests.helpers import cli_json

GIB = 2**30


def test_driver_memory_is_nvidia_smis_mib() -> None:
    # nvidia-smi: H200 143771MiB, H100 80GB 81559MiB (85.52 GB, as Modal's list of totals says).
    assert find_gpu("h200").memory_bytes == 150_754_820_096
    assert find_gpu("h100").memory_bytes == 85_520_809_984
    assert find_gpu("h200").memory_bytes / GIB == pytest.approx(140.4, abs=0.01)
    # No driver figure sourced: the datasheet's 10⁹ bytes, said so.
    pcie = find_gpu("h100-pcie")
    assert not pcie.memory_from_driver and pcie.memory_bytes == 80 * 10**9
    # Two logs disagree (H20: 97,871 or 98,304 MiB): the lower, never the datasheet's 96 × 10⁹ bytes below both.
    h20 = find_gpu("h20")
    assert h20.memory_from_driver and h20.memory_bytes == 97871 * 2**20
    # rocminfo's memory pool on an MI300X: 201,310,208 KB.
    assert find_gpu("mi300x").memory_bytes == 201_310_208 * 1024


@pytest.mark.parametrize("gpu", [g for g in GPUS if g.driver_mib is not None], ids=lambda g: g.key)
def test_every_driver_figure_has_a_source_within_a_tenth_of_the_datasheet(gpu) -> None:  # type: ignore[no-untyped-def]
    assert gpu.driver_source in DRIVER_SOURCES
    what, where = DRIVER_SOURCES[gpu.driver_source]
    assert f"{gpu.driver_mib}" in what.replace(",", "") or gpu.driver_source == "modal-2797"
    assert where
    # The driver's total is the datasheet's GB (10⁹) or GiB less what the firmware keeps: never far off.
    assert 0.9 < gpu.memory_bytes / (gpu.memory_gb * 1e9) < 1.1


@pytest.mark.parametrize(
    ("preset", "d_model", "vocab", "widest"),
    [
        # gpt-oss's experts are as wide as the model (d_ff = d_model = 2,880): top-4 × (gate + up),
        # 4 · 2 · 2,880; each down projection writes the residual back and is no intermediate.
        ("gpt-oss-120b", 2880, 201088, 4 * 2 * 2880),
        # Nemotron 3 Super's latent MoE: top-22 experts read the 1,024-wide latent (up only, relu²),
        # 22 · 2,688, beside the shared expert's 5,376 and the latent itself, 1,024; wider than its
        # Mamba-2 in_proj, 2 · 8,192 + 2 · 8 · 128 + 128 = 18,560.
        ("nemotron-3-super-120b-a12b", 4096, 131072, 22 * 2688 + 5376 + 1024),
        # Qwen3.5-35B-A3B: its Gated DeltaNet's input projections (q, k of 16 heads × 128, v and z of 32
        # × 128, b and a one per value head), 2 · 2,048 + 2 · 4,096 + 2 · 32 = 12,352, are wider than its
        # MoE's top-8 × (gate + up) + shared, 8 · 2 · 512 + 2 · 512 = 9,216.
        ("qwen3.5-35b-a3b", 2048, 248320, 2 * 2048 + 2 * 4096 + 2 * 32),
        # Kimi-Linear's KDA: q, k, v of 32 heads × 128, its forget gate's and output gate's low ranks
        # (128) and their up-projections (4,096 each), β of 32 heads; its o_proj writes the residual:
        # 3 · 4,096 + 2 · (128 + 4,096) + 32 = 20,768, wider than its MoE's 8 · 2 · 1,024 + 2 · 1,024.
        ("kimi-linear-48b-a3b", 2304, 163840, 3 * 4096 + 2 * (128 + 4096) + 32),
    ],
)
def test_the_widest_intermediate_by_hand(preset: str, d_model: int, vocab: int, widest: int) -> None:
    data = cli_json("params", "--preset", preset, "--gpu", "b300", "--phase", "prefill", "--batch", "1", "--seq-len", "1000")
    # 1,000 tokens × (the layer's input and residual, 2 · d_model, + the widest intermediate) × 2 B,
    # and one float32 logits row for the sequence.
    assert data["per_gpu_memory"]["activation_bytes"] == 1000 * (2 * d_model + widest) * 2 + vocab * 4


def test_a_latent_moes_projections_are_whole_on_every_gpu() -> None:
    # Nemotron 3 Super at --tp 2 in fp8: vLLM holds fc1_latent_proj and fc2_latent_proj as a ReplicatedLinear,
    # each 4,096 × 1,024 in its 40 MoE layers, one byte a weight and one fp32 scale a tensor.
    memory = cli_json("params", "--preset", "nemotron-3-super-120b-a12b", "--gpu", "b300", "--weights", "fp8", "--tp", "2")
    assert memory["per_gpu_memory"]["whole_latent_projection_bytes"] == 40 * 2 * (4096 * 1024 + 4)


def test_llama_70b_on_8_h100_by_hand() -> None:
    data = cli_json("params", "--preset", "llama-3.1-70b", "--gpu", "h100", "--tp", "8", "--phase", "decode", "--batch", "64")
    m = data["per_gpu_memory"]
    # KV cache: 8 KV heads over 8 GPUs, one each: 80 layers × 64 sequences × 4,096 tokens × (K, V) × 128 × 2 B.
    per_token = 80 * 2 * 1 * 128 * 2
    assert m["kv_cache_bytes"] == 64 * 4096 * per_token
    # Activations of decode: 64 tokens × (2·8,192 + the widest intermediate on one GPU: gate + up,
    # 2 · 28,672 / 8 = 7,168, wider than q, k, v's (8,192 + 2 · 1,024) / 8) × 2 B, and one float32
    # logits row per sequence of the vocabulary's eighth, 128,256 / 8.
    per_seq_act = (2 * 8192 + 7168) * 2 + 128256 // 8 * 4
    assert m["activation_bytes"] == 64 * per_seq_act
    assert m["reserve_bytes"] == round(3.58 * GIB)  # vLLM's measure at tp 2: CUDA, allocator, NCCL
    fixed = m["per_gpu_bytes"] + m["reserve_bytes"]
    assert m["total_bytes"] == fixed + m["kv_cache_bytes"] + m["activation_bytes"]
    capacity = 81559 * 2**20
    assert m["gpu_memory_bytes"] == capacity and m["fits"] is True
    assert m["free_bytes"] == capacity - m["total_bytes"]
    # Linear in the batch and in the context here (no window): the largest of each by division.
    assert m["max_batch"] == (capacity - fixed) // (4096 * per_token + per_seq_act)
    assert m["max_context"] == (capacity - fixed - 64 * per_seq_act) // (64 * per_token)


def test_the_searched_batch_is_the_last_that_fits() -> None:
    args = ("params", "--preset", "qwen3-8b", "--gpu", "l4", "--phase", "decode", "--seq-len", "8192")
    largest = cli_json(*args, "--batch", "1")["per_gpu_memory"]["max_batch"]
    assert largest > 1
    assert cli_json(*args, "--batch", str(largest))["per_gpu_memory"]["fits"] is True
    assert cli_json(*args, "--batch", str(largest + 1))["per_gpu_memory"]["fits"] is False


def test_the_verdict_counts_the_kv_cache_it_prints() -> None:
    # Qwen3-235B-A22B fp8 on 8 H100s at batch 64: 4 KV heads over 8 GPUs, one each (replicated twice).
    data = cli_json(
        "params", "--preset", "qwen3-235b-a22b", "--gpu", "h100", "--weights", "fp8", "--tp", "8", "--phase", "decode", "--batch", "64"
    )
    m, state = data["per_gpu_memory"], data["decode_state"]
    assert m["kv_cache_bytes"] == 94 * 64 * 4096 * 2 * 128 * 2
    assert m["kv_cache_bytes"] == state["bytes_by_batch"]["64"] // 4  # the whole cache, over its 4 KV heads
    assert m["total_bytes"] > m["per_gpu_bytes"] + m["kv_cache_bytes"]


def test_latent_attention_keeps_its_whole_latent_on_every_gpu() -> None:
    # DeepSeek-V3: kv_lora_rank 512 + rope 64 per token and layer, not split by heads; its 61
    # layers and the checkpoint's MTP layer (61 + 1), which a speculative decoder runs, unless --no-mtp.
    args = ("params", "--preset", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--ep", "8", "--phase", "decode", "--batch", "4")
    m = cli_json(*args)
    assert m["per_gpu_memory"]["kv_cache_bytes"] == 4 * (61 + 1) * 4096 * (512 + 64) * 2
    mtp = [k for k in m["decode_state"]["kinds"] if k.get("multi_token_prediction")]
    assert [(k["kind"], k["layers"], k["bytes"]) for k in mtp] == [("MTP: attention", 1, 4096 * 576 * 2)]
    bare = cli_json(*args, "--no-mtp")
    assert bare["per_gpu_memory"]["kv_cache_bytes"] == 4 * 61 * 4096 * (512 + 64) * 2
    assert not any(k.get("multi_token_prediction") for k in bare["decode_state"]["kinds"])


def test_expert_parallel_beyond_tp_spreads_the_sequences() -> None:
    # gpt-oss-120b, --ep 8 (tp 1): 8 attention replicas, batch 20 → at most 3 sequences on a GPU.
    m = cli_json("params", "--preset", "gpt-oss-120b", "--gpu", "h100", "--ep", "8", "--phase", "decode", "--batch", "20")
    assert m["per_gpu_memory"]["sequences_per_gpu"] == 3
    one = cli_json("params", "--preset", "gpt-oss-120b", "--gpu", "h100", "--phase", "decode", "--batch", "3")  # one GPU, 3 sequences
    assert m["per_gpu_memory"]["kv_cache_bytes"] == one["per_gpu_memory"]["kv_cache_bytes"]


def test_expert_parallel_below_tp_cuts_each_expert_over_its_ranks_gpus() -> None:
    # --tp 4 --ep 2: the experts over 2 ranks, each expert's matrices over the rank's 2 GPUs (SGLang's
    # moe-tp): a GPU holds a quarter of them, as at --tp 4 and at --ep 4; never half.
    def held(*layout: str) -> int:
        return cli_json("params", "--preset", "gpt-oss-120b", "--gpu", "h100", *layout)["per_gpu_memory"]["expert_bytes"]

    whole = cli_json("params", "--preset", "gpt-oss-120b", "--gpu", "h100")["per_gpu_memory"]["expert_bytes"]
    assert held("--tp", "4", "--ep", "2") == held("--tp", "4") == held("--ep", "4") == -(-whole // 4)


def test_fewer_kv_heads_than_gpus_copy_a_heads_projections_to_each() -> None:
    # Llama 3.1 70B's 8 KV heads at --tp 16: a GPU holds one head's k_proj and v_proj (each head
    # copied to 2 GPUs, as vLLM copies it), 80 layers × 2 × 128 × 8,192 × 2 B, not a sixteenth of
    # theirs; at --tp 8 they split evenly and no such row is counted.
    def memory(tp: str) -> dict:  # type: ignore[type-arg]
        return cli_json("params", "--preset", "llama-3.1-70b", "--gpu", "h100", "--tp", tp, "--phase", "decode")

    at16, at8 = memory("16")["per_gpu_memory"], memory("8")["per_gpu_memory"]
    assert at16["copied_kv_projection_bytes"] == 80 * 2 * 128 * 8192 * 2
    assert at8["copied_kv_projection_bytes"] == 0
    kv_whole = 80 * 2 * 1024 * 8192 * 2
    assert at16["split_bytes"] == -(-(at8["split_bytes"] * 8 - kv_whole) // 16)
    held = ("expert_bytes", "split_bytes", "replicated_bytes", "copied_kv_projection_bytes")
    assert at16["per_gpu_bytes"] == sum(at16[k] for k in held)


def test_mla_down_projections_are_whole_on_every_gpu() -> None:
    # DeepSeek-V3's q_a_proj (1,536 × 7,168) and kv_a_proj_with_mqa (576 × 7,168), which vLLM and
    # SGLang keep whole on each GPU (ReplicatedLinear): in its FP8 blocks of 128 × 128, one float32
    # scale a block, in the 61 layers and the MTP layer; on one GPU, nothing of them is apart.
    def memory(*layout: str) -> dict:  # type: ignore[type-arg]
        return cli_json("params", "--preset", "deepseek-v3", "--gpu", "h100", *layout)["per_gpu_memory"]

    per_layer = (1536 + 576) * 7168 + (12 * 56 + 5 * 56) * 4
    assert memory("--tp", "16", "--ep", "16")["whole_latent_projection_bytes"] == 62 * per_layer
    assert memory()["whole_latent_projection_bytes"] == 0


def test_what_every_gpu_holds_whole_is_the_models_own() -> None:
    # Qwen3-8B: norms alone (no bias, no router); gpt-oss: its linears' biases and its routers too.
    def words(preset: str) -> str:
        from typer.testing import CliRunner

        from ffn_cli.cli import app

        result = CliRunner().invoke(app, ["params", "--preset", preset, "--gpu", "h100", "--tp", "2"], env={"COLUMNS": "100"})
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        return next(line for line in lines if line.startswith("replicated:")).rsplit("  ", 1)[0].strip()

    assert words("qwen3-8b") == "replicated: norms"
    assert words("gpt-oss-120b") == "replicated: norms, linear biases, routers"


def test_one_gpu_gets_a_verdict_and_the_reserve_of_one() -> None:
    m = cli_json("params", "--preset", "llama-3.3-70b", "--gpu", "h200")["per_gpu_memory"]
    assert m["gpus"] == 1 and m["reserve_bytes"] == runtime_reserve(1).bytes_ == round(1.79 * GIB)
    assert m["gpu_memory_source"]["kind"] == "driver" and m["gpu_memory_source"]["mib"] == 143771
    assert isinstance(m["fits"], bool) and "not_counted" not in m


def test_a_dense_models_ffn_carries_no_expert_fields() -> None:
    data = cli_json("params", "--preset", "llama-3.1-70b")
    assert "experts" not in data["dense_ffn"] and "top_k" not in data["dense_ffn"]
    moe = cli_json("params", "--preset", "deepseek-v3")
    assert moe["moe_ffn"]["experts"] == 256 and moe["moe_ffn"]["top_k"] == 8
    assert "experts" not in moe["dense_ffn"]


def test_the_longest_context_stops_at_the_models_limit() -> None:
    # GPT-2 takes 1,024 positions (n_positions): a 4,096 context fits the memory, not the model,
    # which the verdict says when asked for one; with no --seq-len the pass is the model's 1,024.
    m = cli_json("params", "--preset", "gpt2", "--gpu", "h100", "--phase", "decode", "--seq-len", "4096")["per_gpu_memory"]
    assert m["context_limit"] == 1024 and m["max_context"] == 1024 and m["context"] == 4096
    m = cli_json("params", "--preset", "gpt2", "--gpu", "h100", "--phase", "decode")["per_gpu_memory"]
    assert m["context_limit"] == m["max_context"] == m["context"] == 1024
    m = cli_json("params", "--preset", "llama-3.1-8b", "--gpu", "h100", "--phase", "decode")["per_gpu_memory"]
    assert m["context"] == 4096  # a longer limit: the default


def test_an_encoder_keeps_no_cache() -> None:
    m = cli_json("params", "--preset", "bert-base-uncased", "--gpu", "h100")["per_gpu_memory"]
    assert m["kv_cache_bytes"] == 0 and m["max_context"] == 512  # its max_position_embeddings


def test_nemotron_3_nano_keeps_its_ssm_state_in_the_float32_its_config_names() -> None:
    # mamba_ssm_cache_dtype: float32. 23 Mamba-2 layers of 64 heads × 64 head width × state 128
    # in float32, their conv (4,096 + 2 · 8 groups · 128 channels, kernel 4 − 1) in bf16, and 6
    # attention layers of 2 KV heads × 128 × (K and V) at 32,768 tokens in bf16.
    args = ("params", "--preset", "nemotron-3-nano-30b-a3b", "--gpu", "h100", "--phase", "decode", "--seq-len", "32768")
    data = cli_json(*args, "--batch", "2")
    state, memory = data["decode_state"], data["per_gpu_memory"]
    ssm = 23 * 64 * 64 * 128 * 4
    conv = 23 * (64 * 64 + 2 * 8 * 128) * 3 * 2
    kv = 6 * 32768 * 2 * 128 * 2 * 2
    assert state["bytes_per_sequence"] == ssm + conv + kv == 250_408_960
    mamba = next(k for k in state["kinds"] if k["kind"] == "Mamba-2")
    assert mamba["bytes"] == ssm + conv and mamba["recurrent_bytes_per_element"] == 4
    assert memory["kv_cache_bytes"] == 2 * (ssm + conv + kv)
    # Without the key the state is cached in bf16, as the rest is.
    assert state["bytes_per_sequence"] - 23 * 64 * 64 * 128 * 2 == 226_291_712


def test_an_unknown_ssm_state_dtype_is_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app
    from ffn_cli.configs.files import load_preset

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**load_preset("nemotron-3-nano-30b-a3b"), "mamba_ssm_cache_dtype": "int3"}))
    result = CliRunner().invoke(app, ["params", "--config", str(path)])
    assert result.exit_code == 2 and "mamba_ssm_cache_dtype" in result.stderr and "float32" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "gpu", [g for g in GPUS if "bf16" in g.tflops and ("AMD" in g.name or g.key in ("h100", "a100"))], ids=lambda g: g.key
)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_reserve_names_the_gpus_own_runtime(gpu, lang: str) -> None:  # type: ignore[no-untyped-def]
    """AMD's cards run ROCm: the reserve is a HIP context and, on two GPUs, RCCL's buffers, never
    CUDA's; NVIDIA's keep CUDA and NCCL. The vendor is read from the card's own name."""
    from typer.testing import CliRunner

    from ffn_cli.cli import app

    amd = gpu.name.startswith("AMD")
    context, collectives = ("HIP", "RCCL") if amd else ("CUDA", "NCCL")
    args = ["--lang", lang, "params", "--preset", "llama-2-7b", "--gpu", gpu.key, "--tp", "2"]
    out = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    text = " ".join(out.stdout.split())
    assert context in text and collectives in text and f"{context} graph" in text
    assert ("CUDA" in text) != amd and ("NCCL" in text) != amd
    data = cli_json("params", "--preset", "llama-2-7b", "--gpu", gpu.key)["per_gpu_memory"]
    assert f"Not counted: {context} graphs" in data["counted"]


def test_a_context_memory_never_stops_says_so(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # RecurrentGemma: sliding-window attention and RG-LRU layers, a state that stops growing, and a
    # config that names no longest context: the search reaches its end, 2³⁰ tokens, and says so.
    transformers = pytest.importorskip("transformers")
    import json

    keys = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=1, vocab_size=128,
                lru_width=64, attention_window_size=4, block_types=["recurrent", "recurrent", "attention"])  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**transformers.AutoConfig.for_model("recurrent_gemma", **keys).to_dict(), "model_type": "recurrent_gemma"}))
    m = cli_json("params", "--config", str(path), "--gpu", "h100", "--phase", "decode")["per_gpu_memory"]
    assert m["max_context"] == m["search_limit"] == 2**30 and m["context_limit"] is None
    from typer.testing import CliRunner

    from ffn_cli.cli import app

    shown = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h100", "--phase", "decode"], env={"COLUMNS": "100"}).output
    assert "memory sets no limit" in shown and "≥ 1,073,741,824" in shown


def test_a_verdict_that_does_not_fit_names_the_fewest_gpus_that_do() -> None:
    # DeepSeek-V3 without its MTP layer: 626.92 GiB of fp8 weights, 140.40 GiB an H200. By hand, 4 GPUs
    # hold at most 561.6 GiB, less than the weights alone: no 4-GPU layout fits, and --tp 8 does.
    args = ("params", "--preset", "deepseek-v3", "--gpu", "h200", "--phase", "decode", "--no-mtp")
    one = cli_json(*args)["per_gpu_memory"]
    assert not one["fits"] and one["fits_at"] == {"tp": 8, "ep": 1, "copies": 1, "gpus": 8}
    assert 4 * 140.40 < one["checkpoint_bytes"] / 2**30 < 8 * 140.40
    assert cli_json(*args, "--tp", "8")["per_gpu_memory"]["fits"]
    assert "fits_at" not in cli_json(*args, "--tp", "8")["per_gpu_memory"]


def test_a_batch_no_layout_holds_is_shared_among_copies_of_the_fewest_gpus() -> None:
    # Llama 3.1 8B on L4s at 32,768 tokens: 4 GiB of cache a sequence, so 512 sequences need 2 TiB,
    # more than 64 L4s' memory under any --tp (8 KV heads: past --tp 8 each GPU keeps a whole head).
    # Copies of one layout each serve their share: the fewest GPUs over every --tp's copies, each
    # copy holding the largest batch that layout fits.
    args = ("params", "--preset", "llama-3.1-8b", "--gpu", "l4", "--phase", "decode", "--seq-len", "32768", "--batch", "512")
    at = cli_json(*args)["per_gpu_memory"]["fits_at"]
    held = {}
    for tp in (1, 2, 4, 8, 16, 32):
        held[tp] = cli_json(*args[:-1], "1", "--tp", str(tp))["per_gpu_memory"]["max_batch"]
    gpus = {tp: -(-512 // most) * tp for tp, most in held.items() if most}
    fewest = min(gpus.values())
    assert at["gpus"] == fewest and at["copies"] == -(-512 // held[at["tp"]]) > 1 and at["ep"] == 1
    assert at["tp"] == max(tp for tp, n in gpus.items() if n == fewest)  # where the GPUs tie, the fewer copies
    # Whatever layout was asked: a wider one asked does not narrow the search.
    assert cli_json(*args, "--tp", "16")["per_gpu_memory"]["fits_at"] == at


def test_a_verdict_far_past_the_gpu_writes_its_numbers_with_separators() -> None:
    # gpt-oss-120b at 16,777,216 sequences of 131,072 tokens: thousands of copies, a share in the
    # hundreds of thousands of percent, each number grouped as every other number the table prints.
    args = ("--preset", "gpt-oss-120b", "--gpu", "gb200", "--tp", "8", "--ep", "64", "--phase", "decode",
            "--batch", "16777216", "--seq-len", "131072")  # fmt: skip
    memory = cli_json("params", *args)["per_gpu_memory"]
    at, share = memory["fits_at"], 100 * memory["total_bytes"] / memory["gpu_memory_bytes"]
    shown = " ".join(CliRunner().invoke(app, ["params", *args], env={"COLUMNS": "100"}).stdout.split())
    assert f"fits as {at['copies']:,} copies" in shown and f"{at['gpus']:,} GPUs" in shown and at["copies"] > 1000
    assert f"does not fit: {share:,.1f}% of it" in shown and share > 1000


def test_a_layout_asked_past_64_gpus_is_one_the_copies_are_tried_of() -> None:
    # DeepSeek-V3 at --tp 8 --ep 128 holds some of a batch of 8,192: copies of it, or of a layout of
    # up to 64 GPUs, not "no layout".
    args = ("params", "--preset", "deepseek-v3", "--gpu", "h100", "--tp", "8", "--ep", "128", "--phase", "decode")
    memory = cli_json(*args, "--batch", "8192", "--seq-len", "32768")["per_gpu_memory"]
    assert not memory["fits"] and memory["max_batch"] > 0
    at = memory["fits_at"]
    assert at is not None and at["gpus"] <= -(-8192 // memory["max_batch"]) * 128


def test_a_routed_experts_biases_go_where_the_expert_goes() -> None:
    # gpt-oss-120b: 36 layers of 128 experts, each a gate_up (5,760 × 2,880) and a down (2,880 ×
    # 2,880) in mxfp4 (4 bits and an 8-bit scale per 32: 4.25 bits) and their biases (5,760 + 2,880)
    # in bf16. On one GPU every expert's bytes by hand; at --ep 4 a quarter of them, the biases too,
    # and what every GPU holds whole is the same.
    one = cli_json("params", "--preset", "gpt-oss-120b", "--gpu", "h200")["per_gpu_memory"]
    four = cli_json("params", "--preset", "gpt-oss-120b", "--gpu", "h200", "--ep", "4")["per_gpu_memory"]
    experts = 36 * 128
    bits = experts * (5760 * 2880 + 2880 * 2880) * 4.25 + experts * (5760 + 2880) * 16
    assert one["expert_bytes"] == -(-int(bits) // 8)
    assert four["expert_bytes"] == -(-one["expert_bytes"] // 4) and four["replicated_bytes"] == one["replicated_bytes"]


def test_whole_nodes_past_a_power_of_two_are_tried() -> None:
    # Kimi K2 in fp8 at 32,768 tokens × 64 sequences: no layout of 16 GPUs holds it, three 8-GPU
    # nodes do (--ep 24 divides its 384 experts), fewer than the 32 a doubling search would name.
    args = ("params", "--preset", "kimi-k2", "--gpu", "h100", "--weights", "fp8", "--phase", "decode")
    args += ("--seq-len", "32768", "--batch", "64")
    at = cli_json(*args)["per_gpu_memory"]["fits_at"]
    assert at["gpus"] == 24 and at["copies"] == 1
    assert cli_json(*args, "--tp", str(at["tp"]), "--ep", str(at["ep"]))["per_gpu_memory"]["fits"]
    for tp in (1, 2, 4, 8, 16):
        assert not cli_json(*args, "--tp", str(tp), "--ep", "16")["per_gpu_memory"]["fits"]
    assert not cli_json(*args, "--tp", "16")["per_gpu_memory"]["fits"]
