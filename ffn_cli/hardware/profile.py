"""A device's measured profile: what `ffn hardware --measure` timed on it, saved as JSON.

Pure Python (no torch): `ffn params --gpu this` loads it without importing torch. A profile
holds, per dtype, the median time of `F.linear` over a grid of (M, N, K) shapes (tokens M, out
N, in K) from decode-thin to prefill-square, cold cache; the time of each elementwise op an FFN
runs over a grid of sizes; the best copy bandwidth; the fixed cost of one op call and of one
FFN call per variant. Each time is that of the fastest of the measurement's passes. It is
stored under the user's cache directory ($XDG_CACHE_HOME/ffn/profiles/NAME.json, else
~/.cache/ffn/profiles/NAME.json).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ffn_cli.errors import FFNRuntimeError
from ffn_cli.hardware.gpus import GPU
from ffn_cli.hardware.profile_check import check_profile_data
from ffn_cli.i18n import _
from ffn_cli.outputs import destination_problem, write_text

__all__ = [
    "FORMAT",
    "PROFILE_NAME",
    "DeviceProfile",
    "ElementwisePoint",
    "GemmPoint",
    "ProfileError",
    "check_profile_target",
    "find_profile",
    "load_profile",
    "profile_path",
    "profiles_dir",
    "save_profile",
]

FORMAT = 1  # bumped when what is stored changes: an older file is refused, not misread
PROFILE_NAME = "this"  # what --gpu takes for the machine it was measured on
PROFILE_ROOM_BYTES = 1 << 20  # a profile is tens of kB: a folder with less free space than this is full


class ProfileError(RuntimeError):
    """No profile to read, or one that does not read: the message says what to run."""


@dataclass(frozen=True)
class GemmPoint:
    """One product (M, K) @ (K, N)ᵀ as nn.Linear runs it: its median time per call in the
    fastest pass, and how much slower the slowest pass was (a fraction; 0 with one pass)."""

    m: int
    n: int
    k: int
    seconds: float
    spread: float = 0.0

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def tflops(self) -> float:
        return self.flops / self.seconds / 1e12


@dataclass(frozen=True)
class ElementwisePoint:
    """One elementwise op over `elements` outputs: its median time per call in the fastest
    pass, and how much slower the slowest pass was."""

    elements: int
    seconds: float
    spread: float = 0.0


@dataclass(frozen=True)
class DeviceProfile:
    """What one device measured. gemm: dtype (fp32, bf16, …) → grid; elementwise: dtype → op
    (relu, gelu, silu, …, mul, add) → sizes; ffn_call_s: variant → the fixed cost of one call
    of its module beyond its ops (Python, module calls, regions)."""

    name: str
    device: str  # "cpu" or "cuda"
    device_name: str
    threads: int
    torch_version: str
    measured_utc: str
    memory_bytes: int | None
    cache: str  # how the GEMMs were timed: "cold" (cache flushed between calls)
    copy_gbps: float  # the best copy, read + write bytes over its time
    op_call_s: float  # one op on a one-element tensor: the dispatch cost
    gemm: dict[str, tuple[GemmPoint, ...]]
    elementwise: dict[str, dict[str, tuple[ElementwisePoint, ...]]]
    ffn_call_s: dict[str, float] = field(default_factory=dict)
    seconds_taken: float = 0.0
    passes: int = 1  # over the whole grid; each point is its fastest pass

    def spreads(self) -> list[float]:
        """Every point's slowest pass over its fastest, less one: how steady the device was."""
        gemm = [p.spread for grid in self.gemm.values() for p in grid]
        return gemm + [p.spread for ops in self.elementwise.values() for grid in ops.values() for p in grid]

    @property
    def dtypes(self) -> list[str]:
        return list(self.gemm)

    def peak_tflops(self, dtype: str) -> float | None:
        """The best rate over the grid: the roofline's compute ceiling for this dtype."""
        points = self.gemm.get(dtype)
        return max(p.tflops for p in points) if points else None

    def as_gpu(self) -> GPU:
        """The profile as a row of the GPU table: its measured peaks and copy bandwidth."""
        rates = {d: r for d in self.gemm if (r := self.peak_tflops(d)) is not None}
        memory = self.memory_bytes or 0
        return GPU(
            self.name,
            _("{device} (measured)").format(device=self.device_name),
            "",
            memory / 1e9,
            self.copy_gbps,
            rates,
            "measured",
        )

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: object) -> DeviceProfile:
        """The profile a JSON value holds, every field checked (profile_check.DamagedProfile names
        the first field that is not as ffn writes it)."""
        if isinstance(data, dict) and data.get("format") != FORMAT:
            raise ValueError(f"profile format {data.get('format')!r}, this ffn reads {FORMAT}")
        fields = {k: v for k, v in check_profile_data(data).items() if k != "format"}
        fields["gemm"] = {d: tuple(GemmPoint(**p) for p in points) for d, points in fields["gemm"].items()}
        fields["elementwise"] = {
            d: {op: tuple(ElementwisePoint(**p) for p in points) for op, points in ops.items()} for d, ops in fields["elementwise"].items()
        }
        return cls(**fields)


def profiles_dir() -> Path:
    """$XDG_CACHE_HOME/ffn/profiles, or ~/.cache/ffn/profiles when XDG_CACHE_HOME is unset or empty."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ffn" / "profiles"


def profile_path(name: str = PROFILE_NAME) -> Path:
    return profiles_dir() / f"{name}.json"


def check_profile_target(name: str = PROFILE_NAME) -> Path:
    """Where `save_profile` will write, made ready and checked before the measurement spends its
    minutes: a cache path that is a file, a read-only or full folder, a profile that is a folder
    are each one line (FFNRuntimeError) now, not at the end."""
    path = profile_path(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(path, exc.strerror or str(exc)) from None
    problem = destination_problem(path, room_bytes=PROFILE_ROOM_BYTES)
    if problem is not None:
        raise _unwritable(path, problem)
    return path


def save_profile(profile: DeviceProfile) -> Path:
    """Written whole by ffn_cli.outputs (an exclusive temporary file renamed over the profile): a
    reader never sees half a profile, and nothing is left behind when the write fails."""
    path = check_profile_target(profile.name)
    return write_text(path, json.dumps(profile.to_dict(), indent=1) + "\n", option="measure")


def _unwritable(path: Path, why: str) -> FFNRuntimeError:
    return FFNRuntimeError(_("cannot write the profile to {path}: {why}").format(path=path, why=why))


def load_profile(name: str = PROFILE_NAME) -> DeviceProfile:
    """The saved profile, or a one-line error saying how to make one."""
    path = profile_path(name)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileError(
            _("no measured profile of this machine at {path}: run `ffn hardware --measure` first").format(path=path)
        ) from None
    except OSError as exc:
        raise ProfileError(_("cannot read the profile {path}: {why}").format(path=path, why=exc.strerror or exc)) from None
    try:
        return DeviceProfile.from_dict(json.loads(text))
    except (ValueError, RecursionError) as exc:  # not JSON (or nested past reading), a field that is not as written, another version's
        raise ProfileError(
            _("the profile {path} does not read ({why}): run `ffn hardware --measure` again").format(path=path, why=exc)
        ) from None


def find_profile(name: str = PROFILE_NAME) -> DeviceProfile | None:
    """The saved profile when there is one that reads, else None (a bench shows no prediction)."""
    try:
        return load_profile(name)
    except ProfileError:
        return None
