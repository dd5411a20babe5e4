"""The NumPy reference lives apart from the registry: no variant module imports NumPy or the
reference, and every variant of the registry, and every activation, has a form the reference
finds, so a new variant the reference cannot compute fails here by name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ffn_cli.reference import form_of
from ffn_cli.reference.activations import ACTIVATION_FORMS, activation_form
from ffn_cli.reference.forms import MixtureForm, SingleForm
from ffn_cli.reference.gated import GatedForm
from ffn_cli.reference.swiglu_clamp import SwiGLUClampForm
from ffn_cli.variants import ACTIVATIONS, VARIANTS, Activation, Variant, mixture_of
from ffn_cli.variants.swiglu import SwiGLU
from ffn_cli.variants.swiglu_clamp import SwiGLUClamp

VARIANTS_DIR = Path(__file__).resolve().parent.parent / "ffn_cli" / "variants"
# What a variant module may not import, at any level: the reference imports the registry.
FORBIDDEN = ("numpy", "ffn_cli.reference")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, function-level ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, node.module)]
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _forbidden_imports(path: Path) -> list[str]:
    return [
        f"{path.name}:{line}: {module}"
        for line, module in _imports(path)
        if any(module == name or module.startswith(name + ".") for name in FORBIDDEN) or module.endswith(".numpy_ops")
    ]


def test_no_variant_module_imports_numpy_or_the_reference() -> None:
    paths = sorted(VARIANTS_DIR.glob("*.py"))
    assert len(paths) > 10
    found = [hit for path in paths for hit in _forbidden_imports(path)]
    assert found == [], "a variant declares; its NumPy form belongs in ffn_cli/reference/"


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np",
        "def f():\n    import numpy\n",
        "from ffn_cli.reference.numpy_ops import linear",
        "from ffn_cli import reference",
    ],
)
def test_the_import_check_sees_numpy_and_the_reference_at_any_level(source: str, tmp_path: Path) -> None:
    path = tmp_path / "variant.py"
    path.write_text(source, encoding="utf-8")
    assert _forbidden_imports(path) != []


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_registry_variant_has_a_reference_form(name: str) -> None:
    variant = VARIANTS[name]
    form = form_of(variant)
    assert form.variant is variant
    # A mixture's expert is one FFN, computed by a single form; a mixture by a mixture form.
    assert isinstance(form, SingleForm if mixture_of(variant) is None else MixtureForm), name


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_every_activation_has_a_numpy_form(name: str) -> None:
    assert activation_form(ACTIVATIONS[name]) is ACTIVATION_FORMS[name]


def test_a_subclass_runs_its_nearest_base_class_form_unless_it_has_its_own() -> None:
    class SwiGLUVariation(SwiGLU):
        name = "swiglu_variation"

    assert type(form_of(SwiGLUVariation())) is GatedForm
    assert type(form_of(SwiGLU())) is GatedForm
    assert type(form_of(SwiGLUClamp())) is SwiGLUClampForm


def test_a_variant_no_form_computes_is_named_in_the_error() -> None:
    class Unknown(Variant):
        name = "unknown_ffn"

    with pytest.raises(LookupError, match="no NumPy reference form computes the variant 'unknown_ffn'"):
        form_of(Unknown())
    with pytest.raises(LookupError, match="no NumPy form for the activation 'cubic'"):
        activation_form(Activation("cubic", "z³", 2, "relu", saves_input=True))
