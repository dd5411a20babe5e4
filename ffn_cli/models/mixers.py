"""Token mixers that are not softmax attention, for the layers of a hybrid that use them.

Qwen3-Next mixes tokens in three of every four layers with a Gated DeltaNet (Yang et al. 2024):
a linear attention whose state (one key-width × value-width matrix per value head) is updated
once per token, so its cost per token does not grow with the context. LFM2 mixes most of its
layers with a short convolution: a gated depthwise causal convolution over a few tokens.
Granite-4.0-H mixes most of its layers with Mamba-2 (Dao & Gu 2024), Nemotron-H about half: a
selective state space whose state (one head-width × state-size matrix per head) is updated once
per token. Their parameters, the FLOPs of their projections, convolution and state update per
token, and the state decoding keeps, are a handful of widths. Pure Python.

FLOPs follow the tables' convention: contractions (matmuls, and products summed however they are
run) at 2 FLOPs a multiply-add; elementwise work (gates, decays, exp, softplus, norms) is left
out, as the FFN's activation and attention's softmax are. Over a sequence the state update is
counted in its chunked form, the form prefill kernels run (fla's chunk_gated_delta_rule,
mamba_ssm's chunked scan): the sequence padded to whole chunks; one decoded token, in its
recurrent form. docs/params.md works the formulas out.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from ffn_cli.accounting import ParamTensor
from ffn_cli.i18n import N_, Message
from ffn_cli.spec import check_int

__all__ = [
    "STATE_DTYPE_BYTES",
    "UNSIZED_SOURCE",
    "DeltaRuleScan",
    "ElementwiseScan",
    "LightningScan",
    "LinearMixer",
    "MLSTMScan",
    "SSDScan",
    "SelectiveScan",
    "SourceAttention",
    "gated_delta_net",
    "mamba2",
    "short_conv",
]

# A recurrent state's dtype where the config names it (mamba_ssm_cache_dtype; vLLM keeps the
# state in it, Nemotron 3 asks for float32) → bytes an element; "auto" (vLLM's word): the cache dtype.
STATE_DTYPE_BYTES: dict[str, int | None] = {"float32": 4, "bfloat16": 2, "float16": 2, "auto": None}

# The chunk of Qwen3-Next's chunked delta rule: transformers' torch_chunk_gated_delta_rule and
# fla's chunk kernels both take 64 tokens, and the config has no key for it.
DELTA_RULE_CHUNK = 64


def _padded(seq_len: int, chunk: int) -> int:
    """The chunks a sequence of seq_len tokens fills, the last one padded."""
    return -(-seq_len // chunk)


@dataclass(frozen=True)
class DeltaRuleScan:
    """The gated delta rule's state update, per value head: a key_dim × value_dim state.

    Chunked (chunks of C tokens, per chunk and value head): the UT system kβ·kᵀ and the
    intra-chunk scores q·kᵀ (2·C²·dk each), two unit lower-triangular solves against vβ and the
    decayed kβ (forward substitution, C·(C − 1)/2 multiply-adds per right-hand column: C·(C − 1)·dv
    and C·(C − 1)·dk), then against the state: the keys' read of it and the queries' (2·C·dk·dv
    each), the scores times the new values (2·C²·dv) and the state's update kᵀ·v (2·C·dk·dv).
    Recurrent (one token): the state read by the key and by the query and its rank-one update
    (2·dk·dv each)."""

    heads: int
    key_dim: int
    value_dim: int
    chunk: int = DELTA_RULE_CHUNK
    padded = True  # the last chunk of a sequence is padded to a whole one

    def chunk_flops(self) -> int:
        c, dk, dv = self.chunk, self.key_dim, self.value_dim
        per_head = 4 * c * c * dk + 2 * c * c * dv + 6 * c * dk * dv + c * (c - 1) * (dk + dv)
        return self.heads * per_head

    def flops(self, seq_len: int | None) -> Fraction:
        """Per token, over a sequence of seq_len tokens (the last chunk padded); None: whole chunks."""
        if seq_len is None:
            return Fraction(self.chunk_flops(), self.chunk)
        return Fraction(_padded(seq_len, self.chunk) * self.chunk_flops(), seq_len)

    def decode_flops(self) -> int:
        return self.heads * 6 * self.key_dim * self.value_dim

    def detail(self) -> Message:
        return Message(N_("the delta rule in chunks of {chunk}"), chunk=self.chunk)

    def state_elements(self) -> int:
        return self.heads * self.key_dim * self.value_dim


@dataclass(frozen=True)
class SSDScan:
    """Mamba-2's state-space scan (SSD), per head: a head_dim × state state, B and C shared by the
    heads of a group.

    Chunked (chunks of Q tokens, per chunk): C·Bᵀ per group (2·Q²·N), those scores times x per
    head (2·Q²·P), each chunk's state Bᵀ·x and the output's read of the previous state C·h per
    head (2·Q·N·P each); the states pass from chunk to chunk by a decay and an add (elementwise).
    Recurrent (one token): the state's update by dt·B ⊗ x and its read by C (2·P·N each)."""

    heads: int
    head_dim: int
    groups: int
    state: int
    chunk: int
    padded = True  # the last chunk of a sequence is padded to a whole one

    def chunk_flops(self) -> int:
        q, p, n = self.chunk, self.head_dim, self.state
        return self.groups * 2 * q * q * n + self.heads * (2 * q * q * p + 4 * q * n * p)

    def flops(self, seq_len: int | None) -> Fraction:
        """Per token, over a sequence of seq_len tokens (the last chunk padded); None: whole chunks."""
        if seq_len is None:
            return Fraction(self.chunk_flops(), self.chunk)
        return Fraction(_padded(seq_len, self.chunk) * self.chunk_flops(), seq_len)

    def decode_flops(self) -> int:
        return self.heads * 4 * self.head_dim * self.state

    def detail(self) -> Message:
        return Message(N_("the SSD scan in chunks of {chunk}"), chunk=self.chunk)

    def state_elements(self) -> int:
        return self.heads * self.head_dim * self.state


