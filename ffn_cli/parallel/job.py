"""One parallel run as a value: its mode (tp or ep), spec, world size and device, validated
before any process starts; the torchrun environment; the input every rank and the unsharded
module see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.distributed as dist
from torch import Tensor

from ffn_cli.accounting import DTYPE_BYTES, total_params
from ffn_cli.device import preflight
from ffn_cli.device_name import parse_device_name
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.modules import resolve_dtype
from ffn_cli.parallel.accounting import MAX_WORLD_SIZE, check_parallel
from ffn_cli.parallel.environment import torchrun_env
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import FFNSpec, check_int

__all__ = ["MAX_CPU_RANKS", "Mode", "ParallelJob", "check_devices", "is_primary_process", "make_input", "make_job", "under_torchrun"]

Mode = Literal["tp", "ep"]

# Spawned CPU ranks beyond this only fight over cores: gloo ranks are processes on this machine.
MAX_CPU_RANKS = 64


@dataclass(frozen=True)
class ParallelJob:
    mode: Mode
    spec: FFNSpec
    world_size: int
    batch: int
    seq_len: int
    dtype: str
    device_type: str  # "cpu" or "cuda"
    seed: int
    timeout_s: float
    warmup_ms: float = 0.0
    repeats: int = 0  # > 0: time the forward instead of checking it

    @property
    def backend(self) -> str:
        return "nccl" if self.device_type == "cuda" else "gloo"


def under_torchrun() -> bool:
    """True when torchrun (or any launcher setting RANK, WORLD_SIZE, LOCAL_RANK) started this
    process; a half-set or inconsistent set of them is refused (parallel/environment.py)."""
    return torchrun_env() is not None


def is_primary_process() -> bool:
    """Whether this process should print: always outside torchrun, rank 0 under it."""
    env = torchrun_env()
    return env is None or env.rank == 0


def make_input(batch: int, seq_len: int, d_model: int, *, seed: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """The (B, T, d) input every rank and the unsharded module see: drawn on the CPU from `seed`."""
    generator = torch.Generator(device="cpu").manual_seed(stream_seed(seed, Stream.INPUT))
    return torch.randn(batch, seq_len, d_model, generator=generator).to(device=device, dtype=dtype)


def _device_type(device: str, option: str) -> str:
    kind = parse_device_name(device)[0]
    if kind in ("cpu", "cuda"):
        return kind
    raise FFNError(
        "device", device, _("--{option} runs real ranks: use cpu (gloo) or cuda (NCCL, one device per rank)").format(option=option)
    )


def check_devices(world_size: int, device_type: str, option: str = "tp") -> None:
    """Refuse what cannot run here: no CUDA, or more NCCL ranks than visible devices."""
    if device_type == "cpu":
        if world_size > MAX_CPU_RANKS:
            raise FFNRuntimeError(
                _("--{option} {world_size}: at most {max_cpu_ranks} gloo ranks on one machine").format(
                    option=option, world_size=world_size, max_cpu_ranks=MAX_CPU_RANKS
                )
            )
        return
    if not torch.cuda.is_available() or not dist.is_nccl_available():
        raise FFNRuntimeError(
            _("--{option} {world_size} --device cuda: CUDA with NCCL is not available here; use --device cpu (gloo)").format(
                option=option, world_size=world_size
            )
        )
    env = torchrun_env()
    local = env.local_world_size if env is not None else world_size
    count = torch.cuda.device_count()
    if local > count:
        message = _(
            "--{option} {world_size}: NCCL needs one CUDA device per rank and {count} are visible; use --{option} {count} or fewer"
        ).format(option=option, world_size=world_size, count=count)
        raise FFNRuntimeError(message)


def make_job(mode: Mode, spec: FFNSpec, world_size: int, **kw: Any) -> ParallelJob:
    env = torchrun_env()  # a stale or half-set torchrun environment is refused before anything runs
    check_int(mode, world_size, maximum=MAX_WORLD_SIZE)
    check_parallel(spec, **{mode: world_size})
    check_int("batch", kw["batch"])
    check_int("seq_len", kw["seq_len"])
    check_int("seed", kw["seed"], minimum=0, maximum=2**63 - 1)
    resolve_dtype(kw["dtype"])
    device_type = _device_type(kw.pop("device"), mode)
    check_devices(world_size, device_type, mode)
    _preflight(spec, world_size, device_type, kw["dtype"])
    if env is not None and env.world_size != world_size:
        raise FFNError(
            mode, world_size, _("must equal WORLD_SIZE={world_size} set by torchrun (--nproc-per-node)").format(world_size=env.world_size)
        )
    return ParallelJob(mode, spec, world_size, device_type=device_type, **kw)


def _preflight(spec: FFNSpec, world_size: int, device_type: str, dtype: str) -> None:
    """Every rank builds the full module to cut its shard from: N copies on the CPU, one per GPU.

    A launcher spawning CUDA ranks skips it, so that it never creates a CUDA context of its own.
    """
    if device_type == "cuda" and not under_torchrun():
        return
    copies = world_size if device_type == "cpu" and not under_torchrun() else 1
    needed = 2 * copies * total_params(spec) * DTYPE_BYTES[dtype]  # the full weights and the shard, with margin
    env = torchrun_env()
    device = torch.device("cpu") if device_type == "cpu" or env is None else torch.device("cuda", env.local_rank)
    preflight(
        needed,
        device,
        _("{count} ranks of {variant} (each builds the full module)").format(count=world_size, variant=spec.variant),
        meta_hint=False,
    )
