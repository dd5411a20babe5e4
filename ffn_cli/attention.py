"""Attention accounting, pure Python: the FFN's neighbour.

`AttentionSpec` holds W_Q, W_K, W_V, W_O; with n_kv_heads < n_heads (GQA, or MQA at one KV
head) K and V shrink. Optional extras as real models carry them: q/k norms per head (Qwen3,
Gemma 3) or over the whole projection (OLMo-2), and one learned sink logit per head (gpt-oss).
`LatentAttentionSpec` is DeepSeek-V2/V3's multi-head latent attention: q and kv pass through
low-rank bottlenecks; `CompressedAttentionSpec` (compressed_attention.py) is DeepSeek-V4's. The
tutorials' check: d_model 512 with biases → 4·(512² + 512) = 1,050,624 parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ffn_cli.accounting import ParamTensor
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.spec import MAX_DIM, check_int

__all__ = ["BLOCK_NORMS", "QK_NORMS", "AnyAttention", "AttentionSpec", "LatentAttentionSpec", "QKNorm"]

# The default head width when --n-heads is not given (GPT-2, BERT, LLaMA all use 64 or 128).
DEFAULT_HEAD_DIM = 64

QKNorm = Literal["none", "head", "proj"]
# Where q/k norms sit: none; one norm of head_dim shared by every head (Qwen3, Gemma 3); one over
# the whole q and k projections (OLMo-2: q_dim and kv_dim weights).
QK_NORMS: tuple[str, ...] = ("none", "head", "proj")
# The norms a Transformer block around the FFN takes (`ffn trace --block --norm`).
BLOCK_NORMS: tuple[str, ...] = ("layernorm", "rmsnorm")


@dataclass(frozen=True)
class AttentionSpec:
    """Shapes of one attention layer. qkv_bias / o_bias split the biases as Qwen2 does
    (q, k, v biased, o not); `bias=True` in the CLI sets both."""

    d_model: int
    n_heads: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    qkv_bias: bool = True
    o_bias: bool = True
    qk_norm: QKNorm = "none"
    qk_norm_bias: bool = False  # LayerNorm q/k norms (Phi) carry a bias beside the weight
    sinks: bool = False  # gpt-oss: one learned logit per head joins the softmax
    # The values' head width where it differs from the keys' (MiMo-V2-Flash: keys 192, values
    # 128); None: head_dim, as in most models.
    v_head_dim: int | None = None
    # Values taken from the keys' projection, no v_proj of its own (Gemma 4's attention_k_eq_v
    # full layers); the cache still holds K and V apart (V normed, K normed and rotated).
    values_from_keys: bool = False
    # Taps of a depthwise causal convolution over the keys and one over the values, after their
    # projections (Inkling's k_sconv and v_sconv); 0 for none. Decoding keeps each one's taps − 1
    # latest inputs, at kv_conv_bytes an element where the model keeps them in float32 (None: the
    # cache dtype).
    kv_conv: int = 0
    kv_conv_bytes: int | None = None
    # Elements a sequence keeps beside the cache whatever the context, at the cache dtype, of work
    # before the keys and values (Zaya's compressed convolutional attention): its query and key
    # convolutions' (t0 − 1) + (t1 − 1) latest inputs, and the last token's delayed value half,
    # carried to the next token's values.
    side_state: int = 0
    carried_values: int = 0
    # What q_proj, k_proj and v_proj read where it is not d_model (Zamba's shared attention: the
    # hidden state and the token embeddings side by side, 2 · d_model); None: d_model.
    input_width: int | None = None

    def __post_init__(self) -> None:
        check_int("d_model", self.d_model)
        if self.input_width is not None:
            check_int("input_width", self.input_width)
        if self.kv_conv:
            check_int("kv_conv", self.kv_conv)
        check_int("side_state", self.side_state, minimum=0)
        check_int("carried_values", self.carried_values, minimum=0)
        if self.qk_norm not in QK_NORMS:
            raise FFNError("qk_norm", self.qk_norm, _("choose one of {qk_norms}").format(qk_norms=", ".join(QK_NORMS)))
        if self.n_heads is None:
            object.__setattr__(self, "n_heads", max(1, self.d_model // DEFAULT_HEAD_DIM))
        heads = check_int("n_heads", self.n_heads, maximum=MAX_DIM)
        if self.head_dim is None:
            if self.d_model % heads:
                raise FFNError("n_heads", heads, _("must divide d_model ({d_model}), or give --head-dim").format(d_model=self.d_model))
            object.__setattr__(self, "head_dim", self.d_model // heads)
        check_int("head_dim", self.head_dim)
        if self.v_head_dim is not None:
            check_int("v_head_dim", self.v_head_dim)
        if self.values_from_keys and self.v_width != self.head_width:
            raise FFNError(
                "v_head_dim",
                self.v_head_dim,
                _("must equal head_dim ({head_dim}) when the values are the keys' projection").format(head_dim=self.head_dim),
            )
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", heads)
        kv = check_int("n_kv_heads", self.n_kv_heads, maximum=MAX_DIM)
        if heads % kv:
            raise FFNError("n_kv_heads", kv, _("must divide n_heads ({heads})").format(heads=heads))

    # n_heads, n_kv_heads and head_dim as construction resolved them: never None after it.
    @property
    def heads(self) -> int:
        assert self.n_heads is not None
        return self.n_heads

    @property
    def kv_heads(self) -> int:
        assert self.n_kv_heads is not None
        return self.n_kv_heads

    @property
    def head_width(self) -> int:
        assert self.head_dim is not None
        return self.head_dim

    @property
    def v_width(self) -> int:
        """The values' head width: v_head_dim where given, else head_dim."""
        return self.v_head_dim if self.v_head_dim is not None else self.head_width

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_width

    @property
    def in_width(self) -> int:
        """What the query, key and value projections read: input_width where given, else d_model."""
        return self.input_width if self.input_width is not None else self.d_model

    @property
    def kv_dim(self) -> int:
        """The keys' width over the KV heads (the values' too, unless v_head_dim differs)."""
        return self.kv_heads * self.head_width

    @property
    def v_dim(self) -> int:
        """The values' width over the KV heads."""
        return self.kv_heads * self.v_width

    @property
    def o_dim(self) -> int:
        """o_proj's inputs: every query head's weighted values."""
        return self.heads * self.v_width

    def tensors(self, prefix: str = "") -> list[ParamTensor]:
        """Named as Hugging Face's LLaMA attention names them."""
        d = self.d_model
        out = []
        projections = (("q_proj", self.q_dim), ("k_proj", self.kv_dim), ("v_proj", self.v_dim))
        for name, rows in projections[:2] if self.values_from_keys else projections:
            out.append(ParamTensor(f"{prefix}{name}.weight", (rows, self.in_width)))
            if self.qkv_bias:
                out.append(ParamTensor(f"{prefix}{name}.bias", (rows,)))
        out.append(ParamTensor(f"{prefix}o_proj.weight", (d, self.o_dim)))
        if self.o_bias:
            out.append(ParamTensor(f"{prefix}o_proj.bias", (d,)))
        if self.qk_norm != "none":
            widths = (self.head_width, self.head_width) if self.qk_norm == "head" else (self.q_dim, self.kv_dim)
            for name, width in zip(("q_norm", "k_norm"), widths, strict=True):
                out.append(ParamTensor(f"{prefix}{name}.weight", (width,)))
                if self.qk_norm_bias:
                    out.append(ParamTensor(f"{prefix}{name}.bias", (width,)))
        if self.sinks:
            out.append(ParamTensor(f"{prefix}sinks", (self.heads,)))
        if self.kv_conv:
            convs = (("k_sconv", self.kv_dim), ("v_sconv", self.v_dim))
            out += [ParamTensor(f"{prefix}{name}.conv1d.weight", (width, 1, self.kv_conv)) for name, width in convs]
        return out

    @property
    def conv_window(self) -> int:
        """Elements the attention keeps a sequence beside its cache while decoding: the key and value
        convolutions' taps − 1 latest inputs of each channel, and its side_state."""
        return ((self.kv_conv - 1) * (self.kv_dim + self.v_dim) if self.kv_conv else 0) + self.side_state

    @property
    def kind(self) -> str:
        """MHA, GQA or MQA, by how many KV heads serve the query heads."""
        return "MHA" if self.n_kv_heads == self.n_heads else "MQA" if self.n_kv_heads == 1 else "GQA"

    def shape_data(self) -> dict[str, Any]:
        convs = {"kv_conv_taps": self.kv_conv, "kv_conv_state_elements": self.conv_window} if self.kv_conv else {}
        if self.side_state or self.carried_values:
            convs |= {"side_state_elements": self.side_state, "carried_value_elements": self.carried_values}
        if self.input_width is not None:
            convs |= {"input_width": self.input_width}
        return {"kind": self.kind, "qk_norm": self.qk_norm, "sinks": self.sinks, **convs}

    @property
    def params(self) -> int:
        return sum(t.count for t in self.tensors())

    def projection_flops_per_token(self) -> int:
        """Matmul FLOPs of the four projections for one token, and the key and value convolutions' taps."""
        v_dim = 0 if self.values_from_keys else self.v_dim
        convs = 2 * self.kv_conv * (self.kv_dim + self.v_dim)  # each channel's taps, a multiply-add each
        return 2 * self.in_width * (self.q_dim + self.kv_dim + v_dim) + 2 * self.o_dim * self.d_model + convs

    def score_flops_per_token(self, seq_len: int) -> int:
        """Q·Kᵀ over the key width and softmax(·)·V over the value width for one query attending
        to seq_len keys (no causal saving)."""
        return 2 * seq_len * (self.q_dim + self.o_dim)

    def flops_per_token(self, seq_len: int) -> int:
        return self.projection_flops_per_token() + self.score_flops_per_token(seq_len)