@dataclass(frozen=True)
class LightningScan:
    """Lightning attention's scan (MiniMax-Text-01; Qin et al. 2024), per head: a head_dim ×
    head_dim state of the keys' and values' products, decayed a token at a rate of the head's own.

    In blocks of B tokens (per block and head): the intra-block scores q·kᵀ (2·B²·d) times the
    values (2·B²·d), the queries' read of the state carried in (2·B·d²) and the block's update of
    it kᵀ·v (2·B·d²); the decays are elementwise. Recurrent (one token): the update and the read
    (2·d² each)."""

    heads: int
    head_dim: int
    chunk: int
    padded = True  # the last chunk of a sequence is padded to a whole one

    def chunk_flops(self) -> int:
        b, d = self.chunk, self.head_dim
        return self.heads * (4 * b * b * d + 4 * b * d * d)

    def flops(self, seq_len: int | None) -> Fraction:
        """Per token, over a sequence of seq_len tokens (the last block padded); None: whole blocks."""
        if seq_len is None:
            return Fraction(self.chunk_flops(), self.chunk)
        return Fraction(_padded(seq_len, self.chunk) * self.chunk_flops(), seq_len)

    def decode_flops(self) -> int:
        return self.heads * 4 * self.head_dim * self.head_dim

    def detail(self) -> Message:
        return Message(N_("lightning attention in blocks of {chunk}"), chunk=self.chunk)

    def state_elements(self) -> int:
        return self.heads * self.head_dim * self.head_dim


@dataclass(frozen=True)
class SelectiveScan:
    """Mamba-1's selective scan (Gu & Dao 2023; Jamba's, Falcon-Mamba's mixer), per channel: a
    state of `state` values for each of `channels` channels, B and C shared by the channels.

    Per token, prefill or decode alike (the scan runs token by token, or as an associative scan
    of the same products): the state's update by dt·B ⊗ x and its read by C (2·D·N each); the
    decay exp(dt·A) is elementwise. `chunk` is 1: nothing is padded."""

    channels: int
    state: int
    chunk: int = 1
    padded = False

    def flops(self, seq_len: int | None) -> Fraction:
        return Fraction(self.decode_flops())

    def decode_flops(self) -> int:
        return 4 * self.channels * self.state

    def detail(self) -> Message:
        return Message(N_("the selective scan, token by token"))

    def state_elements(self) -> int:
        return self.channels * self.state


