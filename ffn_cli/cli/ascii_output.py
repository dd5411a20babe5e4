"""Output on a terminal or pipe that cannot encode our symbols (PYTHONIOENCODING=ascii, LANG=C on
an old Python): tables and bars fall back to ASCII instead of failing with UnicodeEncodeError.

rich already draws ASCII boxes when the stream's encoding is ASCII; the symbols inside the text
(·, →, ×, █, ✓) are spelled in ASCII by an encoding error handler installed on stdout and stderr.
"""

from __future__ import annotations

import codecs
import sys
import unicodedata

__all__ = ["ERROR_HANDLER", "can_show_chinese", "to_ascii", "use_ascii_fallback"]

ERROR_HANDLER = "ffn-ascii"
# Enough of a box-drawing sample to tell whether the stream can show our tables.
_SAMPLE = "─│·→×█✓"

# One character for one: rich has measured every line, so a longer spelling would push the
# columns of a table out of line.
_SPELLED = dict(
    zip(
        "·→←×−–—…✓✗★⊙ᵀΣ≈≤≥│┃─━═█▏▎▍▌▋▊▉μσ√",
        ".><x---.vx**'S~<>||--=#|||||||usV",
        strict=True,
    )
)


def to_ascii(text: str) -> str:
    """The ASCII spelling of each character: the table above, else its compatibility
    decomposition (² → 2, é → e), else '?'."""
    out = []
    for ch in text:
        spelled = _SPELLED.get(ch)
        if spelled is None:
            spelled = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode("ascii")
            spelled = spelled if spelled and spelled.isprintable() else "?"
        out.append(spelled)
    return "".join(out)


def _handler(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return to_ascii(error.object[error.start : error.end]), error.end


def _cannot_show(stream: object) -> bool:
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        _SAMPLE.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return True
    return False


def can_show_chinese(*streams: object) -> bool:
    """Whether every stream (None: a closed one, which shows nothing) can encode Chinese text:
    `--lang zh` on an ASCII terminal or under PYTHONIOENCODING=ascii speaks English instead."""
    for stream in streams:
        if stream is None:
            continue
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            "中文，：".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            return False
    return True


def use_ascii_fallback() -> None:
    """Install the handler on stdout and stderr where their encoding cannot show our symbols."""
    codecs.register_error(ERROR_HANDLER, _handler)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and _cannot_show(stream) and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=ERROR_HANDLER)
