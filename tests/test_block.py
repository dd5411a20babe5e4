from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ffn_cli import build_ffn
from ffn_cli.attention import AttentionSpec
from ffn_cli.block import BlockSpec, RMSNorm, SelfAttention, build_block
from ffn_cli.errors import FFNError
from ffn_cli.spec import FFNSpec

pytestmark = pytest.mark.usefixtures("one_thread")


def _spec(**overrides: object) -> FFNSpec:
    return FFNSpec(**{"variant": "relu", "d_model": 32, "d_ff": 64, **overrides})  # type: ignore[arg-type]


def test_tutorial_block_parameters() -> None:
    """d_model 512, 8 heads, biases: attention 1,050,624, the FFN twice that."""
    spec = BlockSpec.around(FFNSpec(), n_heads=8)
    counts = spec.param_counts()
    assert counts["attn"] == 1_050_624
    assert counts["ffn"] == 2_099_712
    block = build_block(spec, device="meta")
    assert sum(p.numel() for p in block.parameters()) == sum(counts.values())


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("pre_norm", [False, True])
@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 4), (4, 2), (4, 1)])
def test_block_keeps_the_shape(norm: str, pre_norm: bool, heads: int, kv_heads: int) -> None:
    block = build_block(BlockSpec.around(_spec(), n_heads=heads, n_kv_heads=kv_heads, norm=norm, pre_norm=pre_norm)).eval()
    x = torch.randn(2, 5, 32)
    assert block(x).shape == x.shape


@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 4), (4, 2), (8, 1)])
def test_attention_matches_torch_sdpa(heads: int, kv_heads: int) -> None:
    """Our explicit bmm attention against PyTorch's fused one, on the same projections."""
    torch.manual_seed(0)
    attn = SelfAttention(AttentionSpec(32, heads, kv_heads)).double()
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    b, t, hd = 2, 7, 32 // heads

    def split(z: torch.Tensor, n: int) -> torch.Tensor:
        return z.view(b, t, n, hd).transpose(1, 2).repeat_interleave(heads // n, dim=1)

    q, k, v = split(attn.q_proj(x), heads), split(attn.k_proj(x), kv_heads), split(attn.v_proj(x), kv_heads)
    expected = attn.o_proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, 32))
    torch.testing.assert_close(attn(x), expected)


def test_post_norm_and_pre_norm_orders() -> None:
    x = torch.randn(2, 3, 32)
    post = build_block(BlockSpec.around(_spec())).eval()
    h = post.norm1(x + post.attn(x))
    torch.testing.assert_close(post(x), post.norm2(h + post.ffn(h)))
    pre = build_block(BlockSpec.around(_spec(), pre_norm=True)).eval()
    h = x + pre.attn(pre.norm1(x))
    torch.testing.assert_close(pre(x), h + pre.ffn(pre.norm2(h)))


def test_rmsnorm_matches_torch() -> None:
    norm = RMSNorm(16, eps=1e-5)
    with torch.no_grad():
        norm.weight.uniform_()
    x = torch.randn(3, 16)
    torch.testing.assert_close(norm(x), F.rms_norm(x, (16,), norm.weight, eps=1e-5))


def test_block_ffn_has_the_standalone_weights() -> None:
    spec = _spec(variant="swiglu")
    block = build_block(BlockSpec.around(spec), seed=3)
    alone = build_ffn(spec, seed=3)
    for (name, a), (_, b) in zip(block.ffn.state_dict().items(), alone.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_attention_biases_follow_the_ffn() -> None:
    assert BlockSpec.around(_spec(variant="swiglu")).attention.qkv_bias is False
    assert BlockSpec.around(_spec(variant="relu")).attention.o_bias is True


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [({"norm": "batchnorm"}, "norm"), ({"n_heads": 5}, "n_heads"), ({"n_heads": 4, "n_kv_heads": 3}, "n_kv_heads")],
)
def test_bad_block_options_are_refused(kwargs: dict[str, object], option: str) -> None:
    with pytest.raises(FFNError) as info:
        BlockSpec.around(_spec(), **kwargs)  # type: ignore[arg-type]
    assert info.value.option == option


def test_mismatched_widths_are_refused() -> None:
    with pytest.raises(FFNError):
        BlockSpec(_spec(), AttentionSpec(64))
