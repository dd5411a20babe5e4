"""`ffn hardware`: a checked HardwareRequest answered as the GPU table (every row, or the one
--gpu names, with this CPU as measured under --measure-cpu) or as a profile of this device,
measured and saved (--measure). The measuring is services/hardware_measure.py's, loaded only
when something is measured: the table alone never loads torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.hardware import GPUS
from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.services.environment import require_temp_dir
from ffn_cli.services.results import DeviceProfiled, GPUTable

if TYPE_CHECKING:
    from ffn_cli.benchmark.measure import ProgressFn
    from ffn_cli.requests.hardware import HardwareRequest

__all__ = ["hardware"]


def hardware(request: HardwareRequest, on_progress: ProgressFn | None = None) -> GPUTable | DeviceProfiled:
    """What `ffn hardware` answers for `request`; `on_progress` hears of each measurement of a
    profile (never while one runs)."""
    gpus = (resolve_gpu(request.gpu),) if request.gpu is not None else tuple(GPUS)
    if not (request.measure or request.measure_cpu):
        return GPUTable(gpus, None)
    require_temp_dir()  # before torch is imported
    from ffn_cli.services import hardware_measure  # torch: only to measure

    if request.measure:
        return hardware_measure.profile_device(request.threads, quick=request.quick, on_progress=on_progress)
    return GPUTable(gpus, hardware_measure.measure_cpu(request.dtype))
