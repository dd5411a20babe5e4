"""The choices the commands take, each one `Literal` type: the request's field, the API's keyword
and the check as the request is made all read it (the runs below keep their own tuples of the
same names, held equal to these by tests/test_declarations.py)."""

from __future__ import annotations

import typing
from typing import Any, Literal

from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _

__all__ = ["ALL_IMPLS", "Cache", "CompileMode", "ImplChoice", "ImplName", "Loss", "Mode", "Norm", "Phase", "check_choice", "choices"]

Mode = Literal["eval", "train"]  # ffn trace --mode
Loss = Literal["random", "sum", "mse"]  # ffn trace --loss
Norm = Literal["layernorm", "rmsnorm"]  # ffn trace --norm
Phase = Literal["prefill", "decode"]  # ffn params --phase
Cache = Literal["cold", "hot"]  # ffn bench --cache
ImplName = Literal["eager", "fused", "compile", "fused-compile", "autotune", "fused-autotune"]  # ffn bench --impl, a list of
ALL_IMPLS = "all"  # --impl all: every one
ImplChoice = Literal[ImplName, "all"]  # the API's impl= alone
CompileMode = Literal["default", "max-autotune-no-cudagraphs", "max-autotune", "reduce-overhead"]  # ffn bench --compile-mode


# Each option's refusal in the words the runs below say it in (`choose one of eval, train`).
_WORDS: dict[str, tuple[str, str]] = {
    "mode": (N_("choose one of {modes}"), "modes"),
    "loss": (N_("choose one of {losses}"), "losses"),
    "norm": (N_("choose one of {norms}"), "norms"),
    "phase": (N_("choose prefill or decode"), ""),
    "cache": (N_("choose cold or hot"), ""),
    "compile_mode": (N_("choose one of {compile_modes}"), "compile_modes"),
}


def choices(choice: Any) -> tuple[str, ...]:
    """The values of a choice's Literal type, in order."""
    return typing.get_args(choice)


def check_choice(option: str, value: Any, choice: Any) -> Any:
    """`value` as the choice it names (' Train ' is train), or the error listing every value."""
    name = value.strip().lower() if isinstance(value, str) else value
    if name not in choices(choice):
        words, names = _WORDS.get(option, (N_("choose one of {names}"), "names"))
        raise FFNError(option, value, _(words).format(**({names: ", ".join(choices(choice))} if names else {})))
    return name
