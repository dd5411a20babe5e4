from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest
import torch
from hypothesis import given
from torch.utils.flop_counter import FlopCounterMode

from ffn_cli import build_ffn
from ffn_cli.accounting import flop_steps, matmul_flops_per_token
from ffn_cli.block import BlockSpec, build_block
from ffn_cli.cli import app
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing import TraceResult
from ffn_cli.tracing.check import CHECK_THRESHOLDS, check_failure
from ffn_cli.tracing.recorder import record
from ffn_cli.tracing.run import estimate_bytes, trace
from ffn_cli.tracing.stats import tensor_stats
from ffn_cli.tracing.steps import group_steps
from ffn_cli.variants import VARIANTS, Family, variant_names
from tests.helpers import ALL_VARIANTS, small_spec, specs

pytestmark = pytest.mark.usefixtures("one_thread")

DENSE_AND_GATED = variant_names("dense") + variant_names("gated") + variant_names("sparse")


def _flop_counter_total(module: torch.nn.Module, x: torch.Tensor) -> int:
    with FlopCounterMode(display=False) as counter:
        module(x)
    return int(counter.get_total_flops())


def _assert_flow(result: TraceResult) -> None:
    """Every step reads only the input or earlier steps, and every step but the last is read."""
    seen = {"input"}
    consumed: set[str] = set()
    for step in result.steps:
        assert step.inputs_from, step.name
        assert set(step.inputs_from) <= seen, (step.name, step.inputs_from)
        consumed |= set(step.inputs_from)
        seen.add(step.name)
    assert {s.name for s in result.steps[:-1]} <= consumed
    assert result.steps[-1].output_shape == result.output_shape == result.input_shape


# --- two paths to the FLOPs --------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_matmul_flops_equal_flop_counter_mode(variant: str) -> None:
    spec = small_spec(variant)
    result = trace(spec, batch=2, seq_len=3)
    module = build_ffn(spec).eval()
    x = torch.randn(2, 3, spec.d_model, generator=torch.Generator().manual_seed(0))
    assert result.matmul_flops == _flop_counter_total(module, x)


def test_block_matmul_flops_equal_flop_counter_mode() -> None:
    spec = small_spec("moe")
    block = build_block(BlockSpec.around(spec, n_heads=4, n_kv_heads=2)).eval()
    x = torch.randn(2, 3, spec.d_model)
    _, rec = record(block, x)
    assert sum(op.record.matmul_flops for op in rec.ops) == _flop_counter_total(block, x)


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_matmul_flops_equal_the_accounting(variant: str) -> None:
    spec = small_spec(variant)
    result = trace(spec, batch=2, seq_len=3)
    assert result.matmul_flops == matmul_flops_per_token(spec) * result.tokens


# Operations per element of each activation, counted by hand from its formula (the project's
# convention: one per add, multiply, divide, exp, tanh; comparisons and clamps are free).
HAND_ACTIVATION_FLOPS = {
    "relu": 1,  # max(z, 0)
    "relu2": 2,  # relu, then square
    "gelu": 8,  # 0.5·z·(1 + erf(z/√2)): divide, erf (4, a rational approximation), add one, two multiplies
    "gelu_tanh": 9,  # 0.5·z·(1 + tanh(√(2/π)·(z + 0.044715·z³))): z³ 2, scale 1, add 1, scale 1, tanh 1, add 1, two multiplies
    "silu": 5,  # z·σ(z): negate, exp, add one, divide, multiply
    "sigmoid": 4,  # σ(z): negate, exp, add one, divide
    "xielu": 8,  # both branches run, then one is selected: α_p·z² + β·z (4) and α_n·(expm1(min(z, ε)) − z) (4)
    "swish_1.702": 6,  # gate·σ(1.702·gate): scale, σ (4), multiply
    "identity": 0,
}
# The product of the two branches: one multiply; gpt-oss's (up + 1)·glu adds one more.
HAND_MULTIPLY_FLOPS = {"swiglu_clamp": 2}


