"""The torchrun environment, read once and checked whole.

torchrun gives each rank RANK, WORLD_SIZE, LOCAL_RANK (with LOCAL_WORLD_SIZE, MASTER_ADDR and
MASTER_PORT); a shell that exported some of them by hand, or kept them from an earlier run, would
otherwise send ffn into a rendezvous that can never complete. All of the first three set means
this process is one rank of a launched group; some of them set is refused at once, naming what is
wrong, as is a value that is not a number or does not fit the others.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ffn_cli.errors import FFNError

__all__ = ["TORCHRUN_VARIABLES", "TorchrunEnv", "TorchrunEnvError", "torchrun_env"]

# The three that make a process a rank; the rest torchrun sets beside them.
_RANK_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
TORCHRUN_VARIABLES = (*_RANK_VARIABLES, "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_HINT = "unset RANK, WORLD_SIZE and LOCAL_RANK to let ffn start its own ranks, or launch with torchrun"


class TorchrunEnvError(FFNError):
    """A half-set or inconsistent torchrun environment, worded whole: what is wrong, then the way out."""

    def __init__(self, name: str, value: str | None, problem: str) -> None:
        self.option, self.value, self.allowed = name, value, ""
        ValueError.__init__(self, f"torchrun environment: {problem}; {_HINT}")


@dataclass(frozen=True)
class TorchrunEnv:
    """This process's place in a launched group."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int


def _whole(environ: Mapping[str, str], name: str, minimum: int) -> int:
    text = environ[name].strip()
    if not (text.isascii() and text.isdigit() and len(text) < 10) or int(text) < minimum:
        raise TorchrunEnvError(name, environ[name], f"{name}={environ[name]!r} is not a whole number ≥ {minimum}")
    return int(text)


def torchrun_env(environ: Mapping[str, str] | None = None) -> TorchrunEnv | None:
    """None outside a launched group; this rank's place in it when RANK, WORLD_SIZE and
    LOCAL_RANK are all set; FFNError for a half-set or inconsistent set."""
    environ = os.environ if environ is None else environ
    present = [name for name in _RANK_VARIABLES if name in environ]
    if not present:
        return None
    missing = [name for name in _RANK_VARIABLES if name not in environ]
    if missing:
        given = " ".join(f"{name}={environ[name]}" for name in present)
        raise TorchrunEnvError(missing[0], None, f"{given} set but {' and '.join(missing)} not (half set)")
    rank, world_size = _whole(environ, "RANK", 0), _whole(environ, "WORLD_SIZE", 1)
    local_rank = _whole(environ, "LOCAL_RANK", 0)
    local_world_size = _whole(environ, "LOCAL_WORLD_SIZE", 1) if "LOCAL_WORLD_SIZE" in environ else world_size
    if rank >= world_size:
        raise TorchrunEnvError("RANK", environ["RANK"], f"RANK={rank} is not below WORLD_SIZE={world_size}")
    if local_world_size > world_size:
        problem = f"LOCAL_WORLD_SIZE={local_world_size} exceeds WORLD_SIZE={world_size}"
        raise TorchrunEnvError("LOCAL_WORLD_SIZE", environ["LOCAL_WORLD_SIZE"], problem)
    if local_rank >= local_world_size or local_rank > rank:
        problem = f"LOCAL_RANK={local_rank} is not below LOCAL_WORLD_SIZE={local_world_size} and at most RANK={rank}"
        raise TorchrunEnvError("LOCAL_RANK", environ["LOCAL_RANK"], problem)
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if not environ.get(name, "").strip():
            raise TorchrunEnvError(name, environ.get(name), f"RANK, WORLD_SIZE and LOCAL_RANK set but {name} not: the ranks cannot meet")
    port = environ["MASTER_PORT"].strip()
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise TorchrunEnvError("MASTER_PORT", port, f"MASTER_PORT={environ['MASTER_PORT']!r} is not a TCP port (1 to 65535)")
    return TorchrunEnv(rank, world_size, local_rank, local_world_size)
