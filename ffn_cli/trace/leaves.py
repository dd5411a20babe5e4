"""The tensors inside an op's arguments or a call's result: nested tuples, lists and dicts
walked with plain Python (torch's pytree helpers are private)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch import Tensor

__all__ = ["tensor_leaves"]


def tensor_leaves(tree: Any) -> Iterator[Tensor]:
    """Every tensor in `tree`, depth first, in order."""
    if isinstance(tree, Tensor):
        yield tree
    elif isinstance(tree, tuple | list):
        for item in tree:
            yield from tensor_leaves(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from tensor_leaves(item)