def _hand_elementwise(spec: FFNSpec) -> dict[str, int]:
    """Elementwise FLOPs per token of each step, worked from the shapes: a bias add is one per
    output, an activation its hand count per hidden element, the product and the mask one."""
    d, f = spec.d_model, spec.d_ff
    info = VARIANTS[spec.variant]
    steps: dict[str, int] = {}
    if info.family == Family.GATED:
        steps.update({"gate_up_proj": 2 * f} if spec.fused_gate_up else {"gate_proj": f, "up_proj": f})
    else:
        steps["up_proj"] = f
    steps["activation"] = HAND_ACTIVATION_FLOPS[info.activation] * f
    if info.family == Family.GATED:
        steps["multiply"] = HAND_MULTIPLY_FLOPS.get(spec.variant, 1) * f
    if info.family == Family.SPARSE:
        steps["mask"] = f
    steps["down_proj"] = d
    return {name: flops for name, flops in steps.items() if flops}


@pytest.mark.parametrize(("variant", "fused"), [(v, False) for v in DENSE_AND_GATED] + [(v, True) for v in variant_names("gated")])
def test_every_step_equals_its_accounting_step_and_the_hand_count(variant: str, fused: bool) -> None:
    """Matmul FLOPs per step from the trace and the accounting; elementwise FLOPs per step from
    both, against the count worked by hand above (the two share ACTIVATIONS' constants)."""
    spec = small_spec(variant, bias=True, fused_gate_up=fused)
    result = trace(spec, batch=2, seq_len=3)
    steps = {s.name: s for s in result.steps}
    analytic = flop_steps(spec)
    for expected in analytic:
        if expected.flops == 0 and expected.name not in steps:
            continue  # identity activation (bilinear): no op runs
        assert steps[expected.name].matmul_flops == expected.matmul_flops * 6, expected.name
    hand = _hand_elementwise(spec)
    assert {s.name: s.elementwise_flops for s in result.steps if s.elementwise_flops} == {n: 6 * e for n, e in hand.items()}
    assert {s.name: s.elementwise_flops for s in analytic if s.elementwise_flops} == hand


def test_moe_steps_equal_the_accounting() -> None:
    spec = small_spec("moe")
    result = trace(spec, batch=2, seq_len=3)
    steps = {s.name: s for s in result.steps}
    analytic = {s.name: s for s in flop_steps(spec)}
    for name in ("router", "softmax", "renormalise", "combine", "shared_add"):
        assert steps[name].flops == analytic[name].flops * result.tokens, name
    experts = sum(s.flops for s in result.steps if s.name.startswith("experts."))
    assert experts == sum(s.flops for s in flop_steps(spec) if s.name.startswith("expert.")) * result.tokens


# --- invariants of the steps -------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_steps_partition_the_ops_and_sum_to_the_total(variant: str) -> None:
    result = trace(small_spec(variant), batch=2, seq_len=3)
    indices = sorted(i for s in result.steps for i in s.op_indices)
    assert indices == list(range(len(result.ops)))
    assert sum(s.flops for s in result.steps) == result.total_flops == sum(op.flops for op in result.ops)
    for step in result.steps:
        if step.substeps:
            assert sum(sub.flops for sub in step.substeps) == step.flops


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_each_step_feeds_the_next(variant: str) -> None:
    _assert_flow(trace(small_spec(variant), batch=2, seq_len=3))


@pytest.mark.parametrize("variant", variant_names("dense") + variant_names("sparse"))
def test_dense_steps_form_a_chain(variant: str) -> None:
    steps = trace(small_spec(variant), batch=2, seq_len=3).steps
    for before, after in itertools.pairwise(steps):
        assert after.input_shapes == (before.output_shape,)
        assert after.inputs_from == (before.name,)


@given(specs())
def test_invariants_hold_for_any_spec(spec: FFNSpec) -> None:
    module = build_ffn(spec).eval()
    x = torch.randn(2, 3, spec.d_model)
    out, rec = record(module, x)
    steps = group_steps(rec)
    assert out.shape == x.shape and steps[-1].output_shape == tuple(x.shape)
    assert sum(s.flops for s in steps) == sum(op.record.flops for op in rec.ops)
    assert sum(s.matmul_flops for s in steps) == _flop_counter_total(module, x)


