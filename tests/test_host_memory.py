"""The memory preflight sees the limits a process really runs under: the memory cgroup (v1, v2,
a parent's) and RLIMIT_AS, not only the machine's MemAvailable. Cgroup trees are built in a
temporary folder with the kernel's file names; RLIMIT_AS is set for real in a child process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ffn_cli.host_memory import host_memory_room

GiB = 1 << 30


def _proc(root: Path, cgroup: str, available_kib: int = 20 * GiB // 1024) -> Path:
    proc = root / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal: 25000000 kB\nMemAvailable: {available_kib} kB\n")
    (proc / "self" / "cgroup").write_text(cgroup)
    (proc / "self" / "status").write_text("VmSize: 1000 kB\n")
    return proc


def _write(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".", 1)).write_text(text)


def test_no_limit_leaves_available_ram(tmp_path: Path) -> None:
    proc = _proc(tmp_path, "0::/\n")
    _write(tmp_path / "sys", memory_max="max\n", memory_current=str(GiB))
    room = host_memory_room(proc, tmp_path / "sys")
    assert (room.bytes_, room.source) == (20 * GiB, "available RAM")


def test_a_cgroup_v2_limit_and_its_parents(tmp_path: Path) -> None:
    """6 GiB on the slice, 2 GiB of it used: 4 GiB, though the leaf itself sets no limit."""
    proc = _proc(tmp_path, "0::/user.slice/session-1.scope\n")
    sys_cgroup = tmp_path / "sys"
    _write(sys_cgroup, cgroup_controllers="memory\n", memory_max="max\n", memory_current="1")
    _write(sys_cgroup / "user.slice", memory_max=str(6 * GiB), memory_current=str(2 * GiB))
    _write(sys_cgroup / "user.slice" / "session-1.scope", memory_max="max\n", memory_current=str(GiB))
    room = host_memory_room(proc, sys_cgroup)
    assert (room.bytes_, room.source) == (4 * GiB, "memory cgroup limit")


def test_a_cgroup_v1_limit(tmp_path: Path) -> None:
    proc = _proc(tmp_path, "4:memory:/docker/abc\n3:cpu:/\n0::/\n")
    sys_cgroup = tmp_path / "sys"
    _write(sys_cgroup / "memory", memory_limit_in_bytes="9223372036854771712", memory_usage_in_bytes=str(GiB))
    _write(sys_cgroup / "memory" / "docker" / "abc", memory_limit_in_bytes=str(3 * GiB), memory_usage_in_bytes=str(GiB))
    assert host_memory_room(proc, sys_cgroup).bytes_ == 2 * GiB


def test_a_cgroup_namespace_shows_its_own_root(tmp_path: Path) -> None:
    """Inside a container the path is hidden ("/" or a path that is not mounted): the mount is it."""
    proc = _proc(tmp_path, "0::/../../hidden\n")
    sys_cgroup = tmp_path / "sys"
    _write(sys_cgroup, cgroup_controllers="memory\n", memory_max=str(6 * GiB), memory_current=str(5 * GiB))
    assert host_memory_room(proc, sys_cgroup).bytes_ == GiB


def test_rlimit_as_bounds_a_real_trace(tmp_path: Path) -> None:
    """Under an address-space limit 1 GiB above what the process has mapped, a 16384 × 65536
    trace (8 GiB of weights alone) is refused in one line, not killed."""
    code = """
import resource, sys
import torch  # mapped before the limit, as a run has it mapped
vm = next(int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmSize:'))
resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), resource.RLIM_INFINITY))
from ffn_cli.host_memory import host_memory_room
room = host_memory_room()
assert room.source == 'RLIMIT_AS' and room.bytes_ <= (1 << 30), room
sys.argv = ['ffn', 'trace', '--d-model', '16384', '--d-ff', '65536']
from ffn_cli.cli import main
main()
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: this trace needs about") and "free" in line, line
