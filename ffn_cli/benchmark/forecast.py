"""The profile a bench run is forecast from: `this` (ffn hardware --measure) when it was measured
on a device of the kind the bench runs on; the forecast of one case from it (forward only)."""

from __future__ import annotations

from ffn_cli.costs.forward_ops import predict_forward
from ffn_cli.hardware.profile import PROFILE_NAME, DeviceProfile, ProfileError, find_profile, load_profile, profile_path
from ffn_cli.spec import FFNSpec

__all__ = ["predicted_ms", "profile_for", "unread_profile"]


def profile_for(device_type: str, named_gpu: str | None) -> DeviceProfile | None:
    """The saved profile, when --gpu names it or names nothing and it is of this device's kind."""
    if named_gpu is not None and named_gpu != PROFILE_NAME:
        return None
    profile = find_profile()
    return profile if profile is not None and profile.device == device_type else None


def unread_profile() -> str | None:
    """Why the saved profile does not read, when there is one: a run that did not ask for it
    forecasts nothing and says why in a note, rather than stop."""
    if not profile_path().exists():
        return None
    try:
        load_profile()
    except ProfileError as unread:
        return str(unread)
    return None


def predicted_ms(profile: DeviceProfile | None, spec: FFNSpec, tokens: int, dtype: str, *, backward: bool) -> float | None:
    """The forecast of one timed call in ms; None for a backward or a spec the profile cannot price."""
    if profile is None or backward:
        return None
    forecast = predict_forward(profile, spec, tokens, dtype)
    return None if forecast is None else forecast.seconds * 1e3