# --- what the tutorial shows ---------------------------------------------------------------


def test_default_reproduces_the_tutorial_demo() -> None:
    result = trace(FFNSpec(dropout=0.1), values=10)
    names = [s.name for s in result.steps]
    assert names == ["up_proj", "activation", "dropout", "down_proj"]
    up, act, drop, down = result.steps
    flow = (result.input_shape, up.output_shape, act.output_shape, down.output_shape)
    assert flow == ((2, 5, 512), (2, 5, 2048), (2, 5, 2048), (2, 5, 512))
    assert [(p.name, p.shape) for p in up.params] == [("up_proj.weight", (2048, 512)), ("up_proj.bias", (2048,))]
    assert [(p.name, p.shape) for p in down.params] == [("down_proj.weight", (512, 2048)), ("down_proj.bias", (512,))]
    assert (up.param_count, down.param_count, result.total_params) == (1_050_624, 1_049_088, 2_099_712)
    assert up.stats is not None and act.stats is not None and act.input_stats is not None
    assert act.input_stats.negatives == up.stats.negatives > 0 and act.stats.negatives == 0
    assert drop.dropout_changed == 0
    assert up.values is not None and act.values == tuple(max(0.0, v) for v in up.values)


def test_train_mode_dropout_changes_elements() -> None:
    spec = small_spec("relu", dropout=0.5)
    eval_step = next(s for s in trace(spec).steps if s.name == "dropout")
    train_step = next(s for s in trace(spec, mode="train").steps if s.name == "dropout")
    assert eval_step.dropout_changed == 0
    assert train_step.dropout_changed and train_step.dropout_zeroed and train_step.dropout_zeroed <= train_step.dropout_changed
    assert "changed" in str(train_step.note)
    assert not train_step.flags  # the CPU path's uninitialised empty_like buffer is not a NaN


def test_values_are_token_zero() -> None:
    result = trace(small_spec("swiglu"), values=4)
    assert result.input_values is not None and len(result.input_values) == 4
    assert all(s.values is not None and len(s.values) == 4 for s in result.steps)


def test_moe_dispatch_reports_tokens_per_expert() -> None:
    spec = small_spec("moe", capacity_factor=1.0)
    result = trace(spec, batch=2, seq_len=4)
    dispatch = next(s for s in result.steps if s.name == "dispatch")
    experts = [s for s in result.steps if s.name.startswith("experts.")]
    assert dispatch.tokens_per_expert == tuple(s.input_shapes[0][0] for s in experts)
    assert sum(dispatch.tokens_per_expert) <= result.tokens * spec.top_k
    assert all(sub.name.startswith(experts[0].name + ".") for sub in experts[0].substeps)


def test_block_steps_and_ratio() -> None:
    spec = small_spec("relu", d_model=32)
    block = BlockSpec.around(spec, n_heads=4, n_kv_heads=2)
    result = trace(spec, block=block, batch=2, seq_len=3)
    names = [s.name for s in result.steps]
    assert names[:9] == [f"attn.{n}" for n in ("q_proj", "k_proj", "v_proj", "heads", "scores", "softmax", "context", "merge", "o_proj")]
    assert names[9:11] == ["attn_residual", "norm1"] and names[-2:] == ["ffn_residual", "norm2"]
    attn = sum(s.matmul_flops for s in result.steps if s.name.startswith("attn."))
    assert attn == block.attention.flops_per_token(3) * result.tokens
    assert sum(s.matmul_flops for s in result.steps if s.name.startswith("ffn.")) == matmul_flops_per_token(spec) * result.tokens
    _assert_flow(result)


def test_pre_norm_block_order() -> None:
    spec = small_spec("swiglu", d_model=32)
    result = trace(spec, block=BlockSpec.around(spec, n_heads=2, norm="rmsnorm", pre_norm=True), batch=1, seq_len=2)
    names = [s.name for s in result.steps]
    assert names[0] == "norm1" and names[-1] == "ffn_residual"
    _assert_flow(result)


# --- devices and dtypes --------------------------------------------------------------------


