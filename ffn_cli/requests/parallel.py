"""--rank-timeout, shared by the commands that start ranks (trace and bench under --tp / --ep):
how long the ranks may take before they are stopped, checked as the request is made."""

from __future__ import annotations

from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.requests.rules import Needs
from ffn_cli.values import is_finite_number

__all__ = ["MAX_RANK_TIMEOUT_S", "RANK_TIMEOUT_RULE", "check_rank_timeout"]

# A week: longer is no limit at all (and past what a timedelta of torch.distributed holds safely).
MAX_RANK_TIMEOUT_S = 7 * 24 * 3600

RANK_TIMEOUT_RULE = Needs("rank_timeout", ("tp", "ep"), N_("limits the ranks that --tp / --ep start: add one, or drop it"))


def check_rank_timeout(seconds: float | None) -> None:
    """None (the command's own limit) or a finite number of seconds in (0, a week]."""
    if seconds is None:
        return
    if not is_finite_number(seconds) or not 0 < seconds <= MAX_RANK_TIMEOUT_S:
        raise FFNError("rank_timeout", seconds, _("seconds, a number in (0, {max}]").format(max=MAX_RANK_TIMEOUT_S))