@dataclass(frozen=True)
class MLSTMScan:
    """The mLSTM's matrix memory (xLSTM; Beck et al. 2024), per head: a key_dim × value_dim memory
    C, a key_dim normalizer n and a stabilizer m, updated by exponential input and forget gates.

    As transformers' native kernels run it over a sequence: whole chunks of L tokens in parallel
    (per chunk and head: the scores q·kᵀ, 2·L²·dk; their product with v, 2·L²·dv; the queries'
    read of the memory and of the normalizer carried in, 2·L·dk·dv and 2·L·dk; the chunk's update
    of the memory kᵀ·v, 2·L·dk·dv), then the tokens past the last whole chunk one by one, as a
    decoded token runs: the memory's update by k ⊗ v and its read by q (2·dk·dv each) and the
    normalizer's read (2·dk). Nothing is padded."""

    heads: int
    key_dim: int
    value_dim: int
    chunk: int
    padded = False

    def chunk_flops(self) -> int:
        c, dk, dv = self.chunk, self.key_dim, self.value_dim
        return self.heads * (2 * c * c * (dk + dv) + 4 * c * dk * dv + 2 * c * dk)

    def flops(self, seq_len: int | None) -> Fraction:
        """Per token, over a sequence of seq_len tokens (whole chunks, the rest token by token); None: whole chunks."""
        if seq_len is None:
            return Fraction(self.chunk_flops(), self.chunk)
        chunks, rest = divmod(seq_len, self.chunk)
        return Fraction(chunks * self.chunk_flops() + rest * self.decode_flops(), seq_len)

    def decode_flops(self) -> int:
        return self.heads * (4 * self.key_dim * self.value_dim + 2 * self.key_dim)

    def detail(self) -> Message:
        return Message(N_("the mLSTM in chunks of {chunk}, the tokens past the last one by one"), chunk=self.chunk)

    def state_elements(self) -> int:
        return self.heads * (self.key_dim * self.value_dim + self.key_dim + 1)


@dataclass(frozen=True)
class ElementwiseScan:
    """A recurrence that is elementwise, a token at a time: `per_channel` values a channel carried
    from token to token, decayed and added to (RecurrentGemma's RG-LRU, one, De et al. 2024,
    Griffin; RWKV-4's WKV, a numerator, a denominator and a running maximum, Peng et al. 2023).
    Its gates, where it has any, are the block's matmuls, counted with its projections; the
    recurrence itself has no FLOPs by the tables' convention, prefill or decode. `chunk` is 1:
    nothing is padded."""

    channels: int
    name: str  # the recurrence's name, as its paper gives it
    per_channel: int = 1
    chunk: int = 1
    padded = False

    def flops(self, seq_len: int | None) -> Fraction:
        return Fraction(0)

    def decode_flops(self) -> int:
        return 0

    def detail(self) -> Message:
        return Message(N_("the {name} recurrence, token by token"), name=self.name)

    def state_elements(self) -> int:
        return self.per_channel * self.channels


# An encoder's output of a length its config does not say (TrOCR's decoder alone, T5's relative
# positions): what the cross-attention keeps of it and its scores over it, until --source-len sizes it.
UNSIZED_SOURCE = N_(
    "the keys and values each decoder layer's cross-attention keeps of the encoder's output, and its scores over them: "
    "the config does not say how long a source is (--source-len N sizes them)"
)


