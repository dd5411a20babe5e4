"""Weight formats, checkpoint sizes, the roofline and the experts a MoE pass touches: each
against a hand computation, a published size, or a Monte Carlo of the registry's own router."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.costs.roofline.bound import Roofline, expected_distinct_experts
from ffn_cli.hardware.formats import parse_format

runner = CliRunner()
GIB = 2**30


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


# --- bits per weight, by hand --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "bits"),
    [
        ("fp32", 32),
        ("bf16", 16),
        ("fp16", 16),
        ("mxfp4", 4 + 8 / 32),  # e2m1 + one e8m0 per 32
        ("nvfp4", 4 + 8 / 16),  # e2m1 + one e4m3 per 16 (the per-tensor fp32 apart)
        ("fp8-block", 8 + 32 / (128 * 128)),  # e4m3 + one fp32 per 128×128
        ("int4", 4 + 16 / 128),  # default group 128, bf16 scales
        ("int4-g32-fp32", 4 + 32 / 32),
        ("int8-g64-fp16", 8 + 16 / 64),
    ],
)
def test_bits_per_weight(name: str, bits: float) -> None:
    assert float(parse_format(name).bits_per_weight()) == bits


@pytest.mark.parametrize(
    ("name", "shape", "bytes_"),
    [
        ("nvfp4", (2880, 2880), 2880 * 2880 // 2 + 2880 * 2880 // 16 + 2 * 4),  # + weight_scale_2 and input_scale, fp32
        ("fp8", (4096, 1024), 4096 * 1024 + 4),
        ("fp8-block", (7168, 2048), 7168 * 2048 + 56 * 16 * 4),
        ("fp8-block", (100, 200), 100 * 200 + 1 * 2 * 4),  # partial blocks get their own scale
        ("mxfp4", (5760, 2880), 5760 * 2880 // 2 + 5760 * 90),
        ("int4-g128-bf16", (4096, 4096), 4096 * 4096 // 2 + 4096 * 32 * 2),
        ("int8", (10, 6), 60 + 10 * 2),  # one bf16 scale per row
        ("int8", (), 1 + 2),  # a scalar (VibeVoice's latent_scaling_factor): one row of one
        ("fp8-block", (), 1 + 4),
    ],
)
def test_tensor_bytes(name: str, shape: tuple[int, ...], bytes_: int) -> None:
    assert parse_format(name).tensor_bits(shape) == 8 * bytes_


def test_a_bad_format_names_the_choices() -> None:
    result = runner.invoke(app, ["params", "--preset", "gpt2", "--weights", "int3"])
    assert result.exit_code == 2 and "mxfp4" in result.stderr and "nvfp4" in result.stderr


# --- checkpoint sizes against the model cards ----------------------------------------------------


@pytest.mark.parametrize(("preset", "gib"), [("gpt-oss-120b", 60.8), ("gpt-oss-20b", 12.8)])
def test_gpt_oss_checkpoint_matches_the_model_card(preset: str, gib: float) -> None:
    # OpenAI's gpt-oss model card: 60.8 GiB and 12.8 GiB, experts in MXFP4, the rest bf16.
    data = _json("params", "--preset", preset)
    assert round(data["checkpoint"]["bytes"] / GIB, 1) == gib
    assert data["checkpoint"]["quantized_roles"] == ["experts"]


def test_gpt_oss_120b_bytes_by_hand() -> None:
    # 36 layers × 128 experts × (gate_up 5760×2880 + down 2880×2880) weights at 4.25 bits; every
    # other parameter (116,829,156,672 in all, the model card's 116.83B) in bf16.
    experts = 36 * 128 * (5760 * 2880 + 2880 * 2880)
    expected = experts * 17 // 32 + (116_829_156_672 - experts) * 2
    data = _json("params", "--preset", "gpt-oss-120b")
    assert data["total_params"] == 116_829_156_672
    assert data["checkpoint"]["bytes"] == expected
    assert data["checkpoint"]["bf16_bytes"] == 2 * 116_829_156_672


def test_quantize_chooses_the_tensors() -> None:
    # llama-3.1-8b: every linear of the 32 layers in int4 (g128, bf16 scales), embeddings and head bf16.
    d, ff, layers, vocab, kv = 4096, 14336, 32, 128256, 1024
    attention = d * d * 2 + d * kv * 2
    ffn = 3 * d * ff
    linears = layers * (attention + ffn)
    scales = layers * (2 * d * (d // 128) + 2 * kv * (d // 128) + 2 * ff * (d // 128) + d * (ff // 128))
    data = _json("params", "--preset", "llama-3.1-8b", "--weights", "int4", "--quantize", "linears")
    c = data["checkpoint"]
    assert c["quantized_params"] == linears
    rest = data["total_params"] - linears
    assert c["bytes"] == linears // 2 + scales * 2 + rest * 2
    ffn_only = _json("params", "--preset", "llama-3.1-8b", "--weights", "int4", "--quantize", "ffn")["checkpoint"]
    assert ffn_only["quantized_params"] == layers * ffn
    assert 2 * vocab * d <= rest * 1  # embeddings and head are in the rest


def test_a_float_format_covers_every_tensor() -> None:
    data = _json("params", "--preset", "gpt2", "--weights", "fp32")
    assert data["checkpoint"]["bytes"] == 4 * data["total_params"]


def test_quantize_without_weights_is_refused() -> None:
    result = runner.invoke(app, ["params", "--preset", "gpt2", "--quantize", "ffn"])
    assert result.exit_code == 2 and "--weights" in result.stderr


# --- the roofline, by hand ------------------------------------------------------------------------


def test_roofline_by_hand() -> None:
    r = Roofline(flops=1e12, bytes_=1e9, peak_tflops=989.5, bandwidth_gbps=3350)
    assert r.intensity == 1000
    assert r.ridge == pytest.approx(989.5 / 3.35)
    assert r.compute_s == pytest.approx(1 / 989.5) and r.memory_s == pytest.approx(1 / 3350)
    assert r.bound == "compute" and r.time_s == pytest.approx(1 / 989.5)
    m = Roofline(flops=1e9, bytes_=1e9, peak_tflops=989.5, bandwidth_gbps=3350)
    assert m.bound == "memory" and m.time_s == pytest.approx(1e9 / 3.35e12)


def test_llama_70b_decode_ffn_on_h100_by_hand() -> None:
    # One decode token: the FFN reads its 3·8192·28672 bf16 weights once and computes
    # 2·3·8192·28672 FLOPs; its input and output are 8192 bf16 values each.
    d, ff = 8192, 28672
    flops = 2 * 3 * d * ff
    bytes_ = 3 * d * ff * 2 + 2 * d * 2
    data = _json("params", "--preset", "llama-3.1-70b", "--gpu", "h100", "--phase", "decode", "--batch", "1,512")
    one = data["roofline"]["cases"][0]["ffn_one_layer"]
    assert one["flops"] == flops and one["bytes"] == bytes_
    assert one["bound"] == "memory" and one["time_lower_bound_s"] == pytest.approx(bytes_ / 3.35e12)
    big = data["roofline"]["cases"][1]["ffn_one_layer"]
    assert big["flops"] == 512 * flops and big["bound"] == "compute"  # 512 FLOP/B > ridge 295
    assert big["time_lower_bound_s"] == pytest.approx(512 * flops / 989.5e12)
    assert data["roofline"]["ridge_flop_per_byte"] == pytest.approx(295.37, abs=0.01)


def test_decode_reads_the_kv_cache_by_hand() -> None:
    # llama-3.1-70b, 8 KV heads × 128: each token's cache is 2·8·128 bf16 values per layer. Decode
    # of 4 sequences at context 1000 reads 4·1001 keys' worth and writes the 4 new ones.
    data = _json("params", "--preset", "llama-3.1-70b", "--gpu", "h100", "--phase", "decode", "--batch", "4", "--seq-len", "1000")
    attention = data["roofline"]["cases"][0]["attention_one_layer_mean"]
    assert attention["kv_cache_bytes"] == (4 * 1001 + 4) * 2 * 8 * 128 * 2


# --- experts touched ------------------------------------------------------------------------------


def test_expected_distinct_experts_by_hand() -> None:
    assert expected_distinct_experts(128, 4, 1) == 4  # one token: its k experts
    assert expected_distinct_experts(128, 4, 0) == 0
    assert expected_distinct_experts(8, 2, 2) == pytest.approx(8 * (1 - (3 / 4) ** 2))  # 3.5
    assert expected_distinct_experts(8, 8, 3) == 8


def test_a_moe_decode_reads_the_experts_it_touches() -> None:
    data = _json("params", "--preset", "gpt-oss-120b", "--gpu", "h100", "--phase", "decode", "--batch", "1,64")
    one, many = (c["ffn_one_layer"] for c in data["roofline"]["cases"])
    assert one["experts_touched_expected"] == pytest.approx(4)
    assert many["experts_touched_expected"] == pytest.approx(128 * (1 - (1 - 4 / 128) ** 64))
    # One expert in MXFP4: (5760×2880 + 2880×2880)·4.25/8 bytes of weights plus 8640 bf16 biases.
    expert = (5760 * 2880 + 2880 * 2880) * 17 // 32 + 8640 * 2
    router = (128 * 2880 + 128) * 2
    assert one["weight_bytes"] == pytest.approx(router + 4 * expert)


def test_monte_carlo_of_the_registry_router_matches_the_formula() -> None:
    """Fresh weights and inputs each trial (the experts exchangeable, as uniform routing assumes):
    the mean number of distinct experts chosen lies within 3 standard errors of the formula."""
    import torch

    from ffn_cli.modules import build_ffn
    from ffn_cli.modules.routing import route, router_probs
    from ffn_cli.spec import FFNSpec

    spec = FFNSpec(variant="moe", d_model=64, d_ff=16, experts=8, top_k=2)
    tokens, trials, counts = 4, 150, []
    for seed in range(trials):
        module = build_ffn(spec, seed=seed)
        router = dict(module.named_parameters())["router.weight"]
        x = torch.randn(tokens, spec.d_model, generator=torch.Generator().manual_seed(10_000 + seed))
        with torch.no_grad():
            _, chosen = route(spec, router_probs(x @ router.T), torch.float32)
        counts.append(len(set(chosen.flatten().tolist())))
    mean = sum(counts) / trials
    sd = (sum((c - mean) ** 2 for c in counts) / (trials - 1)) ** 0.5
    assert abs(mean - expected_distinct_experts(8, 2, tokens)) <= 3 * sd / trials**0.5


# --- per-GPU memory ------------------------------------------------------------------------------


def test_per_gpu_memory_by_hand_and_fit() -> None:
    # gpt-oss-120b in its MXFP4 checkpoint, --ep 8: one eighth of the experts per GPU (their matrices
    # at 4.25 bits a weight and their bf16 biases), the other matrices in full (tp 1), norms, the
    # attention's biases and the routers on every GPU.
    experts = 36 * 128 * (5760 * 2880 + 2880 * 2880) * 17 // 32 + 36 * 128 * (5760 + 2880) * 2
    data = _json("params", "--preset", "gpt-oss-120b", "--ep", "8", "--gpu", "h100")
    m = data["per_gpu_memory"]
    assert m["gpus"] == 8 and m["expert_bytes"] == -(-experts // 8)
    assert m["per_gpu_bytes"] == m["expert_bytes"] + m["split_bytes"] + m["replicated_bytes"]
    assert m["fits"] is True and m["gpu_memory_bytes"] == 81559 * 2**20  # nvidia-smi's total
    bf16 = _json("params", "--preset", "llama-3.1-70b", "--tp", "1", "--weights", "bf16", "--gpu", "h100")
    assert bf16["per_gpu_memory"]["fits"] is False  # one GPU named: a verdict too; 131 GiB over 79.6
    assert "per_gpu_memory" not in _json("params", "--preset", "llama-3.1-70b", "--weights", "bf16")  # no GPU, no split
    two = _json("params", "--preset", "llama-3.1-70b", "--tp", "2", "--gpu", "h100")["per_gpu_memory"]
    assert two["fits"] is True and 2 * two["split_bytes"] + two["replicated_bytes"] >= two["checkpoint_bytes"] - 2
    one = _json("params", "--preset", "llama-3.1-405b", "--tp", "4", "--gpu", "h100")["per_gpu_memory"]
    assert one["fits"] is False  # 405B in bf16 is 810 GB: over 4 × 80 GB


def test_options_that_need_gpu_or_a_model_are_refused() -> None:
    for args in (["params", "--preset", "gpt2", "--batch", "8"], ["params", "-v", "swiglu", "--weights", "fp8"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "Traceback" not in result.output
    result = runner.invoke(app, ["params", "--preset", "gpt2", "--gpu", "h10"])
    assert result.exit_code == 2 and "did you mean h100" in result.stderr


def test_params_with_a_gpu_never_imports_torch() -> None:
    import subprocess
    import sys

    args = ["params", "--preset", "gpt-oss-120b", "--gpu", "h100", "--phase", "decode", "--batch", "1,64", "--ep", "8"]
    code = (
        f"import sys\nsys.argv = ['ffn', *{args!r}]\nfrom ffn_cli.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None)\nprint('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_the_worked_example_in_the_docs_is_what_ffn_prints() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "hardware.md").read_text(encoding="utf-8")
    example = doc[doc.index("### A worked example") : doc.index("## MoE at decode")]
    bold = [b.replace(",", "") for b in __import__("re").findall(r"\*\*([\d.,]+)\*\*", example)]
    data = _json("params", "--preset", "llama-3.1-70b", "--gpu", "h100", "--phase", "decode", "--batch", "1,512")
    one, big = (c["ffn_one_layer"] for c in data["roofline"]["cases"])
    ridge = data["roofline"]["ridge_flop_per_byte"]
    assert bold == [
        str(one["flops"]),
        str(int(one["bytes"])),
        f"{one['intensity_flop_per_byte']:.1f}",
        f"{ridge:.1f}",
        f"{one['time_lower_bound_ms']:.3f}",
        f"{big['intensity_flop_per_byte']:.0f}",
        f"{big['time_lower_bound_ms']:.3f}",
    ]
    assert one["bound"] == "memory" and big["bound"] == "compute"
    assert f"{int(big['flops']):,}" in example and f"{int(big['bytes']):,}" in example


def test_a_moe_trace_shows_the_real_routers_distinct_experts_beside_the_formula() -> None:
    data = _json("trace", "-v", "moe", "-d", "64", "--d-ff", "32", "--experts", "8", "-b", "2", "-s", "3")
    touched = data["experts_touched"]
    # The experts that ran, as the recorder saw them (a step per expert that got a token).
    ran = {s["name"].split(".")[1] for s in data["steps"] if s["name"].startswith("experts.")}
    assert touched["touched"] == len(ran)
    assert touched["tokens"] == 6 and touched["uniform_expected"] == pytest.approx(8 * (1 - (6 / 8) ** 6))
    text = runner.invoke(app, ["trace", "-v", "moe", "-d", "64", "--d-ff", "32", "--experts", "8", "-b", "2", "-s", "3"]).stdout
    assert f"experts touched: {len(ran)} of 8 by 6 tokens" in " ".join(text.split())
    meta = _json("trace", "-v", "moe", "-d", "64", "--d-ff", "32", "--experts", "8", "--device", "meta")
    assert "experts_touched" not in meta  # on meta the spread is assumed, not routed


# --- ffn bench beside the bound -------------------------------------------------------------------


def test_bench_with_a_named_gpu_shows_the_bound_by_hand() -> None:
    # swiglu d 64, d_ff 128, 8 tokens, float32: 2·3·64·128·8 FLOPs over the least traffic, the
    # weights (3·64·128) and the input and output (2·8·64) once in 4 bytes; H100's fp32 ceiling.
    args = [
        "bench",
        "-v",
        "swiglu",
        "-d",
        "64",
        "--d-ff",
        "128",
        "-b",
        "1",
        "-s",
        "8",
        "--gpu",
        "h100",
        "--repeats",
        "3",
        "--warmup-ms",
        "0",
    ]
    (r,) = _json(*args)["results"]
    flops, traffic = 2 * 3 * 64 * 128 * 8, (3 * 64 * 128 + 2 * 8 * 64) * 4
    assert r["flops"] == flops and r["peak_tflops"] == 67 and "--gpu h100" in r["peak_source"]
    bound_ms = max(flops / 67e12, traffic / 3.35e12) * 1e3
    assert r["bound_ms"] == pytest.approx(bound_ms) and r["bound"] == "memory"
    assert r["pct_of_bound"] == pytest.approx(100 * bound_ms / r["median_ms"])
    text = runner.invoke(app, args).stdout
    assert "bound ≥" in text and "% of the bound" in text


def test_bench_without_a_known_ceiling_has_no_bound() -> None:
    (r,) = _json("bench", "-v", "swiglu", "-d", "64", "--d-ff", "128", "-b", "1", "-s", "8", "--repeats", "3", "--warmup-ms", "0")[
        "results"
    ]
    assert r["bound_ms"] is None and r["pct_of_bound"] is None


@pytest.mark.cuda
def test_cuda_bench_on_a_known_gpu_is_slower_than_its_bound() -> None:
    import torch

    from ffn_cli.hardware import gpu_for_device_name

    if gpu_for_device_name(torch.cuda.get_device_name()) is None:
        pytest.skip("this GPU is not in the table")
    args = ["bench", "-v", "swiglu", "-d", "4096", "--d-ff", "11008", "-b", "8", "-s", "512", "--dtype", "bfloat16", "--device", "cuda"]
    (r,) = _json(*args)["results"]
    assert r["bound_ms"] is not None and r["median_ms"] >= r["bound_ms"]  # no run beats the bound
    assert 0 < r["pct_of_bound"] <= 100
