"""`--module` and `ffn_cli.trace(module)` answer every input: nothing is called that is not a
module, the user's code is contained (its prints, exits, interrupts and odd exceptions), the
file is imported as Python imports a module, and the API takes what a torch user passes.

Each case is the exact command and the one line it must print, with its exit code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from ffn_cli.errors import FFNError, FFNRuntimeError
from tests.helpers import as_from_a_terminal

ROOT = Path(__file__).resolve().parent.parent

USER_FILE = """
from __future__ import annotations

import sys
from dataclasses import dataclass

import torch
from torch import nn
from shutil import rmtree  # imported, not written here: never called


@dataclass
class Sizes:  # a dataclass under `from __future__ import annotations` looks its module up
    d: int = 8


class Good(nn.Module):
    def __init__(self, d: int = Sizes().d):
        super().__init__()
        self.up = nn.Linear(d, 4 * d)

    def forward(self, x):
        return self.up(x)


def make(d=8):
    return Good(d)


instance = Good(8)
meta_instance = nn.Linear(8, 8, device="meta")


class ExitInInit(nn.Module):
    def __init__(self):
        super().__init__()
        sys.exit(3)


class ExitInForward(Good):
    def forward(self, x):
        raise SystemExit(0)


class InterruptInInit(nn.Module):
    def __init__(self):
        super().__init__()
        raise KeyboardInterrupt


class Bye(Exception):
    def __str__(self):
        print("bye")
        return ""


class PrintsInStr(nn.Module):
    def __init__(self):
        super().__init__()
        raise Bye()


class StrRaises(Exception):
    def __str__(self):
        raise RuntimeError("no text")


class BadStr(nn.Module):
    def __init__(self):
        super().__init__()
        raise StrRaises()


class Printer(Good):
    def __init__(self):
        print("hello from __init__")
        super().__init__()

    def forward(self, x):
        print("hello from forward")
        return super().forward(x)


class ToRaises(nn.Linear):
    def to(self, *args, **kwargs):
        raise RuntimeError("cannot move")


to_raises = ToRaises(8, 8)


class IntegerOutput(Good):
    def forward(self, x):
        return self.up(x).argmax(-1)


class Warns(Good):
    def forward(self, x):
        import warnings

        warnings.warn("look out")
        return super().forward(x)
