"""The Python API's arguments checked at its boundary against the function's own annotations: a
bool is a bool, a whole number an int, a number a finite int or float, a choice (a `Literal`)
one of its values, a list a list of what it holds. A wrong one is the CLI's one-line `FFNError`
naming the keyword, never an AttributeError from deep inside, never a string taken as True.

The annotations are the signature `help()` and a type checker read: declared once, checked here.
Torch's types (an `nn.Module`, a `torch.dtype`) are checked where they are used, not here."""

from __future__ import annotations

import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.values import is_finite_number

__all__ = ["check_arguments", "describe", "fits"]


class _TorchType:
    """A torch type named in an annotation (`nn.Module`, `torch.dtype`): any value passes here."""

    def __getattr__(self, name: str) -> Any:
        return Any


_TORCH_NAMES = {"nn": _TorchType(), "torch": _TorchType(), "Tensor": Any}


@functools.cache
def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    """Each parameter's annotation, evaluated where the function is defined (its return type,
    named for type checkers alone, is not)."""
    namespace = vars(sys.modules[function.__module__])
    # One parameter at a time, as get_type_hints would all at once: the return type names
    # classes imported for type checkers only, which would not resolve.
    parameters = inspect.signature(function).parameters.values()
    return {p.name: eval(p.annotation, namespace, _TORCH_NAMES) if isinstance(p.annotation, str) else p.annotation for p in parameters}


def check_arguments(function: Callable[..., Any], arguments: Mapping[str, object]) -> None:
    """Each argument against `function`'s annotation of it: the first that does not fit raises."""
    hints = _hints(function)
    for name, value in arguments.items():
        expected = hints.get(name, Any)
        if not fits(value, expected):
            raise FFNError(name, value, _why(expected))


def _why(expected: Any) -> str:
    """A choice in the command's words (`choose one of eval, train`: None, where allowed, is the
    default and goes unsaid); anything else by what it allows."""
    choices = [option for option in _options(expected) if option not in (None, type(None))]
    if len(choices) == 1 and typing.get_origin(choices[0]) is Literal:
        return _("choose one of {names}").format(names=", ".join(typing.get_args(choices[0])))
    return _("give {kind}").format(kind=describe(expected))


def _options(expected: Any) -> tuple[Any, ...]:
    """The types a union allows, in order; a plain type alone."""
    if typing.get_origin(expected) in (Union, types.UnionType):
        return typing.get_args(expected)
    return (expected,)


def fits(value: object, expected: Any) -> bool:
    return any(_fits_one(value, option) for option in _options(expected))


def _fits_one(value: object, expected: Any) -> bool:
    origin = typing.get_origin(expected)
    if expected is Any:
        return True
    if expected is None or expected is type(None):
        return value is None
    if origin is Literal:
        return isinstance(value, str) and value in typing.get_args(expected)
    if origin in (list, tuple):  # a list sweeps; a tuple reads as one too
        (item,) = typing.get_args(expected)[:1]
        return isinstance(value, (list, tuple)) and bool(value) and all(fits(v, item) for v in value)
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return is_finite_number(value)
    if isinstance(expected, type):
        return isinstance(value, expected)
    if isinstance(origin, type):  # a generic class: os.PathLike[str]
        return isinstance(value, origin)
    return True


def describe(expected: Any) -> str:
    """What an annotation allows, in words: 'True or False', 'one of cold, hot', 'a whole number or a list of them'."""
    allowed = [option for option in _options(expected) if option not in (None, type(None))]
    words = [_describe_list(option, allowed[:k]) or _describe_one(option) for k, option in enumerate(allowed)]
    if any(option in (None, type(None)) for option in _options(expected)):
        words.append("None")
    return functools.reduce(lambda head, last: _("{names} or {last}").format(names=head, last=last), words)


def _describe_list(expected: Any, before: list[Any]) -> str | None:
    """A list of what an earlier option names is 'a list of them'; alone, it says what it holds."""
    if typing.get_origin(expected) not in (list, tuple) or not typing.get_args(expected):
        return None
    item = typing.get_args(expected)[0]
    return None if item in before else _("a list, each {item}").format(item=_describe_one(item))


def _describe_one(expected: Any) -> str:
    if typing.get_origin(expected) is Literal:
        return _("one of {choices}").format(choices=", ".join(typing.get_args(expected)))
    if typing.get_origin(expected) in (list, tuple):
        return _("a list of them")
    words = {bool: _("True or False"), int: _("a whole number"), float: _("a finite number"), str: _("a string")}
    if expected in words:
        return words[expected]
    return getattr(typing.get_origin(expected) or expected, "__name__", str(expected))