@dataclass(frozen=True)
class LatentAttentionSpec:
    """Multi-head latent attention (DeepSeek-V2/V3), named as transformers' DeepseekV3Attention.

    q: d → q_lora_rank (q_a_proj, RMSNorm) → heads·(nope + rope) (q_b_proj), or one q_proj when
    q_lora_rank is None (V2-Lite). kv: d → kv_lora_rank + rope (kv_a_proj_with_mqa, the rope
    part a single shared key head), RMSNorm over kv_lora_rank, → heads·(nope + v) (kv_b_proj).
    o: heads·v → d. `bias` (attention_bias) sits on q_a_proj, kv_a_proj_with_mqa and o_proj.
    With `q_gate` (A.X K2's q_gate_proj) the queries are read from the latent and its norm side by
    side (2·q_lora_rank) and written with an output gate of heads·v beside them, which scales the
    attention's output before o_proj.
    """

    d_model: int
    n_heads: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None
    bias: bool = False
    q_gate: bool = False

    def __post_init__(self) -> None:
        check_int("hidden_size", self.d_model)
        check_int("num_attention_heads", self.n_heads, maximum=MAX_DIM)
        check_int("kv_lora_rank", self.kv_lora_rank)
        check_int("qk_nope_head_dim", self.qk_nope_head_dim, minimum=0)
        check_int("qk_rope_head_dim", self.qk_rope_head_dim, minimum=0)
        check_int("v_head_dim", self.v_head_dim)
        if self.q_lora_rank is not None:
            check_int("q_lora_rank", self.q_lora_rank)
        elif self.q_gate:
            raise FFNError("q_lora_rank", None, _("an output gate read with the queries needs the query latent"))
        if self.qk_head_dim < 1:
            raise FFNError("qk_nope_head_dim", self.qk_nope_head_dim, _("plus qk_rope_head_dim must be at least 1"))

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    # The names the rest of the accounting reads from any attention.
    @property
    def heads(self) -> int:
        return self.n_heads

    @property
    def n_kv_heads(self) -> int:
        return self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_heads

    @property
    def head_dim(self) -> int:
        return self.qk_head_dim

    @property
    def qkv_bias(self) -> bool:
        return self.bias

    @property
    def o_bias(self) -> bool:
        return self.bias

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.qk_head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_heads * self.qk_head_dim

    @property
    def kind(self) -> str:
        return "MLA"

    def projections(self) -> list[tuple[str, int, int, bool]]:
        """(name, out, in, bias) of each linear, in the order the forward runs them."""
        h, d = self.n_heads, self.d_model
        if self.q_lora_rank is None:
            q = [("q_proj", h * self.qk_head_dim, d, False)]
        elif self.q_gate:
            q = [
                ("q_a_proj", self.q_lora_rank, d, self.bias),
                ("q_gate_proj", h * (self.qk_head_dim + self.v_head_dim), 2 * self.q_lora_rank, False),
            ]
        else:
            q = [("q_a_proj", self.q_lora_rank, d, self.bias), ("q_b_proj", h * self.qk_head_dim, self.q_lora_rank, False)]
        kv = [
            ("kv_a_proj_with_mqa", self.kv_lora_rank + self.qk_rope_head_dim, d, self.bias),
            ("kv_b_proj", h * (self.qk_nope_head_dim + self.v_head_dim), self.kv_lora_rank, False),
        ]
        return [*q, *kv, ("o_proj", d, h * self.v_head_dim, self.bias)]

    def tensors(self, prefix: str = "") -> list[ParamTensor]:
        out = []
        for name, rows, cols, bias in self.projections():
            out.append(ParamTensor(f"{prefix}{name}.weight", (rows, cols)))
            if bias:
                out.append(ParamTensor(f"{prefix}{name}.bias", (rows,)))
        if self.q_lora_rank is not None:
            out.append(ParamTensor(f"{prefix}q_a_layernorm.weight", (self.q_lora_rank,)))
        out.append(ParamTensor(f"{prefix}kv_a_layernorm.weight", (self.kv_lora_rank,)))
        return out

    @property
    def params(self) -> int:
        return sum(t.count for t in self.tensors())

    def projection_flops_per_token(self) -> int:
        """Matmul FLOPs of the projections for one token, latent kv expanded (no absorption)."""
        return sum(2 * rows * cols for _, rows, cols, _ in self.projections())

    def score_flops_per_token(self, seq_len: int) -> int:
        """Q·Kᵀ over qk_head_dim and softmax(·)·V over v_head_dim, per query and key."""
        return 2 * seq_len * self.n_heads * (self.qk_head_dim + self.v_head_dim)

    def absorbed_score_flops_per_key(self) -> int:
        """A decode step's scores with kv_b_proj absorbed into the query and the output (what vLLM's
        and SGLang's MLA kernels run there): each head reads the cached latent and rotary key,
        kv_lora_rank + rope, and sums the latent, kv_lora_rank, for each key. The absorption's own
        matmuls a token cost what kv_b_proj's expansion of the new token costs."""
        return 2 * self.n_heads * (2 * self.kv_lora_rank + self.qk_rope_head_dim)

    def flops_per_token(self, seq_len: int) -> int:
        return self.projection_flops_per_token() + self.score_flops_per_token(seq_len)

    def shape_data(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "q_lora_rank": self.q_lora_rank,
            "kv_lora_rank": self.kv_lora_rank,
            "qk_nope_head_dim": self.qk_nope_head_dim,
            "qk_rope_head_dim": self.qk_rope_head_dim,
            "v_head_dim": self.v_head_dim,
            "q_gate": self.q_gate,
            "projections": {name: [rows, cols] for name, rows, cols, _ in self.projections()},
        }


# What a model's layer may hold; each answers params, tensors, FLOPs and shape_data alike.
AnyAttention = AttentionSpec | LatentAttentionSpec | CompressedAttentionSpec
