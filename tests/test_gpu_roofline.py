"""The roofline of one GPU under --tp / --ep: its share of the weights, FLOPs and KV cache, the
busiest expert rank, and the communication each layer sends, each against a hand computation,
the one-GPU pass, or a Monte Carlo of uniform routing."""

from __future__ import annotations

import re

import numpy as np
import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.costs.roofline.bound import busiest_rank_experts, expected_distinct_experts
from tests.helpers import cli_json

runner = CliRunner()
DECODE = ("--phase", "decode")


def _roofline(*args: str) -> dict:  # type: ignore[type-arg]
    return cli_json("params", *args)["roofline"]


def test_a_dense_70b_on_8_gpus_is_an_eighth_plus_its_all_reduces() -> None:
    one = _roofline("--preset", "llama-3.1-70b", "--gpu", "h100", *DECODE, "--batch", "1")["cases"][0]
    eight = _roofline("--preset", "llama-3.1-70b", "--gpu", "h100", *DECODE, "--batch", "1", "--tp", "8")
    case = eight["cases"][0]
    assert eight["gpus"]["gpus"] == 8 and eight["gpus"]["link_gbps"] == 900
    # Every weight read is split over the 8 GPUs, and so is the cache (8 KV heads, one each).
    assert case["model"]["weight_bytes"] == pytest.approx(one["model"]["weight_bytes"] / 8)
    assert case["model"]["kv_cache_bytes"] == pytest.approx(one["model"]["kv_cache_bytes"] / 8)
    # The FFN's weights on one GPU, by hand: 3 · 8,192 · 28,672 · 2 B / 8.
    assert case["ffn_one_layer"]["weight_bytes"] == 3 * 8192 * 28672 * 2 / 8
    # Two all-reduces a layer of one token's 8,192 values in bf16; a ring sends 2·7/8 of each.
    sent = 80 * 2 * (2 * 7 / 8) * 8192 * 2
    comm = case["communication"]
    assert comm["model_bytes_sent"] == pytest.approx(sent)
    assert comm["model_s"] == pytest.approx(sent / 450e9)  # NVLink 4: 900 GB/s both ways, 450 each
    bound = case["model"]["time_lower_bound_s"] + sent / 450e9
    assert comm["time_per_gpu_lower_bound_ms"] == pytest.approx(bound * 1e3)
    assert comm["time_per_gpu_lower_bound_ms"] == pytest.approx(one["model"]["time_lower_bound_ms"] / 8, rel=0.02)


def test_expert_parallel_sends_each_tokens_copies_there_and_back() -> None:
    # gpt-oss-120b, --ep 8 at batch 64: 8 tokens a GPU, 4 copies each, 7/8 of them off the GPU,
    # 2,880 values in bf16, dispatched and combined; 36 MoE layers, no tensor parallelism.
    r = _roofline("--preset", "gpt-oss-120b", "--gpu", "h100", *DECODE, "--batch", "64", "--ep", "8")
    per_layer = 2 * (64 / 8) * 4 * 2880 * 2 * 7 / 8
    assert r["cases"][0]["communication"]["ffn_layer_bytes_sent"] == pytest.approx(per_layer)
    assert r["cases"][0]["communication"]["model_bytes_sent"] == pytest.approx(36 * per_layer)
    ffn = r["cases"][0]["ffn_one_layer"]
    # The busiest rank of 8, holding 16 of the 128 experts.
    assert ffn["experts"] == 16 and ffn["experts_touched_expected"] == pytest.approx(busiest_rank_experts(128, 4, 64, 8))
    # Its FLOPs by hand: the router for its attention group's 64 / 8 tokens, and its share of
    # the 64 · 4 routed copies, each through gate_up (5,760 × 2,880) and down (2,880 × 2,880).
    assert ffn["flops"] == 8 * 2 * 128 * 2880 + 64 * 4 / 8 * 2 * (5760 * 2880 + 2880 * 2880)


