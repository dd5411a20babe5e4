"""The registry's objects: each variant owns its behaviour, and nothing else names variants."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

import ffn_cli.block  # noqa: F401  (loads the block and attention modules, so they are among NamedSteps' subclasses)
from ffn_cli import build_ffn
from ffn_cli.configs.source import preset_model
from ffn_cli.modules import MoEFFN
from ffn_cli.modules.ffn import FFNModule
from ffn_cli.regions import NamedSteps
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.recorder import record
from ffn_cli.tracing.steps import group_steps
from ffn_cli.variants import VARIANTS, Family, MixtureVariant, SingleFFN, Variant
from tests.helpers import ALL_VARIANTS, read_preset_names, small_spec

PACKAGE = Path(__file__).parents[1] / "ffn_cli"


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_spec_round_trips_through_its_dict(variant: str) -> None:
    spec = (
        small_spec(variant, shared_d_ff=40, shared_expert_gate=True, mask_seed=3, multiple_of=64)
        if variant == "moe"
        else small_spec(variant)
    )
    assert FFNSpec(**spec.as_dict()) == spec


@pytest.mark.parametrize("name", read_preset_names())
def test_every_preset_ffn_round_trips(name: str) -> None:
    model = preset_model(name)
    for ffn in (model.dense_ffn, model.moe_ffn):
        if ffn is not None:
            assert FFNSpec(**ffn.as_dict()) == ffn


def test_qwen_moe_shared_expert_width_survives_json() -> None:
    """The shared experts' own width and gate were dropped by the old as_dict."""
    spec = FFNSpec(variant="moe", d_model=2048, d_ff=1408, experts=60, top_k=4, shared_experts=1, shared_d_ff=5632, shared_expert_gate=True)
    again = FFNSpec(**spec.as_dict())
    # 60 experts of 3·2048·1408, the router 60·2048, shared 3·2048·5632, its gate 2048: one layer
    assert sum(p.numel() for p in build_ffn(again, device="meta").parameters()) == 553_773_056


def _built_params(spec: FFNSpec) -> int:
    return sum(p.numel() for p in build_ffn(spec, device="meta").parameters())


# One expert at d = 16, d_ff = 24, worked by hand: relu's up and down with their biases (a dense
# FFN's default), swiglu's gate, up and down without. A mixture adds one d-wide router row (or
# soft MoE's one slot) per expert beside it.
_ONE_EXPERT = {"relu": 2 * 16 * 24 + 24 + 16, "swiglu": 3 * 16 * 24}


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_a_mixture_grows_by_whole_experts_and_a_single_ffn_maps_each_token_alone(variant: str) -> None:
    """Read from the built module: one more expert adds one expert's tensors and a router row to
    a mixture; a single FFN's output for a token does not move when another token changes."""
    if isinstance(VARIANTS[variant], MixtureVariant):
        for expert, one in _ONE_EXPERT.items():
            sizes = [
                _built_params(FFNSpec(variant=variant, d_model=16, d_ff=24, experts=e, top_k=1, expert_variant=expert)) for e in (2, 3)
            ]
            assert sizes[1] - sizes[0] == one + 16, (variant, expert)
        return
    assert isinstance(VARIANTS[variant], SingleFFN)
    module = build_ffn(small_spec(variant)).eval()
    x = torch.randn(1, 3, 16, generator=torch.Generator().manual_seed(2))
    moved = x.clone()
    moved[0, 1:] += 1.0
    with torch.no_grad():
        torch.testing.assert_close(module(moved)[0, 0], module(x)[0, 0])
        assert not torch.allclose(module(moved)[0, 1], module(x)[0, 1])


# --- nothing outside the registry branches on what kind of FFN it holds ------------------


