"""`sparse`: a fixed random mask over the hidden units, static activation sparsity."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.i18n import N_, Message
from ffn_cli.variants.base import Family, FlopStep, SavedTensor, SplitKind, Weights
from ffn_cli.variants.dense import DenseVariant

if TYPE_CHECKING:
    from torch import Tensor, nn

    from ffn_cli.variants.shape import FFNShape

__all__ = ["Sparse", "sparsity_mask"]


def sparsity_mask(d_ff: int, sparsity: float, seed: int) -> Tensor:
    """1 for kept hidden units, 0 for round(sparsity·d_ff) units drawn once from `seed`."""
    import torch

    from ffn_cli.seeds import Stream, stream_seed  # NumPy's: the registry loads without it

    generator = torch.Generator(device="cpu").manual_seed(stream_seed(seed, Stream.MASK))
    dropped = torch.randperm(d_ff, generator=generator, device="cpu")[: round(sparsity * d_ff)]
    mask = torch.ones(d_ff, device="cpu")
    mask[dropped] = 0.0
    return mask


def _mul(a: Any, b: Any) -> Any:
    return a * b


class Sparse(DenseVariant):
    name = "sparse"
    family = Family.SPARSE
    activation = "relu"
    formula = N_("W_down·(m ⊙ relu(W_up·x + b_up)) + b_down,  m fixed, random")
    origin = N_("static activation sparsity; cf. Li et al. 2023, The Lazy Neuron Phenomenon")
    summary = "a fixed random mask over the hidden units"
    own_options = frozenset({"sparsity", "mask_seed"})
    can_be_expert = False

    def header_words(self, spec: FFNShape) -> list[Message]:
        return [Message.of(N_("sparsity {sparsity}"), sparsity=f"{spec.sparsity:g}")]

    def compute_note(self, spec: FFNShape) -> Message | None:
        """A mask applied after the up-projection saves no FLOP: the matmuls run at full size."""
        d_ff = spec.hidden
        masked = round(spec.sparsity * d_ff)
        dense, pruned = 4 * spec.d_model * d_ff, 4 * spec.d_model * (d_ff - masked)
        text = N_(
            "the mask zeroes {masked:,} of {d_ff:,} hidden units after W_up computed them, so every matmul still runs "
            "at full size: {dense:,} matmul FLOPs per token. Removing those rows of W_up and columns of W_down "
            "(d_ff {kept:,}) gives the same output for {pruned:,}; a mask saves compute only in a kernel that skips them"
        )
        return Message.of(text, masked=masked, d_ff=d_ff, dense=dense, kept=d_ff - masked, pruned=pruned)

    def buffers(self, spec: FFNShape) -> tuple[tuple[str, SplitKind], ...]:
        return (("hidden_mask", SplitKind.COLUMN),)  # cut with the hidden units it masks

    def register_state(self, module: nn.Module, spec: FFNShape, d_ff: int) -> None:
        """The fixed random mask over the hidden units, drawn from the spec's mask seed."""
        module.register_buffer("hidden_mask", sparsity_mask(d_ff, spec.sparsity, spec.mask_seed))

    def activate(self, spec: FFNShape, w: Weights, pre: Any) -> Any:
        h = super().activate(spec, w, pre)
        return w.step("mask", _mul, h, w.tensor("hidden_mask"))

    def activation_steps(self, spec: FFNShape, d_ff: int, prefix: str) -> list[FlopStep]:
        return [*super().activation_steps(spec, d_ff, prefix), FlopStep(prefix + "mask", 0, d_ff, "m ⊙ h")]

    def saved(self, spec: FFNShape, d_ff: int) -> list[SavedTensor]:
        """relu's output is kept twice over (by relu and by the mask multiply): one tensor."""
        return [SavedTensor("x", spec.d_model), SavedTensor("relu(h)", d_ff), SavedTensor("m ⊙ h", d_ff)]

    def step_formula(self, spec: FFNShape, step: str) -> str:
        return N_("m ⊙ h, fixed mask") if step == "mask" else super().step_formula(spec, step)

    def step_explanation(self, spec: FFNShape, step: str) -> Message | None:
        if step == "mask":
            text = N_(
                "zeroes a fixed {masked:,} of the {d_ff:,} hidden units (sparsity {sparsity}), chosen once at build time; "
                "W_up and W_down still compute every unit"
            )
            return Message.of(text, masked=round(spec.sparsity * spec.hidden), d_ff=spec.hidden, sparsity=f"{spec.sparsity:g}")
        return super().step_explanation(spec, step)

    def tp_step_formula(self, spec: FFNShape, step: str, down_bias: bool) -> str | None:
        return "m[r] ⊙ h" if step == "mask" else super().tp_step_formula(spec, step, down_bias)