"""


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("user")
    (folder / "my_ffn.py").write_text(USER_FILE)
    (folder / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n")
    (folder / "unclosed.py").write_text("from torch import nn\nclass X(nn.Module\n")
    (folder / "paren(1).py").write_text("x = 1\n")
    (folder / "hint_only.py").write_text("x = 1\n")
    (folder / "compiled.pyc").write_bytes(b"\x00")
    (folder / "a_folder").mkdir()
    os.mkfifo(folder / "fifo.py")
    return folder


def _invoke(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, ["trace", *args], env={"COLUMNS": "100"})
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def _error(code: int, out: str, err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, (code, out, err)
    assert "Traceback" not in err + out
    return lines[0]


# Nothing is called that is not a module: each is refused by name, before any call.
NOT_MODULES = [
    ("os:system('id')", "--module os:system('id'): system is a builtin_function_or_method, not an nn.Module class or instance"),
    ("builtins:exec('print(1)')", "--module builtins:exec('print(1)'): exec is a builtin_function_or_method, not an nn.Module"),
    ("sys:exit(0)", "--module sys:exit(0): exit is a builtin_function_or_method, not an nn.Module class or instance"),
    ("shutil:rmtree('/nonexistent')", "--module shutil:rmtree('/nonexistent'): rmtree is a function, not an nn.Module class"),
    ("os.path:join('a')", "--module os.path:join('a'): join is a function, not an nn.Module class or instance"),
    ("my_ffn.py:rmtree('x')", "--module my_ffn.py:rmtree('x'): rmtree is a function not written in my_ffn.py"),
    ("my_ffn.py:torch", "--module my_ffn.py:torch: torch is a Python module, not an nn.Module"),
    ("my_ffn.py:Sizes", "--module my_ffn.py:Sizes: Sizes is a type not written in my_ffn.py"),
]


@pytest.mark.parametrize(("module", "said"), NOT_MODULES)
def test_nothing_but_a_module_is_called(user_dir: Path, module: str, said: str, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, err = _invoke("--module", module, cwd=user_dir)
    assert code == 2
    assert _error(code, out, err).startswith(f"error: {said}")
    assert "uid=" not in out + err + capfd.readouterr().out  # os.system never ran


def test_a_factory_of_the_users_file_and_its_instance_run(user_dir: Path) -> None:
    for module in ("my_ffn.py:make(8)", "my_ffn.py:instance", "my_ffn.py:Good"):
        code, out, err = _invoke("--module", module, "--json", cwd=user_dir)
        assert code == 0, err
        assert json.loads(out)["output_shape"] == [2, 5, 32]


# The user's code stops: one line naming it and where, never a silent exit.
CONTAINED = [
    ("my_ffn.py:ExitInInit", 1, "error: my_ffn.py:ExitInInit called sys.exit(3); ffn stopped there"),
    ("my_ffn.py:ExitInForward", 1, "error: ExitInForward.forward raised in its own code: SystemExit: 0"),
    ("my_ffn.py:InterruptInInit", 1, "error: my_ffn.py:InterruptInInit raised KeyboardInterrupt itself (not a Ctrl-C)"),
    ("my_ffn.py:PrintsInStr", 1, "error: my_ffn.py:PrintsInStr raised Bye"),
    ("my_ffn.py:BadStr", 1, "error: my_ffn.py:BadStr raised StrRaises (its message could not be read: RuntimeError raised)"),
    ("exits_on_import.py:X", 1, "error: loading exits_on_import.py called sys.exit(0); ffn stopped there"),
    ("unclosed.py:X", 1, "error: loading unclosed.py raised SyntaxError: '(' was never closed (unclosed.py, line 2)"),
    ("my_ffn.py:to_raises", 1, "error: moving to_raises to cpu raised RuntimeError: cannot move"),
    (
        "my_ffn.py:meta_instance",
        2,
        "error: --device cpu: meta_instance was built on meta (its weights hold no values): trace it with --device meta",
    ),
]


@pytest.mark.parametrize(("module", "exit_code", "said"), CONTAINED)
def test_the_users_code_is_contained(user_dir: Path, module: str, exit_code: int, said: str) -> None:
    code, out, err = _invoke("--module", module, cwd=user_dir)
    assert code == exit_code
    assert _error(code, out, err) == said


def test_an_integer_output_is_refused_a_backward(user_dir: Path) -> None:
    code, out, err = _invoke("--module", "my_ffn.py:IntegerOutput", "--backward", cwd=user_dir)
    assert code == 2
    assert _error(code, out, err) == (
        "error: --backward: the module's output is int64, which carries no gradient: "
        "a backward needs a floating-point output computed from x"
    )


def test_the_users_prints_go_to_stderr_and_json_parses(user_dir: Path) -> None:
    code, out, err = _invoke("--module", "my_ffn.py:Printer", "--json", cwd=user_dir)
    assert code == 0, err
    assert json.loads(out)["module"]["class"] == "Printer"
    assert "hello from __init__" in err and "hello from forward" in err


def test_the_users_warnings_are_notes_not_raw_lines(user_dir: Path) -> None:
    code, out, err = _invoke("--module", "my_ffn.py:Warns", "--json", cwd=user_dir)
    assert code == 0
    assert "your code warned: UserWarning: look out" in json.loads(out)["module"]["notes"]
    assert "look out" not in err


def test_a_compiled_module_leaks_no_warning_of_the_recorders_hooks(tmp_path: Path) -> None:
    (tmp_path / "compiled_ffn.py").write_text("import torch\nfrom torch import nn\nffn = torch.compile(nn.Linear(8, 8))\n")
    code, out, err = _invoke("--module", "compiled_ffn.py:ffn", "--json", cwd=tmp_path)
    assert code == 0, err
    assert json.loads(out)["module"]["notes"] == [] and "Warning" not in err


# The file is imported as Python imports a module; each refusal names its cause.
FILES = [
    ("paren(1).py:X", "error: --module paren(1).py: paren(1) is not a name Python can import (letters, digits and _, not a keyword)"),
    ("compiled.pyc:X", "error: --module compiled.pyc: is compiled Python: name its .py source"),
    ("a_folder/:X", "error: --module a_folder/: is a folder: name a .py file in it"),
    ("fifo.py:X", "error: --module fifo.py: is not a regular file (a device, a pipe, a socket): name a .py file"),
    ("/dev/zero:X", "error: --module /dev/zero: is not a regular file (a device, a pipe, a socket): name a .py file"),
    ("missing.py:X", "error: --module missing.py: no such file"),
    ("hint_only:X", "error: --module hint_only: no module of that name can be imported; for the file hint_only.py write hint_only.py:X"),
    ("no-such.module:X", "error: --module no-such.module: is neither a .py file nor a package.module name"),
    ("typing.py:X", None),  # written below: a file whose name another module already has
]


@pytest.mark.parametrize(("module", "said"), [f for f in FILES if f[1] is not None])
def test_each_file_refusal_names_its_cause(user_dir: Path, module: str, said: str) -> None:
    code, out, err = _invoke("--module", module, cwd=user_dir)
    assert code == 2
    assert _error(code, out, err).startswith(said)


def test_a_file_named_as_an_imported_module_is_refused(tmp_path: Path) -> None:
    (tmp_path / "typing.py").write_text("x = 1\n")
    code, out, err = _invoke("--module", "typing.py:X", cwd=tmp_path)
    assert code == 2
    assert "its name typing is already taken by another module" in _error(code, out, err)


def test_a_dataclass_under_future_annotations_loads(user_dir: Path) -> None:
    code, _out, err = _invoke("--module", "my_ffn.py:Good", "--json", cwd=user_dir)
    assert code == 0, err  # was: AttributeError: 'NoneType' object has no attribute '__dict__'


def test_the_file_is_read_again_each_time(tmp_path: Path) -> None:
    path = tmp_path / "edited_ffn.py"
    path.write_text("from torch import nn\nffn = nn.Linear(8, 8)\n")
    first = ffn_cli.trace(f"{path}:ffn").to_dict()["output_shape"]
    path.write_text("from torch import nn\nffn = nn.Linear(8, 16)\n")
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 5))  # a new mtime: the cached bytecode is stale
    assert (first, ffn_cli.trace(f"{path}:ffn").to_dict()["output_shape"]) == ([2, 5, 8], [2, 5, 16])


# Arguments: literals Python itself would accept, shown short.
ARGUMENTS = [
    ("my_ffn.py:Good(d=1, d=2)", "error: --module my_ffn.py:Good(d=1, d=2): keyword argument repeated: d"),
    (
        "my_ffn.py:Good({[1]: 2})",
        "error: --module my_ffn.py:Good({[1]: 2}): the arguments are literals Python cannot build: unhashable type: 'list'",
    ),
    (
        "my_ffn.py:Good(__import__('os').system('id'))",
        "error: --module my_ffn.py:Good(__import__('os').system('id')): the arguments must be literal",
    ),
    ("my_ffn.py:Good(1, 2)", "error: --module my_ffn.py:Good(1, 2): Good(d: 'int' = 8): too many positional arguments"),
]


@pytest.mark.parametrize(("module", "said"), ARGUMENTS)
def test_arguments_are_literals_python_accepts(user_dir: Path, module: str, said: str) -> None:
    code, out, err = _invoke("--module", module, cwd=user_dir)
    assert code == 2
    assert _error(code, out, err).startswith(said)


def test_a_4000_digit_argument_is_not_repeated_whole(user_dir: Path) -> None:
    digits = "9" * 4000
    code, out, err = _invoke("--module", f"my_ffn.py:Good({digits})", cwd=user_dir)
    line = _error(code, out, err)
    assert code == 1 and len(line) < 400 and "(4,000 characters)" in line


def test_a_negative_seed_is_refused_before_the_module_is_built(user_dir: Path) -> None:
    code, out, err = _invoke("--module", "my_ffn.py:Printer", "--seed", "-1", cwd=user_dir)
    assert code == 2
    assert _error(code, out, err).startswith("error: --seed -1: must be an integer in [0, ")
    assert "hello" not in err  # the user's code did not run


def test_an_input_that_cannot_fit_is_refused_before_allocating() -> None:
    code, out, err = _invoke("--module", "torch.nn:Linear(8, 8)", "--batch", "100000", "--seq-len", "100000")
    assert code == 1
    line = _error(code, out, err)
    # input + an output as large + the widest linear's output, 10¹⁰ tokens × 24 float32 values
    assert line.startswith("error: this trace needs about 894.") and "free on cpu; use --device meta" in line


def test_a_real_ctrl_c_still_interrupts(tmp_path: Path) -> None:
    (tmp_path / "slow_ffn.py").write_text(
        textwrap.dedent("""
        import sys, time
        from torch import nn
        class Slow(nn.Module):
            def __init__(self):
                super().__init__()
                print("ready", file=sys.stderr, flush=True)
                time.sleep(60)
        """)
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ffn_cli", "trace", "--module", "slow_ffn.py:Slow"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt itself" not in err


# The Python API: what a torch user passes is taken; the rest is an FFNError.
def _tiny() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))


def test_the_api_takes_torch_devices_dtypes_and_arrays() -> None:
    module = _tiny()
    by_name = ffn_cli.trace(module, device="cpu", dtype="float64").to_dict()
    by_object = ffn_cli.trace(_tiny(), device=torch.device("cpu"), dtype=torch.float64).to_dict()
    assert by_object == by_name
    x = np.random.default_rng(0).standard_normal((3, 8))
    from_array = ffn_cli.trace(_tiny(), np.asarray(x)).to_dict()
    from_list = ffn_cli.trace(_tiny(), x.tolist()).to_dict()
    from_tensor = ffn_cli.trace(_tiny(), torch.tensor(x, dtype=torch.float32)).to_dict()
    assert from_array == from_list == from_tensor
    assert from_tensor["input_shape"] == [3, 8]


@pytest.mark.parametrize(
    ("call", "option", "said"),
    [
        (lambda m: ffn_cli.trace(42), "module_or_spec", "give an nn.Module, an FFNSpec"),
        (lambda m: ffn_cli.trace(None), "module_or_spec", "give an nn.Module, an FFNSpec"),
        (lambda m: ffn_cli.trace(m, device=3), "device", "give a name ('cpu', 'float16') or a torch.device"),
        (lambda m: ffn_cli.trace(m, torch.empty(2, 8, device="meta")), "x", "is on meta (it holds no values)"),
        (lambda m: ffn_cli.trace(m, torch.randn(0, 8)), "x", "holds no values"),
        (lambda m: ffn_cli.trace(m, {"a": 1}), "x", "give a tensor, a NumPy array or a list of numbers"),
        (lambda m: ffn_cli.trace(m, layer=3), "layer", "picks a layer of a model"),
        (lambda m: ffn_cli.trace(m, torch.randn(2, 8), d_model=16), "d_model", "the input x gives the width"),
    ],
)
def test_the_api_refuses_the_rest_with_ffnerror(call, option: str, said: str) -> None:
    with pytest.raises(FFNError) as caught:
        call(_tiny())
    assert caught.value.option == option and said in caught.value.allowed


def test_the_api_leaves_the_callers_world_as_it_found_it() -> None:
    module = _tiny()
    module.train()
    module[1].eval()  # a mixed mode, kept as it was
    torch.manual_seed(123)
    before = torch.get_rng_state()
    ffn_cli.trace(module, mode="eval")
    assert torch.equal(torch.get_rng_state(), before)
    assert [m.training for m in module.modules()] == [True, True, False, True]


def test_the_apis_errors_from_user_code_are_runtime_errors(tmp_path: Path) -> None:
    (tmp_path / "exiting_ffn.py").write_text("import sys\nsys.exit(4)\n")
    with pytest.raises(FFNRuntimeError, match=r"loading exiting_ffn.py called sys.exit\(4\)"):
        ffn_cli.trace(f"{tmp_path / 'exiting_ffn.py'}:X")
