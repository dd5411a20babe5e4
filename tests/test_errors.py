"""How an exception is said in one line (`first_line`, `exception_line`): every error that
quotes another exception (a rank's crash, transformers refusing a config, the Hub's answer, an
unexpected failure) says it the same way."""

from __future__ import annotations

import pytest

from ffn_cli.errors import SHOWN_VALUE_CHARS, exception_line, first_line


class Silent(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "line", "with_kind"),
    [
        (ValueError("bad size"), "bad size", "ValueError: bad size"),
        (ValueError("  bad size  \n  at layer 3\n"), "bad size", "ValueError: bad size"),
        (ValueError("\n\nafter blank lines\nsecond"), "after blank lines", "ValueError: after blank lines"),
        # huggingface_hub's validation errors: a heading ending in ':', the reason indented on line two.
        (
            ValueError("Validation error for field 'num_experts_per_tok':\n    TypeError: expected int, got str\nmore"),
            "Validation error for field 'num_experts_per_tok': TypeError: expected int, got str",
            "ValueError: Validation error for field 'num_experts_per_tok': TypeError: expected int, got str",
        ),
        (ValueError("ends with a colon:"), "ends with a colon:", "ValueError: ends with a colon:"),
        (Silent(), "Silent", "Silent"),
        (KeyError("boom"), "'boom'", "KeyError: 'boom'"),
    ],
)
def test_an_exception_in_one_line(exc: BaseException, line: str, with_kind: str) -> None:
    assert first_line(exc) == line
    assert exception_line(exc) == with_kind


def test_a_page_long_message_is_elided_by_its_two_ends() -> None:
    text = "a" * 1000 + "z" * 1000
    said = first_line(RuntimeError(text))
    limit = 2 * SHOWN_VALUE_CHARS
    # Two thirds of the limit from the front, one third from the back, the rest counted.
    assert said == "a" * (limit * 2 // 3) + f"…({2000 - limit:,} characters left out)…" + "z" * (limit - limit * 2 // 3)
