"""Spec generators shared by the tests: every registry variant at small, valid sizes."""

from __future__ import annotations

import signal

from hypothesis import strategies as st

from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS, variant_names

ALL_VARIANTS = list(VARIANTS)
EXPERT_VARIANTS = variant_names("dense") + variant_names("gated")


def small_spec(variant: str, **overrides: object) -> FFNSpec:
    """A small spec of `variant` with every optional part switched on where it exists."""
    base: dict[str, object] = {"variant": variant, "d_model": 16, "d_ff": 24}
    if VARIANTS[variant].family == "moe":
        base.update(experts=4, top_k=2, shared_experts=1 if variant == "moe" else 0)
    base.update(overrides)
    return FFNSpec(**base)  # type: ignore[arg-type]


@st.composite
def specs(draw: st.DrawFn, variants: list[str] | None = None) -> FFNSpec:
    """Random valid specs over the registry: sizes, bias, fused layout, MoE shape."""
    variant = draw(st.sampled_from(variants or ALL_VARIANTS))
    family = VARIANTS[variant].family
    kwargs: dict[str, object] = {
        "variant": variant,
        "d_model": draw(st.integers(1, 24)),
        "d_ff": draw(st.integers(1, 40)),
        "bias": draw(st.booleans()),
    }
    if family == "gated":
        kwargs["fused_gate_up"] = draw(st.booleans())
    if family == "sparse":
        kwargs["sparsity"] = draw(st.floats(0.0, 0.9))
    if family == "moe":
        experts = draw(st.integers(1, 5))
        expert_variant = draw(st.sampled_from(EXPERT_VARIANTS))
        kwargs.update(
            experts=experts,
            top_k=draw(st.integers(1, experts)),
            expert_variant=expert_variant,
            fused_gate_up=VARIANTS[expert_variant].family == "gated" and draw(st.booleans()),
        )
        if variant == "moe":
            kwargs.update(
                shared_experts=draw(st.integers(0, 2)),
                shared_expert_gate=draw(st.booleans()),
                normalize_top_k=draw(st.booleans()),
            )
    return FFNSpec(**kwargs)  # type: ignore[arg-type]


def cli_json(*args: str) -> dict:  # type: ignore[type-arg]
    """What `ffn ARGS --json` prints, read back; the command must succeed."""
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def read_preset_names() -> list[str]:
    """The presets a family reader knows; the others are counted by building them with
    transformers (tests/test_active_conventions.py and tests/test_presets_2026.py check those)."""
    from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES
    from ffn_cli.configs.files import load_preset, preset_names

    return [n for n in preset_names() if load_preset(n)["model_type"] in SUPPORTED_MODEL_TYPES]


def as_from_a_terminal() -> None:
    """A subprocess's preexec_fn: Ctrl-C reaches ffn as it does from a terminal, even where the test
    runner was started with SIGINT ignored (a shell's background job), which its children inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
