"""What a variant declares about its torch module, held against the module that gets built: the
class it names (`torch_module`), and the state beyond the linears its own hook registers
(`register_state`), with shapes and values written out by hand."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ffn_cli import build_ffn
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS
from tests.helpers import ALL_VARIANTS, small_spec


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_every_variant_builds_the_class_its_own_declaration_names(variant: str) -> None:
    built = type(build_ffn(small_spec(variant), device="meta"))
    assert f"{built.__module__}:{built.__qualname__}" == VARIANTS[variant].torch_module


@pytest.mark.parametrize(
    ("variant", "options", "shapes"),
    [  # d_model 8, d_ff 16, no biases, 2 experts: nn.Linear's (out, in) weights, counted by hand
        ("relu", {}, {"up_proj.weight": (16, 8), "down_proj.weight": (8, 16)}),
        ("swiglu", {}, {"gate_proj.weight": (16, 8), "up_proj.weight": (16, 8), "down_proj.weight": (8, 16)}),
        ("xielu", {}, {"up_proj.weight": (16, 8), "down_proj.weight": (8, 16), "act_fn.alpha_p": (1,), "act_fn.alpha_n": (1,)}),
        ("sparse", {}, {"up_proj.weight": (16, 8), "down_proj.weight": (8, 16)}),
        (
            "soft_moe",
            {"experts": 2, "expert_variant": "relu"},
            {
                "router.weight": (2, 8),
                **{f"experts.{e}.{n}": s for e in (0, 1) for n, s in (("up_proj.weight", (16, 8)), ("down_proj.weight", (8, 16)))},
            },
        ),
        (
            "moe",
            {"experts": 2, "top_k": 1, "expert_variant": "relu", "shared_experts": 2},
            {
                "router.weight": (2, 8),
                **{f"experts.{e}.{n}": s for e in (0, 1) for n, s in (("up_proj.weight", (16, 8)), ("down_proj.weight", (8, 16)))},
                # two shared experts form one FFN of twice the width
                "shared_experts.up_proj.weight": (32, 8),
                "shared_experts.down_proj.weight": (8, 32),
            },
        ),
    ],
)
def test_the_built_module_has_the_shapes_counted_by_hand(
    variant: str, options: dict[str, object], shapes: dict[str, tuple[int, ...]]
) -> None:
    module = build_ffn(FFNSpec(variant=variant, d_model=8, d_ff=16, bias=False, **options), device="meta")  # type: ignore[arg-type]
    assert {n: tuple(p.shape) for n, p in module.named_parameters()} == shapes


def test_xielu_registers_its_own_scalars_at_apertus_initial_values() -> None:
    spec = FFNSpec(variant="xielu", d_model=8, d_ff=16)
    bare = nn.Module()
    VARIANTS["xielu"].register_state(bare, spec, 16)  # the hook alone, on a module with nothing else
    own = dict(bare.named_parameters())
    assert {n: tuple(p.shape) for n, p in own.items()} == {"act_fn.alpha_p": (1,), "act_fn.alpha_n": (1,)}
    assert all(p.requires_grad and p.dtype == torch.float32 for p in own.values())
    # Apertus's config: alpha_p_init = alpha_n_init = 0.8, beta = 0.5; α_p = softplus(a_p), α_n = β + softplus(a_n)
    assert F.softplus(own["act_fn.alpha_p"]).item() == pytest.approx(0.8, abs=1e-7)
    assert 0.5 + F.softplus(own["act_fn.alpha_n"]).item() == pytest.approx(0.8, abs=1e-7)
    built = dict(build_ffn(spec).named_parameters())
    for name, p in own.items():
        assert torch.equal(built[name], p)


def test_sparse_registers_its_own_mask_as_a_buffer() -> None:
    spec = FFNSpec(variant="sparse", d_model=8, d_ff=100, sparsity=0.3, mask_seed=7)
    bare = nn.Module()
    VARIANTS["sparse"].register_state(bare, spec, 100)
    assert list(bare.parameters()) == []
    mask = dict(bare.named_buffers())["hidden_mask"]
    assert mask.shape == (100,) and int((mask == 0).sum()) == 30 and int((mask == 1).sum()) == 70
    assert torch.equal(build_ffn(spec).hidden_mask, mask)
    other = nn.Module()
    VARIANTS["sparse"].register_state(other, FFNSpec(variant="sparse", d_model=8, d_ff=100, sparsity=0.3, mask_seed=8), 100)
    assert not torch.equal(other.hidden_mask, mask)


@pytest.mark.parametrize("variant", ["relu", "swiglu", "gelu"])
def test_a_variant_with_nothing_beyond_its_linears_registers_nothing(variant: str) -> None:
    bare = nn.Module()
    VARIANTS[variant].register_state(bare, small_spec(variant), 24)
    assert list(bare.named_parameters()) == [] and list(bare.named_buffers()) == [] and list(bare.children()) == []


def test_reading_every_declaration_imports_no_torch() -> None:
    code = (
        "import sys\n"
        "from ffn_cli.variants import VARIANTS\n"
        "names = [v.torch_module for v in VARIANTS.values()]\n"
        "assert all(':' in n for n in names), names\n"
        "assert 'torch' not in sys.modules and 'numpy' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
