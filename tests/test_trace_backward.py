"""`trace(..., backward=True)` against second paths: FlopCounterMode over the same backward,
the matmul FLOPs of each forward step counted twice over (dW and dx), the saved tensors the
pack hook saw, the NumPy backward, the parameters' own gradients."""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from ffn_cli import build_ffn
from ffn_cli.block import BlockSpec, build_block
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.backward import record_backward
from ffn_cli.tracing.backward_run import output_grad_maker
from ffn_cli.tracing.gradient_seed import gradient_seed
from ffn_cli.tracing.run import trace
from tests.helpers import ALL_VARIANTS, small_spec


def _spec(variant: str) -> FFNSpec:
    return small_spec(variant, bias=True, shared_expert_gate=variant == "moe")


def _flop_counter_backward(spec: FFNSpec, *, checkpoint: bool = False, device: str = "cpu", block: BlockSpec | None = None) -> int:
    """FlopCounterMode's count over the backward alone, of the same module, input and dy."""
    module = build_block(block, device=device) if block else build_ffn(spec, device=device)
    module.eval()
    (module.ffn if block else module).gradient_checkpointing = checkpoint
    x = torch.randn(2, 5, spec.d_model, generator=torch.Generator().manual_seed(0)).to(device)
    if device == "meta":
        x = torch.empty(2, 5, spec.d_model, device="meta")
    x.requires_grad_(True)
    out = module(x)
    dy = output_grad_maker("random", 0)(out.detach())
    with FlopCounterMode(display=False) as counter:
        out.backward(dy)
    return int(counter.get_total_flops())


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_backward_flops_equal_flop_counter_mode(variant: str) -> None:
    spec = _spec(variant)
    result = trace(spec, backward=True)
    assert result.backward is not None
    assert result.backward.matmul_flops == _flop_counter_backward(spec)


@pytest.mark.parametrize("variant", ["relu", "swiglu", "moe", "soft_moe"])
def test_checkpointed_backward_flops_equal_flop_counter_mode(variant: str) -> None:
    """With recomputation: FlopCounterMode counts it (hardware FLOPs); the model FLOPs stay 2× forward."""
    spec = _spec(variant)
    result = trace(spec, backward=True, checkpoint=True)
    b = result.backward
    assert b is not None and b.recompute_flops > 0
    assert b.matmul_flops == _flop_counter_backward(spec, checkpoint=True)
    assert b.weight_grad_flops + b.input_grad_flops == 2 * result.matmul_flops


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_each_step_pays_its_forward_matmuls_twice(variant: str) -> None:
    """dW = dyᵀ·x and dx = dy·W each cost what y = x·Wᵀ cost: per forward step with a matmul,
    the weight-gradient and the input-gradient FLOPs both equal its forward FLOPs."""
    result = trace(_spec(variant), backward=True)
    assert result.backward is not None
    for step in result.steps:
        if not step.matmul_flops:
            continue
        mine = [s for s in result.backward.steps if s.of == step.name]
        assert sum(s.weight_grad_flops for s in mine) == step.matmul_flops, step.name
        assert sum(s.input_grad_flops for s in mine) == step.matmul_flops, step.name


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_saved_reads_are_what_the_pack_hook_saw(variant: str) -> None:
    spec = _spec(variant)
    module = build_ffn(spec).eval()
    x = torch.randn(2, 5, spec.d_model)
    _, rec = record_backward(module, x, output_grad_maker("random", 0))
    read = {storage: r.bytes_ for reads in rec.reads.values() for storage, r in reads}
    assert read == rec.packed
    assert sum(read.values()) == rec.forward.saved_bytes


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_parameter_gradients_are_the_modules(variant: str) -> None:
    """Norms from the recorded statistics equal torch.linalg's on the module's own .grad."""
    spec = _spec(variant)
    result = trace(spec, backward=True)
    module = build_ffn(spec).eval()
    x = torch.randn(2, 5, spec.d_model, generator=torch.Generator().manual_seed(stream_seed(0, Stream.INPUT))).requires_grad_(True)
    out = module(x)
    out.backward(output_grad_maker("random", 0)(out.detach()))
    assert result.backward is not None
    norms = {p.name: p.norm for p in result.backward.params}
    for name, p in module.named_parameters():
        expected = 0.0 if p.grad is None else float(torch.linalg.vector_norm(p.grad.double()))
        assert math.isclose(norms[name] or 0.0, expected, rel_tol=1e-5, abs_tol=1e-12), name
    steps = {p.name: p.step for p in result.backward.params if p.norm}
    assert all(s is not None for s in steps.values())


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_check_against_the_numpy_backward(variant: str) -> None:
    result = trace(_spec(variant), backward=True, check=True, dtype="float64")
    assert result.backward is not None and result.backward.check is not None
    assert result.backward.check.max_rel_error < 1e-12


