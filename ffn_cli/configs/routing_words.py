"""The routing rules that move no parameter (sigmoid scores, a bias correction, grouped top-k,
a weight scale), said in one place for every family that has them, in the reader's language.

As a str each rule list is the English that `--json` carries; `shown()` translates it.
"""

from __future__ import annotations

from ffn_cli.i18n import N_, Message

__all__ = ["TOP_K_SIGMOID", "routing_rules"]

# Llama 4: the router's top-k logits pass through a sigmoid, no softmax over the experts.
TOP_K_SIGMOID = Message(N_("sigmoid of the top-k logits"))


def routing_rules(
    *, sigmoid: bool = False, bias_corrected: bool = False, groups: int | None = None, top_groups: int | None = None, scale: float = 1.0
) -> str:
    """The rules in words, '' when there are none: each rule a Message, joined in one Message."""
    rules: list[Message] = []
    if sigmoid:
        rules.append(Message(N_("sigmoid scores")))
    if bias_corrected:
        rules.append(Message(N_("chosen with a bias correction")))
    if groups and groups > 1:
        rules.append(Message(N_("grouped: top-{top} of {groups} groups"), top=top_groups, groups=groups))
    if scale != 1.0:
        rules.append(Message(N_("weights × {scale}"), scale=f"{scale:g}"))
    if not rules:
        return ""
    said = rules[0]
    for rule in rules[1:]:
        said = Message(N_("{rules}, {rule}"), rules=said, rule=rule)
    return said
