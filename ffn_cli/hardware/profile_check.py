"""A saved profile read as untrusted input, field by field as a config is: every type, every time
finite and positive, every dtype one the table knows, every grid whole. The file may have been
edited by hand, cut short, or written by another version; what it holds is refused with the
field it is in (`gemm.fp32[3].seconds`), never carried into a forecast or a crash.

Pure Python: it checks the JSON's values and hands back the same values, checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ffn_cli.errors import elide
from ffn_cli.hardware.gpus import DTYPES
from ffn_cli.i18n import _
from ffn_cli.values import is_finite_number

__all__ = ["DEVICES", "DamagedProfile", "check_profile_data"]

DEVICES = ("cpu", "cuda")  # where ffn hardware --measure runs
CACHES = ("cold", "hot")
MAX_TEXT = 200  # characters of a name: a device's name, a torch version, a date

Checks = dict[str, Callable[[str, Any], Any]]  # a field's name → what checks its value (and gives it back)


class DamagedProfile(ValueError):
    """A field of the profile that does not hold what ffn writes there: `field` is its path."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(_("{field} {why}").format(field=field, why=why))
        self.field = field
        self.why = why


def _expected(field: str, value: object, what: str) -> DamagedProfile:
    return DamagedProfile(field, _("holds {value}, not {what}").format(value=elide(repr(value)), what=what))


def _above_zero(field: str, value: object, what: str) -> float:
    if not is_finite_number(value) or value <= 0:
        raise _expected(field, value, what)
    return float(value)


def _time(field: str, value: object) -> float:
    """A time in seconds: a finite number above zero (a zero or negative time forecasts nothing real)."""
    return _above_zero(field, value, _("a time in seconds above 0"))


def _rate(field: str, value: object) -> float:
    return _above_zero(field, value, _("a finite number above 0"))


def _at_least_zero(field: str, value: object) -> float:
    if not is_finite_number(value) or value < 0:
        raise _expected(field, value, _("a finite number of 0 or more"))
    return float(value)


def _count(field: str, value: object, least: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise _expected(field, value, _("a whole number of {least} or more").format(least=least))
    return value


def _text(field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        raise _expected(field, value, _("a text of 1 to {n} characters").format(n=MAX_TEXT))
    return value


def _choice(choices: tuple[str, ...]) -> Callable[[str, object], str]:
    def check(field: str, value: object) -> str:
        if value not in choices:
            raise _expected(field, value, _("one of {choices}").format(choices=", ".join(choices)))
        return str(value)

    return check


def _table(field: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        raise _expected(field, value, _("a table (a JSON object) with at least one entry"))
    return value


def _points(field: str, value: object) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise _expected(field, value, _("a list with at least one point"))
    return value


def _dtype(field: str, key: str) -> str:
    if key not in DTYPES:
        raise DamagedProfile(field, _("{value!r} is no dtype ffn knows ({dtypes})").format(value=key, dtypes=", ".join(DTYPES)))
    return key


def _fields(field: str, value: object, checks: Checks, optional: frozenset[str]) -> dict[str, Any]:
    """A JSON object holding exactly these fields (those in `optional` may be absent), each checked."""
    if not isinstance(value, dict):
        raise _expected(field, value, _("a table (a JSON object)"))
    for key in value:
        if key not in checks:
            raise DamagedProfile(f"{field}.{key}" if field else str(key), _("is no field of a profile"))
    missing = [key for key in checks if key not in value and key not in optional]
    if missing:
        raise DamagedProfile(f"{field}.{missing[0]}" if field else missing[0], _("is missing"))
    return {key: check(f"{field}.{key}" if field else key, value[key]) for key, check in checks.items() if key in value}


_GEMM_POINT: Checks = {"m": _count, "n": _count, "k": _count, "seconds": _time, "spread": _at_least_zero}
_ELEMENTWISE_POINT: Checks = {"elements": _count, "seconds": _time, "spread": _at_least_zero}
_OPTIONAL_POINT = frozenset({"spread"})


def _gemm_grid(field: str, value: object) -> list[dict[str, Any]]:
    """The points of one dtype: every (m, n, k) of the grid's axes once (the interpolation reads a whole grid)."""
    points = [_fields(f"{field}[{i}]", p, _GEMM_POINT, _OPTIONAL_POINT) for i, p in enumerate(_points(field, value))]
    shapes = [(p["m"], p["n"], p["k"]) for p in points]
    axes = [{s[i] for s in shapes} for i in range(3)]
    if len(set(shapes)) != len(shapes) or len(shapes) != len(axes[0]) * len(axes[1]) * len(axes[2]):
        raise DamagedProfile(field, _("is not a whole grid: each (m, n, k) of its sizes once"))
    return points


def _gemm(field: str, value: object) -> dict[str, list[dict[str, Any]]]:
    return {_dtype(f"{field}.{d}", d): _gemm_grid(f"{field}.{d}", grid) for d, grid in _table(field, value).items()}


def _op_sizes(field: str, value: object) -> list[dict[str, Any]]:
    points = [_fields(f"{field}[{i}]", p, _ELEMENTWISE_POINT, _OPTIONAL_POINT) for i, p in enumerate(_points(field, value))]
    if len({p["elements"] for p in points}) != len(points):
        raise DamagedProfile(field, _("is not a list of sizes: each size once"))
    return points


def _elementwise(field: str, value: object) -> dict[str, dict[str, list[dict[str, Any]]]]:
    return {
        _dtype(f"{field}.{d}", d): {op: _op_sizes(f"{field}.{d}.{op}", sizes) for op, sizes in _table(f"{field}.{d}", ops).items()}
        for d, ops in _table(field, value).items()
    }


def _call_costs(field: str, value: object) -> dict[str, float]:
    if not isinstance(value, dict):
        raise _expected(field, value, _("a table (a JSON object)"))
    return {str(name): _at_least_zero(f"{field}.{name}", s) for name, s in value.items()}


def _memory(field: str, value: object) -> int | None:
    return None if value is None else _count(field, value, least=0)


_PROFILE: Checks = {
    "format": lambda field, value: value,  # checked before the rest: another version's file is named as such
    "name": _text,
    "device": _choice(DEVICES),
    "device_name": _text,
    "threads": _count,
    "torch_version": _text,
    "measured_utc": _text,
    "memory_bytes": _memory,
    "cache": _choice(CACHES),
    "copy_gbps": _rate,
    "op_call_s": _time,
    "gemm": _gemm,
    "elementwise": _elementwise,
    "ffn_call_s": _call_costs,
    "seconds_taken": _at_least_zero,
    "passes": _count,
}
_OPTIONAL = frozenset({"ffn_call_s", "seconds_taken", "passes"})


def check_profile_data(data: object) -> dict[str, Any]:
    """The profile's fields, each checked (DamagedProfile names the first that is not as ffn writes it)."""
    if not isinstance(data, dict):
        raise _expected(_("the file"), data, _("a table (a JSON object)"))
    return _fields("", data, _PROFILE, _OPTIONAL)
