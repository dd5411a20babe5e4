"""What `--module` names, read without running anything: `FILE.py:NAME(args)` or
`package.module:NAME(args)`, its arguments read with `ast` (never run), and a file's checks
(it exists, is a .py file Python can import by its name). Pure Python, no torch: a mistyped
--module is refused before torch loads. modules/user.py loads what it names."""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ffn_cli.errors import FFNError, first_line
from ffn_cli.i18n import N_, _

__all__ = ["LITERALS", "ModuleRef", "check_module_file", "parse_module_ref"]

LITERALS = "literal values only (numbers, strings, True/False/None, tuples, lists and dicts of them)"
_FORM = N_("FILE.py:NAME, FILE.py:NAME(args) or package.module:NAME(args)")
_SHOWN_ARGUMENT = 40  # characters of one argument an error repeats (a 4,000-digit number is not repeated whole)
_SHOWN_REF = 160  # characters of the whole --module value an error repeats
_NAME_AFTER_COLON = re.compile(r":(?=\s*[A-Za-z_]\w*\s*(\(.*\))?\s*$)", re.DOTALL)
_PYTHON_FILES = (".py", ".pyc", ".pyo", ".pyw")


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
        """A path (it ends as a Python file does, or holds a separator), or a name that is no
        importable module's but names something here; else `package.module`."""
        if self.target.endswith(_PYTHON_FILES) or "/" in self.target or "\\" in self.target:
            return True
        dotted = all(part.isidentifier() for part in self.target.split("."))
        return not dotted and Path(self.target).exists()

    def describe(self) -> str:
        if not self.called:
            return f"{self.target}:{self.name}"
        shown = [_shorten(repr(a)) for a in self.args] + [f"{k}={_shorten(repr(v))}" for k, v in self.kwargs]
        return f"{self.target}:{self.name}({', '.join(shown)})"


def _shorten(text: str, most: int = _SHOWN_ARGUMENT) -> str:
    return text if len(text) <= most else _("{start}… ({n:,} characters)").format(start=text[: most - 10], n=len(text))


def parse_module_ref(text: str) -> ModuleRef:
    """`my_ffn.py:TransformerFFN(512, 2048, dropout=0.1)` → its parts; anything but literal
    arguments is refused, naming the option."""
    target, sep, call = text.strip().rpartition(":") if "(" not in text else _split_call(text.strip())
    shown = _shorten(text, _SHOWN_REF)
    if not sep or not target.strip() or not call.strip():
        raise FFNError("module", shown, _("write {form}").format(form=_(_FORM)))
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        raise FFNError("module", shown, _("NAME(args) must be a Python call with {literals}").format(literals=LITERALS)) from None
    if isinstance(node, ast.Name):
        return ModuleRef(target.strip(), node.id)
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or any(k.arg is None for k in node.keywords):
        raise FFNError("module", shown, _("after the colon write NAME or NAME(args), with {literals}").format(literals=LITERALS))
    names = [str(k.arg) for k in node.keywords]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise FFNError("module", shown, _("keyword argument repeated: {names}").format(names=", ".join(repeated)))
    try:
        args = tuple(ast.literal_eval(a) for a in node.args)
        kwargs = tuple((str(k.arg), ast.literal_eval(k.value)) for k in node.keywords)
    except (ValueError, SyntaxError):
        raise FFNError("module", shown, _("the arguments must be {literals}").format(literals=LITERALS)) from None
    except TypeError as exc:  # {[1]: 2}: a literal Python cannot build
        raise FFNError("module", shown, _("the arguments are literals Python cannot build: {exc}").format(exc=first_line(exc))) from None
    except (RecursionError, MemoryError):
        raise FFNError("module", shown, _("the arguments are nested too deeply to read")) from None
    return ModuleRef(target.strip(), node.func.id, args, kwargs, called=True)


def _split_call(text: str) -> tuple[str, str, str]:
    """Split at the colon before NAME(…): the first one the rest of which reads as a call (a
    path may hold colons and parentheses, `C:\\ffn\\paren(1).py`; the arguments may hold colons)."""
    for found in _NAME_AFTER_COLON.finditer(text):
        return text[: found.start()], ":", text[found.start() + 1 :]
    return "", "", text


def check_module_file(ref: ModuleRef) -> None:
    """A file --module names: there, a regular .py file, named as Python can import it; each
    refusal names its cause."""
    if not ref.is_file:
        return
    path, shown = Path(ref.target).expanduser(), ref.target
    if not path.exists():
        raise FFNError("module", shown, _("no such file"))
    if path.is_dir():
        raise FFNError("module", shown, _("is a folder: name a .py file in it"))
    if not path.is_file():
        raise FFNError("module", shown, _("is not a regular file (a device, a pipe, a socket): name a .py file"))
    if path.suffix in (".pyc", ".pyo"):
        raise FFNError("module", shown, _("is compiled Python: name its .py source"))
    if path.suffix != ".py":
        raise FFNError("module", shown, _("is not a .py file"))
    name = path.stem
    if not name.isidentifier() or keyword.iskeyword(name):
        raise FFNError(
            "module",
            shown,
            _("{name} is not a name Python can import (letters, digits and _, not a keyword): rename the file").format(name=name),
        )
