"""What one forward pass of a model moves and computes, for the roofline: one layer's FFN,
one layer's attention (the mean over layers) and the whole model, at a batch and length.

Counted, all as lower bounds:
- FLOPs: matmuls only (2·m·n·k), the active path (a MoE token runs top-k experts); attention
  scores read the keys each query sees (causal, sliding windows, chunks as the config says),
  MLA's at decode (and DSA's top-k keys in prefill too) on its cached latent, kv_b_proj absorbed
  as serving kernels run it;
  a hybrid's mixer its convolution and state update (chunked in prefill, recurrent in decode).
- Bytes: every weight read once in its stored format (a MoE layer reads only the experts its
  tokens touch: E·(1 − (1 − k/E)^T) of them in expectation under uniform routing), each part's
  input and output activations once in the compute dtype (intermediates assumed to stay on
  chip), and the KV cache: in prefill written and read once, in decode the context read and the
  new token's keys and values written (MLA caches its compressed kv_lora_rank + rope width).
- The LM head: one logits row a sequence, its last token's, which a server samples from (a
  prefill computes none for the prompt's other tokens); a training step's, every token's.
Not counted: elementwise work (norms, activations, softmax), launch overheads, communication.

The backward of a training step (`backward_cost`, prefill only), part by part:
- FLOPs: twice the forward's matmul FLOPs (for each matmul, one for the gradient of its input
  and one for that of its weight, or of both operands for attention's scores).
- Bytes: the weights the forward read, read again in their stored format (embeddings: none); a
  gradient for each, written once in the compute dtype (embeddings: one row per token); the
  gradient of the part's output read and that of its input written; and what the forward saved
  for it, read once: an FFN's tensors as PyTorch's autograd saves them (accounting.saved_tensors,
  each at its own width, as `ffn trace --backward` reads them); attention's input, Q, K, V, its
  output before o_proj (MLA: also the q and kv latents) and the softmax's float32 log-sum-exp per
  query and head, as a fused attention kernel's backward reads them; the LM head's input.
  The gradients between the matmuls of one part stay on chip, as the forward's intermediates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ffn_cli.accounting import saved_tensors
from ffn_cli.attention import AttentionSpec, LatentAttentionSpec
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.costs.roofline.bound import Roofline, expected_distinct_experts
from ffn_cli.costs.weights import StoragePlan, WeightTensor, leaf_of
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _, shown
from ffn_cli.models.count import ffn_part_name
from ffn_cli.models.layout import PlacedTensor, Role, attention_tensors, extra_tensors, ffn_tensors, mixer_tensors
from ffn_cli.models.mixers import SourceAttention
from ffn_cli.models.seq_flops import LayerStack, mean_keys
from ffn_cli.models.spec import ModelSpec
from ffn_cli.spec import FFNSpec

__all__ = [
    "PartCost",
    "PassCase",
    "PassCost",
    "assemble",
    "attention_cost",
    "backward_cost",
    "embedding_cost",
    "extras_cost",
    "ffn_cost",
    "head_cost",
    "index_key_bytes",
    "kv_width",
    "layer_keys",
    "mixer_cost",
    "pass_cost",
    "read_cost",
    "routed_expert_tensors",
    "total_cost",
]

Phase = Literal["prefill", "decode"]


@dataclass(frozen=True)
class PassCase:
    """prefill: `batch` sequences of `seq_len` tokens in one pass; decode: one new token for
    each of `batch` sequences, each with `seq_len` tokens already in its KV cache."""

    phase: Phase
    batch: int
    seq_len: int
    act_bytes: int = 2  # the compute dtype's bytes per element (activations, KV cache)

    def __post_init__(self) -> None:
        if self.phase not in ("prefill", "decode"):
            raise FFNError("phase", self.phase, _("choose prefill or decode"))

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len if self.phase == "prefill" else self.batch


@dataclass(frozen=True)
class PartCost:
    name: str
    flops: float
    weight_bytes: float
    activation_bytes: float
    kv_bytes: float = 0.0
    experts: int = 0  # a MoE layer: how many it has
    experts_touched: float = 0.0  # … and how many this pass reads, in expectation
    gradient_bytes: float = 0.0  # backward: the weight gradients written
    saved_bytes: float = 0.0  # backward: what the forward saved for it, read
    weight_params: float = 0.0  # the parameters whose weights the pass reads (a MoE: the experts touched)

    @property
    def bytes_(self) -> float:
        return self.weight_bytes + self.activation_bytes + self.kv_bytes + self.gradient_bytes + self.saved_bytes

    def roofline(self, peak_tflops: float, bandwidth_gbps: float) -> Roofline:
        return Roofline(self.flops, self.bytes_, peak_tflops, bandwidth_gbps)


@dataclass(frozen=True)
class PassCost:
    case: PassCase
    ffn: PartCost  # one layer's FFN (the MoE one in a MoE model)
    attention: PartCost  # one layer's attention: the mean over the layers
    model: PartCost  # every layer, the embeddings and the LM head


def _bytes(plan: StoragePlan, role: Role, shape: tuple[int, ...], leaf: str = "", layers: tuple[int, ...] = ()) -> float:
    t = WeightTensor("vector" if len(shape) < 2 else role, shape, 1, leaf=leaf, layers=layers if leaf else ())
    return plan.format_of(t).tensor_bits(shape) / 8


def read_cost(plan: StoragePlan, tensors: Iterable[PlacedTensor]) -> tuple[float, int]:
    """The stored bytes and parameters of one copy of each of `tensors`, each read once."""
    tensors = list(tensors)
    return sum(_bytes(plan, t.role, t.shape, leaf_of(t.role, t.name), t.layers or ()) for t in tensors), sum(t.numel for t in tensors)


def routed_expert_tensors(spec: ModelSpec, ffn: FFNSpec) -> list[PlacedTensor]:
    """The tensors of one routed expert of `ffn` (none in a dense FFN)."""
    return [t for t in ffn_tensors(spec, ffn) if t.name.startswith("experts.")]


def ffn_cost(spec: ModelSpec, ffn: FFNSpec, plan: StoragePlan, case: PassCase) -> PartCost:
    tokens = case.tokens
    # what every pass reads (router, shared experts, moe_extra), and one routed expert
    fixed, fixed_params = read_cost(plan, (t for t in ffn_tensors(spec, ffn) if not t.name.startswith("experts.")))
    expert, expert_params = read_cost(plan, routed_expert_tensors(spec, ffn))
    experts = ffn.info.experts_held(ffn)  # 0: one FFN
    # zero-computation experts in the pool: a token runs its real picks alone (ModelSpec.real_picks)
    touched = expected_distinct_experts(experts, spec.real_picks(ffn), tokens) if experts else 0.0
    weights = fixed + touched * expert
    io = 2 * tokens * spec.d_model * case.act_bytes
    name = ffn_part_name(ffn)
    params = fixed_params + touched * expert_params
    return PartCost(name, tokens * spec.mean_ffn_flops(ffn), weights, io, 0.0, experts, touched, weight_params=params)


def kv_width(spec: ModelSpec, layer: int | None = None) -> int:
    """Elements the KV cache holds per token in layer `layer` (the model's `attention` when None):
    its keys and values over the KV heads, each at its own head width; MLA's latent and rotary key."""
    a = spec.attention if layer is None else spec.attention_of(layer)
    if isinstance(a, LatentAttentionSpec):
        return a.kv_lora_rank + a.qk_rope_head_dim
    return a.kv_dim + a.v_dim


def _keys(case: PassCase, window: int | None, chunk: int | None, causal: bool) -> int:
    """Keys read by all the queries of one sequence in this pass."""
    if case.phase == "prefill":
        return mean_keys(case.seq_len, window, causal=causal, chunk=chunk)[0]
    seen = case.seq_len + 1  # the new token reads its context and itself
    if chunk:
        seen = case.seq_len % chunk + 1
    return min(seen, window) if window else seen


def _compressed_cost(spec: ModelSpec, a: CompressedAttentionSpec, layer: int, plan: StoragePlan, case: PassCase) -> PartCost:
    """DeepSeek-V4's attention in layer `layer`: its projections and pooling for every token; the
    scores of every query (the window's keys, the entries it reads, the indexer's over every entry
    it may read); its weights once. Prefill writes the window's keys, the entries and the
    indexer's keys and reads them once; decode reads the window and the entries its query reads,
    the indexer every key of its own, and writes the new token's key."""
    if case.phase == "prefill":
        scores = case.batch * a.score_flops_sum(case.seq_len)
        kv = 2 * case.batch * (case.seq_len * a.head_dim + a.entries(case.seq_len) * (a.head_dim + a.index_dim))
    else:
        seen = case.seq_len + 1  # the new token reads its context and itself
        scores = case.batch * a.score_flops(seen)
        kv = case.batch * (a.keys_read(seen) * a.head_dim + a.entries(seen) * a.index_dim + a.head_dim)
    weights, params = read_cost(plan, attention_tensors(spec, (layer,)))
    io = 2 * case.tokens * spec.d_model * case.act_bytes
    flops = case.tokens * spec.attention_flops_of(layer) + scores
    return PartCost("attention", flops, weights, io, kv * case.act_bytes, weight_params=params)


def attention_cost(spec: ModelSpec, stack: LayerStack, layer: int, plan: StoragePlan, case: PassCase) -> PartCost:
    if isinstance(a := spec.attention_of(layer), CompressedAttentionSpec):
        return _compressed_cost(spec, a, layer, plan, case)
    chunk = stack.chunks[layer] if stack.chunks else None
    window = stack.windows[layer]
    keys = layer_keys(stack, layer, case)
    # DeepSeek Sparse Attention: the indexer scores every key, the attention reads its top-k
    # (a query's latest index_topk keys and as many as a window of that width: the count is the same)
    read = keys
    if spec.sparse_topk and layer not in spec.full_read_layers:
        read = case.batch * _keys(case, min(window or spec.sparse_topk, spec.sparse_topk), chunk, stack.causal)
    indexed = layer in spec.index_layers
    # attention_extra: Linear weights beside the AttentionSpec's (Qwen3-Next's output gate), run per token too.
    per_key = stack.score_flops_per_key[layer]
    # MLA decodes on its latent; DeepSeek Sparse Attention's top-k keys are read so in prefill too
    # (FlashMLA's sparse kernels run MLA's MQA form, as DeepSeek-V3.2 and GLM-5 are served)
    absorbed = case.phase == "decode" or spec.sparse_topk > 0
    if per_key and absorbed and isinstance(a, LatentAttentionSpec):
        per_key = a.absorbed_score_flops_per_key()
    flops = case.tokens * spec.attention_flops_of(layer) + read * per_key
    if indexed:
        flops += keys * spec.index_flops_per_key
    shared = layer in spec.kv_shared_layers  # no k/v projections: an earlier layer's keys and values
    picked, picked_params = read_cost(plan, attention_tensors(spec, (layer,), shared_kv=shared))
    unpicked, unpicked_params = _unpicked_experts(spec, layer, plan, case)
    weights, params = picked + unpicked, picked_params + unpicked_params
    width = kv_width(spec, layer) * case.act_bytes
    # prefill: K, V written, then read once; decode: the keys read, the new token's written;
    # a KV-shared layer reads the keys another layer wrote and writes none
    written = 0 if shared else case.tokens
    kv = (written + case.tokens if case.phase == "prefill" else read + written) * width + index_key_bytes(spec, layer, case, keys)
    if isinstance(a, AttentionSpec) and (a.conv_window or a.carried_values):  # kept beside the cache, as a mixer's state
        beside = a.conv_window * (a.kv_conv_bytes or case.act_bytes) + a.carried_values * case.act_bytes
        kv += case.batch * beside * (1 if case.phase == "prefill" else 2)
    read_in = a.in_width if isinstance(a, AttentionSpec) else spec.d_model  # Zamba's reads 2 · d_model
    io = case.tokens * (read_in + spec.d_model) * case.act_bytes
    return PartCost("attention", flops, weights, io, kv, weight_params=params)


def layer_keys(stack: LayerStack, layer: int, case: PassCase) -> int:
    """Keys the pass's queries read in `layer`, every sequence's: its window's or chunk's."""
    return case.batch * _keys(case, stack.windows[layer], stack.chunks[layer] if stack.chunks else None, stack.causal)


def index_key_bytes(spec: ModelSpec, layer: int, case: PassCase, keys: int) -> float:
    """The bytes of an indexer's cached keys the pass reads and writes in `layer` (a DSA, QSA or MSA
    indexer's, one key a token, whole on every GPU of --tp): every one of the `keys` its heads score
    and the new tokens'; prefill writes them and reads them once."""
    if layer not in spec.index_layers:
        return 0.0
    width = spec.index_key_width * case.act_bytes
    return (2 * case.tokens if case.phase == "prefill" else keys + case.tokens) * width


def _unpicked_experts(spec: ModelSpec, layer: int, plan: StoragePlan, case: PassCase) -> tuple[float, float]:
    """The attention experts of `layer` its tokens do not pick (JetMoE's): the bytes and parameters
    of those the pass touches beyond their picks, E·(1 − (1 − k/E)^T) − k in expectation."""
    weights, params = 0.0, 0.0
    for e in spec.extras:
        count, picks = e.routed
        if e.kind != "attention" or not count or layer not in (spec.layers_of(e) or ()):
            continue
        beyond = expected_distinct_experts(count, picks, case.tokens) - picks  # experts touched beyond the picks
        one, one_params = read_cost(plan, extra_tensors(spec, e))  # one expert's query and output projections
        weights, params = weights + beyond * one, params + beyond * one_params
    return weights, params


def extras_cost(spec: ModelSpec, plan: StoragePlan, case: PassCase) -> PartCost:
    """A family's own tensors beside attention and FFN (Gemma 3n's AltUp, Laurel, per-layer
    inputs): their matmuls, each weight read once, an embedding table one row per token."""
    flops = case.tokens * spec.extra_flops
    weights, params = 0.0, 0.0
    state = 0.0
    # a modality's experts: run by no text token; a part held and never run: read by none; the attention
    # experts a token does not pick: read with the attention (attention_cost)
    for e in (e for e in spec.extras if e.kind not in ("vision", "attention") and not e.idle):
        # a convolution's latest inputs, written in prefill, read and written in decode, a sequence and layer
        state += e.state * len(spec.layers_of(e) or ()) * case.batch * case.act_bytes * (1 if case.phase == "prefill" else 2)
        for t in extra_tensors(spec, e):
            if t.part == "embedding":  # `lookups` rows a token
                weights += t.instances * case.tokens * e.lookups * _bytes(plan, t.role, (1, *t.shape[1:]))
                params += t.instances * case.tokens * e.lookups * t.numel // t.shape[0]
            else:
                weights += t.instances * _bytes(plan, t.role, t.shape)
                params += t.instances * t.numel
    return PartCost("other", flops, weights, 0.0, state, weight_params=params)


def mixer_cost(spec: ModelSpec, plan: StoragePlan, case: PassCase) -> PartCost:
    """A hybrid's token mixer in attention's place: its projections, its weights, and its state
    (one per sequence, whatever the length) written in prefill, read and written in decode (read
    alone where decoding never rewrites it: an image's keys and values)."""
    m = spec.mixer
    assert m is not None
    image = m.scan.on_source if isinstance(m.scan, SourceAttention) else ()  # run on an image, never by a text token
    weights, params = read_cost(plan, (t for t in mixer_tensors(spec) if t.name not in image))
    state = case.batch * m.state_bytes(case.act_bytes) * (2 if case.phase == "decode" and m.state_rewritten else 1)
    # Beyond the projections: the conv and the state update, chunked over a prefill, recurrent in decode.
    update = case.tokens * (m.sequence_flops(case.seq_len) if case.phase == "prefill" else m.decode_flops())
    flops = case.tokens * m.projection_flops + float(update)
    io = 2 * case.tokens * spec.d_model * case.act_bytes
    return PartCost(m.kind, flops, weights, io, state, weight_params=params)


def pass_cost(spec: ModelSpec, stack: LayerStack, plan: StoragePlan, case: PassCase, *, training: bool = False) -> PassCost:
    """One forward pass: its FFN and attention per layer, and the whole model. A layer without
    an FFN or without a token mixer costs nothing for it; a mixer layer costs its mixer. A
    `training` step's forward computes every token's logits, a server's one row a sequence."""
    ffn_of = {i: spec.ffn_of(i) for i in spec.ffn_layers}
    ffn_costs = {id(f): ffn_cost(spec, f, plan, case) for f in {id(f): f for f in ffn_of.values() if f}.values()}
    mixer = mixer_cost(spec, plan, case) if spec.mixer is not None else None
    attention: list[PartCost] = []
    for i in range(spec.n_layers):
        label = spec.mixer_label(i)
        if label == "attention":
            attention.append(attention_cost(spec, stack, i, plan, case))
        elif label and mixer is not None and i in spec.beside_attention:  # both side by side: one layer's token mixing
            attention.append(total_cost("attention", [attention_cost(spec, stack, i, plan, case), mixer]))
        elif label and mixer is not None:
            attention.append(mixer)
    layers = [ffn_costs[id(ffn_of[i])] for i in spec.ffn_layers]
    extras = [extras_cost(spec, plan, case)] if spec.extras else []
    head = head_cost(spec, plan, case, training=training)
    return assemble(spec, case, ffn_costs, layers, attention, head, embedding_cost(spec, plan, case), extras)


def head_cost(spec: ModelSpec, plan: StoragePlan, case: PassCase, *, training: bool = False) -> PartCost:
    """The LM head: one logits row a sequence, its weight read once. A server samples each sequence's
    next token from its last position's logits: a prefill computes none for the prompt's other
    tokens (vLLM's and SGLang's logits indices), as the memory counts one logits row a sequence;
    a `training` step's forward, every token's (its loss reads them all)."""
    h, v, t = spec.head_width, spec.head_rows, case.tokens if training else case.batch
    head_role: Role = "embedding" if spec.tie_word_embeddings else "head"
    head_bytes = t * h * case.act_bytes + t * v * case.act_bytes
    return PartCost("LM head", 2 * t * h * v, _bytes(plan, head_role, (v, h)), head_bytes, weight_params=v * h)


def embedding_cost(spec: ModelSpec, plan: StoragePlan, case: PassCase) -> PartCost:
    """The embeddings: one row read per token, no matmul."""
    e, t = spec.embedding_width, case.tokens
    return PartCost("embeddings", 0, t * _bytes(plan, "embedding", (1, e)), t * e * case.act_bytes, weight_params=t * e)


def total_cost(name: str, parts: list[PartCost]) -> PartCost:
    return PartCost(
        name,
        sum(p.flops for p in parts),
        sum(p.weight_bytes for p in parts),
        sum(p.activation_bytes for p in parts),
        sum(p.kv_bytes for p in parts),
        gradient_bytes=sum(p.gradient_bytes for p in parts),
        saved_bytes=sum(p.saved_bytes for p in parts),
        weight_params=sum(p.weight_params for p in parts),
    )


def assemble(
    spec: ModelSpec,
    case: PassCase,
    ffn_costs: dict[int, PartCost],
    layers: list[PartCost],
    attention: list[PartCost],
    head: PartCost,
    embed: PartCost,
    extras: list[PartCost] | None = None,
) -> PassCost:
    """One layer's FFN (the MoE one), the mean layer's attention and the model's sum."""
    model = total_cost("model", [*layers, *attention, head, embed, *(extras or [])])
    if spec.moe_ffn is not None and spec.moe_layers:
        one_ffn = ffn_costs[id(spec.moe_ffn)]
    else:  # no FFN in any layer (a pattern of mixers alone) costs nothing
        one_ffn = layers[0] if layers else PartCost("FFN", 0, 0, 0)
    n = len(attention)
    mean_attention = PartCost(
        "attention",
        sum(p.flops for p in attention) / n,
        sum(p.weight_bytes for p in attention) / n,
        attention[0].activation_bytes,
        sum(p.kv_bytes for p in attention) / n,
        gradient_bytes=sum(p.gradient_bytes for p in attention) / n,
        saved_bytes=sum(p.saved_bytes for p in attention) / n,
        weight_params=sum(p.weight_params for p in attention) / n,
    )
    return PassCost(case, one_ffn, mean_attention, model)


def _attention_saved(spec: ModelSpec, layer: int, case: PassCase) -> float:
    """What a fused attention kernel's backward reads of layer `layer`'s forward, per pass: the
    layer's input (for the projections' weight gradients), Q, K, V, the output before o_proj, the
    float32 log-sum-exp per query and head; MLA also its q and kv latents (q_b_proj's and kv_b_proj's inputs)."""
    a = spec.attention_of(layer)
    if isinstance(a, LatentAttentionSpec):
        h = a.n_heads
        latents = (a.q_lora_rank or 0) + a.kv_lora_rank
        values = spec.d_model + latents + 2 * h * a.qk_head_dim + 2 * h * a.v_head_dim
    else:
        h = a.heads
        values = spec.d_model + a.q_dim + a.kv_dim + a.v_dim + a.o_dim
    return case.tokens * (values * case.act_bytes + h * 4)


def _backward_of(forward: PartCost, saved: float, case: PassCase) -> PartCost:
    """A part's backward from its forward: twice the matmul FLOPs, its weights read again, their
    gradients written in the compute dtype, the output's gradient read and the input's written
    (as many bytes as the forward's input and output), and what the forward saved, read."""
    return PartCost(
        forward.name,
        2 * forward.flops,
        forward.weight_bytes,
        forward.activation_bytes,
        0.0,
        forward.experts,
        forward.experts_touched,
        gradient_bytes=forward.weight_params * case.act_bytes,
        saved_bytes=saved,
        weight_params=forward.weight_params,
    )


def backward_cost(spec: ModelSpec, stack: LayerStack, plan: StoragePlan, case: PassCase) -> PassCost:
    """The backward of a training step over the pass `case` (prefill: the step's tokens), part by
    part as the module's docstring says. A hybrid's token mixers are not counted: refused."""
    if case.phase != "prefill":
        raise FFNError("backward", True, _("is a training step, not decoding: use it with --phase prefill (the default)"))
    if spec.mixer is not None:
        why = _("counts attention and FFNs; the backward of its token mixer ({kind}) is not counted")
        raise FFNError("backward", True, why.format(kind=shown(spec.mixer.kind)))
    if spec.extras:
        why = _("counts attention and FFNs; the backward of {name}'s other parts ({parts}) is not counted")
        raise FFNError("backward", True, why.format(name=spec.name, parts=_("; ").join(_(e.name) for e in spec.extras)))
    t, b = case.tokens, case.act_bytes
    ffn_of = {i: spec.ffn_of(i) for i in spec.ffn_layers}
    unique = {id(f): f for f in ffn_of.values() if f is not None}
    ffn_costs = {
        key: _backward_of(ffn_cost(spec, f, plan, case), sum(s.bytes_(t, b) for s in saved_tensors(f)), case) for key, f in unique.items()
    }
    attention = [
        _backward_of(attention_cost(spec, stack, i, plan, case), _attention_saved(spec, i, case), case)
        for i in range(spec.n_layers)
        if spec.mixer_label(i) == "attention"
    ]
    layers = [ffn_costs[id(ffn_of[i])] for i in spec.ffn_layers]
    head_role: Role = "embedding" if spec.tie_word_embeddings else "head"
    v, h, e = spec.head_rows, spec.head_width, spec.embedding_width
    # LM head: dlogits read, the input's gradient written, its saved input read.
    head_forward = PartCost("LM head", 2 * t * h * v, _bytes(plan, head_role, (v, h)), t * v * b + t * h * b, weight_params=v * h)
    head = _backward_of(head_forward, t * h * b, case)
    # Embeddings: no matmul and no weight read; the output's gradient read, one gradient row per token written.
    embed = PartCost("embeddings", 0, 0.0, t * e * b, gradient_bytes=t * e * b, weight_params=t * e)
    return assemble(spec, case, ffn_costs, layers, attention, head, embed)
