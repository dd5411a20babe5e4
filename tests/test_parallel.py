"""Tensor and expert parallelism on 2 gloo ranks, checked against the unsharded module.

The analytic per-rank accounting is held against the real shards, and the shard math against
the module without any process; the spawned runs are small so the whole file stays fast.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from ffn_cli.accounting import param_tensors, total_params
from ffn_cli.cli import app
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.modules import build_ffn
from ffn_cli.parallel import (
    ParallelResult,
    check_parallel,
    launch,
    per_rank_params,
    shard_layout,
    tp_allreduce_bytes,
)
from ffn_cli.parallel.accounting import token_chunks
from ffn_cli.parallel.environment import torchrun_env
from ffn_cli.parallel.job import ParallelJob
from ffn_cli.parallel.run import run_parallel, time_parallel_forward
from ffn_cli.parallel.shard import shard_expert_parallel, shard_tensor_parallel
from ffn_cli.parallel.tensor import local_ffn
from ffn_cli.render.parallel import parallel_json, rank_params_json, render_parallel, render_rank_params
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import variant_names

TIMEOUT_S = 60.0
TP_SPECS = {
    "relu": FFNSpec("relu", d_model=16, d_ff=64),
    "swiglu": FFNSpec("swiglu", d_model=16, d_ff=64),
    "swiglu_fused": FFNSpec("swiglu", d_model=16, d_ff=64, fused_gate_up=True),
}
MOE = FFNSpec("moe", d_model=16, d_ff=32, experts=4, top_k=2, shared_experts=1, capacity_factor=1.0)
TP_VARIANTS = variant_names("dense") + variant_names("gated") + variant_names("sparse")


def _tp(spec: FFNSpec, world_size: int, **kw: Any) -> ParallelResult:
    return run_parallel(spec, world_size, mode="tp", **kw)


def _ep(spec: FFNSpec, world_size: int, **kw: Any) -> ParallelResult:
    return run_parallel(spec, world_size, mode="ep", **kw)


def _text(renderable: object) -> str:
    console = Console(width=160, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


# --- spawned runs, shared by the tests below ----------------------------------------------------


@pytest.fixture(scope="module")
def tp_results() -> dict[str, ParallelResult]:
    return {name: _tp(spec, 2, batch=2, seq_len=5, timeout_s=TIMEOUT_S) for name, spec in TP_SPECS.items()}


@pytest.fixture(scope="module")
def ep_result() -> ParallelResult:
    return _ep(MOE, 2, batch=2, seq_len=7, timeout_s=TIMEOUT_S)


@pytest.mark.parametrize("name", list(TP_SPECS))
def test_tensor_parallel_matches_unsharded(tp_results: dict[str, ParallelResult], name: str) -> None:
    result = tp_results[name]
    assert result.world_size == 2 and result.backend == "gloo" and len(result.ranks) == 2
    assert result.max_abs_diff_vs_unsharded < 1e-5 and result.passed
    for rank in result.ranks:
        assert rank.input_shape == rank.output_shape == (2, 5, 16)
        assert rank.steps[-1].output_shape == (2, 5, 16)


@pytest.mark.parametrize("name", list(TP_SPECS))
def test_tensor_parallel_shards_and_traffic(tp_results: dict[str, ParallelResult], name: str) -> None:
    result, spec = tp_results[name], TP_SPECS[name]
    analytic = per_rank_params(spec, tp=2)
    for rank, expected in zip(result.ranks, analytic, strict=True):
        assert {t.name: t.shape for t in rank.shards} == {t.name: t.shape for t in expected.tensors}
        assert rank.params == expected.params and rank.param_bytes == expected.param_bytes
        assert rank.allreduce_bytes == tp_allreduce_bytes(spec, 2 * 5, "float32")
    hidden = {s.name: s.output_shape for s in result.ranks[0].steps}
    assert hidden["activation"] == (2, 5, 32)  # d_ff / 2 on each rank
    if spec.fused_gate_up:
        assert hidden["gate_up_proj"] == (2, 5, 64)  # this rank's gate and up halves, paired


def test_tensor_parallel_float64_sparse_four_ranks() -> None:
    result = _tp(FFNSpec("sparse", d_model=8, d_ff=32), 4, dtype="float64", timeout_s=TIMEOUT_S)
    assert result.world_size == 4 and result.max_abs_diff_vs_unsharded < 1e-12
    assert [s.name for s in result.ranks[3].steps] == ["up_proj", "activation", "mask", "down_proj", "all_reduce", "down_proj.bias"]


def test_expert_parallel_matches_unsharded(ep_result: ParallelResult) -> None:
    assert ep_result.max_abs_diff_vs_unsharded < 1e-5 and ep_result.passed
    assert [r.experts for r in ep_result.ranks] == [(0, 1), (2, 3)]
    assert [r.tokens for r in ep_result.ranks] == token_chunks(14, 2)
    # Routing, capacity and drops agree with the one-device module, expert by expert.
    assert ep_result.tokens_per_expert == ep_result.unsharded_tokens_per_expert
    assert sum(r.dropped for r in ep_result.ranks) + sum(ep_result.tokens_per_expert) == 14 * MOE.top_k


def test_expert_parallel_traffic_is_consistent(ep_result: ParallelResult) -> None:
    r0, r1 = ep_result.ranks
    assert r0.tokens_sent[1] == r1.tokens_received[0] and r1.tokens_sent[0] == r0.tokens_received[1]
    assert sum(r0.tokens_sent) == r0.tokens * MOE.top_k  # every (token, slot) row leaves once
    assert r0.alltoall_sent_bytes == r1.alltoall_received_bytes
    split_bytes = 2 * 8  # E/N int64 counts to the other rank
    assert r0.alltoall_sent_bytes == split_bytes + (r0.tokens_sent[1] + r0.tokens_received[1]) * MOE.d_model * 4
    for rank, expected in zip(ep_result.ranks, per_rank_params(MOE, ep=2), strict=True):
        assert {t.name: t.shape for t in rank.shards} == {t.name: t.shape for t in expected.tensors}
        assert rank.params == expected.params


def test_expert_parallel_float64_with_gate_and_dense_experts() -> None:
    spec = FFNSpec(
        "moe", d_model=8, d_ff=16, experts=4, top_k=2, expert_variant="gelu", bias=True, shared_experts=1, shared_expert_gate=True
    )
    result = _ep(spec, 2, batch=3, seq_len=3, dtype="float64", timeout_s=TIMEOUT_S)
    assert result.max_abs_diff_vs_unsharded < 1e-12
    assert result.tokens_per_expert == result.unsharded_tokens_per_expert


def test_json_and_table_come_from_the_same_fields(tp_results: dict[str, ParallelResult], ep_result: ParallelResult) -> None:
    for result in (tp_results["swiglu_fused"], ep_result):
        data = parallel_json(result)
        assert json.loads(json.dumps(data)) == data
        assert data["world_size"] == 2 and data["max_abs_diff_vs_unsharded"] == result.max_abs_diff_vs_unsharded
        assert data["ranks"][1]["steps"][0]["input_shapes"] == [list(s) for s in result.ranks[1].steps[0].input_shapes]
        assert data["ranks"][0]["shards"][0]["shape"] == list(result.ranks[0].shards[0].shape)
        text = _text(render_parallel(result))
        assert ("each of 2 ranks" if result.mode == "tp" else "rank 1") in text and "✓ matches" in text
    assert "W_gate_up[r]" in _text(render_parallel(tp_results["swiglu_fused"]))  # brackets survive rich markup
    assert parallel_json(ep_result)["tokens_per_expert"] == list(ep_result.unsharded_tokens_per_expert)


def test_time_parallel_forward_reports_every_rank() -> None:
    timing = time_parallel_forward(TP_SPECS["relu"], 2, warmup_ms=1, repeats=3, timeout_s=TIMEOUT_S)
    assert [r.rank for r in timing.ranks] == [0, 1] and timing.timer == "perf_counter"
    assert all(r.median_ms > 0 and r.repeats == 3 for r in timing.ranks)
    assert timing.median_ms == max(r.median_ms for r in timing.ranks)


@pytest.mark.slow  # starts torchrun and its ranks: the quick run keeps the spawned launch
def test_torchrun_joins_the_group(tmp_path: Path) -> None:
    script = tmp_path / "tp.py"
    script.write_text(
        textwrap.dedent(
            """
            import json
            from ffn_cli.parallel.run import is_primary_process, run_parallel
            from ffn_cli.spec import FFNSpec
            result = run_parallel(FFNSpec("relu", d_model=8, d_ff=16), 2, mode="tp", timeout_s=60)
            if is_primary_process():
                print(json.dumps({"launcher": result.launcher, "ranks": len(result.ranks), "diff": result.max_abs_diff_vs_unsharded}))
            """
        )
    )
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1  # only rank 0 prints
    data = json.loads(lines[0])
    assert data["launcher"] == "torchrun" and data["ranks"] == 2 and data["diff"] < 1e-5


@pytest.mark.cuda
def test_nccl_ranks_on_cuda() -> None:
    world = min(2, torch.cuda.device_count())
    tp = _tp(TP_SPECS["swiglu_fused"], world, device="cuda", timeout_s=TIMEOUT_S)
    assert tp.backend == "nccl" and tp.passed and tp.ranks[-1].device == f"cuda:{world - 1}"
    assert all(r.peak_memory_bytes for r in tp.ranks)
    ep = _ep(MOE, world, device="cuda", timeout_s=TIMEOUT_S)
    assert ep.passed and ep.tokens_per_expert == ep.unsharded_tokens_per_expert
    timing = time_parallel_forward(TP_SPECS["relu"], world, device="cuda", warmup_ms=1, repeats=3, timeout_s=TIMEOUT_S)
    assert timing.timer == "cuda events" and all(r.median_ms > 0 for r in timing.ranks)


# --- errors and cleanup ----------------------------------------------------------------------------


def test_indivisible_sizes_are_usage_errors() -> None:
    with pytest.raises(FFNError, match=r"d_ff=64.*divides by 2, 4, 8"):
        _tp(TP_SPECS["relu"], 3)
    with pytest.raises(FFNError, match=r"experts=4"):
        _ep(MOE, 3)
    with pytest.raises(FFNError, match="--ep"):
        check_parallel(MOE, tp=2)
    with pytest.raises(FFNError, match="--variant moe"):
        check_parallel(TP_SPECS["relu"], ep=2)
    with pytest.raises(FFNError, match="not both"):
        check_parallel(MOE, tp=2, ep=2)
    with pytest.raises(FFNError, match="use cpu"):
        _tp(TP_SPECS["relu"], 2, device="meta")


def test_more_nccl_ranks_than_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.distributed, "is_nccl_available", lambda: True)
    with pytest.raises(FFNRuntimeError, match="1 are visible") as info:
        _tp(TP_SPECS["relu"], 2, device="cuda")
    assert "\n" not in str(info.value)


def test_no_cuda_is_a_runtime_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(FFNRuntimeError, match="--device cpu"):
        _ep(MOE, 2, device="cuda")


def test_world_size_must_match_torchrun(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"RANK": "0", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(FFNError, match="WORLD_SIZE=4"):
        _tp(TP_SPECS["relu"], 2)


_COMPLETE = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"RANK": "0", "WORLD_SIZE": "2"}, "RANK=0 WORLD_SIZE=2 set but LOCAL_RANK not"),
        ({"LOCAL_RANK": "1"}, "LOCAL_RANK=1 set but RANK and WORLD_SIZE not"),
        ({**_COMPLETE, "RANK": "abc"}, "RANK='abc' is not a whole number"),
        ({**_COMPLETE, "WORLD_SIZE": "0"}, "WORLD_SIZE='0' is not a whole number ≥ 1"),
        ({**_COMPLETE, "RANK": "2"}, "RANK=2 is not below WORLD_SIZE=2"),
        ({**_COMPLETE, "LOCAL_RANK": "1"}, "LOCAL_RANK=1 is not below"),
        ({**_COMPLETE, "LOCAL_WORLD_SIZE": "3"}, "LOCAL_WORLD_SIZE=3 exceeds WORLD_SIZE=2"),
        ({k: v for k, v in _COMPLETE.items() if k != "MASTER_ADDR"}, "MASTER_ADDR not"),
        ({**_COMPLETE, "MASTER_PORT": "99999"}, "MASTER_PORT='99999' is not a TCP port"),
    ],
)
def test_a_half_set_or_inconsistent_torchrun_environment_is_refused_at_once(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], said: str
) -> None:
    # Left in a shell by an earlier torchrun, these sent ffn into a rendezvous (or int()) that failed with a catch-all.
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(FFNError, match=re.escape(said)):
        torchrun_env()
    result = runner.invoke(app, ["trace", "--tp", "2", "-d", "8", "--d-ff", "16"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert said in result.stderr and "unset RANK, WORLD_SIZE and LOCAL_RANK" in result.stderr and "debug" not in result.stderr


def test_ranks_that_never_come_are_said_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # A complete but stale environment: rank 0 of 2 waits for a rank 1 that no one started.
    for name, value in {**_COMPLETE, "MASTER_PORT": str(launch._free_port())}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(FFNRuntimeError, match=r"rank 0 of 2: the ranks did not meet at 127\.0\.0\.1:\d+ within 2 s .*unset them") as info:
        _tp(TP_SPECS["relu"], 2, timeout_s=2)
    assert "\n" not in str(info.value)


def _tracked_stop(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    stopped: list[object] = []
    real_stop = launch._stop

    def stop(procs: list[object]) -> None:
        real_stop(procs)
        stopped.extend(procs)

    monkeypatch.setattr(launch, "_stop", stop)
    return stopped


def test_a_failing_rank_is_reported_and_every_rank_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    stopped = _tracked_stop(monkeypatch)
    # Skip the launcher's validation so the ranks themselves refuse to cut d_ff=31 in two.
    job = ParallelJob("tp", FFNSpec("relu", d_model=8, d_ff=31), 2, 1, 2, "float32", "cpu", 0, TIMEOUT_S)
    with pytest.raises(FFNError, match="d_ff=31"):
        launch._spawn(job)
    assert len(stopped) == 2 and all(p.exitcode is not None for p in stopped)  # type: ignore[attr-defined]


def test_the_deadline_stops_every_rank() -> None:
    ctx = torch.multiprocessing.get_context("forkserver")
    queue = ctx.SimpleQueue()
    hung = [ctx.Process(target=time.sleep, args=(60,), daemon=True) for _ in range(2)]  # ranks that never report
    job = ParallelJob("tp", TP_SPECS["relu"], 2, 1, 2, "float32", "cpu", 0, timeout_s=0.5)
    try:
        for p in hung:
            p.start()
        with pytest.raises(FFNRuntimeError, match=r"did not finish within 0\.5 s"):
            launch._collect(job, hung, queue)
    finally:
        launch._stop(hung)
        queue.close()
    assert all(p.exitcode is not None for p in hung)


def _boom(job: object, rank: int, device: object) -> str:
    raise RuntimeError("boom")


@pytest.mark.parametrize(("work", "outcome"), [(lambda job, rank, device: "result", "ok"), (_boom, "crash")])
def test_a_rank_reports_before_it_tears_its_group_down(monkeypatch: pytest.MonkeyPatch, work: object, outcome: str) -> None:
    # The launcher stops ranks once all have reported, so a teardown that hangs costs nothing,
    # and an error is not masked by the peers' broken connections that a teardown causes.
    events: list[str] = []

    @contextlib.contextmanager
    def group(job: object, device: object) -> Iterator[None]:
        try:
            yield
        finally:
            events.append("teardown")

    class Queue:
        def put(self, message: tuple[str, int, object]) -> None:
            events.append(message[0])

    monkeypatch.setattr(launch, "process_group", group)
    monkeypatch.setattr(launch, "rank_work", work)
    monkeypatch.setattr(launch.os, "environ", dict(os.environ))  # the rank's variables stay in the rank
    monkeypatch.setattr(launch.torch, "set_num_threads", lambda n: None)
    job = ParallelJob("tp", TP_SPECS["relu"], 1, 1, 2, "float32", "cpu", 0, TIMEOUT_S)
    # A rank ignores SIGINT (it is the launcher's): run in this process, that must not outlast the
    # test, or every later subprocess would inherit a Ctrl-C it cannot see.
    interrupt = signal.getsignal(signal.SIGINT)
    try:
        launch._spawned_rank(job, 0, 0, Queue())
    finally:
        signal.signal(signal.SIGINT, interrupt)
    assert events == [outcome, "teardown"]


def test_a_rank_that_dies_after_reporting_is_not_blamed() -> None:
    class Dead:
        exitcode = 3

    class Queue:
        def __init__(self) -> None:
            self.messages = [("ok", 0, "first")]

        def empty(self) -> bool:
            return not self.messages

        def get(self) -> tuple[str, int, object]:
            return self.messages.pop(0)

    job = ParallelJob("tp", TP_SPECS["relu"], 2, 1, 2, "float32", "cpu", 0, timeout_s=0.2)
    with pytest.raises(FFNRuntimeError, match=r"did not finish within"):  # rank 1 never reported; rank 0 died after
        launch._collect(job, [Dead(), type("Alive", (), {"exitcode": None})()], Queue())


def test_stopping_ranks_that_never_started() -> None:
    ctx = torch.multiprocessing.get_context("forkserver")
    unstarted = ctx.Process(target=time.sleep, args=(60,), daemon=True)
    launch._stop([unstarted])  # a failed start leaves the later ranks unstarted
    assert unstarted.pid is None


# --- no processes: the shard math and the analytic accounting -------------------------------------


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("variant", TP_VARIANTS)
def test_tp_shards_sum_to_the_module(variant: str, fused: bool) -> None:
    spec = FFNSpec(variant, d_model=8, d_ff=24, fused_gate_up=fused and variant in variant_names("gated"), bias=True)
    module = build_ffn(spec, dtype=torch.float64, seed=3).eval()
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    shards = [shard_tensor_parallel(module.state_dict(), spec, r, 3) for r in range(3)]
    with torch.no_grad():
        summed = sum(local_ffn(s, spec, x, down_bias=False) for s in shards) + shards[0]["down_proj.bias"]
        torch.testing.assert_close(summed, module(x), rtol=0, atol=1e-12)
    params = {n for n, _ in module.named_parameters()}
    for r, shard in enumerate(shards):
        real = {n: tuple(t.shape) for n, t in shard.items() if n in params}
        assert real == {t.name: t.shape for t in shard_layout(spec, r, tp=3)}


def test_fused_shard_pairs_gate_and_up_rows() -> None:
    spec = TP_SPECS["swiglu_fused"]
    weight = build_ffn(spec).state_dict()["gate_up_proj.weight"]  # (2·64, 16): gate rows first
    shard = shard_tensor_parallel({"gate_up_proj.weight": weight}, spec, 1, 2)["gate_up_proj.weight"]
    assert torch.equal(shard, torch.cat([weight[32:64], weight[96:128]]))


def test_ep_shard_holds_whole_owned_experts() -> None:
    state = build_ffn(MOE).state_dict()
    shard = shard_expert_parallel(state, MOE, 1, 2)
    assert not any(n.startswith(("experts.0.", "experts.1.")) for n in shard)
    assert torch.equal(shard["experts.3.down_proj.weight"], state["experts.3.down_proj.weight"])
    assert {n: tuple(t.shape) for n, t in shard.items()} == {t.name: t.shape for t in shard_layout(MOE, 1, ep=2)}


@given(
    variant=st.sampled_from(TP_VARIANTS),
    d_model=st.integers(1, 64),
    per_rank=st.integers(1, 64),
    tp=st.integers(1, 8),
    bias=st.booleans(),
)
def test_tp_ranks_hold_the_module_once_plus_replicas(variant: str, d_model: int, per_rank: int, tp: int, bias: bool) -> None:
    spec = FFNSpec(variant, d_model=d_model, d_ff=per_rank * tp, bias=bias)
    ranks = per_rank_params(spec, tp=tp)
    # down_proj.bias on every rank, and xIELU's two scalars (one activation for all hidden units)
    replicated = (d_model if bias else 0) + (2 if variant == "xielu" else 0)
    assert sum(r.params for r in ranks) == total_params(spec) + (tp - 1) * replicated
    assert len({r.params for r in ranks}) == 1


@given(experts_per_rank=st.integers(1, 4), ep=st.integers(1, 4), shared=st.integers(0, 2), top_k=st.integers(1, 2))
def test_ep_ranks_hold_each_expert_once(experts_per_rank: int, ep: int, shared: int, top_k: int) -> None:
    spec = FFNSpec("moe", d_model=8, d_ff=16, experts=experts_per_rank * ep, top_k=min(top_k, experts_per_rank * ep), shared_experts=shared)
    ranks = per_rank_params(spec, ep=ep)
    replicated = sum(t.count for t in param_tensors(spec) if not t.name.startswith("experts."))
    assert sum(r.params for r in ranks) == total_params(spec) + (ep - 1) * replicated


def test_rank_params_render_and_json_agree() -> None:
    spec = TP_SPECS["swiglu_fused"]
    ranks = per_rank_params(spec, tp=2, dtype="bfloat16")
    data = rank_params_json(spec, ranks)
    assert data["world_size"] == 2 and data["ranks"][0]["params"] == ranks[0].params
    assert data["ranks"][0]["param_bytes"] == 2 * ranks[0].params
    text = _text(render_rank_params(spec, ranks))
    assert "column, gate|up paired" in text and f"{ranks[0].params:,}" in text


def test_accounting_and_rendering_never_import_torch() -> None:
    code = "import sys, ffn_cli.parallel, ffn_cli.render.parallel; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.slow  # waits out a killed rank's watchdog; tests/test_signals.py kills ranks in the quick run
def test_a_killed_rank_is_the_one_blamed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rank 1 SIGKILLed mid-run: its peers fail on their next collective and used to be blamed first.
    real_collect = launch._collect

    def collect(job: ParallelJob, procs: list[Any], queue: Any) -> list[Any]:
        time.sleep(8)  # the ranks are up and timing
        os.kill(procs[1].pid, signal.SIGKILL)
        return real_collect(job, procs, queue)

    monkeypatch.setattr(launch, "_collect", collect)
    with pytest.raises(FFNRuntimeError, match=r"^rank 1 was killed by SIGKILL before reporting$"):
        time_parallel_forward(FFNSpec("relu", d_model=64, d_ff=258), 3, warmup_ms=0, repeats=100_000, timeout_s=TIMEOUT_S)
