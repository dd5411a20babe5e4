"""--gpu on a row of the table with memory and bandwidth but no dense rate (the sources disagree:
MI355X, RTX PRO 6000 Blackwell): the memory answer needs no rate and is given; the roofline is
replaced by one line that names the row's note. A row with rates, but not the asked dtype's, is
refused with the dtypes it has."""

from __future__ import annotations

from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.hardware import find_gpu
from tests.helpers import cli_json

GIB = 1 << 30
MI355X_NOTE = "the sources disagree on which of AMD's rates are dense"

# Llama-2-7B by hand (its config.json): 32 layers, d_model 4096, 32 KV heads of 128, d_ff 11008,
# vocab 32000, untied head; 6,738,415,616 parameters.
PARAMS = 6_738_415_616
LAYERS, D, KV_WIDTH, D_FF, VOCAB = 32, 4096, 32 * 128, 11008, 32000
BF16 = 2
TOKENS = 4096  # the default --seq-len, batch 1


def _hand_count(batch: int) -> dict[str, int]:
    weights = PARAMS * BF16
    kv = LAYERS * 2 * KV_WIDTH * TOKENS * batch * BF16  # K and V of every layer
    # the pass's tokens × (input and output of d_model + SwiGLU's gate and up outputs), and a
    # float32 logits row per sequence
    activations = batch * TOKENS * (2 * D + 2 * D_FF) * BF16 + batch * VOCAB * 4
    reserve = round(1.79 * GIB)  # vLLM's measured non-torch memory at tp 1 (vllm-project/vllm#10511)
    return {"weights": weights, "kv": kv, "activations": activations, "reserve": reserve}


def test_llama_2_7b_on_mi355x_fits_as_counted_by_hand() -> None:
    data = cli_json("params", "--preset", "llama-2-7b", "--gpu", "mi355x")
    memory = data["per_gpu_memory"]
    count = _hand_count(1)
    total = sum(count.values())
    capacity = 288 * 10**9  # AMD's 288 GB; no driver log gives a MiB figure
    assert memory["per_gpu_bytes"] == count["weights"]
    assert memory["kv_cache_bytes"] == count["kv"]
    assert memory["activation_bytes"] == count["activations"]
    assert memory["reserve_bytes"] == count["reserve"]
    assert memory["gpu_memory_bytes"] == capacity
    assert memory["total_bytes"] == total
    assert memory["fits"] is True and memory["free_bytes"] == capacity - total
    # the largest batch whose bytes still fit, counted batch by batch
    largest = max(b for b in range(1, 1000) if sum(_hand_count(b).values()) <= capacity)
    assert memory["max_batch"] == largest == 113


def test_the_roofline_is_one_line_naming_the_rows_note() -> None:
    result = CliRunner().invoke(app, ["params", "--preset", "llama-2-7b", "--gpu", "mi355x"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "no roofline on AMD Instinct MI355X: the table holds none of its peak rates" in text
    assert MI355X_NOTE in text
    assert "fits: 6.2% used" in text  # the verdict is still there
    zh = CliRunner().invoke(app, ["--lang", "zh", "params", "--preset", "llama-2-7b", "--gpu", "mi355x"], env={"COLUMNS": "80"})
    assert zh.exit_code == 0 and "没有roofline：表中没有它的任何峰值算力" in "".join(zh.stdout.split())


def test_a_rateless_rows_json_has_a_null_roofline_and_the_reason() -> None:
    data = cli_json("params", "--preset", "llama-2-7b", "--gpu", "rtx-pro-6000", "--phase", "decode", "--batch", "1,8")
    assert data["roofline"] is None
    assert data["roofline_missing"] == "; ".join(find_gpu("rtx-pro-6000").notes)
    assert "the sources disagree on the dense rates" in data["roofline_missing"]
    assert data["per_gpu_memory"]["gpu"] == "rtx-pro-6000"
    # the decode state needs no rate either: llama-2-7b's cache at 4,096 tokens, by hand
    kv_per_sequence = LAYERS * 2 * KV_WIDTH * TOKENS * BF16
    assert data["decode_state"]["bytes_per_sequence"] == kv_per_sequence
    assert data["decode_state"]["bytes_by_batch"] == {"1": kv_per_sequence, "8": 8 * kv_per_sequence}


def test_a_row_with_rates_keeps_its_roofline_and_no_reason() -> None:
    data = cli_json("params", "--preset", "llama-2-7b", "--gpu", "h100")
    assert data["roofline"] is not None and "roofline_missing" not in data


def test_one_ffn_on_a_rateless_row() -> None:
    data = cli_json("params", "-v", "swiglu", "-d", "512", "--gpu", "mi355x")
    assert data["roofline"] is None and MI355X_NOTE in data["roofline_missing"]
    assert data["total_params"] == 3 * 512 * 1536  # gate, up, down of d_ff 1536
    result = CliRunner().invoke(app, ["params", "-v", "swiglu", "--gpu", "mi355x"], env={"COLUMNS": "80"})
    assert result.exit_code == 0 and MI355X_NOTE in " ".join(result.stdout.split())


def test_a_missing_dtype_names_the_dtypes_the_row_has() -> None:
    # V100 SXM2: fp64, fp32 and fp16 in its datasheet, no bf16; a checkpoint stores no float64
    model = CliRunner().invoke(app, ["params", "--preset", "llama-2-7b", "--gpu", "v100"])
    assert model.exit_code == 2
    assert model.stderr.strip() == (
        "error: --gpu v100: NVIDIA V100 SXM2 has no dense bf16 rate in the table; it has one for --dtype float32, float16"
    )
    ffn = CliRunner().invoke(app, ["params", "-v", "swiglu", "--gpu", "v100", "--dtype", "bfloat16"])
    assert ffn.exit_code == 2 and "it has one for --dtype float64, float32, float16" in ffn.stderr
    # and the hint is true: the first dtype it names is taken
    assert CliRunner().invoke(app, ["params", "--preset", "llama-2-7b", "--gpu", "v100", "--dtype", "float32"]).exit_code == 0


def test_bench_names_the_rateless_row_and_its_note() -> None:
    args = ["bench", "-v", "relu", "-d", "32", "-b", "1", "-s", "4", "-n", "2", "--warmup-ms", "1", "--gpu", "mi355x"]
    data = cli_json(*args)
    said = [w for w in data["warnings"] if "MI355X" in w]
    assert len(said) == 1 and "the table holds none of its peak rates" in said[0] and MI355X_NOTE in said[0]
