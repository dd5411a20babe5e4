"""The header of a trace or bench of one real model's layer: which layer, what kind, which
options override the model, and what of the real layer is not built."""

from __future__ import annotations

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from ffn_cli.configs.layer_select import LayerChoice
from ffn_cli.i18n import N_, _, shown
from ffn_cli.render.fit import Wide
from ffn_cli.render.literal import visible

__all__ = ["model_layer_view"]

# Where the dtype came from, as LayerChoice.dtype_from names it.
_DTYPE_FROM = {"config": N_("config"), "default: the config names none": N_("default: the config names none")}


def model_layer_view(choice: LayerChoice) -> Panel:
    spec = choice.model.spec
    kind = choice.kind + (_(", sliding window {window:,}").format(window=choice.window) if choice.window is not None else "")
    kind += _(", attention in chunks of {chunk:,}").format(chunk=choice.chunk) if choice.chunk is not None else ""
    moe = " · " + _("MoE layers {moe} of {layers}").format(moe=len(spec.moe_layers), layers=spec.n_layers) if spec.moe_layers else ""
    said = _DTYPE_FROM.get(choice.dtype_from)  # --json keeps the English key; the view says it in the reader's language
    dtype = choice.dtype + ("" if choice.dtype_from == "--dtype" else f" ({_(said) if said else choice.dtype_from})")
    lines = [f"{choice.model.source} · {spec.model_type}{moe} · dtype {dtype}"]
    if choice.overrides:
        lines.append(_("overridden: {options}").format(options=", ".join(choice.overrides)))
    if choice.not_built:
        lines.append(_("not built: {parts}").format(parts=_(", ").join(shown(n) for n in choice.not_built)))
    title = _("{name} · layer {layer} of {layers} ({kind})").format(name=spec.name, layer=choice.layer, layers=spec.n_layers, kind=kind)
    # The name comes from the config's _name_or_path or the path typed: a title, never markup.
    # Names, activations and paths in the lines come from the config too: printed as written.
    body = Group(*(Wide(Text(visible(line))) for line in lines))  # a shape or a number with its unit stays whole
    return Panel(body, title=Text(visible(title)), title_align="left", expand=False)
