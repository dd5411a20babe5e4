"""The words a tensor's name carries after its path where the tensor is a part of the module's
(Qwen3-Next's q_proj, twice as wide, its second half the output gate; a router's rows for its
zero-computation or shared experts): English ids in the name, said in the reader's language
where it is shown. Pure Python."""

from __future__ import annotations

from collections.abc import Iterable

from ffn_cli.i18n import N_, Message

__all__ = [
    "BIAS_ALONE",
    "GATE_HALF",
    "NOT_PICKED",
    "ROWS_PAST_VOCAB",
    "SHARED_EXPERTS_ROWS",
    "ZERO_EXPERTS_ROWS",
    "modules_said",
    "noted",
    "tensor_label",
]

GATE_HALF = N_("output gate half")
ZERO_EXPERTS_ROWS = N_("zero experts' rows")
SHARED_EXPERTS_ROWS = N_("shared experts' rows")
# A token table's rows past the config's vocab_size (Llama 3.2 Vision's 8 more, for its image tokens).
ROWS_PAST_VOCAB = N_("rows past vocab_size")
# A projection's bias counted apart from the projection (Whisper's q_proj and v_proj, where k_proj has none).
BIAS_ALONE = N_("its bias")
# A mixture of attention heads' experts beside the ones a token picks (JetMoE's query-and-output experts).
NOT_PICKED = N_("experts not picked")
_NOTES = frozenset({GATE_HALF, ZERO_EXPERTS_ROWS, SHARED_EXPERTS_ROWS, ROWS_PAST_VOCAB, BIAS_ALONE, NOT_PICKED})


def noted(path: str, note: str) -> str:
    """A tensor's name: its path and the part of it meant."""
    return f"{path} ({note})"


def tensor_label(name: str) -> str:
    """A tensor's name as shown: its path, and its note said in the reader's language (a Message:
    --json keeps the English)."""
    path, sep, note = name.partition(" (")
    if sep and note.endswith(")") and note[:-1] in _NOTES:
        return Message(N_("{path} ({note})"), path=path, note=Message(note[:-1]))
    return name


def _module(name: str) -> tuple[str, str]:
    """A tensor's module and its note: "indexer.wk.weight" is indexer.wk's, "indexer.k_norm (bias)"
    (a leaf the layout names after its module) indexer.k_norm's; "q_proj.weight (output gate half)"
    keeps its note."""
    path, sep, note = name.partition(" (")
    note = note[:-1] if sep and note.endswith(")") else ""
    if note in ("weight", "bias"):
        return path, ""
    return path.removesuffix(".weight").removesuffix(".bias"), note


def modules_said(names: Iterable[str]) -> list[str]:
    """Tensors named as the modules holding them, each once, a module's children under it:
    "indexer (wq_b, wk, k_norm, weights_proj)", "attn_hc (fn, base, scale)", "q_proj (output gate
    half)". A row lists what it holds beside its parts so, not a weight and a bias apiece."""
    children: dict[str, list[str]] = {}
    said: list[tuple[str, str | None]] = []  # (module, its note) in order; a parent once, its note None
    for name in names:
        module, note = _module(name)
        parent, dot, child = module.partition(".")
        if note or not dot or "." in child:
            if (module, note) not in said:
                said.append((module, note))
        elif child not in children.setdefault(parent, []):
            if not children[parent]:
                said.append((parent, None))
            children[parent].append(child)
    out: list[str] = []
    for module, its_note in said:
        if its_note is not None:
            out.append(tensor_label(noted(module, its_note)) if its_note else module)
        elif len(children[module]) == 1:  # one child: its path says it
            out.append(f"{module}.{children[module][0]}")
        else:
            out.append(Message(N_("{path} ({note})"), path=module, note=Message.listed(children[module])))
    return out