@dataclass(frozen=True)
class SourceAttention:
    """Cross-attention over another input's tokens: one image's (Llama 3.2 Vision's cross-attention
    layers), or the encoder's output (an encoder-decoder's decoder layers, BART's and Whisper's
    encoder_attn). Their keys and values, projected once when the input arrives, are what a
    sequence keeps, the same at any length; each token decoded scores them and sums their values
    (4 · tokens · heads · head_dim, prefill or decode). An image's `tokens` are the vision tower's,
    `tiles` tiles of `patches` each, the processor's most tiles; an encoder's, one tile of the
    most it hands on (`source` says which); 0 patches where the config does not say how long a source
    is (UNSIZED_SOURCE): --source-len sizes it."""

    heads: int
    kv_heads: int
    head_dim: int
    tiles: int
    patches: int
    # The tensors that run on the input alone (its keys' and values' projections and norm): read once
    # an input, never by a token decoded.
    on_source: tuple[str, ...] = ()
    source: Literal["image", "encoder"] = "image"
    fixed: bool = False  # the encoder always hands on `tokens`, padding every input to them (Whisper's): no shorter source
    chunk: int = 1
    padded = False

    @property
    def tokens(self) -> int:
        return self.tiles * self.patches

    @property
    def unsized(self) -> bool:
        """An encoder's output whose length the config does not say."""
        return self.source == "encoder" and not self.tokens

    def flops(self, seq_len: int | None) -> Fraction:
        return Fraction(self.decode_flops())

    def decode_flops(self) -> int:
        return 4 * self.tokens * self.heads * self.head_dim

    def detail(self) -> Message:
        if self.unsized:
            return Message(N_("scores over the encoder's output, not sized (--source-len N sizes them)"))
        if self.source == "encoder":
            return Message(N_("scores over the encoder's {tokens} tokens"), tokens=f"{self.tokens:,}")
        return Message(N_("scores over an image's {tokens} tokens ({tiles} tiles × {patches})"),
                       tokens=f"{self.tokens:,}", tiles=self.tiles, patches=f"{self.patches:,}")  # fmt: skip

    def state_elements(self) -> int:
        return 2 * self.kv_heads * self.head_dim * self.tokens


Scan = DeltaRuleScan | SSDScan | SelectiveScan | LightningScan | ElementwiseScan | MLSTMScan | SourceAttention


@dataclass(frozen=True)
class LinearMixer:
    """One kind of mixer, and the layers that use it in place of attention.

    `tensors` are one layer's parameters but its norms, `norm_tensors` its norms (counted with
    the norms, as the module types sort them); `projection_flops` the forward matmul FLOPs per
    token of its Linear projections; `conv_flops` those of its depthwise causal convolution
    (2 · channels · kernel per token, the same at any length); `scan` its state update, whose
    FLOPs per token depend on the length only through the chunks; `conv_state_elements` the
    convolution's window decoding keeps per sequence (the kernel − 1 latest inputs of each
    channel)."""

    kind: str
    detail: str
    tensors: tuple[ParamTensor, ...]
    norm_tensors: tuple[ParamTensor, ...]
    projection_flops: int
    layers: tuple[int, ...]
    conv_flops: int = 0
    conv_state_elements: int = 0
    scan: Scan | None = None
    # Bytes of one recurrent-state element where the config names the state's dtype (Nemotron-H's
    # mamba_ssm_cache_dtype: float32); None: the cache dtype, as the conv's window always is.
    state_dtype_bytes: int | None = None
    # False for a mixer counted tensor by tensor from its built module (ffn_cli.configs.layer_read.mixers):
    # what it keeps while decoding is not known, and is named as left out, never taken as zero.
    state_sized: bool = True
    norm_kind: str = N_("gated RMSNorm")  # what its norm is, in words (an English id)
    # Bytes of one conv-window element where the model keeps its convolutions in float32 (Inkling's
    # short convolutions, in _keep_in_fp32_modules_strict); None: the cache dtype.
    conv_dtype_bytes: int | None = None
    # Its channels are the residual stream's, which every --tp rank holds whole (Inkling's short
    # convolutions over it, no projection around them): its work and state are whole on each GPU.
    whole_on_each_gpu: bool = False

    @property
    def unsized_source(self) -> bool:
        """It attends to an encoder's output of a length the config does not say (--source-len sizes it)."""
        return isinstance(self.scan, SourceAttention) and self.scan.unsized

    @property
    def params(self) -> int:
        return sum(t.count for t in self.tensors)

    @property
    def norm_params(self) -> int:
        return sum(t.count for t in self.norm_tensors)

    @property
    def recurrent_state_elements(self) -> int:
        """The state the scan carries from token to token, per sequence (0 for a convolution alone)."""
        return self.scan.state_elements() if self.scan is not None else 0

    @property
    def state_elements(self) -> int:
        """What decoding keeps per sequence, in elements: the recurrent state and the conv's window."""
        return self.recurrent_state_elements + self.conv_state_elements

    def state_bytes(self, act_bytes: int) -> int:
        """What decoding keeps per sequence, in bytes: the recurrent state at its own dtype where
        the config names one, the conv's window at the cache dtype's `act_bytes`."""
        return self.recurrent_state_elements * (self.state_dtype_bytes or act_bytes) + self.conv_state_elements * (
            self.conv_dtype_bytes or act_bytes
        )

    @property
    def state_rewritten(self) -> bool:
        """Whether a decoded token rewrites the state (a recurrence's) or only reads it (an image's keys and values)."""
        return not isinstance(self.scan, SourceAttention)

    def state_words(self) -> Message:
        """What one layer keeps while decoding, in words: its recurrent state (at the dtype the
        config names) and its conv's window, whichever it has; an image's (a source's) keys and values."""
        conv, state, size = f"{self.conv_state_elements:,}", f"{self.recurrent_state_elements:,}", self.state_dtype_bytes
        if isinstance(self.scan, SourceAttention):
            width = 2 * self.scan.kv_heads * self.scan.head_dim
            said = (
                N_("{tokens} image tokens × {width} (K and V)")
                if self.scan.source == "image"
                else N_("{tokens} source tokens × {width} (K and V)")
            )
            return Message(said, tokens=f"{self.scan.tokens:,}", width=f"{width:,}")
        if self.scan is None:
            if self.conv_dtype_bytes is not None:
                return Message(N_("conv {conv} at {bytes} B"), conv=conv, bytes=self.conv_dtype_bytes)
            return Message(N_("conv {conv}"), conv=conv)
        if not self.conv_state_elements:  # lightning attention: a state and no conv
            if size is None:
                return Message(N_("state {state}"), state=state)
            return Message(N_("state {state} at {bytes} B"), state=state, bytes=size)
        if size is None:
            return Message(N_("state {state} + conv {conv}"), state=state, conv=conv)
        return Message(N_("state {state} at {bytes} B + conv {conv}"), state=state, bytes=size, conv=conv)

    def sequence_flops(self, seq_len: int | None) -> Fraction | int:
        """FLOPs per token beyond the projections over a sequence of seq_len tokens: the
        convolution and the chunked state update; None: at the rate of whole chunks (no padding)."""
        return self.conv_flops + (self.scan.flops(seq_len) if self.scan is not None else 0)

    def decode_flops(self) -> int:
        """FLOPs beyond the projections of one decoded token: the convolution over its window
        and the recurrent state update."""
        return self.conv_flops + (self.scan.decode_flops() if self.scan is not None else 0)


