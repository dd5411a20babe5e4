"""The options that shape an FFN, declared once, on FFNSpec's fields, for `trace`, `params` and `bench`.

`FFNOptions` is made from FFNSpec: one field per spec field that carries an `Option` (spec.py),
with the field's own default, type and parser, its flags, help and panel as the Option says;
`with_option_groups` gives a command these options and hands it one parsed `FFNOptions`.
`--variant` and `--d-model` take a comma list: params compares the variants, bench sweeps
both, trace runs one FFN and says so when given more. The command line types them as text; the
group reads it once, as it is made, into the tuples it holds.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import Field, field, fields, make_dataclass
from types import NoneType, UnionType
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer

from ffn_cli.cli.complete import complete_expert_variants, complete_variants
from ffn_cli.cli.numbers import parse_float, parse_int
from ffn_cli.cli.options import parse_int_tuple, parse_tuple
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.names import unknown_name
from ffn_cli.requests.lists import comma_text
from ffn_cli.spec import FFNSpec, Option, spec_options
from ffn_cli.variants import VARIANTS

__all__ = ["VALUES_ONLY", "FFNOptions", "ffn_options"]

# The shell completions an Option names (`complete=`).
_COMPLETERS: dict[str, Callable[..., list[str]]] = {"variants": complete_variants, "expert_variants": complete_expert_variants}
# A value typed as a number is parsed by the project's own parser (errors in plain words).
_PARSERS: dict[type, Callable[[str], Any]] = {int: parse_int, float: parse_float}


def _value_type(hint: Any) -> Any:
    """`int | None` → int: the type a value is parsed as."""
    if typing.get_origin(hint) in (typing.Union, UnionType):  # Optional[int] too
        (kind,) = (t for t in typing.get_args(hint) if t is not NoneType)
        return kind
    return hint


def _option_field(spec_field: Field[Any], opt: Option, hint: Any) -> tuple[str, Any, Any]:
    """One FFNOptions field: the spec field's type (text for a comma list, as the command line
    types it: the group holds the tuple read from it) and default, declared as the typer option
    the Option describes."""
    kind, default = (str, str(spec_field.default)) if opt.comma_list else (hint, spec_field.default)
    declaration = typer.Option(
        *opt.flags,
        help=opt.help,
        rich_help_panel=opt.panel,
        parser=_PARSERS.get(_value_type(kind)),
        autocompletion=_COMPLETERS[opt.complete] if opt.complete else None,
        show_default=spec_field.default is not None,  # None: the variant or a rule decides, as the help says
    )
    return opt.name, Annotated[kind, declaration], field(default=default)


def _panel_order(options: dict[str, Option]) -> list[str]:
    """The fields panel by panel, panels as they first appear, fields in FFNSpec's order within
    one: the order --help draws them in, and click reads them in."""
    panels = list(dict.fromkeys(opt.panel for opt in options.values()))
    return sorted(options, key=lambda name: panels.index(options[name].panel))


class _FFNOptions:
    """The FFN options as parsed: a tuple for each that takes a comma list, values otherwise."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # each class ffn_options() makes is a dataclass
    spec_class: ClassVar[type[FFNSpec]]
    spec_fields: ClassVar[dict[str, str]]  # option name → FFNSpec field: --fused is fused_gate_up
    comma_lists: ClassVar[frozenset[str]]  # the options typed as a comma list
    # What the methods and the requests (FFNChoice) read of the fields ffn_options() makes.
    variant: tuple[str, ...]
    d_model: tuple[int, ...]
    expert_variant: str
    fused: bool
    multiple_of: int
    given: frozenset[str]

    def __post_init__(self) -> None:
        """The command line's comma text read once, here: 'relu, swiglu' → ('relu', 'swiglu'),
        '512,1024' → (512, 1024); a tuple is taken as it is."""
        if isinstance(self.variant, str):
            object.__setattr__(self, "variant", _variant_names(self.variant))
        if isinstance(self.d_model, str):
            object.__setattr__(self, "d_model", parse_int_tuple("d_model", self.d_model))

    def variants(self) -> list[str]:
        """('relu', 'SwiGLU') → ['relu', 'swiglu']; ('all',) → every registry variant."""
        if any(_blank(name) for name in self.variant):
            why = _("choose from {variants}, a comma list of them, or all").format(variants=", ".join(VARIANTS))
            raise FFNError("variant", comma_text(self.variant), why)
        names = [name.lower() for name in self.variant]  # SwiGLU is swiglu
        if names == ["all"]:
            return list(VARIANTS)
        for name in names:
            if name not in VARIANTS:
                every = _("; all alone takes every one")
                raise unknown_name("variant", name, list(VARIANTS), what=N_("variant"), listed_by="ffn variants", extra=every)
        return names

    def spec(self, variant: str, d_model: int, **changes: Any) -> FFNSpec:
        """One FFNSpec from these options (FFNSpec validates); `changes` replace spec fields."""
        values = {field: getattr(self, name) for name, field in self.spec_fields.items() if name not in self.comma_lists}
        values["expert_variant"] = self.expert_variant.strip().lower()
        return self.spec_class(**{**values, "variant": variant, "d_model": d_model, **changes})

    def specs(self, **changes: Any) -> list[FFNSpec]:
        """Every variant at every width, variants outermost."""
        specs = [self.spec(v, d, **changes) for v in self.variants() for d in self.d_model]
        self.check_used(specs)
        return specs

    def check_used(self, specs: list[FFNSpec]) -> None:
        """Refuse an option the user typed that none of `specs`' variants reads (each variant
        declares the options it uses): `-v relu --top-k 3` would otherwise run and ignore it."""
        for name in sorted(self.given):
            field = self.spec_fields.get(name)
            if field is None or any(field in s.info.options_used(s) for s in specs):
                continue
            chosen = ", ".join(dict.fromkeys(s.variant for s in specs))
            users = [v for v, variant in VARIANTS.items() if field in variant.own_options]
            raise FFNError(
                name,
                comma_text(getattr(self, name)) if name in self.comma_lists else getattr(self, name),
                _("{chosen} does not use it (it applies to {users})").format(chosen=chosen, users=", ".join(users)),
            )

    def typed(self, names: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The options the user typed (among `names`, if given), with their values."""
        return {name: getattr(self, name) for name in sorted(self.given) if names is None or name in names}


def _variant_names(text: str) -> tuple[str, ...]:
    """--variant's comma text as names, checked by the registry when the request reads them.
    Blank text ('', ',') is held as typed, one blank name, refused then too, once the rules have
    had their say (beside a model it is an unknown variant)."""
    return (text,) if _blank(text) else parse_tuple("variant", text)


def _blank(text: str) -> bool:
    return not text.replace(",", "").strip()


def ffn_options(spec_class: type[FFNSpec] = FFNSpec) -> type[_FFNOptions]:
    """The option group of `spec_class`: a frozen dataclass with one field per spec field that has
    an Option, and `given`, the options that were typed."""
    options = spec_options(spec_class)
    hints = typing.get_type_hints(spec_class)
    by_name = {f.name: f for f in fields(spec_class)}
    option_fields = [_option_field(by_name[name], options[name], hints[name]) for name in _panel_order(options)]
    namespace = {
        "spec_class": spec_class,
        "spec_fields": {opt.name: name for name, opt in options.items()},
        "comma_lists": frozenset(opt.name for opt in options.values() if opt.comma_list),
        "__doc__": _FFNOptions.__doc__,
        "__module__": __name__,  # make_dataclass's own module= needs Python 3.12
    }
    return make_dataclass(
        "FFNOptions",
        [*option_fields, ("given", frozenset[str], field(default=frozenset()))],
        bases=(_FFNOptions,),
        namespace=namespace,
        frozen=True,
    )


if TYPE_CHECKING:  # a class made at import: the checker knows it by the base it is made on
    FFNOptions = _FFNOptions
else:
    FFNOptions = ffn_options()
# FFN options that change the module's values but no count: ffn params refuses them rather than ignore them.
VALUES_ONLY = tuple(opt.name for opt in spec_options().values() if opt.values_only)
