"""The words a tensor's name carries after its path where the tensor is a part of the module's
(Qwen3-Next's q_proj, twice as wide, its second half the output gate; a router's rows for its
zero-computation or shared experts): English ids in the name, said in the reader's language
where it is shown. Pure Python."""

from __future__ import annotations

from ffn_cli.i18n import N_, Message

__all__ = ["GATE_HALF", "ROWS_PAST_VOCAB", "SHARED_EXPERTS_ROWS", "ZERO_EXPERTS_ROWS", "noted", "tensor_label"]

GATE_HALF = N_("output gate half")
ZERO_EXPERTS_ROWS = N_("zero experts' rows")
SHARED_EXPERTS_ROWS = N_("shared experts' rows")
# A token table's rows past the config's vocab_size (Llama 3.2 Vision's 8 more, for its image tokens).
ROWS_PAST_VOCAB = N_("rows past vocab_size")
_NOTES = frozenset({GATE_HALF, ZERO_EXPERTS_ROWS, SHARED_EXPERTS_ROWS, ROWS_PAST_VOCAB})


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
