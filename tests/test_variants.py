"""The registry's objects: each variant owns its behaviour, and nothing else names variants."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ffn_cli import build_ffn
from ffn_cli.models import preset_model, preset_names
from ffn_cli.modules import MoEFFN
from ffn_cli.spec import FFNSpec
from ffn_cli.trace import record
from ffn_cli.trace.steps import group_steps
from ffn_cli.variants import VARIANTS, MixtureVariant, SingleFFN
from tests.helpers import ALL_VARIANTS, small_spec

PACKAGE = Path(__file__).parents[1] / "ffn_cli"


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_spec_round_trips_through_its_dict(variant: str) -> None:
    spec = (
        small_spec(variant, shared_d_ff=40, shared_expert_gate=True, mask_seed=3, multiple_of=64)
        if variant == "moe"
        else small_spec(variant)
    )
    assert FFNSpec(**spec.as_dict()) == spec


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_ffn_round_trips(name: str) -> None:
    model = preset_model(name)
    for ffn in (model.dense_ffn, model.moe_ffn):
        if ffn is not None:
            assert FFNSpec(**ffn.as_dict()) == ffn


def test_qwen_moe_shared_expert_width_survives_json() -> None:
    """The shared experts' own width and gate were dropped by the old as_dict."""
    spec = FFNSpec(variant="moe", d_model=2048, d_ff=1408, experts=60, top_k=4, shared_experts=1, shared_d_ff=5632, shared_expert_gate=True)
    again = FFNSpec(**spec.as_dict())
    # 60 experts of 3·2048·1408, the router 60·2048, shared 3·2048·5632, its gate 2048: one layer
    assert sum(p.numel() for p in build_ffn(again, device="meta").parameters()) == 553_773_056


def test_every_variant_is_a_single_ffn_or_a_mixture() -> None:
    for v in VARIANTS.values():
        assert isinstance(v, SingleFFN | MixtureVariant), v.name


def test_no_module_outside_the_registry_compares_variant_names() -> None:
    pattern = re.compile(r"""(variant|family)\s*[!=]=\s*["'](moe|soft_moe|sparse|gated|dense|relu|swiglu)["']""")
    offenders = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in PACKAGE.rglob("*.py")
        if "variants" not in path.parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


def _steps(module: torch.nn.Module) -> list[tuple[str, int, tuple[int, ...]]]:
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1))
    _, rec = record(module, x)
    return [(s.name, s.matmul_flops, s.output_shape) for s in group_steps(rec)]


def test_a_differently_ordered_dispatch_groups_into_the_same_steps() -> None:
    """Sorting the (token, slot) pairs by expert runs other ops in another order than one
    torch.where per expert; steps are labelled by region, so both trace alike."""
    spec = small_spec("moe", capacity_factor=1.0)
    by_expert = build_ffn(spec).eval()
    variant = VARIANTS["moe"]
    assert isinstance(variant, MixtureVariant)
    sorted_dispatch = MoEFFN(spec, variant, dispatch="sorted")
    sorted_dispatch.load_state_dict(by_expert.state_dict())
    sorted_dispatch.eval()
    x = torch.randn(2, 5, 16)
    torch.testing.assert_close(sorted_dispatch(x), by_expert(x))
    assert _steps(sorted_dispatch) == _steps(by_expert)
    names = [name for name, _, _ in _steps(by_expert)]
    assert names[:6] == ["flatten", "router", "softmax", "top_k", "renormalise", "dispatch"]


TORCH_FREE = [
    "ffn_cli",
    "ffn_cli.variants",
    "ffn_cli.spec",
    "ffn_cli.accounting",
    "ffn_cli.attention",
    "ffn_cli.models",
    "ffn_cli.regions",
    "ffn_cli.render.params",
    "ffn_cli.render.variants",
    "ffn_cli.render.trace",
    "ffn_cli.render.bench",
    "ffn_cli.render.parallel",
    "ffn_cli.trace.result",
    "ffn_cli.bench.result",
    "ffn_cli.parallel.result",
    "ffn_cli.parallel.accounting",
]


@pytest.mark.parametrize("module", TORCH_FREE)
def test_pure_modules_never_import_torch(module: str) -> None:
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent)
    assert out.stdout.strip() == "False", module


@pytest.mark.parametrize("bias", [True, False])
def test_header_formula_names_exactly_the_biases_the_module_has(bias: bool) -> None:
    """Read from the built module's own parameters: `b_up` in the formula iff `up_proj.bias` exists."""
    for name, variant in VARIANTS.items():
        if not isinstance(variant, SingleFFN):
            continue
        spec = FFNSpec(variant=name, d_model=8, bias=bias)
        with torch.device("meta"):
            module = build_ffn(spec, device="meta")
        built = {n.removesuffix("_proj.bias") for n, _ in module.named_parameters() if n.endswith("_proj.bias")}
        shown = set(re.findall(r"b_(\w+)", variant.header_formula(spec)))
        assert shown == built, (name, bias)
