"""The user's own module, named on the command line: `FILE.py:NAME(args)` or
`package.module:NAME(args)`. NAME is an nn.Module subclass, a function returning a module, or a
module instance; the arguments are a call with literal values, read with `ast` (never run).

Loading the file runs the user's code, as pytest does with a test file: that is the point. Only
what the user named is imported.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.seeds import Stream, stream_seed

__all__ = ["ModuleRef", "build_user_module", "parse_module_ref"]

_LITERALS = "literal values only (numbers, strings, True/False/None, tuples, lists and dicts of them)"
_FORM = "FILE.py:NAME, FILE.py:NAME(args) or package.module:NAME(args)"


@dataclass(frozen=True)
class ModuleRef:
    """Where the module is (a file or an importable module), its name, and the call's arguments."""

    target: str
    name: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    called: bool = False  # NAME(...) was written as a call

    @property
    def is_file(self) -> bool:
        return self.target.endswith(".py") or "/" in self.target or "\\" in self.target

    def describe(self) -> str:
        if not self.called:
            return f"{self.target}:{self.name}"
        shown = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"{self.target}:{self.name}({', '.join(shown)})"


def parse_module_ref(text: str) -> ModuleRef:
    """`my_ffn.py:TransformerFFN(512, 2048, dropout=0.1)` → its parts; anything but literal
    arguments is refused, naming the option."""
    target, sep, call = text.strip().rpartition(":") if "(" not in text else _split_call(text.strip())
    if not sep or not target.strip() or not call.strip():
        raise FFNError("module", text, _("write {form}").format(form=_FORM))
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except SyntaxError:
        raise FFNError("module", text, _("NAME(args) must be a Python call with {literals}").format(literals=_LITERALS)) from None
    if isinstance(node, ast.Name):
        return ModuleRef(target.strip(), node.id)
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or any(k.arg is None for k in node.keywords):
        raise FFNError("module", text, _("after the colon write NAME or NAME(args), with {literals}").format(literals=_LITERALS))
    try:
        args = tuple(ast.literal_eval(a) for a in node.args)
        kwargs = tuple((str(k.arg), ast.literal_eval(k.value)) for k in node.keywords)
    except ValueError:
        raise FFNError("module", text, _("the arguments must be {literals}").format(literals=_LITERALS)) from None
    return ModuleRef(target.strip(), node.func.id, args, kwargs, called=True)


def _split_call(text: str) -> tuple[str, str, str]:
    """Split at the colon before NAME( (a path may hold colons; the arguments may too)."""
    head = text[: text.index("(")]
    target, sep, name = head.rpartition(":")
    return target, sep, name + text[len(head) :]


def _load(ref: ModuleRef) -> ModuleType:
    if ref.is_file:
        path = Path(ref.target).expanduser()
        if not path.is_file():
            raise FFNError("module", ref.target, _("no such file"))
        spec = importlib.util.spec_from_file_location(f"ffn_user_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise FFNError("module", ref.target, _("is not a Python file that can be loaded"))
        loaded = importlib.util.module_from_spec(spec)
        _run_user_code(lambda: spec.loader.exec_module(loaded), _("loading {file}").format(file=path.name))  # type: ignore[union-attr]
        return loaded
    result: list[ModuleType] = []
    _run_user_code(lambda: result.append(importlib.import_module(ref.target)), _("importing {module}").format(module=ref.target))
    return result[0]


def _run_user_code(run: Any, what: str) -> None:
    try:
        run()
    except ModuleNotFoundError as exc:
        raise FFNRuntimeError(_("{what}: {exc}").format(what=what, exc=exc)) from None
    except Exception as exc:  # the user's code: one line, naming it
        first = (str(exc).strip().splitlines() or [""])[0]
        raise FFNRuntimeError(_("{what} raised {name}: {first}").format(what=what, name=type(exc).__name__, first=first)) from None


def _modules_in(loaded: ModuleType) -> list[str]:
    return [n for n, v in vars(loaded).items() if not n.startswith("_") and isinstance(v, type) and issubclass(v, nn.Module)]


def build_user_module(ref: ModuleRef, *, device: torch.device, seed: int) -> nn.Module:
    """Load the named file or module and make the module: construct the class (or call the
    function) with the given arguments on `device`, from a seeded generator state."""
    loaded = _load(ref)
    if not hasattr(loaded, ref.name):
        local = [n for n in _modules_in(loaded) if getattr(loaded, n).__module__ == loaded.__name__]
        hint = (_("its modules: {local}").format(local=", ".join(local))) if local else _("it defines no nn.Module subclass")
        raise FFNError("module", ref.describe(), _("{target} has no {name}; {hint}").format(target=ref.target, name=ref.name, hint=hint))
    obj = getattr(loaded, ref.name)
    if isinstance(obj, nn.Module):
        if ref.called:
            raise FFNError(
                "module", ref.describe(), _("{name} is a module instance, not a class: name it without arguments").format(name=ref.name)
            )
        return obj.to(device)
    if not callable(obj):
        raise FFNError(
            "module",
            ref.describe(),
            _("{name} is a {kind}: name an nn.Module class, a function, or a module").format(name=ref.name, kind=type(obj).__name__),
        )
    kwargs = dict(ref.kwargs)
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            signature.bind(*ref.args, **kwargs)
        except TypeError as exc:
            raise FFNError(
                "module", ref.describe(), _("{name}{signature}: {exc}").format(name=ref.name, signature=signature, exc=exc)
            ) from None
    torch.manual_seed(stream_seed(seed, Stream.WEIGHTS))  # the module's own initialisation draws from here
    try:
        with torch.device(device):
            made = obj(*ref.args, **kwargs)
    except Exception as exc:  # the user's constructor
        first = (str(exc).strip().splitlines() or [""])[0]
        raise FFNRuntimeError(
            _("{describe} raised {name}: {first}").format(describe=ref.describe(), name=type(exc).__name__, first=first)
        ) from None
    if not isinstance(made, nn.Module):
        raise FFNError(
            "module", ref.describe(), _("{name}(…) returned a {kind}, not an nn.Module").format(name=ref.name, kind=type(made).__name__)
        )
    return made
