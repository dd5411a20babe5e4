"""How much RAM this process may still allocate: the smallest of what the kernel, the memory
cgroup (v1 or v2, the process's own and every parent's) and RLIMIT_AS leave.

MemAvailable alone is the whole machine's: in a container or a systemd slice with a 6 GiB
limit the kernel's OOM killer ends the run long before MemAvailable runs out. Torch-free.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MemoryRoom", "host_memory_room"]

_NO_LIMIT = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2**63 − 1


@dataclass(frozen=True)
class MemoryRoom:
    """Bytes this process may allocate, and which bound set it."""

    bytes_: int
    source: str  # "available RAM", "memory cgroup limit", "RLIMIT_AS"


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None  # v2 writes "max" for no limit


def _meminfo_available(proc: Path) -> int | None:
    try:
        with open(proc / "meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _levels(mount: Path, path: str) -> list[Path]:
    """The cgroup's folder and each parent's up to the mount; in a container whose cgroup
    namespace hides the path, the mount itself is the process's cgroup."""
    parts = [p for p in path.strip().split("/") if p]
    folders = [mount.joinpath(*parts[:i]) for i in range(len(parts), -1, -1)]
    return [f for f in folders if f.is_dir()] or [mount]


def _cgroup_room(proc: Path, sys_cgroup: Path) -> int | None:
    """The least room (limit − usage) over the process's memory cgroup and its parents."""
    try:
        lines = (proc / "self" / "cgroup").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    rooms: list[int] = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":  # v2, the unified hierarchy
            mount, limit_file, usage_file = sys_cgroup, "memory.max", "memory.current"
            if (sys_cgroup / "unified").is_dir() and not (sys_cgroup / "cgroup.controllers").exists():
                mount = sys_cgroup / "unified"  # hybrid layout: v2 mounted beside v1
        elif "memory" in controllers.split(","):  # v1
            mount, limit_file, usage_file = sys_cgroup / "memory", "memory.limit_in_bytes", "memory.usage_in_bytes"
        else:
            continue
        for folder in _levels(mount, path):
            limit, usage = _read_int(folder / limit_file), _read_int(folder / usage_file)
            if limit is not None and limit < _NO_LIMIT and usage is not None:
                rooms.append(max(0, limit - usage))
    return min(rooms) if rooms else None


def _address_space_room(proc: Path) -> int | None:
    """RLIMIT_AS less the address space already mapped (VmSize), when a limit is set."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        for line in (proc / "self" / "status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmSize:"):
                return max(0, soft - int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        pass
    return soft


def host_memory_room(proc: Path = Path("/proc"), sys_cgroup: Path = Path("/sys/fs/cgroup")) -> MemoryRoom:
    """The smallest bound on what this process may allocate now."""
    available = _meminfo_available(proc)
    if available is None:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    bounds = [MemoryRoom(available, "available RAM")]
    cgroup = _cgroup_room(proc, sys_cgroup)
    if cgroup is not None:
        bounds.append(MemoryRoom(cgroup, "memory cgroup limit"))
    address = _address_space_room(proc)
    if address is not None:
        bounds.append(MemoryRoom(address, "RLIMIT_AS"))
    return min(bounds, key=lambda b: b.bytes_)