@pytest.mark.parametrize(("batch", "held"), [(1, 1), (3, 1), (12, 2)])
def test_expert_parallel_sends_what_the_busiest_gpu_holds(batch: int, held: int) -> None:
    # gpt-oss-120b, --ep 8 at a batch that does not fill the 8 attention groups evenly: the GPU
    # holding ceil(batch / 8) sequences sends each of their tokens' 4 copies, 7/8 of them off it.
    r = _roofline("--preset", "gpt-oss-120b", "--gpu", "h100", *DECODE, "--batch", str(batch), "--ep", "8")
    assert r["cases"][0]["communication"]["ffn_layer_bytes_sent"] == pytest.approx(2 * held * 4 * 2880 * 2 * 7 / 8)


def test_a_latent_moe_dispatches_its_latent() -> None:
    # Nemotron 3 Ultra at --tp 8 --ep 8, batch 64 decode: each of the 8 tokens a GPU holds (64 / 8) sends
    # its 22 copies in the 2,048-wide latent its experts read (moe_latent_size), not at d_model 8,192,
    # there and back, 7/8 of them off the GPU; beside the all-reduce of the shared expert's output,
    # 2 · 7/8 · 64 tokens × 8,192 × 2 B.
    r = _roofline("--preset", "nemotron-3-ultra-550b-a55b", "--gpu", "gb200", "--tp", "8", "--ep", "8", "--phase", "decode",
                  "--batch", "64", "--seq-len", "131072", "--weights", "nvfp4")  # fmt: skip
    all_to_all = 2 * 8 * 22 * 2048 * 2 * 7 / 8
    all_reduce = 2 * 7 / 8 * 64 * 8192 * 2
    assert r["cases"][0]["communication"]["ffn_layer_bytes_sent"] == pytest.approx(all_reduce + all_to_all)


def test_the_busiest_rank_runs_a_copy_for_each_expert_it_reads() -> None:
    # gpt-oss-120b at --ep 8, batch 1: the mean rank's share is half a copy (4 picks over 8 ranks), but
    # the busiest rank reads busiest_rank_experts(128, 4, 1, 8) experts, each run on the one token.
    ffn = _roofline("--preset", "gpt-oss-120b", "--gpu", "h100", *DECODE, "--batch", "1", "--ep", "8")["cases"][0]["ffn_one_layer"]
    touched = busiest_rank_experts(128, 4, 1, 8)
    assert touched > 0.5 and ffn["experts_touched_expected"] == pytest.approx(touched)
    assert ffn["flops"] == pytest.approx(2 * 128 * 2880 + touched * 2 * (5760 * 2880 + 2880 * 2880))


def test_expert_parallel_below_tp_cuts_each_expert_over_its_ranks_gpus() -> None:
    # gpt-oss-120b, --ep 2: at --tp 2 a GPU is a rank and reads its experts whole; at --tp 4 each
    # rank's experts are cut over its 2 GPUs, so a GPU reads half of what it read at --tp 2 but the
    # router, whole on every GPU as the memory holds it: (128 × 2,880 + a bias of 128) in bf16. The
    # busiest rank's experts are the same 64 of 128.
    two, four = (_roofline("--preset", "gpt-oss-120b", "--gpu", "h100", *DECODE, "--batch", "64", "--ep", "2", "--tp", tp) for tp in "24")
    ffn2, ffn4 = (r["cases"][0]["ffn_one_layer"] for r in (two, four))
    assert ffn2["experts"] == ffn4["experts"] == 64
    assert ffn4["experts_touched_expected"] == ffn2["experts_touched_expected"] == pytest.approx(busiest_rank_experts(128, 4, 64, 2))
    router = (128 * 2880 + 128) * 2
    assert ffn4["weight_bytes"] == pytest.approx((ffn2["weight_bytes"] - router) / 2 + router)