def test_check_inside_a_block() -> None:
    spec = FFNSpec(variant="swiglu", d_model=32, d_ff=48)
    result = trace(spec, block=BlockSpec.around(spec, n_heads=4), backward=True, check=True, dtype="float64")
    assert result.backward is not None and result.backward.check is not None
    assert result.backward.check.max_rel_error < 1e-12


def test_block_flops_and_norms() -> None:
    spec = FFNSpec(variant="relu", d_model=32, d_ff=64)
    block = BlockSpec.around(spec, n_heads=4)
    result = trace(spec, block=block, backward=True)
    b = result.backward
    assert b is not None
    assert b.matmul_flops == _flop_counter_backward(spec, block=block)
    total = math.sqrt(b.grad_norm("ffn.") ** 2 + b.grad_norm("attn.") ** 2 + b.grad_norm("norm") ** 2)
    assert math.isclose(total, b.grad_norm(), rel_tol=1e-9)


@pytest.mark.parametrize("variant", ["relu", "swiglu", "moe"])
def test_meta_backward_has_shapes_and_flops_but_no_values(variant: str) -> None:
    spec = _spec(variant)
    result = trace(spec, backward=True, device="meta")
    b = result.backward
    assert b is not None
    assert all(s.stats is None for s in b.steps)
    assert b.matmul_flops == _flop_counter_backward(spec, device="meta")
    assert b.peak_bytes is not None and b.peak_bytes > b.start_bytes


def test_train_mode_dropout_backward_reads_the_mask() -> None:
    spec = FFNSpec(variant="relu", d_model=16, d_ff=32, dropout=0.5)
    b = trace(spec, backward=True, mode="train").backward
    assert b is not None
    dropout = [s for s in b.steps if s.of == "dropout"]
    assert dropout and any(r.saved_by == "dropout" for s in dropout for r in s.reads)


def test_losses_make_their_gradients() -> None:
    spec = FFNSpec(variant="relu", d_model=16, d_ff=32)
    ones = trace(spec, backward=True, loss="sum").backward
    assert ones is not None and ones.output_grad is not None
    assert ones.output_grad.mean == 1.0 and ones.output_grad.std == 0.0
    mse = trace(spec, backward=True, loss="mse").backward
    assert mse is not None and mse.output_grad is not None and abs(mse.output_grad.mean) < 1


def test_peak_memory_bounds() -> None:
    """At least what was alive when it began plus every parameter's gradient; at most that plus
    everything the backward allocated."""
    spec = FFNSpec(variant="relu", d_model=64, d_ff=256)
    b = trace(spec, backward=True).backward
    assert b is not None and b.peak_bytes is not None and b.start_bytes is not None
    grads = sum(math.prod(p.shape) * 4 for p in b.params)
    assert b.start_bytes + grads <= b.peak_bytes


def test_non_finite_gradients_are_flagged() -> None:
    """An infinite dL/dy: every step after it and every parameter gradient carries the flags."""
    from ffn_cli.tracing.backward_steps import fold_backward

    spec = FFNSpec(variant="relu", d_model=8, d_ff=16)
    _, rec = record_backward(build_ffn(spec).eval(), torch.randn(2, 3, 8), lambda y: torch.full_like(y, math.inf))
    steps, params = fold_backward(rec)
    assert "Inf" in steps[0].flags
    assert all(set(p.flags) & {"Inf", "NaN"} for p in params)
    assert all(p.norm is not None and math.isnan(p.norm) for p in params)


