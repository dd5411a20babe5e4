"""`ffn params --explain`: why the FFN is about two thirds of a layer, and the ratio at hand."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.i18n import _, shown
from ffn_cli.models.explain import CLASSIC_RATIO, BlockExplain
from ffn_cli.models.tensor_notes import modules_said
from ffn_cli.render.format import fmt_count
from ffn_cli.render.params import common

__all__ = ["explain_view"]


def _ffn_line(e: BlockExplain) -> str:
    weights = _("{m}·d·d_ff = {m} · {d} · {d_ff} = {weights}").format(
        m=e.matrices, d=f"{e.d_model:,}", d_ff=f"{e.d_ff:,}", weights=fmt_count(e.ffn_weights)
    )
    if e.width != e.d_model:  # a latent MoE's experts read and write the latent L, not d
        weights = _("{m}·L·d_ff = {m} · {width} · {d_ff} = {weights}, in the latent L the experts read and write").format(
            m=e.matrices, width=f"{e.width:,}", d_ff=f"{e.d_ff:,}", weights=fmt_count(e.ffn_weights)
        )
    if e.ffn_one != e.ffn_weights:
        weights += _(" + {n} biases = {total}").format(n=fmt_count(e.ffn_one - e.ffn_weights), total=fmt_count(e.ffn_one))
    kind = {2: _("up and down"), 3: _("gate, up and down")}.get(e.matrices) or _("{m} matrices").format(m=e.matrices)
    against = _(", {times}× the classic 8·d² = {classic}").format(times=f"{e.over_classic:.3g}", classic=fmt_count(e.classic_ffn))
    if e.experts:
        return _("here, each expert ({kind}): {weights}").format(kind=kind, weights=weights) + against
    return _("here, the FFN ({kind}): {weights}").format(kind=kind, weights=weights) + against


def _attention_line(e: BlockExplain) -> str:
    a = e.attention
    formula, params = shown(e.attention_formula), a.params
    if e.attention_beside:  # tensors the layer holds beside its attention's projections (Qwen3.5's output gate)
        beside = sum(t.count for t in e.attention_beside)
        names = _(", ").join(shown(m) for m in modules_said(t.name for t in e.attention_beside))  # a tensor's note in the reader's language
        formula += _(" + {params} beside it ({names})").format(params=fmt_count(beside), names=names)
        params += beside
    line = _("its attention: {formula} = {params}").format(formula=formula, params=fmt_count(params))
    if e.grouped:
        line += _(" (grouped-query: K and V are {kv} wide, Q {q})").format(kv=f"{a.kv_dim:,}", q=f"{a.q_dim:,}")
    return line


def _mixer_line(e: BlockExplain) -> str:
    """A hybrid's mixer in its layers, or an encoder-decoder's cross-attention beside attention."""
    said = _("in its place in {n} of the {layers} layers, {kind}: {params}")
    if e.mixer_beside == e.mixer_layers:
        said = _("beside it in {n} of the {layers} layers, {kind}: {params}")
    elif e.mixer_beside:
        said = _("in {n} of the {layers} layers ({beside} of them beside it), {kind}: {params}")
    kind, params = shown(e.mixer_kind), fmt_count(e.mixer_params)
    return said.format(n=e.mixer_layers, layers=e.layers, beside=e.mixer_beside, kind=kind, params=params)


def _ratio_line(e: BlockExplain, ffn: int, attention: int, ratio: float, share: float) -> str:
    scope = _("one layer") if e.layers == 1 else _("all {n} layers").format(n=e.layers)
    if e.held_once:  # the totals count a weight run in several layers once
        scope = _("all {n} layers, each weight once however many layers run it").format(n=e.layers)
    said = _("{scope}: FFN {ffn} / attention {attention} = {ratio}, the FFN {share} of the two")
    if e.mixers:  # a hybrid's mixers count with its attention
        said = _("{scope}: FFN {ffn} / token mixing {attention} = {ratio}, the FFN {share} of the two")
    return said.format(
        scope=scope, ffn=fmt_count(ffn), attention=fmt_count(attention), ratio=common.ratio(ratio), share=common.pct(share, 1)
    )


_NEAR_CLASSIC = 0.1  # a share within 10 points of the classic 66.7 %: "about two thirds"


def explain_view(e: BlockExplain) -> RenderableType:
    classic = _(
        "the classic block (d_ff = 4·d, multi-head attention): the FFN's two matrices hold 2·d·4d = 8·d², "
        "attention's Q, K, V, O 4·d²: a ratio of {ratio}, the FFN {share} of the two"
    ).format(ratio=f"{CLASSIC_RATIO:g}", share=common.pct(CLASSIC_RATIO, CLASSIC_RATIO + 1))
    lines = [classic, _ffn_line(e), _attention_line(e)]
    if e.mixer_layers:
        lines.append(_mixer_line(e))
    lines.append(_ratio_line(e, e.ffn_params, e.attention_params, e.ratio, e.share))
    active = _ratio_line(e, e.ffn_active_params, e.attention_active, e.active_ratio, e.active_share)
    if e.experts:
        per_token = _("per token, {k} of {experts} experts").format(k=e.active_experts, experts=e.experts)
        lines.append(f"{per_token}{_(', ')}{active}")
    elif e.attention_active != e.attention_params:  # a cross-attention's k and v run once a source, not by a token
        lines.append(_("what a token runs, {active}").format(active=active))
    body = Text("\n".join(f"• {line}" for line in lines))
    # Far from the classic share (a MoE's 99 %), the title says the two thirds are the classic block's.
    near = abs(e.share - CLASSIC_RATIO / (CLASSIC_RATIO + 1)) < _NEAR_CLASSIC
    far = _("the FFN's share of a layer: two thirds in the classic block, and here")
    title = _("why the FFN is about two thirds of a layer") if near else far
    return Group(Text(title, style="bold"), body)