def test_the_router_is_read_whole_on_every_gpu_of_tp() -> None:
    # Kimi K2 at --tp 8, batch 1, in its fp8 checkpoint (e4m3, a float32 scale per 128 × 128 block): each
    # GPU reads an eighth of the 8 experts a token picks and of the shared expert (3 matrices of 7,168 ×
    # 2,048 each, 1 + 4 / 128² bytes an element), and the router (384 × 7,168 in bf16) whole, as the
    # memory table holds it ("replicated: ... routers"). The router's FLOPs, too: every GPU scores the
    # token against all 384 experts.
    ffn = _roofline("--preset", "kimi-k2", "--gpu", "h200", *DECODE, "--batch", "1", "--tp", "8")["cases"][0]["ffn_one_layer"]
    expert = 3 * (7168 * 2048 + 56 * 16 * 4)
    router = 384 * 7168 * 2
    assert ffn["weight_bytes"] == pytest.approx((8 + 1) * expert / 8 + router)
    assert ffn["flops"] == pytest.approx(2 * 384 * 7168 + (8 + 1) * 2 * 3 * 7168 * 2048 / 8)


def test_an_nvl72_rack_joins_72_gpus_by_its_link() -> None:
    # 16 GPUs: past an HGX board's 8 (H200), within a GB200 NVL72 rack's 72.
    args = ("--preset", "gpt-oss-120b", *DECODE, "--batch", "64", "--ep", "16")
    h200, gb200 = (_roofline(*args, "--gpu", gpu)["gpus"] for gpu in ("h200", "gb200"))
    assert (h200["link_domain_gpus"], h200["spans_nodes"]) == (8, True)
    assert (gb200["link_domain_gpus"], gb200["spans_nodes"]) == (72, False)


@pytest.mark.parametrize(("gpu", "gbps", "domain"), [("h100-nvl", 600, 2), ("h200-nvl", 900, 4)])
def test_an_nvl_cards_bridge_joins_its_few(gpu: str, gbps: int, domain: int) -> None:
    # The H100 NVL's datasheet: NVLink 600 GB/s between a bridged pair; the H200 NVL's: a 2- or 4-way
    # bridge at 900 GB/s. Within the bridge the all-reduces run at half of it each way. A layout of
    # two bridges, in one server, all-reduces in two levels: within each bridge (2·(g − 1)/g of the
    # output over the bridge), then each GPU's 1/g shard across the 2 bridges (2·(1/2) of it) over the
    # PCIe Gen5 x16 between them (128 GB/s, 64 each way); past a server's 8, a network carries part too.
    inside = _roofline("--preset", "llama-3.1-70b", "--gpu", gpu, *DECODE, "--batch", "64", "--tp", str(domain))
    case = inside["cases"][0]["communication"]
    assert inside["gpus"]["link_gbps"] == gbps and inside["gpus"]["link_domain_gpus"] == domain
    assert case["model_s"] == pytest.approx(case["model_bytes_sent"] / (gbps / 2 * 1e9)) and not inside["gpus"]["spans_nodes"]
    assert case["model_bytes_between_domains"] == 0
    past = _roofline("--preset", "llama-3.1-70b", "--gpu", gpu, *DECODE, "--batch", "64", "--tp", str(2 * domain))
    case = past["cases"][0]["communication"]
    gpus = past["gpus"]
    assert (gpus["between_domains_link"], gpus["between_domains_gbps"], gpus["spans_nodes"]) == ("PCIe Gen5 x16", 128, False)
    output = 64 * 8192 * 2  # a decode step's 64 tokens × d_model 8,192 in bf16, one all-reduce's
    within, across = 2 * (domain - 1) / domain * output, 2 * (1 / 2) * output / domain
    all_reduces = 2 * 80  # after attention and after the FFN, 80 layers
    assert case["model_bytes_sent"] == pytest.approx(all_reduces * (within + across))
    assert case["model_bytes_between_domains"] == pytest.approx(all_reduces * across)
    assert case["model_s"] == pytest.approx(all_reduces * (within / (gbps / 2 * 1e9) + across / (64 * 1e9)))
    assert _roofline("--preset", "llama-3.1-70b", "--gpu", gpu, *DECODE, "--tp", "16")["gpus"]["spans_nodes"]