def test_the_sum_of_two_steps_gradients_is_named_after_them() -> None:
    """up_proj and gate_proj both read x: autograd's engine adds their dx in no node of either,
    a step of its own named after the two (not "output"), one add per element of x."""
    spec = FFNSpec(variant="swiglu", d_model=16, d_ff=32)
    steps = trace(spec, batch=2, seq_len=5, backward=True).backward.steps
    summed = [s for s in steps if s.of == "up_proj + gate_proj"]
    assert len(summed) == 1
    step = summed[0]
    sources = {steps[i - 1].of for i in step.inputs_from if isinstance(i, int)}
    assert sources == {"up_proj", "gate_proj"}
    assert step.elementwise_flops == 2 * 5 * 16 and step.grad_out == ((2, 5, 16),)
    assert not any(s.of == "output" for s in steps)


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_a_weights_gradient_is_made_not_handed_on(variant: str) -> None:
    """What a step hands on is an activation's gradient: a weight's gradient (or its transpose)
    goes under `makes`, never into `gradient in → out`. Shapes from the module's own parameters
    and the forward's activations (a shape both have is left out)."""
    spec = _spec(variant)
    result = trace(spec, backward=True)
    assert result.backward is not None
    activations = {(2, 5, spec.d_model)} | {s for step in result.steps for s in (*step.input_shapes, *step.output_shapes)}
    activations |= {
        s for step in result.steps for s in step.input_shapes + step.output_shapes if len(s) == 3 for s in [(s[0] * s[1], s[2])]
    }
    weights = {tuple(p.shape) for p in build_ffn(spec).parameters() if p.dim() == 2}
    weights = ({*weights, *{(b, a) for a, b in weights}}) - activations
    for n, step in enumerate(result.backward.steps, 1):
        assert not set(step.grad_out) & weights, (n, step.of, step.grad_out)
        assert not set(step.grad_in) & weights, (n, step.of, step.grad_in)


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_no_step_only_moves_what_an_earlier_step_made(variant: str) -> None:
    """A weight gradient's transpose and its copy into .grad, run late by the engine, belong to
    the step that made the gradient: no row of moves alone repeats the name of a step that ran
    before it."""
    result = trace(_spec(variant), backward=True)
    assert result.backward is not None
    moves = {"aten.t", "aten.view", "aten.transpose", "aten.new_empty_strided", "aten.copy_"}
    seen: set[str] = set()
    for n, step in enumerate(result.backward.steps, 1):
        if step.of in seen and not step.recompute:
            assert not set(step.aten_ops) <= moves, (n, step.of, step.aten_ops)
        seen.add(step.of)


def test_swiglu_backward_steps_by_hand() -> None:
    """SwiGLU's backward written out: down_proj, the product, silu, up_proj, gate_proj, then
    the sum of the two projections' dx (both read x), which is dL/dx. gate_proj's weight
    gradient is gate_proj's (its transpose and copy into .grad included), x's copy into
    x.grad is the sum's."""
    spec = FFNSpec(variant="swiglu", d_model=16, d_ff=32)
    backward = trace(spec, backward=True).backward
    assert backward is not None
    steps = backward.steps
    assert [s.of for s in steps] == ["down_proj", "multiply", "activation", "up_proj", "gate_proj", "up_proj + gate_proj"]
    x = (2, 5, 16)
    assert [s.grad_out for s in steps] == [((2, 5, 32),), ((2, 5, 32),), ((2, 5, 32),), (x,), (x,), (x,)]
    assert steps[5].inputs_from == (4, 5) and steps[5].grad_in == (x, x)
    assert [w.name for w in steps[4].weight_grads] == ["gate_proj.weight"]
    assert {p.name: p.step for p in backward.params} == {"gate_proj.weight": 5, "up_proj.weight": 4, "down_proj.weight": 1}
    # Each projection's backward: two matmuls, a transpose of dW, its copy into .grad.
    assert sum(op.endswith(".copy_") for op in steps[4].aten_ops) == 1
    assert sum(op.endswith(".copy_") for op in steps[5].aten_ops) == 1  # dL/dx into x.grad


def test_a_backward_from_the_seed_is_the_backward_from_the_gradient() -> None:
    """gradient_seed(out, g).backward() gives every parameter and the input the gradients
    torch.autograd.grad(out, …, g) gives."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(6, 10), torch.nn.GELU(), torch.nn.Linear(10, 6))
    x = torch.randn(3, 4, 6, requires_grad=True)
    out = module(x)
    g = torch.randn(out.shape)
    expected = torch.autograd.grad(out, [x, *module.parameters()], g, retain_graph=True)
    gradient_seed(out, g).backward()
    for got, want in zip([x.grad, *(p.grad for p in module.parameters())], expected, strict=True):
        assert got is not None and torch.equal(got, want)


def test_a_backward_from_the_seed_runs_inside_no_grad_as_out_backward_does() -> None:
    """A notebook's `torch.no_grad()` block around the call stops neither."""
    module = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4, requires_grad=True)
    out = module(x)
    g = torch.randn(out.shape)
    expected = torch.autograd.grad(out, [x, module.weight], g, retain_graph=True)
    with torch.no_grad():
        gradient_seed(out, g).backward()
    assert x.grad is not None and module.weight.grad is not None
    assert torch.equal(x.grad, expected[0]) and torch.equal(module.weight.grad, expected[1])