_META_70B = """
import json, resource, sys
import torch
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.run import trace
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = trace(FFNSpec(variant="swiglu", d_model=8192, d_ff=28672), batch=8, seq_len=4096, device="meta")
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
stats = [s.stats is None and s.values is None for s in result.steps]
print(json.dumps([grown, list(result.output_shape), result.matmul_flops, all(stats)]))
"""


def test_meta_70b_scale_allocates_nothing() -> None:
    """In a process of its own: its peak RSS is its own, not what an earlier test peaked at
    (ru_maxrss only grows), so the growth measured is this trace's."""
    run = subprocess.run([sys.executable, "-c", _META_70B], capture_output=True, text=True, check=True, timeout=600)
    grown_kib, shape, matmul_flops, no_values = json.loads(run.stdout.splitlines()[-1])
    assert grown_kib < 512 * 1024  # the weights alone would be 2.6 GiB (ru_maxrss is in KiB on Linux)
    assert shape == [8, 4096, 8192]
    assert matmul_flops == 6 * 8192 * 28672 * 8 * 4096
    assert no_values


def test_grouping_is_linear_in_the_number_of_module_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    # Thousands of experts on meta must not take minutes: each call's subtree is walked once.
    from ffn_cli.tracing import steps

    walks = 0
    descends = steps._StepBuilder._descends

    def counted(self, call: int, ancestor: int) -> bool:  # type: ignore[no-untyped-def]
        nonlocal walks
        walks += 1
        return descends(self, call, ancestor)

    monkeypatch.setattr(steps._StepBuilder, "_descends", counted)
    rec = record(build_ffn(small_spec("moe", experts=64), device="meta"), torch.empty(1, 2, 16, device="meta"))[1]
    group_steps(rec)
    assert 0 < walks < 4 * len(rec.calls)


def test_meta_moe_assumes_balanced_routing() -> None:
    result = trace(small_spec("moe"), batch=2, seq_len=4, device="meta")
    dispatch = next(s for s in result.steps if s.name == "dispatch")
    assert dispatch.tokens_per_expert == (4, 4, 4, 4)  # 8 tokens · k 2 over 4 experts
    assert "balanced" in str(dispatch.note)
    _assert_flow(result)


@pytest.mark.parametrize(("experts", "tokens"), [(8, 3), (64, 5), (6, 7)])
def test_meta_moe_routes_exactly_n_k_pairs_as_a_real_run_does(experts: int, tokens: int) -> None:
    """More experts than pairs, or pairs that do not divide: the meta trace's matmul FLOPs are
    those FlopCounterMode counts on the real module routing real values on CPU."""

    spec = small_spec("moe", experts=experts)
    meta = trace(spec, batch=1, seq_len=tokens, device="meta")
    dispatch = next(s for s in meta.steps if s.name == "dispatch")
    assert sum(dispatch.tokens_per_expert) == tokens * spec.top_k
    assert max(dispatch.tokens_per_expert) - min(dispatch.tokens_per_expert) <= 1
    module = build_ffn(spec).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        module(torch.randn(1, tokens, spec.d_model))
    assert meta.matmul_flops == counter.get_total_flops()
    assert meta.saved_bytes == trace(spec, batch=1, seq_len=tokens).saved_bytes  # each expert's own index rows, as on CPU


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_check_passes_in_every_dtype(dtype: str) -> None:
    result = trace(small_spec("swiglu"), dtype=dtype, check=True)
    assert result.check is not None and result.check.passed, result.check
    assert check_failure(result) is None


@pytest.mark.parametrize("variant", ["moe", "soft_moe", "sparse", "geglu"])
def test_check_covers_every_family(variant: str) -> None:
    result = trace(small_spec(variant), dtype="float64", check=True)
    assert result.check is not None and result.check.max_rel_error < 1e-12


def test_check_in_a_block_checks_the_ffn() -> None:
    spec = small_spec("gelu")
    result = trace(spec, block=BlockSpec.around(spec, n_heads=2), check=True)
    assert result.check is not None and result.check.passed


