"""What every variant is made of: its family, its tensors, its FLOP steps, what it saves for
backward, and the interface its forward is written against.

Pure Python: torch is imported only inside the methods that compute with it, so the registry
(and `ffn params`) loads neither torch nor NumPy. A variant's NumPy float64 forward and
backward, the reference its torch forward is held to, live apart in `ffn_cli/reference/`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ffn_cli.i18n import N_

if TYPE_CHECKING:
    from ffn_cli.i18n import Message
    from ffn_cli.variants.shape import FFNShape

__all__ = [
    "DOWN_PROJ",
    "ExpertLayout",
    "Family",
    "FlopStep",
    "ParamTensor",
    "SavedTensor",
    "SplitKind",
    "TensorTemplate",
    "Variant",
    "Weights",
    "Width",
    "linear_templates",
]


class Family(str, Enum):
    """How a variant is built; JSON and the tables show the value."""

    DENSE = "dense"
    GATED = "gated"
    SPARSE = "sparse"
    MOE = "moe"

    def __str__(self) -> str:
        return self.value


# Every registry FFN's matrix back to its input width (d_model, or a latent MoE expert's latent): its
# output is the FFN's, never an intermediate it holds.
DOWN_PROJ = "down_proj"


class SplitKind(str, Enum):
    """How tensor (or expert) parallelism cuts one parameter."""

    # The values are message ids too: a table translates them where it shows them.
    COLUMN = N_("column")  # rows of the (out, in) weight: this rank's slice of d_ff
    PAIRED = N_("column, gate|up paired")  # fused gate_up: gate[r] rows then up[r] rows
    ROW = N_("row")  # columns of the (out, in) weight: this rank's slice of d_ff
    REPLICATED = N_("replicated")  # every rank holds all of it (down's bias: added once, after the sum)
    EXPERT = N_("expert, whole")  # an expert this rank owns, unsplit

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class TensorTemplate:
    """One parameter tensor of a layout. Dims are symbols: d = d_model, f = d_ff, 2f, E, 1."""

    name: str
    dims: tuple[str, ...]
    is_bias: bool = False
    split: SplitKind = SplitKind.REPLICATED

    def shape(self, dims: dict[str, int]) -> tuple[int, ...]:
        return tuple(dims[s] if s in dims else int(s) for s in self.dims)


def linear_templates(name: str, out_dim: str, in_dim: str, weight_split: SplitKind, bias_split: SplitKind) -> tuple[TensorTemplate, ...]:
    """nn.Linear's (out, in) weight and its (out,) bias; the bias is dropped when the spec has bias=False."""
    return (
        TensorTemplate(f"{name}.weight", (out_dim, in_dim), split=weight_split),
        TensorTemplate(f"{name}.bias", (out_dim,), is_bias=True, split=bias_split),
    )


