"""A meta trace imports no SymPy, and changes nothing by it: the stand-ins answer as the real
symbolic_shapes does on plain values, and anything else reaches the real modules."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import torch
from torch.fx.experimental import symbolic_shapes

from ffn_cli.trace.nosympy import _ANSWERS, _answering

_BOOLS = [True, False]
_INTS = [0, 1, 7, True]
_SEQUENCES: list[Any] = [(), (1,), (1, 2), [1, 2], (1, 3), (1, 2, 3), torch.Size([1, 2]), [(1, 2), (3,)], [(1, 2), (4,)], ((1, 2), [3])]


def _outcome(function: Any, *args: Any) -> Any:
    """What a call returns, or the type and text of what it raises."""
    try:
        result = function(*args)
    except Exception as exc:
        return (type(exc), str(exc))
    return (type(result), result)


def _cases(name: str) -> list[tuple[Any, ...]]:
    plain_and_odd = [*_BOOLS, *_INTS, 1.5, None, "x"]
    if name in ("sym_and", "sym_or"):
        return [(a,) for a in plain_and_odd] + [(a, b) for a in plain_and_odd for b in plain_and_odd] + [(True, True, False), ()]
    if name == "sym_eq":
        values = [*_INTS, *_SEQUENCES, 1.5]
        return [(a, b) for a in values for b in values] + [(), (1,), (1, 1, 1)]
    return [(a,) for a in [*plain_and_odd, *_SEQUENCES]] + [(), (True, 0), (True, 0, 0)]


@pytest.mark.filterwarnings("ignore:guard_size_oblivious will be removed:FutureWarning")
@pytest.mark.parametrize("name", sorted(_ANSWERS))
def test_each_answer_is_the_real_one_on_plain_values(name: str) -> None:
    # The second path: torch's own symbolic_shapes, imported for real in this process. Values
    # that are not plain reach the real function through the stand-in, so they agree too, in
    # what they return and in what they raise.
    real = getattr(symbolic_shapes, name)
    stand_in = _answering(name, *_ANSWERS[name])
    for args in _cases(name):
        assert _outcome(stand_in, *args) == _outcome(real, *args), (name, args)


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_meta_traces_import_no_sympy_and_match_the_real_modules() -> None:
    # Every variant, FFN and block, with and without bias, traced on meta twice in one fresh
    # process: first with the stand-ins (SymPy must stay out), then after importing the real
    # symbolic_shapes (and SymPy), when the stand-ins stand aside; the results must be equal.
    code = (
        "import sys\n"
        "import torch\n"
        "torch.set_num_threads(1)\n"
        "from ffn_cli.block import BlockSpec\n"
        "from ffn_cli.trace import trace\n"
        "from tests.helpers import ALL_VARIANTS, small_spec\n"
        "def traces():\n"
        "    out = []\n"
        "    for v in ALL_VARIANTS:\n"
        "        for bias in (False, True):\n"
        "            spec = small_spec(v, bias=bias)\n"
        "            out += [trace(spec, device='meta'), trace(spec, device='meta', block=BlockSpec.around(spec))]\n"
        "    return out\n"
        "first = traces()\n"
        "assert 'sympy' not in sys.modules, 'sympy was imported'\n"
        "assert 'torch.fx.experimental.symbolic_shapes' not in sys.modules, 'symbolic_shapes was imported'\n"
        "assert not hasattr(torch.fx.experimental, 'symbolic_shapes'), 'the stand-in was left behind'\n"
        "import torch.fx.experimental.symbolic_shapes, sympy\n"
        "assert hasattr(sympy, 'Symbol') and hasattr(torch.fx.experimental.symbolic_shapes, 'ShapeEnv')\n"
        "second = traces()\n"
        "assert len(first) == len(second) == 4 * len(ALL_VARIANTS)\n"
        "for a, b in zip(first, second):\n"
        "    assert a == b, (a.spec, a.block)\n"
    )
    result = _fresh(code)
    assert result.returncode == 0, result.stderr[-2000:]


def test_anything_else_reaches_the_real_modules() -> None:
    # Inside the run: a symbolic question, another name, SymPy's own names and submodules, all
    # answered by the real modules, loaded once; afterwards the real ones stay, nothing else.
    code = (
        "import sys\n"
        "import torch\n"
        "from ffn_cli.trace.nosympy import sympy_left_out\n"
        "finders = list(sys.meta_path)\n"
        "with sympy_left_out():\n"
        "    import sympy as stand_in\n"
        "    assert not isinstance(1, stand_in.Basic) and 'sympy.core' not in sys.modules\n"
        "    from torch.fx.experimental.symbolic_shapes import expect_true\n"
        "    assert expect_true(True) is True and 'sympy.core' not in sys.modules\n"
        "    import sympy.core.numbers\n"  # a submodule first: the real SymPy, not a second copy
        "    real = sys.modules['sympy']\n"
        "    assert real is not stand_in and real.core.numbers is sys.modules['sympy.core.numbers']\n"
        "    assert real.core.numbers.__spec__.origin.endswith('numbers.py')\n"
        "    assert type(real.core.__spec__.loader).__name__ == 'SourceFileLoader', 'spec left lent'\n"
        "    x = real.Symbol('x')\n"
        "    assert isinstance(x, stand_in.Basic) and stand_in.Basic is real.Basic and stand_in.Symbol is real.Symbol\n"
        "    from torch.fx.experimental.symbolic_shapes import ShapeEnv, guard_or_false\n"
        "    shapes = sys.modules['torch.fx.experimental.symbolic_shapes']\n"
        "    assert ShapeEnv is shapes.ShapeEnv and guard_or_false(False) is False\n"
        "assert sys.modules['sympy'] is real and sys.meta_path == finders\n"
        "assert torch.fx.experimental.symbolic_shapes is shapes and hasattr(shapes, 'ShapeEnv')\n"
        "with sympy_left_out():\n"  # both loaded now: nothing stands in
        "    assert sys.modules['sympy'] is real and sys.meta_path == finders\n"
    )
    result = _fresh(code)
    assert result.returncode == 0, result.stderr[-2000:]
