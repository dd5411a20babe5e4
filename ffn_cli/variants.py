"""The registry: every FFN variant declared once.

CLI choices, `ffn variants`, docs/variants.md, the torch modules, the NumPy reference, the
accounting and the test parametrisation all read these entries. Nothing here imports
anything of ours (or torch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ACTIVATIONS",
    "VARIANTS",
    "Activation",
    "Family",
    "TensorTemplate",
    "Variant",
    "get_variant",
    "variant_names",
]

Family = Literal["dense", "gated", "moe", "sparse"]


@dataclass(frozen=True)
class Activation:
    """An elementwise nonlinearity, with the conventions the accounting and init need."""

    name: str
    formula: str
    # Arithmetic operations per element, our labelled convention for elementwise FLOPs.
    flops_per_element: int
    # torch.nn.init.calculate_gain name used by xavier_normal for layers feeding this activation.
    init_gain: str
    # Whether autograd keeps the activation's input for backward (gelu, silu), rather than only
    # its output (relu, sigmoid) or nothing (identity). relu² keeps relu's output and squares
    # it into a new tensor, which costs the same as keeping the input.
    saves_input: bool


ACTIVATIONS: dict[str, Activation] = {
    a.name: a
    for a in (
        Activation("relu", "max(0, z)", 1, "relu", saves_input=False),
        Activation("relu2", "max(0, z)²", 2, "relu", saves_input=True),
        Activation("gelu", "z·Φ(z), Φ by erf", 8, "relu", saves_input=True),
        Activation("gelu_tanh", "0.5·z·(1 + tanh(√(2/π)·(z + 0.044715·z³)))", 9, "relu", saves_input=True),
        Activation("silu", "z·σ(z)", 5, "relu", saves_input=True),
        Activation("sigmoid", "σ(z) = 1/(1 + e^(−z))", 4, "sigmoid", saves_input=False),
        Activation("identity", "z", 0, "linear", saves_input=False),
    )
}


@dataclass(frozen=True)
class TensorTemplate:
    """One parameter tensor of a layout. Dims are symbols: d = d_model, f = d_ff, 2f, E."""

    name: str
    dims: tuple[str, ...]
    is_bias: bool = False


def _linear(name: str, out_dim: str, in_dim: str) -> tuple[TensorTemplate, ...]:
    # nn.Linear stores weight as (out, in); the bias is dropped when the spec has bias=False.
    return (
        TensorTemplate(f"{name}.weight", (out_dim, in_dim)),
        TensorTemplate(f"{name}.bias", (out_dim,), is_bias=True),
    )


DENSE_TENSORS = _linear("up_proj", "f", "d") + _linear("down_proj", "d", "f")
GATED_TENSORS = _linear("gate_proj", "f", "d") + _linear("up_proj", "f", "d") + _linear("down_proj", "d", "f")
FUSED_GATED_TENSORS = _linear("gate_up_proj", "2f", "d") + _linear("down_proj", "d", "f")
ROUTER_TENSORS = (TensorTemplate("router.weight", ("E", "d")),)


@dataclass(frozen=True)
class Variant:
    name: str
    family: Family
    activation: str
    formula: str
    origin: str
    default_bias: bool
    summary: str

    @property
    def d_ff_rule(self) -> str:
        if self.family == "gated":
            return "int(2·4d/3) × ffn_dim_multiplier, rounded up to multiple_of"
        if self.family == "moe":
            return "per expert: the expert variant's rule"
        return "4·d"

    @property
    def d_ff_rule_short(self) -> str:
        """The rule in a few characters, for tables."""
        return {"gated": "⅔·4d ↑ multiple_of", "moe": "the expert's"}.get(self.family, "4·d")

    @property
    def tensors(self) -> tuple[TensorTemplate, ...]:
        """The layout of one FFN of this variant (MoE: the router; experts come from the expert variant)."""
        if self.family == "gated":
            return GATED_TENSORS
        if self.family == "moe":
            return ROUTER_TENSORS
        return DENSE_TENSORS


_GLU_ORIGIN = "Shazeer 2020, GLU Variants Improve Transformer"
_GLU_FORMULA = "W_down·({act}(W_gate·x) ⊙ W_up·x)"

VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant(
            "relu",
            "dense",
            "relu",
            "W_down·relu(W_up·x + b_up) + b_down",
            "Vaswani et al. 2017, Attention Is All You Need",
            True,
            "the original Transformer FFN",
        ),
        Variant(
            "gelu",
            "dense",
            "gelu",
            "W_down·gelu(W_up·x + b_up) + b_down",
            "Hendrycks & Gimpel 2016; BERT (Devlin et al. 2019)",
            True,
            "exact erf GELU, as BERT in Hugging Face",
        ),
        Variant(
            "gelu_tanh",
            "dense",
            "gelu_tanh",
            "W_down·gelu_tanh(W_up·x + b_up) + b_down",
            "GPT-2 (Radford et al. 2019); Google's BERT",
            True,
            "tanh-approximated GELU, as GPT-2",
        ),
        Variant(
            "silu",
            "dense",
            "silu",
            "W_down·silu(W_up·x + b_up) + b_down",
            "Elfwing et al. 2018; Ramachandran et al. 2017 (Swish)",
            True,
            "SiLU / Swish, ungated",
        ),
        Variant(
            "relu2",
            "dense",
            "relu2",
            "W_down·relu(W_up·x + b_up)² + b_down",
            "So et al. 2021, Primer",
            True,
            "Primer's squared ReLU",
        ),
        Variant("glu", "gated", "sigmoid", _GLU_FORMULA.format(act="σ"), "Dauphin et al. 2017; " + _GLU_ORIGIN, False, "sigmoid gate"),
        Variant("bilinear", "gated", "identity", "W_down·(W_gate·x ⊙ W_up·x)", _GLU_ORIGIN, False, "no activation on the gate"),
        Variant("reglu", "gated", "relu", _GLU_FORMULA.format(act="relu"), _GLU_ORIGIN, False, "ReLU gate"),
        Variant(
            "geglu", "gated", "gelu_tanh", _GLU_FORMULA.format(act="gelu_tanh"), _GLU_ORIGIN + "; T5 v1.1, Gemma", False, "tanh-GELU gate"
        ),
        Variant("swiglu", "gated", "silu", _GLU_FORMULA.format(act="silu"), _GLU_ORIGIN + "; PaLM, LLaMA", False, "SiLU gate, LLaMA's FFN"),
        Variant(
            "moe",
            "moe",
            "softmax",
            "Σ_{i∈top-k} ĝ_i·expert_i(x) + shared(x),  g = softmax(W_router·x)",
            "Shazeer et al. 2017; Switch (Fedus et al. 2021, k=1); Mixtral 2024; DeepSeek-MoE 2024",
            False,
            "top-k routed experts with optional shared experts",
        ),
        Variant(
            "soft_moe",
            "moe",
            "softmax",
            "Σ_{i=1..E} g_i·expert_i(x),  g = softmax(W_router·x)",
            "Jacobs et al. 1991, Adaptive Mixtures of Local Experts",
            False,
            "dense mixture: every expert runs, softmax-weighted",
        ),
        Variant(
            "sparse",
            "sparse",
            "relu",
            "W_down·(m ⊙ relu(W_up·x + b_up)) + b_down,  m fixed, random",
            "static activation sparsity; cf. Li et al. 2023, The Lazy Neuron Phenomenon",
            True,
            "a fixed random mask over the hidden units",
        ),
    )
}


def variant_names(family: Family | None = None) -> list[str]:
    return [v.name for v in VARIANTS.values() if family is None or v.family == family]


def get_variant(name: str) -> Variant:
    """Look a variant up; the caller (spec validation) turns a miss into an FFNError."""
    return VARIANTS[name]
