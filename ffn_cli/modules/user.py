"""The user's own module, named on the command line: `FILE.py:NAME(args)` or
`package.module:NAME(args)`. NAME is an nn.Module subclass, a module instance, or (in the
user's own file) a function returning a module; the arguments are a call with literal values,
read with `ast` (never run).

Loading the file runs the user's code, as pytest does with a test file: that is the point. Only
what the user named is imported, and nothing is called unless it is one of those three: a
function of the standard library or of a package (`os:system`, `shutil:rmtree`) is refused by
name before any call. Everything the user's code does runs inside `running_user_code`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import keyword
import re
import sys
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn

from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.module_ref import ModuleRef, check_module_file
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import check_int
from ffn_cli.user_code import UserWarnings, running_user_code

__all__ = ["build_user_module", "caller_rng_kept"]

_LOADED_FILES: set[str] = set()  # module names this process gave to the user's files: theirs to load again


def _load(ref: ModuleRef, kept: UserWarnings) -> ModuleType:
    if ref.is_file:
        return _load_file(Path(ref.target).expanduser(), ref, kept)
    if not all(part.isidentifier() and not keyword.iskeyword(part) for part in ref.target.split(".")):
        raise FFNError("module", ref.target, _("is neither a .py file nor a package.module name"))
    try:
        found = importlib.util.find_spec(ref.target)
    except (ImportError, ValueError):
        found = None
    if found is None:
        beside = Path(f"{ref.target}.py")
        hint = _("; for the file {file} write {file}:{name}").format(file=beside, name=ref.name) if beside.is_file() else ""
        raise FFNError("module", ref.target, _("no module of that name can be imported{hint}").format(hint=hint))
    with running_user_code(_("importing {module}").format(module=ref.target), kept):
        return importlib.import_module(ref.target)


def _load_file(path: Path, ref: ModuleRef, kept: UserWarnings) -> ModuleType:
    """Import the file as Python imports a module beside the script it runs: its folder first
    on the path, its name its stem, registered while its body runs (dataclasses and
    `from __future__ import annotations` look themselves up there), loaded anew each time (a
    notebook traces the file as it is now). Each refusal names its cause."""
    shown = ref.target
    check_module_file(ref)
    name = path.stem
    folder = str(path.resolve().parent)
    existing = sys.modules.get(name)
    if existing is not None and name not in _LOADED_FILES:
        why = _("its name {name} is already taken by another module (the standard library, torch, …): rename the file")
        raise FFNError("module", shown, why.format(name=name))
    if existing is not None:  # a file of the user's loaded before (this one, edited since, or another of that name)
        del sys.modules[name]
    what = _("loading {file}").format(file=path.name)
    importlib.invalidate_caches()  # a file written since the folder was last looked at
    sys.path.insert(0, folder)
    try:
        with running_user_code(what, kept):
            loaded = importlib.import_module(name)
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
    _LOADED_FILES.add(name)
    return loaded


def _modules_in(loaded: ModuleType) -> list[str]:
    return [n for n, v in vars(loaded).items() if not n.startswith("_") and isinstance(v, type) and issubclass(v, nn.Module)]


def _callable_kind(obj: object, loaded: ModuleType, ref: ModuleRef) -> str:
    """What the named object is allowed to be: an nn.Module class, an instance, or a function
    written in the user's own file. Anything else is refused by name before it is called."""
    if isinstance(obj, nn.Module):
        return "instance"
    if isinstance(obj, type) and issubclass(obj, nn.Module):
        return "class"
    if inspect.isfunction(obj) and obj.__module__ == loaded.__name__ and _own_code(loaded):
        return "function"
    if isinstance(obj, ModuleType):
        why = _("{name} is a Python module, not an nn.Module: name an nn.Module class or instance inside it").format(name=ref.name)
    elif ref.is_file and callable(obj):
        why = _(
            "{name} is a {kind} not written in {file}: name an nn.Module class or instance, or a function of your file that returns one"
        ).format(name=ref.name, kind=type(obj).__name__, file=ref.target)
    else:
        why = _("{name} is a {kind}, not an nn.Module class or instance; nothing else is called").format(
            name=ref.name, kind=type(obj).__name__
        )
    raise FFNError("module", ref.describe(), why)