def _terminal_name(node: ast.AST) -> str:
    """`spec.info.family` → 'family', `variant` → 'variant', anything else → ''."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _names_family(node: ast.AST) -> bool:
    """`Family.MOE`, `variants.Family.GATED`, or a tuple/set/list holding one."""
    if isinstance(node, ast.Attribute) and _terminal_name(node.value) == "Family":
        return True
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and any(_names_family(e) for e in node.elts)


def _kind_strings(node: ast.AST) -> bool:
    """A string constant that names a variant or a family, or a tuple/set/list of them."""
    if isinstance(node, ast.Constant):
        return node.value in KIND_NAMES
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and any(_kind_strings(e) for e in node.elts)


def _class_names(node: ast.AST) -> list[str]:
    """The classes an isinstance/issubclass second argument names: `C`, `m.C`, `(A, B)`, `A | B`."""
    if isinstance(node, ast.Tuple):
        return [n for e in node.elts for n in _class_names(e)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _class_names(node.left) + _class_names(node.right)
    if isinstance(node, ast.Name):
        return [node.id]
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    # `nn.GELU` is torch's class, not the registry's GELU; `modules.MoEFFN` is ours.
    return [node.attr] if isinstance(node, ast.Attribute) and _terminal_name(root) not in ("nn", "torch") else []


def kind_branches(source: str, kind_classes: frozenset[str]) -> list[tuple[int, str]]:
    """Every place `source` branches on the kind of FFN: (line, what it does).

    A comparison with a `Family` member (or with a variant or family name, against something
    called variant or family), an isinstance/issubclass against a variant class or an FFN
    module class, and a read of `.is_moe` or `.is_routed`.
    """
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names_family(o) for o in operands):
                found.append((node.lineno, "compares a Family member"))
            elif any(_kind_strings(o) for o in operands) and any(
                re.search("variant|family", _terminal_name(o)) for o in operands if not _kind_strings(o)
            ):
                found.append((node.lineno, "compares a variant or family name"))
        elif isinstance(node, ast.Call) and _terminal_name(node.func) in ("isinstance", "issubclass") and len(node.args) == 2:
            hit = sorted(set(_class_names(node.args[1])) & kind_classes)
            if hit:
                found.append((node.lineno, f"{_terminal_name(node.func)} against {', '.join(hit)}"))
        elif isinstance(node, ast.Attribute) and node.attr in ("is_moe", "is_routed") and isinstance(node.ctx, ast.Load):
            found.append((node.lineno, f"reads .{node.attr}"))
    return sorted(found)


def _subclasses(cls: type) -> set[type]:
    return {cls} | {s for sub in cls.__subclasses__() for s in _subclasses(sub)}


def _kind_classes() -> frozenset[str]:
    """Every variant class of the registry and every module class this package builds (each
    says how the trace names its steps: the block, the attention modules, every FFN module), by name."""
    # NamedSteps itself is no kind: asking whether this package built a module is asking where it comes from.
    built_here = _subclasses(NamedSteps) - {NamedSteps}
    return frozenset(c.__name__ for c in _subclasses(Variant) | _subclasses(FFNModule) | built_here)


KIND_NAMES = frozenset(VARIANTS) | frozenset(f.value for f in Family)

# The branches on variant kind that stand outside ffn_cli/variants/, each with the reason it
# stands: (file, the line's text, reason), a line as often as it occurs. A branch not listed
# fails the test below, and so does a listed one that is gone, so the list only shrinks. None
# stands now: the trace asks a module it built how its steps are named (`step_naming`) and
# which FFN it runs (`registry_ffn`), and a variant which module it builds (`torch_module`).
ALLOWED_KIND_BRANCHES: list[tuple[str, str, str]] = []


def _package_kind_branches() -> list[tuple[str, str, str]]:
    classes = _kind_classes()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        if relative.startswith("ffn_cli/variants/"):
            continue
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for line, what in kind_branches(source, classes):
            found.append((relative, lines[line - 1].strip(), what))
    return found


def test_no_module_outside_the_registry_branches_on_variant_kind() -> None:
    found = Counter((path, line) for path, line, _ in _package_kind_branches())
    allowed = Counter((path, line) for path, line, _ in ALLOWED_KIND_BRANCHES)
    new = [f"{path}: {line}" for path, line in (found - allowed).elements()]
    gone = [f"{path}: {line}" for path, line in (allowed - found).elements()]
    assert new == [], "branches on the kind of FFN outside ffn_cli/variants/: make them variant methods, or allow one with a reason"
    assert gone == [], "allowed branches that are no longer there: drop them from ALLOWED_KIND_BRANCHES"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('if spec.variant == "moe":\n    pass', "compares a variant or family name"),
        ('ok = "gated" != info.family', "compares a variant or family name"),
        ("ok = v.family in (Family.DENSE, Family.GATED)", "compares a Family member"),
        ("ok = variants.Family.MOE is family", "compares a Family member"),
        ("ok = isinstance(v, SingleFFN | MixtureVariant)", "isinstance against MixtureVariant, SingleFFN"),
        ("ok = isinstance(m, (nn.Linear, modules.MoEFFN))", "isinstance against MoEFFN"),
        ("ok = isinstance(m, TransformerBlock)", "isinstance against TransformerBlock"),
        ("ok = isinstance(m, (SelfAttention, LatentAttention))", "isinstance against LatentAttention, SelfAttention"),
        ("ok = issubclass(type(v), RoutedMoE)", "issubclass against RoutedMoE"),
        ("ok = spec.is_moe", "reads .is_moe"),
        ("ok = [s for s in specs if s.mixture.is_routed]", "reads .is_routed"),
    ],
)
def test_the_kind_check_catches_a_new_branch(source: str, expected: str) -> None:
    assert kind_branches(source, _kind_classes()) == [(1, expected)]


@pytest.mark.parametrize(
    "source",
    [
        'ok = spec.activation == "relu"',  # an activation name, not the variant's
        "ok = isinstance(m, nn.GELU)",  # torch's GELU, not the registry's
        "ok = isinstance(m, nn.Linear)",
        "ok = v.family.value",  # showing the family is fine; branching on it is not
        "def is_moe(self) -> bool: ...",
        'ok = name == "relu"',
    ],
)
def test_the_kind_check_passes_what_is_no_branch(source: str) -> None:
    assert kind_branches(source, _kind_classes()) == []


def _steps(module: torch.nn.Module) -> list[tuple[str, int, tuple[int, ...]]]:
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1))
    _, rec = record(module, x)
    return [(s.name, s.matmul_flops, s.output_shape) for s in group_steps(rec)]


def test_a_differently_ordered_dispatch_groups_into_the_same_steps() -> None:
    """Sorting the (token, slot) pairs by expert runs other ops in another order than one
    torch.where per expert; steps are labelled by region, so both trace alike."""
    spec = small_spec("moe", capacity_factor=1.0)
    by_expert = build_ffn(spec).eval()
    variant = VARIANTS["moe"]
    assert isinstance(variant, MixtureVariant)
    sorted_dispatch = MoEFFN(spec, variant, dispatch="sorted")
    sorted_dispatch.load_state_dict(by_expert.state_dict())
    sorted_dispatch.eval()
    x = torch.randn(2, 5, 16)
    torch.testing.assert_close(sorted_dispatch(x), by_expert(x))
    assert _steps(sorted_dispatch) == _steps(by_expert)
    names = [name for name, _, _ in _steps(by_expert)]
    assert names[:6] == ["flatten", "router", "softmax", "top_k", "renormalise", "dispatch"]


TORCH_FREE = [
    "ffn_cli",
    "ffn_cli.variants",
    "ffn_cli.spec",
    "ffn_cli.accounting",
    "ffn_cli.attention",
    "ffn_cli.models",
    "ffn_cli.configs",
    "ffn_cli.costs",
    "ffn_cli.costs.roofline",
    "ffn_cli.regions",
    "ffn_cli.render.params.report",
    "ffn_cli.render.params.comparison",
    "ffn_cli.render.params.model",
    "ffn_cli.render.params.presets",
    "ffn_cli.render.variants",
    "ffn_cli.render.trace",
    "ffn_cli.render.bench",
    "ffn_cli.render.parallel",
    "ffn_cli.tracing.result",
    "ffn_cli.benchmark.result",
    "ffn_cli.parallel.result",
    "ffn_cli.parallel.accounting",
]


@pytest.mark.parametrize("module", TORCH_FREE)
def test_pure_modules_never_import_torch(module: str) -> None:
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent)
    assert out.stdout.strip() == "False", module


@pytest.mark.parametrize("bias", [True, False])
def test_header_formula_names_exactly_the_biases_the_module_has(bias: bool) -> None:
    """Read from the built module's own parameters: `b_up` in the formula iff `up_proj.bias` exists."""
    for name, variant in VARIANTS.items():
        if not isinstance(variant, SingleFFN):
            continue
        spec = FFNSpec(variant=name, d_model=8, bias=bias)
        with torch.device("meta"):
            module = build_ffn(spec, device="meta")
        built = {n.removesuffix("_proj.bias") for n, _ in module.named_parameters() if n.endswith("_proj.bias")}
        shown = set(re.findall(r"b_(\w+)", variant.header_formula(spec)))
        assert shown == built, (name, bias)


