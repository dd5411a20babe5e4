"""click's own usage errors (a mistyped option, a missing value, an unknown command) in the
language of the run.

click words them in English, each from a fixed sentence; the sentences are message ids here,
matched against the exception's public `format_message()` and filled with the parts they
name (an option, its suggestions), which stay as the user typed them. A sentence that is no
such id is looked up as it is (an ffn message, already translated when raised), else shown in
English.
"""

from __future__ import annotations

import re
import string
from functools import cache

from ffn_cli.i18n import N_, _

__all__ = ["translate_usage_error"]

# Longest first: a sentence with a suggestion before the same sentence without one.
_SENTENCES = (
    N_("No such option: {name} (Possible options: {possibilities})"),
    N_("No such option: {name} Did you mean {possibility}?"),
    N_("No such option: {name}"),
    N_("No such command {name}. Did you mean {suggestions}?"),
    N_("No such command {name}."),
    N_("Missing command."),
    N_("Got unexpected extra argument(s) ({arguments})"),
    N_("Got unexpected extra arguments ({arguments})"),
    N_("Got unexpected extra argument ({arguments})"),
    N_("Option {name} requires an argument."),
    N_("Option {name} requires {count} arguments."),
    N_("Option {name} does not take a value."),
    N_("Argument {name} takes {count} values."),
    N_("Missing option {name}."),
    N_("Missing argument {name}."),
    N_("Missing parameter {name}."),
    N_("Invalid value for {name}: {message}"),
    N_("Invalid value: {message}"),
)


@cache
def _pattern(sentence: str) -> re.Pattern[str]:
    parts = []
    for literal, field, _spec, _conversion in string.Formatter().parse(sentence):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append(f"(?P<{field}>.+?)")
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


def translate_usage_error(message: str) -> str:
    """click's English `message` in the current language; the part after 'Invalid value for
    X:' (a parser's own words) is translated in its turn."""
    for sentence in _SENTENCES:
        found = _pattern(sentence).match(message)
        if found is None:
            continue
        parts = found.groupdict()
        if "message" in parts:
            parts["message"] = translate_usage_error(parts["message"])
        return _(sentence).format(**parts)
    return _(message)
