"""FlopCounterMode's count of transformers' own model, module by module: the second path the
layout's FLOPs are held to."""

from __future__ import annotations

from typing import Any


def module_flops(config: dict[str, Any], input_ids: Any) -> dict[str, int]:
    """The FLOPs of one forward of `input_ids` through the causal LM transformers builds from
    `config`, by module, named from the decoder down ("layers.0.self_attn")."""
    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode

    # no parameter asks for a gradient: FlopCounterMode's module tracker hooks autograd on them
    # (DBRX passes views of its expert weights as arguments)
    # eager experts: a loop of matmuls FlopCounterMode counts (a grouped matmul it may not)
    built = transformers.AutoConfig.for_model(**config)
    model = transformers.AutoModelForCausalLM.from_config(built, experts_implementation="eager").eval().requires_grad_(False)
    prefix = f"{type(model).__name__}.model."
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(input_ids)
    return {name.removeprefix(prefix): sum(c.values()) for name, c in counter.get_flop_counts().items()}
