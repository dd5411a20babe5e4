"""`read_layout`: a config's layout read from one built decoder layer of each kind. The model is
built whole or with no layers, each kind's first and last layer read and compared, a layer of N
sublayers read as N layers, kinds read alike merged, norms moved between the embeddings and the
first layer, a looped span's later passes (and the runs of stacks a model cycles through) added;
then assembled into one layout."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from torch import nn
from transformers import PretrainedConfig
from transformers.models.auto import modeling_auto

from ffn_cli.configs.built import SOURCE_KEPT, SOURCE_UNSAID, BuiltLayout
from ffn_cli.configs.encoder_decoder import CROSS_ATTENTION, encoder_decoder_of, half_of
from ffn_cli.configs.families.common import FamilyReader
from ffn_cli.configs.layer_read.assembly import assemble
from ffn_cli.configs.layer_read.attention import is_attention
from ffn_cli.configs.layer_read.kinds import decoder_layer_classes, layer_kinds, listed_layer_classes
from ffn_cli.configs.layer_read.layer import read_layer
from ffn_cli.configs.layer_read.shell import (
    Shell,
    build_layer,
    builds_alone,
    every_layer,
    shell_of,
    shell_without_layers,
    sized_by_layer_count,
    whole_model,
)
from ffn_cli.configs.layer_read.tensors import LayerRead, beyond_ffn, layers_named, n_params, positive_ints
from ffn_cli.configs.meta_build import check_build_size, hf_config_of, parts_not_built, quiet, towers_not_built
from ffn_cli.configs.shared_blocks import SharedBlocks, applied_layer
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.mixers import LinearMixer
from ffn_cli.models.spec import layer_ranges

__all__ = ["read_layout"]


def read_layout(config: Mapping[str, Any], *, name: str, source: str) -> BuiltLayout:
    """The ModelSpec of `config`, read from one built decoder layer of each kind."""
    hf_config, notes = hf_config_of(config, source)
    not_built: tuple[str, ...] = ()  # what a checkpoint holds that the model as built does not
    check_build_size(hf_config.to_dict())  # a tower, or the whole model where it is built, is bounded as a count's build is
    seq2seq = encoder_decoder_of(hf_config)
    if isinstance(seq2seq, Message):
        raise beyond_ffn(source, seq2seq.shown())
    text = hf_config.get_text_config()
    # An encoder-decoder's depth is its decoder_layers (read above), not the encoder's num_hidden_layers
    for key in ("hidden_size", "vocab_size") + (("num_hidden_layers",) if seq2seq is None else ()):
        value = getattr(text, key, None)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise FFNError("config", source, _("its text config names no {key}: its layout cannot be read layer by layer").format(key=key))
    given = text.to_dict()  # as written: a per-layer config holds no one global head count to read
    prompt = given.get("prompt_length") if given.get("prompt_types") else None
    prefix = prompt if isinstance(prompt, int) and not isinstance(prompt, bool) and prompt > 0 else 0  # CPM-Ant's soft prompt
    for key in ("num_attention_heads", "num_key_value_heads"):  # a head count of 0 builds, and attends to nothing
        value = given.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise FFNError(key, value, _("must be 1 or more"))
    # An encoder-decoder's layers are its decoder's (BART's num_hidden_layers names its encoder's)
    d, n_layers = int(text.hidden_size), seq2seq.decoder_layers if seq2seq is not None else int(text.num_hidden_layers)
    cycles = _cycles(text.to_dict(), n_layers)
    configured = n_layers
    if cycles is not None:  # the layers are the stacks' runs: slots num_hidden_layers names past them are never filled
        n_layers = cycles.n_layers
    runs = cycles.runs if cycles is not None else _passes(text.to_dict(), n_layers)
    classes = decoder_layer_classes(hf_config)
    r = FamilyReader(text.to_dict(), str(text.model_type), source)
    reads = []
    blocks: SharedBlocks | None = None
    with quiet():
        # The whole model is built once where the layers come from several classes (which layer is
        # which is the model's own code), tensors beside the layers are sized by the layer count, or
        # the model's classes name no layer class (its layers are then the list the model built).
        alone = len(classes) == 1 and builds_alone(classes[0])
        # An encoder-decoder is built whole too, by its Seq2Seq class: the decoder's layers beside the encoder's.
        model_class = seq2seq.model_class if seq2seq is not None else None

        def decoder_of(model: nn.Module) -> nn.Module:
            """Where the layers are: an encoder-decoder's decoder (Marian's list), not its encoder's beside it."""
            half = half_of(model, "get_decoder") if seq2seq is not None else None
            return half[1] if half is not None else model

        # A model that cycles through stacks is built whole too: its stacks are not num_hidden_layers' list.
        built_whole = seq2seq or not alone or sized_by_layer_count(r.config) or cycles is not None
        whole = whole_model(hf_config, source, model_class) if built_whole else None
        if not classes:
            assert whole is not None
            classes = listed_layer_classes(decoder_of(whole), n_layers, source)
        found = half_of(whole, "get_encoder") if whole is not None and seq2seq is not None else None
        encoder = found[0] if found is not None else None
        # an encoder that is the config's tower (Pix2Struct's vision model): named by its class, so it is found built
        encoder_class = (type(found[1]).__name__,) if found is not None else ()
        vocab = seq2seq.vocab if seq2seq is not None else None
        shell = shell_without_layers(hf_config, classes, source) if whole is None else shell_of(whole, classes, source, whole=True,
                                                                                                encoder=encoder, vocab=vocab)  # fmt: skip
        if shell.layer_config is not None:  # the config the model's class leaves (TrOCR's is_decoder, the attention kernel)
            text = shell.layer_config
        if shell.tied and config.get("tie_word_embeddings") is False:  # transformers 5's T5Config ties its head whatever the file says
            untied = (vocab or int(text.vocab_size)) * shell.head_width(d)
            notes += (Message(_TIED_AGAINST_THE_CONFIG, model_class=shell.model_class, n=f"{untied:,}"),)
        # No causal-LM class for a decoder's type (GLM-5-Next's text model): the base model, its head not
        # built. An encoder's (ModernBERT's) head is a masked-LM head, which generating never runs: unsaid.
        if not shell.head and str(hf_config.model_type) not in modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
            n = (vocab or int(text.vocab_size)) * shell.head_width(d)
            notes += (Message(_NO_HEAD, model_class=shell.model_class, n=f"{n:,}"),)
            not_built += ("lm_head",)
        if whole is None:
            layer_cls = classes[0]

            def built(i: int) -> nn.Module:
                return build_layer(layer_cls, text, i, source)
        elif cycles is not None:
            every = cycles.layers(whole, source)

            def built(i: int) -> nn.Module:
                return every[i]
        else:
            every, blocks = every_layer(decoder_of(whole), classes, n_layers, source)

            def built(i: int) -> nn.Module:
                return every[i]

        def read(i: int, layers: tuple[int, ...]) -> LayerRead:
            if blocks is None or i not in blocks.applications:
                return read_layer(d, r, hf_config, built(i), layers, source_of=seq2seq)
            layer, adapters = applied_layer(built(i), i, blocks)  # a shared block's application: its own adapters apart
            found = read_layer(d, r, hf_config, layer, layers, blocks.paths)
            found.adapters, found.params = adapters, found.params + sum(t.count for t in adapters)
            if blocks.weights_from:
                found.said.append(Message(N_("{blocks} shared, each block held by the first layer to run it"),
                                          blocks=Message.listed(list(blocks.paths))))  # fmt: skip
            return found

        sublayers = _sublayers(built(0), source) if whole is None else None
        if sublayers is not None:  # the config's layers are the sublayers; its decoder layers hold N each
            reads = _read_sublayers(d, r, hf_config, sublayers, _sublayers(built(n_layers // len(sublayers) - 1), source), n_layers)
        else:
            # A later run of a layer's weights is added to the kind of the layer that holds them (_with_passes).
            for layers in filter(None, (tuple(i for i in kind if i not in runs) for kind in layer_kinds(r.config, n_layers))):
                first = read(layers[0], layers)
                last = read(layers[-1], layers) if len(layers) > 1 else first
                if _key(first) == _key(last):
                    reads.append(first)
                else:  # the config's entries did not tell these layers apart: each one built and read
                    reads += [read(i, (i,)) for i in layers]
    if seq2seq is not None and (plain := [r for r in reads if r.mixer is None or r.attention is None]):
        # T5's blocks hold their attentions inside a list of sublayers (layer.0.SelfAttention, layer.1.EncDecAttention)
        why = _("ffn reads an encoder-decoder's decoder layer as a self_attn beside an {names} (BART's, Whisper's); its "
                "decoder layers ({layers}) hold their attention otherwise, and ffn cannot tell what they keep")  # fmt: skip
        layers = tuple(sorted(i for r in plain for i in r.layers))
        raise beyond_ffn(source, why.format(layers=layers_named(layers).shown(), names=", ".join(CROSS_ATTENTION)))
    sub = len(sublayers) if sublayers is not None else 1
    merged, shell = _embedding_norm_in_first_layer(_merged(reads), shell)
    merged, shell, stood_in = _first_layer_norm_in_embeddings(merged, shell)
    merged = _with_passes(merged, runs)
    notes += tuple(stood_in)
    held = (*(t.name for t in shell.beside), *encoder_class)
    notes += towers_not_built(config, held, shell.model_class)
    not_built += parts_not_built(config, held)  # a tower not built the memory names by its key already
    if seq2seq is not None and seq2seq.source_tokens:
        notes += (Message(SOURCE_KEPT, tokens=f"{seq2seq.source_tokens:,}", key=seq2seq.source_key, encoder=encoder or ""),)
    elif any(r.mixer is not None and r.mixer.unsized_source for r in reads):
        notes += (Message(SOURCE_UNSAID),)
    if runs and blocks is not None:
        raise beyond_ffn(source, _("its layers share blocks and run several passes: ffn sizes one of the two a model"))
    weights_from = runs or (blocks.weights_from if blocks is not None else {})
    notes += cycles.said(configured) if cycles is not None else _passes_said(runs)
    paths = blocks.paths if blocks is not None else ()
    if prefix:
        notes += (Message(_SOFT_PROMPT, n=f"{prefix:,}"),)
    layout = assemble(hf_config, r.config, merged, shell, config, name=name, source=source, notes=notes, sublayers=sub,
                     weights_from=weights_from, reused_whole=bool(runs), shared_paths=paths, n_layers=n_layers, vocab=vocab,
                     encoder=(encoder, seq2seq) if encoder is not None and seq2seq is not None else None)  # fmt: skip
    return replace(layout, prefix_tokens=prefix, not_built=not_built)


_SOFT_PROMPT = N_(
    "its forward puts prompt_length ({n}) soft-prompt tokens before every sequence, which every layer runs and "
    "caches as it does the text's: each length here counts them, a context of N tokens holding N − {n} of the text's"
)
_NO_HEAD = N_(
    "transformers builds it as {model_class}, a model with no LM head: counted without one; a checkpoint that "
    "generates holds its head too, {n} more parameters unless tied to the token embeddings"
)
_TIED_AGAINST_THE_CONFIG = N_(
    "its config says tie_word_embeddings: false, yet transformers builds its head tied to the token embeddings ({model_class}): "
    "counted tied, as built; a checkpoint that stores a head of its own holds {n} more parameters"
)


def _embedding_norm_in_first_layer(reads: list[LayerRead], shell: Shell) -> tuple[list[LayerRead], Shell]:
    """A norm the first layer alone holds, beyond the norms every other layer holds, normalizes
    what enters the first layer, the embeddings (RWKV's pre_ln, which its block 0 applies before
    anything else): the model's embedding norm, and layer 0 then reads as the others do."""
    first = [x for x in reads if x.layers == (0,)]
    others = [x for x in reads if x.layers != (0,)]
    if len(first) != 1 or not others or shell.embedding_norm or len({x.norms for x in others}) != 1:
        return reads, shell
    read = first[0]
    extra = [n for n in read.norm_names if not all(n in x.norm_names for x in others)]
    if len(extra) != 1 or read.norms != others[0].norms + 1 or read.norm_params != others[0].norm_params:
        return reads, shell
    read.norms, read.params = read.norms - 1, read.params - read.norm_params
    read.norm_names = [n for n in read.norm_names if n != extra[0]]
    return _merged(reads), replace(shell, embedding_norm=read.norm_params)


def _first_layer_norm_in_embeddings(reads: list[LayerRead], shell: Shell) -> tuple[list[LayerRead], Shell, list[Message]]:
    """The first layer holds one norm fewer than every other layer, and the model a norm over the
    embeddings of that size (ModernBERT's embeddings.norm, where its layer 0 builds no attn_norm):
    that norm is layer 0's, and layer 0 then reads as the others do, with a note saying so."""
    first = [x for x in reads if x.layers == (0,)]
    others = [x for x in reads if x.layers != (0,)]
    if len(first) != 1 or not others or len({x.norms for x in others}) != 1:
        return reads, shell, []
    read = first[0]
    if read.norms != others[0].norms - 1 or shell.embedding_norm != others[0].norm_params:
        return reads, shell, []
    read.norms, read.params = read.norms + 1, read.params + shell.embedding_norm
    read.norm_params = others[0].norm_params
    said = Message(
        N_("the norm over the embeddings stands in for layer 0's first norm, which that layer does not build: counted as that norm")
    )
    return _merged(reads), replace(shell, embedding_norm=0), [said]


def _passes(text_data: Mapping[str, Any], n_layers: int) -> dict[int, int]:
    """The layers a config's looped span adds, each mapped to the layer whose weights it runs:
    Inkling 2 Loop's layers loop_layer_index_start to loop_layer_index_end − 1 run loop_num_passes
    passes a token, each pass with the same weights and a cache of its own, pass p's copy of layer j
    numbered n_layers + (p − 2) · span + (j − start), as transformers' cache numbers it. None: {}."""
    values = positive_ints([text_data.get(k) for k in ("loop_num_passes", "loop_layer_index_start", "loop_layer_index_end")])
    if values is None:
        return {}
    passes, start, end = values
    if end > n_layers:  # transformers builds it, and its cache fails on the first token
        why = _("is past num_hidden_layers ({n}): the looped span must lie in the layers")
        raise FFNError("loop_layer_index_end", end, why.format(n=n_layers))
    if passes < 2 or not start < end:
        return {}
    span = end - start
    return {n_layers + (p - 2) * span + (j - start): j for p in range(2, passes + 1) for j in range(start, end)}


_PASSES = N_(
    "layers {later} are passes 2–{passes} of layers {looped} (loop_num_passes), numbered as transformers' cache "
    "numbers them: each pass runs those layers' weights again, with a cache of its own"
)
_ONE_PASS = N_(
    "layers {later} are pass 2 of layers {looped} (loop_num_passes), numbered as transformers' cache numbers them: "
    "it runs those layers' weights again, with a cache of its own"
)


def _passes_said(runs: dict[int, int]) -> tuple[Message, ...]:
    """The note that maps a looped span's later passes to the layers whose weights they run."""
    if not runs:
        return ()
    looped = tuple(sorted(set(runs.values())))
    passes = len(runs) // len(looped) + 1
    later = layer_ranges(tuple(sorted(runs)))
    return (Message(_ONE_PASS if passes == 2 else _PASSES, later=later, passes=passes, looped=layer_ranges(looped)),)


# HRM-Text's two stacks, as its model names them: in each of H_cycles cycles the low-level stack
# runs L_cycles times, then the high-level stack once.
_LOW_STACK, _HIGH_STACK = "L_module", "H_module"
_CYCLES = N_(
    "its two stacks (num_layers_per_stack {per_stack}) run in cycles (H_cycles {h_cycles}, L_cycles {l_cycles}): the "
    "low-level stack ({low_stack}) in layers {low}, the high-level one ({high_stack}) in layers {high}, numbered as "
    "transformers' cache numbers the runs; the first run of each layer holds its weights, a later run reads them "
    "again, each run with a cache of its own"
)
_SLOTS_UNUSED = N_("num_hidden_layers ({n}) names more cache slots than the stacks' runs ({runs}): the model fills {runs}, the layers here")


@dataclass(frozen=True)
class Cycles:
    """Two stacks of `per_stack` layers run in cycles (HRM-Text's): in each of `high` cycles the
    low-level stack runs `low` times, then the high-level one once; each run of a layer is a
    layer of num_hidden_layers with a cache slot of its own, numbered in the order they run."""

    per_stack: int
    low: int  # L_cycles
    high: int  # H_cycles

    def stack_of(self, layer: int) -> tuple[str, int]:
        """The stack whose weights `layer` runs, and the layer of that stack."""
        run, j = divmod(layer, self.per_stack)
        return (_HIGH_STACK if run % (self.low + 1) == self.low else _LOW_STACK), j

    def holder(self, layer: int) -> int:
        """The first layer to run the weights `layer` runs: the one that holds them."""
        stack, j = self.stack_of(layer)
        return j if stack == _LOW_STACK else self.low * self.per_stack + j

    @property
    def n_layers(self) -> int:
        """The runs of a layer a token makes: num_hidden_layers, as transformers' cache keeps them."""
        return self.per_stack * self.high * (self.low + 1)

    @property
    def runs(self) -> dict[int, int]:
        return {i: holder for i in range(self.n_layers) if (holder := self.holder(i)) != i}

    def layers(self, model: nn.Module, source: str) -> list[nn.Module]:
        """Each run's layer, as the whole `model` built its stacks."""
        lists: dict[str, nn.ModuleList] = {}
        for name, module in model.named_modules():
            built = getattr(module, "layers", None)
            if name.rpartition(".")[2] in (_LOW_STACK, _HIGH_STACK) and isinstance(built, nn.ModuleList) and len(built) == self.per_stack:
                lists[name.rpartition(".")[2]] = built
        if set(lists) != {_LOW_STACK, _HIGH_STACK}:
            why = _("its config cycles through stacks (H_cycles, L_cycles), but it builds no {low} and {high} of "
                    "num_layers_per_stack ({n}) layers each")  # fmt: skip
            raise beyond_ffn(source, why.format(low=_LOW_STACK, high=_HIGH_STACK, n=self.per_stack))
        return [lists[stack][j] for stack, j in map(self.stack_of, range(self.n_layers))]

    def said(self, configured: int) -> tuple[Message, ...]:
        """The note that maps each run to its stack; and where num_hidden_layers names more cache
        slots than the runs, that the model fills the runs' alone."""
        low, high = ([i for i in range(self.n_layers) if self.stack_of(i)[0] == stack] for stack in (_LOW_STACK, _HIGH_STACK))
        cycles = Message(_CYCLES, per_stack=f"{self.per_stack:,}", h_cycles=f"{self.high:,}", l_cycles=f"{self.low:,}",
                         low_stack=_LOW_STACK, low=layer_ranges(tuple(low)), high_stack=_HIGH_STACK,
                         high=layer_ranges(tuple(high)))  # fmt: skip
        unused = Message(_SLOTS_UNUSED, n=f"{configured:,}", runs=f"{self.n_layers:,}") if configured > self.n_layers else None
        return (cycles,) + ((unused,) if unused is not None else ())


def _cycles(text_data: Mapping[str, Any], n_layers: int) -> Cycles | None:
    """HRM-Text's cycles through its two stacks, where the config names them; None otherwise."""
    values = positive_ints([text_data.get(k) for k in ("num_layers_per_stack", "L_cycles", "H_cycles")])
    if values is None:
        return None
    cycles = Cycles(*values)
    if cycles.n_layers > n_layers:  # transformers' cache keeps a slot a run: its forward fails past num_hidden_layers
        why = _("is fewer than num_layers_per_stack × H_cycles × (L_cycles + 1) = {runs}, the cache slots its stacks' runs take")
        raise FFNError("num_hidden_layers", n_layers, why.format(runs=f"{cycles.n_layers:,}"))
    return cycles


def _with_passes(reads: list[LayerRead], runs: dict[int, int]) -> list[LayerRead]:
    """Each kind read with the later passes of its layers among its layers (`runs`: a later
    pass's layer, the layer whose weights it runs); a looped kind's tensors beside its parts are
    shared with those passes, its message gates (run by the later passes alone) a part of their own."""
    again: dict[int, list[int]] = {}
    for copy_of, layer in runs.items():
        again.setdefault(layer, []).append(copy_of)
    out = []
    for r in reads:
        later = tuple(sorted(i for layer in r.layers for i in again.get(layer, ())))
        if later:
            r.said.append(Message(N_("layers {later}: later passes, running these weights again"), later=layer_ranges(later)))
            r.layers, r.looped = tuple(sorted(r.layers + later)), True
            if r.mixer is not None:
                r.mixer = LinearMixer(**{**vars(r.mixer), "layers": tuple(sorted(r.mixer.layers + later))})
        out.append(r)
    return out


def _sublayers(layer: nn.Module, source: str) -> list[nn.Module] | None:
    """A decoder layer that is N sublayers, each one of num_hidden_layers (LongCat-Flash: its
    attentions a list of two, each with its layer_idx, its MLPs and norms lists of two beside), as
    N modules: list entry j of each child in sublayer j; a child that is no list (the shortcut
    MoE, which reads the first sublayer's FFN input) in the first. None for a layer of one."""
    children = [(n, c) for n, c in layer.named_children() if n_params(c)]
    lists: dict[str, nn.ModuleList] = {n: c for n, c in children if isinstance(c, nn.ModuleList)}
    attentions = [c for c in lists.values() if len(c) > 1 and all(is_attention(x) for x in c)]
    if len(attentions) != 1:
        return None
    n = len(attentions[0])
    if any(len(c) != n for c in lists.values()):
        return None
    indices = [getattr(x, "layer_idx", None) for x in attentions[0]]
    first = indices[0]
    if not isinstance(first, int) or indices != list(range(first, first + n)) or first % n:
        why = _("its layer holds {n} attentions whose layer_idx are not {n} in a row: ffn cannot tell which cache layer is which")
        raise beyond_ffn(source, why.format(n=n))
    subs = [nn.Module() for _j in range(n)]
    for name, child in children:
        if name in lists:
            for j, sub in enumerate(subs):
                sub.add_module(name, lists[name][j])
        else:
            subs[0].add_module(name, child)
    return subs


def _read_sublayers(
    d: int, r: FamilyReader, hf_config: PretrainedConfig, first: list[nn.Module], last: list[nn.Module] | None, n_layers: int
) -> list[LayerRead]:
    """Sublayer j of every decoder layer as one kind: layers j, j + N, j + 2N, … of num_hidden_layers,
    read in the first decoder layer and checked alike in the last."""
    n = len(first)
    if n_layers % n or last is None or len(last) != n:
        raise beyond_ffn(r.source, _("its {n} sublayers a layer do not divide num_hidden_layers ({layers})").format(n=n, layers=n_layers))
    reads = []
    for j in range(n):
        layers = tuple(range(j, n_layers, n))
        read = read_layer(d, r, hf_config, first[j], layers)
        if _key(read) != _key(read_layer(d, r, hf_config, last[j], layers)):
            why = _("its first and last layers differ in sublayer {j}: ffn reads each sublayer alike in every layer")
            raise beyond_ffn(r.source, why.format(j=j))
        reads.append(read)
    return reads


def _key(read: LayerRead) -> tuple[Any, ...]:
    """What a layer was read as, its layer indices aside: equal for two layers of one kind."""
    m = read.mixer
    return (read.params, read.attention, read.attention_extra, m and (m.kind, m.tensors), read.ffn, read.ffn_extra, read.norms, read.norm,
            read.other, read.other_state, read.tables, read.image_experts, read.window, read.index_keys, read.kv_shared,
            read.zero_experts, read.residual_copies, read.shared_paths, read.adapters, tuple(read.left_out))  # fmt: skip


def _merged(reads: list[LayerRead]) -> list[LayerRead]:
    """Kinds the config told apart whose layers were read alike, as one kind."""
    merged: dict[tuple[Any, ...], LayerRead] = {}
    for read in reads:
        m = read.mixer
        key = _key(read)
        if key in merged:
            kept = merged[key]
            kept.layers = tuple(sorted(kept.layers + read.layers))
            kept.score_bias |= read.score_bias  # DeepSeek-V4's hash-routed layers hold none, its others one
            if kept.mixer is not None and m is not None:
                kept.mixer = LinearMixer(**{**vars(kept.mixer), "layers": tuple(sorted(kept.mixer.layers + m.layers))})
        else:
            merged[key] = read
    return sorted(merged.values(), key=lambda r: r.layers[0])