def gated_delta_net(
    d_model: int, *, key_heads: int, key_dim: int, value_heads: int, value_dim: int, conv_kernel: int, layers: tuple[int, ...]
) -> LinearMixer:
    """transformers' Qwen3NextGatedDeltaNet: in_proj_qkvz (d → 2·K + 2·V), in_proj_ba (d → 2 per
    value head), a depthwise causal conv over q, k, v (2·K + V channels, no bias), dt_bias and
    A_log per value head, a gated RMSNorm over the value head width, out_proj (V → d); K and V
    are the key and value widths over all heads."""
    for name, value in (("linear_num_key_heads", key_heads), ("linear_key_head_dim", key_dim), ("linear_num_value_heads", value_heads)):
        check_int(name, value)
    check_int("linear_value_head_dim", value_dim)
    check_int("linear_conv_kernel_dim", conv_kernel)
    k, v = key_heads * key_dim, value_heads * value_dim
    conv = 2 * k + v
    tensors = (
        ParamTensor("in_proj_qkvz.weight", (2 * k + 2 * v, d_model)),
        ParamTensor("in_proj_ba.weight", (2 * value_heads, d_model)),
        ParamTensor("conv1d.weight", (conv, 1, conv_kernel)),
        ParamTensor("dt_bias", (value_heads,)),
        ParamTensor("A_log", (value_heads,)),
        ParamTensor("out_proj.weight", (d_model, v)),
    )
    flops = 2 * d_model * (2 * k + 2 * v) + 2 * d_model * 2 * value_heads + 2 * v * d_model
    detail = Message(
        N_(
            "{key_heads} key heads × {key_dim}, {value_heads} value heads × {value_dim}, conv {conv}; "
            "state per token O(1), no scores over the keys"
        ),
        key_heads=key_heads,
        key_dim=key_dim,
        value_heads=value_heads,
        value_dim=value_dim,
        conv=conv_kernel,
    )
    scan = DeltaRuleScan(value_heads, key_dim, value_dim)
    norm = (ParamTensor("norm.weight", (value_dim,)),)
    return LinearMixer("Gated DeltaNet", detail, tensors, norm, flops, layers, 2 * conv * conv_kernel, conv * (conv_kernel - 1), scan)