def _own_code(loaded: ModuleType) -> bool:
    """The user's own code: a file named on the command line, or a module that lives outside the
    standard library and the installed packages (`os`, `shutil` and `torch` are not)."""
    file = getattr(loaded, "__file__", None)
    if not file:
        return False  # built into the interpreter
    where = Path(file).resolve()
    installed = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return not any(where.is_relative_to(Path(root).resolve()) for root in installed)


def build_user_module(ref: ModuleRef, *, device: torch.device, seed: int, kept: UserWarnings | None = None) -> nn.Module:
    """Load the named file or module and make the module: construct the class (or call the
    function of the user's file) with the given arguments on `device`, from a seeded
    generator state. Nothing but those is ever called."""
    check_int("seed", seed, minimum=0, maximum=2**63 - 1)
    kept = kept if kept is not None else UserWarnings()
    loaded = _load(ref, kept)
    if not hasattr(loaded, ref.name):
        local = [n for n in _modules_in(loaded) if getattr(loaded, n).__module__ == loaded.__name__]
        hint = (_("its modules: {local}").format(local=", ".join(local))) if local else _("it defines no nn.Module subclass")
        raise FFNError("module", ref.describe(), _("{target} has no {name}; {hint}").format(target=ref.target, name=ref.name, hint=hint))
    obj = getattr(loaded, ref.name)
    kind = _callable_kind(obj, loaded, ref)
    if kind == "instance":
        if ref.called:
            raise FFNError(
                "module", ref.describe(), _("{name} is a module instance, not a class: name it without arguments").format(name=ref.name)
            )
        if device.type != "meta" and any(p.is_meta for p in obj.parameters()):
            raise FFNError(
                "device",
                str(device),
                _("{name} was built on meta (its weights hold no values): trace it with --device meta").format(name=ref.name),
            )
        with running_user_code(_("moving {name} to {device}").format(name=ref.name, device=device), kept):
            return obj.to(device)
    _check_arguments(obj, ref)
    with running_user_code(ref.describe(), kept), caller_rng_kept(), torch.device(device):
        torch.manual_seed(stream_seed(seed, Stream.WEIGHTS))  # the module's own initialisation draws from here
        made = obj(*ref.args, **dict(ref.kwargs))
    if not isinstance(made, nn.Module):
        raise FFNError(
            "module", ref.describe(), _("{name}(…) returned a {kind}, not an nn.Module").format(name=ref.name, kind=type(made).__name__)
        )
    return made


def _check_arguments(obj: Any, ref: ModuleRef) -> None:
    """The call's arguments against the signature, before anything runs."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*ref.args, **dict(ref.kwargs))
    except TypeError as exc:
        said = _bind_words(str(exc))
        raise FFNError(
            "module", ref.describe(), _("{name}{signature}: {exc}").format(name=ref.name, signature=signature, exc=said)
        ) from None


# inspect's words when a call does not fit a signature, in the language of the run.
_BIND_WORDS = (
    (re.compile(r"missing a required argument: '(?P<name>.+)'"), N_("missing a required argument: {name}")),
    (re.compile(r"missing a required keyword-only argument: '(?P<name>.+)'"), N_("missing a required keyword-only argument: {name}")),
    (re.compile(r"too many positional arguments"), N_("too many positional arguments")),
    (re.compile(r"got an unexpected keyword argument '(?P<name>.+)'"), N_("got an unexpected keyword argument {name}")),
    (re.compile(r"multiple values for argument '(?P<name>.+)'"), N_("multiple values for argument {name}")),
)


def _bind_words(text: str) -> str:
    for pattern, words in _BIND_WORDS:
        found = pattern.fullmatch(text)
        if found is not None:
            return _(words).format(**{k: repr(v) for k, v in found.groupdict().items()})
    return text


def caller_rng_kept() -> Any:
    """torch's global random state (CPU and every CUDA device) as the caller left it, after the
    run draws its dropout masks from a seeded stream."""
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    return torch.random.fork_rng(devices=cuda)