@dataclass(frozen=True)
class ParamTensor:
    """One named parameter tensor of a layer, by shape."""

    name: str
    shape: tuple[int, ...]

    @property
    def count(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@dataclass(frozen=True)
class FlopStep:
    """One logical step of the forward pass, for one token."""

    name: str
    matmul_flops: int
    elementwise_flops: int
    formula: str

    @property
    def flops(self) -> int:
        return self.matmul_flops + self.elementwise_flops

    def times(self, k: int) -> FlopStep:
        return FlopStep(self.name, k * self.matmul_flops, k * self.elementwise_flops, self.formula)


class Width(str, Enum):
    """The element width of a saved tensor: the run's dtype, the router's float32, an index, a mask."""

    VALUE = "value"
    GATE = "gate"  # the router's softmax runs in float32 at least
    INDEX = "index"  # int64
    MASK = "mask"  # bool
    CAST = "cast"  # the router's weights cast back to a half-precision dtype (no copy otherwise)

    def bytes_(self, dtype_bytes: int) -> int:
        widths = {Width.VALUE: dtype_bytes, Width.GATE: max(dtype_bytes, 4), Width.INDEX: 8, Width.MASK: 1}
        return widths.get(self, dtype_bytes if dtype_bytes < 4 else 0)


@dataclass(frozen=True)
class SavedTensor:
    """A tensor autograd keeps for backward: `per_token` elements for each token (plus `fixed` per forward)."""

    name: str
    per_token: int
    width: Width = Width.VALUE
    fixed: int = 0

    def bytes_(self, tokens: int, dtype_bytes: int) -> int:
        return (self.per_token * tokens + self.fixed) * self.width.bytes_(dtype_bytes)


@dataclass(frozen=True)
class ExpertLayout:
    """What a mixture is made of, and what of it one token runs through: the figures a report
    prints beside the FFN's totals (an active count, the experts it routes between)."""

    experts: int
    expert_variant: str
    top_k: int | None  # experts a router picks for each token; None: every expert runs on every token
    shared_hidden: int  # width of the one FFN all shared experts form, which every token runs (0: none)

    @property
    def active_experts(self) -> int:
        """Experts each token runs through."""
        return self.experts if self.top_k is None else self.top_k


class Weights(Protocol):
    """What a variant's forward computes with: the built module, or one rank's shard of it.

    `step` runs one named step, so the trace (and the tensor-parallel log) can label its ops.
    """

    def linear(self, name: str, x: Any) -> Any: ...

    def tensor(self, name: str) -> Any: ...

    def call(self, name: str, x: Any) -> Any: ...

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any: ...

    def dropout(self, h: Any) -> Any: ...


COMMON_OPTIONS = frozenset({"variant", "d_model", "d_ff", "bias", "dropout", "init", "zero_init_output"})


class Variant:
    """A registry entry: the description every table shows, plus the behaviour of its family.

    Subclasses set the class attributes; family base classes (dense, gated, sparse, mixture)
    implement the methods.
    """

    name: ClassVar[str]
    family: ClassVar[Family]
    activation: ClassVar[str]
    formula: ClassVar[str]
    origin: ClassVar[str]
    summary: ClassVar[str]
    default_bias: ClassVar[bool] = False
    d_ff_rule: ClassVar[str] = "4·d"
    d_ff_rule_short: ClassVar[str] = "4·d"
    # Whether it can be the expert of a mixture: one dense or gated FFN (not a mixture, nor
    # the masked FFN).
    can_be_expert: ClassVar[bool] = True
    # The FFNSpec fields, beyond d_model and those every FFN reads (COMMON_OPTIONS), that this
    # variant reads: an option it does not read is refused rather than silently ignored.
    own_options: ClassVar[frozenset[str]] = frozenset()
    # What a model's parts table calls a layer's FFN of this variant (an English id).
    part_name: ClassVar[str] = "FFN"
    # How parallelism may cut it: tensor parallelism splits one FFN's d_ff across ranks,
    # expert parallelism gives each rank whole experts of a routed mixture.
    tensor_parallel: ClassVar[bool] = True
    expert_parallel: ClassVar[bool] = False
    # The trace's steps in this order, each gathered wherever its ops ran (a mixture's loop
    # over experts interleaves them); empty: the steps in the order they ran.
    step_order: ClassVar[tuple[str, ...]] = ()
    # The step that sends tokens to their experts, where the trace counts each expert's rows.
    dispatch_step: ClassVar[str | None] = None
    # The nn.Module this variant builds, as "package.module:Class" (the `--module` syntax),
    # made as Class(spec, variant). A name, not an import: the registry sits below modules/
    # (which imports it) and loads without torch, so modules/ resolves the name when it builds.
    torch_module: ClassVar[str]

    def options_used(self, spec: FFNShape) -> frozenset[str]:
        """Every FFNSpec field that changes what this variant builds."""
        return COMMON_OPTIONS | self.own_options

    def default_d_ff(self, d_model: int, multiple_of: int, ffn_dim_multiplier: float | None) -> int:
        return 4 * d_model

    def experts_held(self, spec: FFNShape) -> int:
        """The experts it holds (0: one FFN, not a mixture)."""
        return 0

    def all_experts_options(self, spec: FFNShape) -> dict[str, Any] | None:
        """The spec's options changed so that every expert runs on every token (a routed
        mixture's top_k = E), for the FLOPs of all experts; None where nothing would change."""
        return None

    def shard_split(self, spec: FFNShape, name: str) -> tuple[SplitKind, int | None]:
        """How parallelism cuts the parameter `name`, and the expert it belongs to (None: no expert's own)."""
        raise NotImplementedError

    def model_words(self, spec: FFNShape) -> tuple[str, list[str]]:
        """What a model's parts table says of a layer's FFN of this variant: its name, then
        its sizes and options (each a Message with its own leading punctuation, or plain text)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<variant {self.name}>"

    # --- what the family classes implement ------------------------------------------------

    def param_tensors(self, spec: FFNShape) -> list[ParamTensor]:
        raise NotImplementedError

    def flop_steps(self, spec: FFNShape) -> list[FlopStep]:
        raise NotImplementedError

    def saved_tensors(self, spec: FFNShape) -> list[SavedTensor]:
        raise NotImplementedError

    def param_formula(self, spec: FFNShape) -> str:
        raise NotImplementedError

    def matmul_flops_formula(self, spec: FFNShape) -> str:
        raise NotImplementedError

    def active_params(self, spec: FFNShape) -> int:
        return sum(t.count for t in self.param_tensors(spec))

    def expert_layout(self, spec: FFNShape) -> ExpertLayout | None:
        """The experts this variant holds and routes between; None for one FFN, which runs whole
        on every token (its active count is its total)."""
        return None

    def header_formula(self, spec: FFNShape) -> str:
        """The formula a header shows for this spec (terms the spec leaves out dropped)."""
        return self.formula

    def header_parts(self, spec: FFNShape) -> list[str]:
        """What a header says about this variant's own options, in English."""
        return [str(words) for words in self.header_words(spec)]

    def header_words(self, spec: FFNShape) -> list[Message]:
        """The same, as message ids with their values, for a header in the reader's language."""
        return []

    def step_formula(self, spec: FFNShape, step: str) -> str | Message:
        """What the trace shows beside one of this variant's steps (a Message where it has words)."""
        return step

    def compute_note(self, spec: FFNShape) -> Message | None:
        """What a trace should say about where this variant's compute goes, if anything."""
        return None

    def step_explanation(self, spec: FFNShape, step: str) -> Message | None:
        """Why `step` is in this variant's forward, in a line or two, with the spec's own numbers
        (`ffn trace --explain`); None where the variant has nothing to add to what the step is."""
        return None