def test_the_spec_satisfies_what_the_variants_read_of_it() -> None:
    """Every attribute the FFNShape Protocol names, FFNSpec has (the variants' only view of it),
    and no variant module imports ffn_cli.spec, even for type checking."""
    import ast
    import inspect

    from ffn_cli.spec import FFNSpec
    from ffn_cli.variants.shape import FFNShape

    names = [n for n, v in vars(FFNShape).items() if isinstance(v, property)]
    spec = FFNSpec(variant="moe")
    assert len(names) >= 10 and all(hasattr(spec, n) for n in names)
    for path in PACKAGE.joinpath("variants").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert "ffn_cli.spec" not in imported, path.name
    assert inspect.signature(VARIANTS["relu"].param_tensors).parameters["spec"].annotation == "FFNShape"


def test_the_registry_names_every_variant_class_where_it_lives() -> None:
    """Each concrete variant class in ffn_cli/variants is listed under its own name, and each
    entry's class answers to it: the table and the files cannot drift apart."""
    import importlib
    import inspect
    import pkgutil

    import ffn_cli.variants as package

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for cls_name, cls in vars(module).items():
            if inspect.isclass(cls) and issubclass(cls, Variant) and cls.__module__ == module.__name__ and "name" in vars(cls):
                found[cls.name] = f"{module.__name__}:{cls_name}"
    assert found == {name: VARIANTS.where(name) for name in VARIANTS}
    for name in VARIANTS:
        assert VARIANTS[name].name == name
        assert VARIANTS[name] is VARIANTS[name]  # one object per variant
    with pytest.raises(KeyError):
        VARIANTS["swiglu2"]
    assert "swiglu2" not in VARIANTS and VARIANTS.get("swiglu2") is None