def test_failed_check_is_a_runtime_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CHECK_THRESHOLDS, "float32", 0.0)
    result = trace(small_spec("relu"), check=True)
    error = check_failure(result)
    assert isinstance(error, FFNRuntimeError) and "--check failed" in str(error)


def test_float16_overflow_and_nan_are_flagged() -> None:
    spec = small_spec("relu")
    module = build_ffn(spec, dtype="float16").eval()
    with torch.no_grad():
        module.up_proj.weight.mul_(1e4)
    x = torch.randn(2, 3, 16, dtype=torch.float16) * 100
    steps = {s.name: s for s in group_steps(record(module, x)[1])}
    assert "overflow" in steps["up_proj"].flags
    x[0, 0, 0] = float("nan")
    steps = {s.name: s for s in group_steps(record(module, x)[1])}
    assert "NaN" in steps["up_proj"].flags


def test_tensor_stats() -> None:
    stats = tensor_stats(torch.tensor([-2.0, 0.0, 1.0, 5.0, float("inf")]))
    assert stats is not None
    assert (stats.numel, stats.negatives, stats.zeros, stats.inf, stats.min, stats.max) == (5, 1, 1, 1, -2.0, 5.0)
    assert stats.mean == pytest.approx(1.0)
    assert tensor_stats(torch.empty(3, device="meta")) is None
    assert tensor_stats(torch.tensor([1, 2])) is None
    tiny = tensor_stats(torch.tensor([1e-6, 1.0], dtype=torch.float16))
    assert tiny is not None and tiny.subnormal == 1


# --- refusals ------------------------------------------------------------------------------


def test_absurd_sizes_are_refused_before_allocating() -> None:
    spec = FFNSpec(variant="swiglu", d_model=8192, d_ff=28672)
    assert estimate_bytes(spec, batch=8, seq_len=4096, dtype="float32") > 40 * 2**30
    with pytest.raises(FFNRuntimeError, match="--device meta"):
        trace(spec, batch=8, seq_len=4096 * 16, device="cpu")


@pytest.mark.parametrize("block", [False, True])
def test_sizes_no_tensor_can_hold_are_refused_even_on_meta(block: bool) -> None:
    # 2^24 × 2^24 tokens: even shapes alone overflow torch's size arithmetic (a bare RuntimeError).
    spec = FFNSpec(variant="relu", d_model=64, d_ff=2**24 if not block else 256)
    with pytest.raises(FFNError, match="more than torch can size") as info:
        trace(spec, batch=2**24, seq_len=2**24, device="meta", block=BlockSpec.around(spec) if block else None)
    assert info.value.option == "seq_len"


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"mode": "test"}, "mode"),
        ({"seed": -1}, "seed"),
        ({"values": 65}, "values"),
        ({"batch": 0}, "batch"),
        ({"seq_len": -1}, "seq_len"),
        ({"check": True, "device": "meta"}, "check"),
        ({"check": True, "mode": "train"}, "mode"),
        ({"device": "tpu"}, "device"),
        ({"dtype": "int8"}, "dtype"),
    ],
)
def test_bad_options_name_the_option(kwargs: dict[str, object], option: str) -> None:
    with pytest.raises(FFNError) as info:
        trace(small_spec("relu", dropout=0.1), **kwargs)  # type: ignore[arg-type]
    assert info.value.option == option


@pytest.mark.cuda
def test_cuda_trace_matches_the_cpu_shapes() -> None:
    spec = small_spec("swiglu")
    on_gpu, on_cpu = trace(spec, device="cuda", check=True), trace(spec)
    assert [s.output_shape for s in on_gpu.steps] == [s.output_shape for s in on_cpu.steps]
    assert on_gpu.matmul_flops == on_cpu.matmul_flops and on_gpu.check is not None and on_gpu.check.passed


@pytest.mark.cuda
def test_cuda_moe_trace_checks_and_has_stats() -> None:
    result = trace(small_spec("moe"), device="cuda", dtype="float32", check=True, values=2)
    assert result.check is not None and result.check.passed
    assert all(s.stats is not None for s in result.steps)


