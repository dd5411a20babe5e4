"""What a model holds beside its decoder layers (`Shell`: embeddings, final norm, head, tables,
towers), read from it built on meta with no layers or whole; and the builds themselves: the
whole model, its layers as it built them, one layer of a class, regrouped where transformers
splits a part over wrappers (BERT's) or stores a Linear transposed (GPT-2's Conv1D)."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.pytorch_utils import Conv1D

from ffn_cli.accounting import ParamTensor
from ffn_cli.configs.attribution import Owner, attribute
from ffn_cli.configs.encoder_decoder import half_of
from ffn_cli.configs.layer_read.kinds import attends_within
from ffn_cli.configs.layer_read.tensors import beyond_ffn, n_params, param_tensor, towers_of
from ffn_cli.configs.meta_build import auto_class
from ffn_cli.configs.shared_blocks import SharedBlocks, shared_blocks
from ffn_cli.errors import FFNError, first_line
from ffn_cli.i18n import _
from ffn_cli.models.tensor_notes import ROWS_PAST_VOCAB, noted

__all__ = ["Shell", "build_layer", "builds_alone", "every_layer", "shell_of", "shell_without_layers", "sized_by_layer_count", "whole_model"]

# Keys beside num_hidden_layers that a model builds its layers by (xLSTM's num_blocks), where they say as many.
_LAYER_COUNTS = ("num_blocks",)


def _position_rows(table: nn.Embedding) -> int:
    """The positions a learned position table holds, past the rows it keeps before them (OPT's
    `offset`, 2: its max_position_embeddings + 2 rows)."""
    offset = getattr(table, "offset", 0)
    return table.num_embeddings - (offset if isinstance(offset, int) and not isinstance(offset, bool) and offset > 0 else 0)


@dataclass(frozen=True)
class Shell:
    """What the model holds beside its decoder layers, read from it built with none (or whole,
    its layers passed over)."""

    tied: bool
    head_bias: bool
    head: bool  # an LM head (tied or not); a base model (BertModel) has none
    final_norm: int  # the final norm's parameters
    beside: tuple[ParamTensor, ...]  # every other tensor (a vision tower, a projector), by its path
    model_class: str
    # Tables read a row a token beside the token embeddings (Gemma 4's per-layer embeddings), by path.
    tables: tuple[ParamTensor, ...] = ()
    positions: int = 0  # the rows of learned absolute position embeddings (StarCoder's wpe), 0 for none
    first_position: int = 0  # the row the first token's position reads (RoBERTa's: past its padding row)
    fixed_positions: bool = False  # the position table is sinusoidal: computed, not learned
    embedding_norm: int = 0  # the parameters of a norm over the embeddings (BLOOM's), 0 for none
    head_rows: int = 0  # an untied head's rows where other than the vocabulary's (Inkling 2's), 0 for vocab_size
    # Factorized embeddings: the token table's width where not hidden_size (ELECTRA's embedding_size, RemBERT's
    # input_embedding_size), and the width its head reads (RemBERT's output_embedding_size); 0 for hidden_size.
    embedding_dim: int = 0
    head_dim: int = 0

    # The text config as the model's class leaves it, its layers' lists and count as given: what its
    # layers are built from (TrOCR's causal LM sets is_decoder, which gives each a cross-attention;
    # GPT-Neo's layers read the attention kernel the model sets). None for a whole build.
    layer_config: PretrainedConfig | None = None

    def head_width(self, d: int) -> int:
        """The width the head reads: hidden_size `d`, or its own."""
        return self.head_dim or d


def sized_by_layer_count(text_data: Mapping[str, Any]) -> tuple[str, ...]:
    """The text config's keys that size tensors beside the layers by the layer count (Gemma 3n's and
    Gemma 4's per-layer inputs: one slice of a table a layer; IDEFICS's cross_layer_interval: a
    gated cross-attention layer every that many); none where hidden_size_per_layer_input is 0
    (Gemma 4's larger sizes), whatever vocab_size_per_layer_input says."""
    counts = [k for k, v in text_data.items() if isinstance(v, int) and not isinstance(v, bool) and v]
    cross = [k for k in counts if "cross" in k and k.endswith("interval")]
    if text_data.get("hidden_size_per_layer_input", None) == 0:
        return tuple(sorted(cross))
    return tuple(sorted(k for k in counts if "per_layer" in k or k in cross))


def whole_model(hf_config: PretrainedConfig, source: str, model_class: Any = None) -> PreTrainedModel:
    """The whole model built on meta, once: by `model_class`, else the class a count builds."""
    model_class = model_class or auto_class(str(hf_config.model_type), hf_config)  # ffn's own step: a fault here is ffn's
    try:
        with torch.device("meta"):
            return model_class.from_config(hf_config, attn_implementation="eager")
    except Exception as exc:  # transformers building the config's values: any failure is the config's
        why = _("transformers cannot build {model_type} from it: {one_line}")  # as a count by building it says
        raise FFNError("config", source, why.format(model_type=hf_config.model_type, one_line=first_line(exc))) from None


def every_layer(
    model: nn.Module, classes: tuple[type[nn.Module], ...], n_layers: int, source: str
) -> tuple[list[nn.Module], SharedBlocks | None]:
    """The decoder layers of a model whose layers come from several classes (Jamba's attention and
    Mamba layers, OLMo-Hybrid's), as the whole model built them, each layer then read alone; and
    the blocks they share (Zamba's tied shared transformers), held by the first layer that applies each."""
    towers = towers_of(model)  # a tower's list is the tower's (Qwen2.5-Omni's talker)
    lists = [
        m
        for n, m in model.named_modules()
        if isinstance(m, nn.ModuleList) and len(m) == n_layers and all(isinstance(x, classes) for x in m) and not towers.path(n)
    ]
    if len(lists) != 1:
        why = _("its {n} layer classes are not one list of num_hidden_layers layers: ffn cannot tell which is which")
        raise beyond_ffn(source, why.format(n=len(classes)))
    shared = shared_blocks(list(lists[0]), source)
    return [_regrouped(layer, source) for layer in lists[0]], shared


def shell_without_layers(hf_config: PretrainedConfig, classes: tuple[type[nn.Module], ...], source: str) -> Shell:
    """The model built on meta with no decoder layer (per-layer config lists emptied): its token
    embeddings, final norm and head, and whatever else sits beside the layers."""
    shell_config = copy.deepcopy(hf_config)
    text = shell_config.get_text_config()
    n_layers = int(text.num_hidden_layers)
    emptied = {key: value for key, value in vars(text).items() if isinstance(value, list) and len(value) == n_layers}
    for key in emptied:
        setattr(text, key, [])
    text.num_hidden_layers = 0
    counts = [key for key in _LAYER_COUNTS if getattr(text, key, None) == n_layers]  # xLSTM's num_blocks, which its model builds by
    for key in counts:
        setattr(text, key, 0)
    auto = auto_class(str(hf_config.model_type), shell_config)  # ffn's choice: outside the config's try
    try:
        with torch.device("meta"):
            model = auto.from_config(shell_config, attn_implementation="eager")
    except Exception as exc:  # transformers' code on the config's values: whatever it raises, the config caused
        raise FFNError("config", source, _("transformers cannot build it without its layers: {why}").format(why=first_line(exc))) from None
    layer_config = copy.deepcopy(model.config.get_text_config())
    for key, value in emptied.items():
        setattr(layer_config, key, value)
    layer_config.num_hidden_layers = n_layers
    for key in counts:
        setattr(layer_config, key, n_layers)
    return replace(shell_of(model, classes, source, whole=False), layer_config=layer_config)


def shell_of(
    model: PreTrainedModel,
    classes: tuple[type[nn.Module], ...],
    source: str,
    *,
    whole: bool,
    encoder: str | None = None,
    vocab: int | None = None,
) -> Shell:
    """The tensors of `model` outside its decoder layers: built with none, or `whole` with them all;
    an encoder-decoder's `encoder` module beside them, as a tower, and its decoder's own `vocab`."""
    text = model.config.get_text_config()
    d, vocab = int(text.hidden_size), vocab or int(text.vocab_size)
    modules = dict(model.named_modules())
    towers = towers_of(model)
    # the decoder's layers: an encoder's of the same class (T5's blocks) are the encoder's, counted with it;
    # a tower's, the tower's (Qwen2.5-Omni's talker, a decoder of the text model's class)
    built = [(n, m) for n, m in modules.items() if isinstance(m, classes) and not _within(n, encoder) and not towers.path(n)]
    if built and not whole:  # layers beside num_hidden_layers' (HRM's stacks)
        raise beyond_ffn(source, _("it builds {cls} layers beside its num_hidden_layers: ffn cannot tell how many").format(
            cls=type(built[0][1]).__name__))  # fmt: skip
    inside = tuple(f"{n}." for n, _m in built)
    # Layers of another class beside the decoder's, in the text model, each attending (IDEFICS's gated
    # cross-attention layers over an image, one every cross_layer_interval): what they run and keep a
    # token is not sized. (A Q-Former's, BLIP-2's, runs on the image: beside the text model.)
    text_models = {n.rpartition(".")[0].rpartition(".")[0] for n, _m in built}
    listed = [n for n, m in modules.items() if isinstance(m, nn.ModuleList) and len(m) and n.rpartition(".")[0] in text_models
              and not any(isinstance(x, classes) for x in m) and all(attends_within(x) for x in m)]  # fmt: skip
    if listed:
        why = _("it builds layers that attend beside its decoder layers ({paths}): ffn cannot size what they run and keep")
        raise beyond_ffn(source, why.format(paths=", ".join(listed)))
    # The LM head by transformers' own word (BioGPT's output_projection), else by its usual names.
    output = model.get_output_embeddings()
    heads = {n for n, m in modules.items() if (output is not None and m is output) or n.rpartition(".")[2] in ("lm_head", "embed_out")}
    # A head inside a module of its own holds its transform there (BERT's cls.predictions.transform, with
    # its LayerNorm; CamemBERT's lm_head.dense and lm_head.layer_norm): counted beside, never a final norm.
    # A module that holds the token embeddings too is the text model the head sits in (Kosmos-2.5's text_model).
    input_embeddings = _input_embeddings(model)
    inner = [m for m in input_embeddings.modules() if isinstance(m, nn.Embedding)] if input_embeddings is not None else []
    if not isinstance(input_embeddings, nn.Embedding) and len(inner) == 1:  # a wrapper of one table (Kyutai STT's embed_tokens)
        input_embeddings = inner[0]
    if input_embeddings is None:  # a model that names none (Qwen3-Omni's): the text model's table of the vocabulary's rows
        input_embeddings = next((m for n, m in modules.items() if isinstance(m, nn.Embedding) and m.num_embeddings == vocab
                                 and towers.path(n) is None), None)  # fmt: skip
    table = next((n for n, m in modules.items() if m is input_embeddings), "")
    # The token table's width: hidden_size, or a factorized table's own (ELECTRA's, RemBERT's, projected to
    # hidden_size by a Linear beside the layers); its position and token-type tables and their norm as wide.
    e = _table_width(input_embeddings, vocab) or d
    head_blocks = tuple(f"{n.rpartition('.')[0]}." for n in heads if "." in n and not table.startswith(f"{n.rpartition('.')[0]}."))
    # A head tied to the token embeddings is one tensor, listed once under whichever name comes first
    # (CamemBERT's lm_head.decoder, before its embeddings).
    tied_weight = getattr(output, "weight", None)
    if tied_weight is not None and tied_weight is not getattr(input_embeddings, "weight", None):
        tied_weight = None
    # The vocabularies the config sizes (Gemma 4's per-layer embeddings' among them): a position table is none of them.
    data = text.to_dict()
    vocabularies = {v for k, v in data.items() if "vocab" in k and isinstance(v, int) and not isinstance(v, bool) and v > 0}
    table_parent = table.rpartition(".")[0] if table else None  # the module that holds the token table
    decoder = half_of(model, "get_decoder") if encoder is not None else None  # an encoder-decoder's: what its decoder holds
    decoder_tensors = {id(t) for t in decoder[1].parameters()} if decoder is not None else set()
    embedding = head = norm = embedding_norm = None
    head_bias, head_rows, head_dim = False, 0, 0
    beside, tables = [], []
    norms: dict[str, list[ParamTensor]] = {}  # the norms of d outside the layers, by module: the final norm among them
    # Learned absolute positions: an nn.Embedding of the config's max_position_embeddings (n_positions) rows.
    # (Whisper's decoder: max_target_positions; LED's: max_decoder_position_embeddings.)
    position_keys = ("max_position_embeddings", "n_positions", "max_target_positions", "max_decoder_position_embeddings")  # LED's
    position_rows = {v for k, v in data.items() if k in position_keys and isinstance(v, int)} - vocabularies
    positions = first_position = 0
    fixed_positions = False
    for name, p in model.named_parameters():
        if name.startswith(inside):
            continue
        path, _dot, leaf = name.rpartition(".")
        module, last = modules[path], path.rpartition(".")[2]
        # a tower's tables and norms are the tower's (Kosmos-2.5's row_embedder); an encoder's, the encoder's,
        # but the token table the decoder shares with it (T5Gemma 2's), listed once under the encoder's name
        shared_table = module is input_embeddings and leaf == "weight" and id(p) in decoder_tensors
        if (_within(path, encoder) or towers.path(path) is not None) and not shared_table:
            beside.append(param_tensor(path, leaf, p, module))
            continue
        if embedding is None and tuple(p.shape) == (vocab, e) and (isinstance(module, nn.Embedding) or p is tied_weight):
            embedding = name
        elif embedding is None and module is input_embeddings and _rows_past(p, vocab, d):
            # The token table holds rows past vocab_size (Llama 3.2 Vision's 8 for its image tokens): the
            # vocabulary's rows are the embeddings, the rest a table looked up beside them.
            embedding = name
            tables.append(ParamTensor(noted(name, ROWS_PAST_VOCAB), (int(p.shape[0]) - vocab, d)))
        elif head is None and path in heads and leaf == "weight":
            head = name
            # A head of other rows than the vocabulary's (Inkling 2's unpadded_vocab_size): its own logits; one that
            # reads another width than hidden_size (RemBERT's output_embedding_size), from a Linear beside the layers.
            head_rows = int(p.shape[0]) if p.dim() == 2 and p.shape[0] != vocab else 0
            head_dim = int(p.shape[1]) if p.dim() == 2 and p.shape[1] != d else 0
        elif path in heads and leaf == "bias":
            head_bias = True  # its own; a bias it shares with a module beside it (BERT's predictions.bias) is counted there
            continue
        elif not positions and isinstance(module, nn.Embedding) and _position_rows(module) in position_rows and tuple(p.shape)[1:] == (e,):
            positions = module.num_embeddings
            # A table with a padding row (RoBERTa's) is read as fairseq's: positions start past it.
            first_position = module.padding_idx + 1 if module.padding_idx is not None else 0
            fixed_positions = "Sinusoidal" in type(module).__name__  # computed from the position, never trained
        elif p.dim() == 1 and p.shape[0] == e and attribute((Owner(last, type(module).__name__),))[0] == "norm" and "embed" in path:
            embedding_norm = path  # BLOOM's word_embeddings_layernorm, BERT's embeddings.LayerNorm: over the summed embeddings
        elif (p.dim() == 1 and p.shape[0] == d and attribute((Owner(last, type(module).__name__),))[0] == "norm"
              and not name.startswith(head_blocks)):  # fmt: skip
            norms.setdefault(path, []).append(param_tensor(path, leaf, p, module))
        elif isinstance(module, nn.Embedding) and (module.num_embeddings in vocabularies or path.rpartition(".")[0] == table_parent):
            # read a row a token: a table of a vocabulary, or one beside the token table (CPM-Ant's, Kosmos-2.5's segments)
            tables.append(param_tensor(path, leaf, p, module))
        elif path not in (*norms, embedding_norm):
            beside.append(param_tensor(path, leaf, p, module))
    norm = _final_norm(list(norms), embedding)
    beside += [t for path, tensors in norms.items() if path != norm for t in tensors]
    if embedding is None:  # a token table not of the vocabulary's rows and d columns: the one the spec sizes
        why = _("its token embeddings are not one vocab_size × hidden_size table ({vocab:,} × {d:,}), the one ffn sizes")
        raise beyond_ffn(source, why.format(vocab=vocab, d=d))
    return Shell(
        tied=head is None and bool(heads),
        head_bias=head_bias,
        head=bool(heads),
        final_norm=n_params(modules[norm]) if norm is not None else 0,
        beside=tuple(beside),
        model_class=type(model).__name__,
        tables=tuple(tables),
        positions=positions,
        first_position=first_position,
        fixed_positions=fixed_positions,
        embedding_norm=n_params(modules[embedding_norm]) if embedding_norm is not None else 0,
        head_rows=head_rows,
        embedding_dim=e if e != d else 0,
        head_dim=head_dim if head is not None else (e if e != d else 0),  # a tied head reads its table's width
    )


def _table_width(table: nn.Module | None, vocab: int) -> int | None:
    """The columns of the token table transformers names (`get_input_embeddings`), where it holds a row
    for each of the vocabulary's tokens; None where it names none, or one of other rows."""
    weight = getattr(table, "weight", None)
    if isinstance(weight, torch.Tensor) and weight.dim() == 2 and weight.shape[0] == vocab:
        return int(weight.shape[1])
    return None


def _within(path: str, module: str | None) -> bool:
    """Whether `path` is `module` or inside it (None: no module)."""
    return module is not None and (path == module or path.startswith(f"{module}."))


def _final_norm(norms: list[str], embedding: str | None) -> str | None:
    """The final norm among the norms of d beside the layers: the first in the module that holds
    the token embeddings (the text model's), where one is; else the first. A module built before
    the text model may hold a norm of the same width (BLIP-2's Q-Former its layernorm), which is its own."""
    text_model = embedding.rpartition(".")[0].rpartition(".")[0] if embedding else ""
    own = [n for n in norms if n.rpartition(".")[0] == text_model]
    return next(iter(own or norms), None)


def _rows_past(p: torch.Tensor, vocab: int, d: int) -> bool:
    """A token table of d columns and more rows than the vocabulary (Llama 3.2 Vision's 8 more)."""
    return p.dim() == 2 and p.shape[1] == d and p.shape[0] > vocab


def _input_embeddings(model: PreTrainedModel) -> nn.Module | None:
    try:
        return model.get_input_embeddings()
    except NotImplementedError:  # transformers' answer for a model that names none
        return None


def builds_alone(layer_cls: type[nn.Module]) -> bool:
    """Whether the class builds from the config and its index alone: Moshi's layer asks beside
    them which kind it is (use_flexible_linear), which only the model that builds it says."""
    params = list(inspect.signature(layer_cls.__init__).parameters.values())[1:]
    required = [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return len(required) <= 2


def build_layer(layer_cls: type[nn.Module], text: PretrainedConfig, layer: int, source: str) -> nn.Module:
    # A layer class that takes its index (layer_idx) beside the config, or the config alone (xLSTM's block).
    takes_index = len(inspect.signature(layer_cls.__init__).parameters) > 2
    try:
        with torch.device("meta"):
            built = layer_cls(text, layer) if takes_index else layer_cls(text)
    except Exception as exc:  # transformers' code on the config's values: whatever it raises, the config caused
        raise FFNError(
            "config", source, _("transformers cannot build a {cls} from it: {why}").format(cls=layer_cls.__name__, why=first_line(exc))
        ) from None
    return _regrouped(built, source)


def _regrouped(layer: nn.Module, source: str) -> nn.Module:
    """A built layer as the reading reads it: GPT-2's Conv1D as Linears, BERT's and T5's layers regrouped."""
    return _t5_style(_bert_style(_as_linears(layer), source))


# T5's sublayers (T5LayerSelfAttention, T5LayerCrossAttention, T5LayerFF), by the module each holds.
_T5_PARTS = {"SelfAttention": "self_attn", "EncDecAttention": "encoder_attn", "DenseReluDense": "mlp", "mlp": "mlp"}
# T5's projections by the names every other layer gives them: an attention's, a dense FFN's, a gated one's.
_T5_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "wi": "up_proj", "wo": "down_proj",
             "wi_0": "gate_proj", "wi_1": "up_proj"}  # fmt: skip


# Pix2Struct's text block: its sublayers by name (self_attention, encoder_decoder_attention, mlp), each
# one part (attention, DenseReluDense) and its norm, as T5's list holds them.
_NAMED_SUBLAYERS = {"self_attention": "self_attn", "encoder_decoder_attention": "encoder_attn", "mlp": "mlp"}
# Pix2Struct's projections, named otherwise than T5's.
_PIX2STRUCT_NAMES = {"query": "q_proj", "key": "k_proj", "value": "v_proj", "output": "o_proj"}


def _sublayers_of(layer: nn.Module) -> list[tuple[nn.Module, str, str]] | None:
    """A T5-style block's sublayers, each with the name of the part it holds and what that part is
    (self_attn, encoder_attn, mlp): T5's list `layer`, or Pix2Struct's named ones; None for any other."""
    listed = getattr(layer, "layer", None)
    if isinstance(listed, nn.ModuleList) and len(list(layer.children())) == 1:
        subs: list[tuple[str, nn.Module]] = [("", sub) for sub in listed]
        inner = dict(_T5_PARTS)
    else:
        subs = [(name, child) for name, child in layer.named_children() if n_params(child)]
        if {name for name, _c in subs} != set(_NAMED_SUBLAYERS):
            return None
        inner = {"attention": "", "DenseReluDense": ""}  # the part a named sublayer holds; what it is, by the sublayer's name
    found = []
    for name, sub in subs:
        parts = [part for part, _c in sub.named_children() if part in inner]
        if len(parts) != 1:
            return None
        found.append((sub, parts[0], inner[parts[0]] or _NAMED_SUBLAYERS[name]))
    return found


def _t5_style(layer: nn.Module) -> nn.Module:
    """T5's block and its kin's (mT5, UMT5, LongT5, Switch Transformers', Pix2Struct's text block):
    sublayers, each one part and its norm: the self-attention (q, k, v, o; the first block's relative
    position bias, a table of buckets × heads, beside them), the cross-attention over the encoder's
    output, the FFN (wi, wo; gated: wi_0, wi_1, wo). Regrouped, the same modules, as self_attn,
    encoder_attn, mlp, the position bias (a table in position_bias) and the norms beside them; their
    head width is the attention's key_value_proj_dim. Any other layer as it is."""
    sublayers = _sublayers_of(layer)
    if sublayers is None:
        return layer
    held, block = n_params(layer), nn.Module()
    for i, (sub, name, regrouped) in enumerate(sublayers):
        part = getattr(sub, name)
        # Renamed in place: the layer is one ffn built on meta for this read (alone, or in the whole model,
        # whose shell shell_of has read before its layers are regrouped), never one a caller holds.
        for leaf, child in list(part.named_children()):
            delattr(part, leaf)
            if isinstance(child, nn.Embedding):  # the relative position bias: a table looked up beside the attention
                table = nn.Module()
                table.add_module(leaf, child)
                block.add_module("position_bias", table)
            else:
                part.add_module(_T5_NAMES.get(leaf) or _PIX2STRUCT_NAMES.get(leaf, leaf), child)
        width = getattr(part, "key_value_proj_dim", None)
        if isinstance(width, int):  # the names transformers' other attentions give their head width and count
            vars(part).update(head_dim=width, num_heads=getattr(part, "n_heads", None))  # plain attributes, as theirs are
        block.add_module(regrouped, part)
        for other, child in sub.named_children():
            if other != name and n_params(child):
                block.add_module(f"{other}_{i}", child)  # its norm
    if n_params(block) != held:
        raise ValueError(f"{type(layer).__name__} regrouped holds {n_params(block):,} parameters, not {held:,}")  # ffn's own fault
    return block


def _bert_style(layer: nn.Module, source: str) -> nn.Module:
    """BERT's layer and its kin's (RoBERTa, ELECTRA, RemBERT, RoFormer, Megatron-BERT): its
    attention's query, key and value in attention.self and its output projection in
    attention.output, its FFN's up projection in intermediate and its down projection in output,
    each LayerNorm inside one of them. Regrouped, the same modules, as one attention, one MLP and
    the norms beside them, which the layer's reading reads as any other's. Any other layer as it is."""
    children = dict(layer.named_children())
    if not {"attention", "intermediate", "output"} <= set(children):
        return layer
    parts = dict(children["attention"].named_children())
    inner, o = parts.get("self"), getattr(parts.get("output"), "dense", None)
    up, down = getattr(children["intermediate"], "dense", None), getattr(children["output"], "dense", None)
    if inner is None or not all(isinstance(x, nn.Linear) for x in (o, up, down)):
        return layer
    if getattr(layer, "is_decoder", None) is False:  # transformers' own flag: its LM-head class warns, and builds it bidirectional
        why = _("its layers are built as an encoder's (the config does not set is_decoder): every token attends to the ones "
                "after it, and nothing is decoded")  # fmt: skip
        raise beyond_ffn(source, why)
    block, attention, mlp = nn.Module(), nn.Module(), nn.Module()
    for name, child in inner.named_children():
        attention.add_module(name, child)
    attention.add_module("dense", o)
    mlp.add_module("up_proj", up)
    mlp.add_module("down_proj", down)
    block.add_module("self_attn", attention)
    block.add_module("mlp", mlp)
    wrappers = {"attention": children["attention"], "attention_output": parts["output"], "intermediate": children["intermediate"],
                "output": children["output"]}  # fmt: skip
    moved = {id(x) for x in (inner, o, up, down, *wrappers.values())}
    for prefix, wrapper in {"": layer, **wrappers}.items():
        for name, child in wrapper.named_children():
            if id(child) not in moved and n_params(child):  # a norm (Megatron-BERT's ln), or a part of its own (a cross-attention)
                block.add_module(f"{prefix}_{name}" if prefix else name, child)
    return block if n_params(block) == n_params(layer) else layer


def _as_linears(layer: nn.Module) -> nn.Module:
    """The built layer (our own copy, on meta) with each of transformers' Conv1D (GPT-2's
    projections: a Linear whose weight is stored [in, out]) replaced by the nn.Linear of its
    shape: the same parameters and matmul, read as every other Linear is."""
    for name, module in list(layer.named_modules()):
        if isinstance(module, Conv1D):
            rows, cols = module.weight.shape  # [in, out]
            with torch.device("meta"):
                linear = nn.Linear(int(rows), int(cols), bias=module.bias is not None)
            layer.set_submodule(name, linear)
    return layer