def test_an_all_to_all_crosses_between_bridges_only_to_another_bridges_gpus() -> None:
    # Mixtral on 4 H100 NVL cards, --tp 2 --ep 4: its all-reduces stay within each bridged pair;
    # of each token's 2 expert copies sent to the 3 other ranks, the 2 on the other pair's cards
    # cross the PCIe between the bridges, the 1 on this pair's other card does not.
    roofline = _roofline("--preset", "mixtral-8x7b", "--gpu", "h100-nvl", *DECODE, "--batch", "64", "--tp", "2", "--ep", "4")
    case = roofline["cases"][0]["communication"]
    tokens = 64 / 2 / 2  # the batch over the 2 attention groups (4 GPUs ÷ --tp 2), a group's tokens over its 2 GPUs
    a2a = 2 * tokens * 2 * 4096 * 2 * 3 / 4  # dispatch and combine, top-2, d 4,096, bf16, 3 of 4 ranks off the GPU
    assert case["model_bytes_between_domains"] == pytest.approx(32 * a2a * 2 / 3)


def test_kv_heads_replicate_when_tp_exceeds_them() -> None:
    # Qwen3-235B-A22B has 4 KV heads: on 8 GPUs each keeps one, a quarter of the cache, not an eighth.
    args = ("--preset", "qwen3-235b-a22b", "--gpu", "h200", *DECODE, "--batch", "8")
    one = _roofline(*args)["cases"][0]["attention_one_layer_mean"]["kv_cache_bytes"]
    eight = _roofline(*args, "--tp", "8")["cases"][0]["attention_one_layer_mean"]["kv_cache_bytes"]
    assert eight == pytest.approx(one / 4)


@pytest.mark.parametrize(("experts", "top_k", "tokens", "ranks"), [(128, 4, 20, 8), (256, 8, 1, 8), (256, 8, 64, 16)])
def test_the_busiest_rank_against_a_monte_carlo(experts: int, top_k: int, tokens: int, ranks: int) -> None:
    rng = np.random.default_rng(0)
    trials = []
    for _ in range(1500):
        chosen = np.argsort(rng.random((tokens, experts)), axis=1)[:, :top_k]  # top-k of uniform scores: k distinct
        touched = np.zeros(experts, dtype=bool)
        touched[chosen.ravel()] = True
        trials.append(touched.reshape(ranks, -1).sum(axis=1).max())
    assert busiest_rank_experts(experts, top_k, tokens, ranks) == pytest.approx(np.mean(trials), rel=0.04)
    assert busiest_rank_experts(experts, top_k, tokens, ranks) >= expected_distinct_experts(experts, top_k, tokens) / ranks


def test_one_rank_is_the_mean() -> None:
    assert busiest_rank_experts(128, 4, 64, 1) == expected_distinct_experts(128, 4, 64)


def test_the_backward_and_the_plot_are_not_split() -> None:
    result = runner.invoke(app, ["params", "--preset", "llama-3.1-8b", "--gpu", "h100", "--backward", "--tp", "2"])
    assert result.exit_code == 2 and "--tp" in result.stderr and "Traceback" not in result.output


def test_a_gpu_without_a_link_figure_says_comm_is_not_counted() -> None:
    r = _roofline("--preset", "qwen3-8b", "--gpu", "rtx-4090", *DECODE, "--tp", "2")
    assert r["gpus"]["link_gbps"] is None and r["cases"][0]["communication"]["model_s"] is None
    result = runner.invoke(app, ["params", "--preset", "qwen3-8b", "--gpu", "rtx-4090", *DECODE, "--tp", "2"], env={"COLUMNS": "80"})
    assert "comm not counted" in " ".join(result.stdout.split())


@pytest.mark.parametrize("width", [80, 60])
def test_the_per_gpu_roofline_stays_whole(width: int) -> None:
    args = ["params", "--preset", "deepseek-v3", "--gpu", "h100", *DECODE, "--batch", "1,64", "--tp", "16", "--ep", "16"]
    result = runner.invoke(app, args, env={"COLUMNS": str(width)})
    assert result.exit_code == 0
    assert "…" not in result.stdout and all(len(line) <= width for line in result.stdout.splitlines())
    # FLOP/B (FLOPs over bytes, both beside it) leaves before bytes: a comm row keeps its one number.
    comm = next(line for line in result.stdout.splitlines() if "comm ×61" in line)
    assert re.search(r"\d MiB", comm), comm