def test_a_mask_buffer_is_shown_apart_and_never_counted_as_a_parameter(runner) -> None:
    """`sparse`'s hidden_mask is a buffer: the table's total, the footer and --json all give
    the module's parameters() count, and the mask is listed as fixed state."""
    spec = FFNSpec(variant="sparse", d_model=512, d_ff=2048, bias=True, sparsity=0.5)
    module = build_ffn(spec)
    params = sum(p.numel() for p in module.parameters())
    assert params == 2 * 512 * 2048 + 2048 + 512  # by hand: two weights and two biases
    result = trace(spec)
    assert sum(s.param_count for s in result.steps) == params == result.total_params
    assert [p.name for s in result.steps for p in s.buffers] == ["hidden_mask"]
    out = runner.invoke(app, ["trace", "-v", "sparse"], env={"COLUMNS": "120"}).stdout
    assert f"total {params:,}" in " ".join(out.split()) and "2,101,760" not in out
    assert "hidden_mask (2048,): 2,048 values of fixed state, not parameters" in " ".join(out.split())
    data = json.loads(runner.invoke(app, ["trace", "-v", "sparse", "--json"]).stdout)
    assert data["total_params"] == params and data["buffers"] == {"hidden_mask": [2048]}


def test_a_masked_ffn_says_it_still_does_every_flop() -> None:
    """The mask is applied after W_up: the matmul FLOPs equal the dense FFN's, counted by
    FlopCounterMode, and the note names what pruning the masked units would cost instead."""
    spec = FFNSpec(variant="sparse", d_model=64, d_ff=256, sparsity=0.25)
    dense = build_ffn(FFNSpec(variant="relu", d_model=64, d_ff=256))
    x = torch.randn(1, 1, 64)
    counted = {}
    for name, module in (("sparse", build_ffn(spec)), ("dense", dense)):
        with FlopCounterMode(display=False) as counter:
            module(x)
        counted[name] = counter.get_total_flops()
    assert counted["sparse"] == counted["dense"] == 4 * 64 * 256
    note = spec.info.compute_note(spec)
    assert note is not None and f"{counted['dense']:,} matmul FLOPs per token" in str(note)
    assert f"d_ff {256 - 64:,}) gives the same output for {4 * 64 * (256 - 64):,}" in str(note)
    # …and it does: the pruned FFN, built by hand from the kept units, gives the masked output.
    masked = build_ffn(spec)
    kept = masked.hidden_mask.bool()
    pruned = torch.nn.Sequential(torch.nn.Linear(64, int(kept.sum())), torch.nn.ReLU(), torch.nn.Linear(int(kept.sum()), 64))
    with torch.no_grad():
        pruned[0].weight.copy_(masked.up_proj.weight[kept])
        pruned[0].bias.copy_(masked.up_proj.bias[kept])
        pruned[2].weight.copy_(masked.down_proj.weight[:, kept])
        pruned[2].bias.copy_(masked.down_proj.bias)
    torch.testing.assert_close(pruned(x), masked.eval()(x))


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        # d = 16, d_ff = 64, biases, 2 × 3 = 6 tokens; per token a matmul (d_in → d_out) is
        # 2·d_in·d_out, a bias one add per output, relu 1 FLOP per element, silu 5, the product 1.
        ("relu", {"up_proj": (2 * 16 * 64, 64), "activation": (0, 64), "down_proj": (2 * 64 * 16, 16)}),
        (
            "swiglu",
            {
                "gate_proj": (2 * 16 * 64, 64),
                "up_proj": (2 * 16 * 64, 64),
                "activation": (0, 5 * 64),
                "multiply": (0, 64),
                "down_proj": (2 * 64 * 16, 16),
            },
        ),
    ],
)
def test_steps_are_the_hand_counted_ones(variant: str, expected: dict[str, tuple[int, int]]) -> None:
    result = trace(FFNSpec(variant=variant, d_model=16, d_ff=64, bias=True), batch=2, seq_len=3)
    got = {s.name: (s.matmul_flops, s.elementwise_flops) for s in result.steps if s.flops}
    assert got == {name: (6 * m, 6 * e) for name, (m, e) in expected.items()}
