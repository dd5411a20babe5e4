"""One FFN's forward on a named GPU (or the profile `this`), without a model around it: its
matmul FLOPs, its weights read once in the compute dtype, its input and output once, and,
where the GPU is a measured profile, the forecast from it. Pure Python."""

from __future__ import annotations

from dataclasses import dataclass

from ffn_cli.accounting import matmul_flops_per_token, total_params
from ffn_cli.costs.forward_ops import predict_forward
from ffn_cli.costs.roofline.model_pass import PartCost, PassCase
from ffn_cli.errors import FFNError
from ffn_cli.hardware.predict import Prediction
from ffn_cli.hardware.profile import PROFILE_NAME, load_profile
from ffn_cli.i18n import _
from ffn_cli.models.spec import ModelSpec
from ffn_cli.spec import FFNSpec

__all__ = ["FFNPass", "ffn_passes", "forecasts", "model_forecasts"]


@dataclass(frozen=True)
class FFNPass:
    case: PassCase
    cost: PartCost
    forecast: Prediction | None


def forecasts(gpu_key: str, spec: FFNSpec, cases: list[PassCase], dtype: str) -> list[Prediction | None] | None:
    """The profile's forecast of `spec`'s forward per case; None when the GPU is not the profile."""
    if gpu_key != PROFILE_NAME:
        return None
    profile = load_profile()
    return [predict_forward(profile, spec, c.tokens, dtype) for c in cases]


def ffn_passes(spec: FFNSpec, cases: list[PassCase], gpu_key: str, dtype: str) -> list[FFNPass]:
    if spec.info.experts_held(spec):
        raise FFNError("gpu", gpu_key, _("one mixture's roofline reads the experts its routing touches: name a model (--preset, --config)"))
    weights = total_params(spec) * cases[0].act_bytes
    costs = [
        PartCost(
            "FFN",
            c.tokens * matmul_flops_per_token(spec),
            weights,
            2 * c.tokens * spec.d_model * c.act_bytes,
            weight_params=total_params(spec),
        )
        for c in cases
    ]
    predicted = forecasts(gpu_key, spec, cases, dtype) or [None] * len(cases)
    return [FFNPass(c, cost, f) for c, cost, f in zip(cases, costs, predicted, strict=True)]


def model_forecasts(gpu_key: str, spec: ModelSpec, cases: list[PassCase], dtype: str) -> list[Prediction | None] | None:
    """The forecast of one layer's FFN (the MoE one in a MoE model, as the roofline's ffn_one_layer)."""
    ffn = spec.moe_ffn if spec.moe_ffn is not None and spec.moe_layers else next((spec.ffn_of(i) for i in spec.ffn_layers), None)
    if ffn is None:
        return None
    return forecasts(gpu_key, ffn, cases, dtype)