def short_conv(d_model: int, *, kernel: int, bias: bool, layers: tuple[int, ...]) -> LinearMixer:
    """transformers' Lfm2ShortConv: in_proj (d → 3·d: the gates B and C and the input x), a
    depthwise causal Conv1d over B·x (d channels, `kernel` taps), C times its output, out_proj
    (d → d); conv_bias puts a bias on all three. Nothing in it reads more than `kernel` tokens."""
    check_int("conv_L_cache", kernel)
    tensors = [ParamTensor("in_proj.weight", (3 * d_model, d_model)), ParamTensor("conv.weight", (d_model, 1, kernel))]
    tensors.append(ParamTensor("out_proj.weight", (d_model, d_model)))
    if bias:
        tensors += [ParamTensor(f"{n}.bias", (w,)) for n, w in (("in_proj", 3 * d_model), ("conv", d_model), ("out_proj", d_model))]
    flops = 2 * d_model * 3 * d_model + 2 * d_model * d_model
    biases = Message(N_(", biases")) if bias else ""
    detail = Message(
        N_("in_proj d → 3·d, depthwise conv {kernel} taps, out_proj{biases}; reads the {kernel} latest tokens"),
        kernel=kernel,
        biases=biases,
    )
    return LinearMixer(Message(N_("short conv")), detail, tuple(tensors), (), flops, layers, 2 * d_model * kernel, d_model * (kernel - 1))


def mamba2(
    d_model: int,
    *,
    heads: int,
    head_dim: int,
    groups: int,
    state: int,
    conv_kernel: int,
    conv_bias: bool,
    proj_bias: bool,
    layers: tuple[int, ...],
    chunk: int = 256,
    state_dtype_bytes: int | None = None,
) -> LinearMixer:
    """transformers' Mamba-2 mixer (GraniteMoeHybridMambaLayer): in_proj (d → I + C + H: the gate
    z, the conv's input x, B, C and dt), a depthwise causal Conv1d over x, B and C (C = I + 2·G·N
    channels, conv_bias), dt_bias, A_log and D per head, a gated RMSNorm over I, out_proj
    (I → d); proj_bias on both projections. I = heads × head_dim, G groups, N the state size;
    the scan runs in chunks of `chunk` tokens; `state_dtype_bytes` the bytes of one state element
    where the config names its dtype."""
    for key, value in (("mamba_n_heads", heads), ("mamba_d_head", head_dim), ("mamba_n_groups", groups), ("mamba_d_state", state)):
        check_int(key, value)
    check_int("mamba_d_conv", conv_kernel)
    check_int("mamba_chunk_size", chunk)
    inner = heads * head_dim
    conv = inner + 2 * groups * state
    projection = inner + conv + heads
    tensors = [
        ParamTensor("in_proj.weight", (projection, d_model)),
        ParamTensor("conv1d.weight", (conv, 1, conv_kernel)),
        ParamTensor("dt_bias", (heads,)),
        ParamTensor("A_log", (heads,)),
        ParamTensor("D", (heads,)),
        ParamTensor("out_proj.weight", (d_model, inner)),
    ]
    if conv_bias:
        tensors.append(ParamTensor("conv1d.bias", (conv,)))
    if proj_bias:
        tensors += [ParamTensor("in_proj.bias", (projection,)), ParamTensor("out_proj.bias", (d_model,))]
    flops = 2 * d_model * projection + 2 * inner * d_model
    groups_text = Message(N_("{n} groups") if groups > 1 else N_("{n} group"), n=groups)
    detail = Message(
        N_("{heads} heads × {head_dim}, state {state}, {groups}, conv {conv}; state per token O(1)"),
        heads=heads,
        head_dim=head_dim,
        state=state,
        groups=groups_text,
        conv=conv_kernel,
    )
    norm = (ParamTensor("norm.weight", (inner,)),)
    scan = SSDScan(heads, head_dim, groups, state, chunk)
    conv_window = conv * (conv_kernel - 1)
    return LinearMixer("Mamba-2", detail, tuple(tensors), norm, flops, layers, 2 * conv * conv_kernel, conv_window, scan, state_dtype_bytes)
