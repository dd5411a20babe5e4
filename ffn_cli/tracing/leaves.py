"""The tensors inside an op's arguments or a call's result: nested tuples, lists, dicts
(NamedTuples, model outputs) and dataclasses walked with plain Python (torch's pytree helpers
are private)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from torch import Tensor

from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import _

__all__ = ["flowing_output", "labelled_leaves", "tensor_leaves"]


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
    elif _a_dataclass(tree):
        for f in dataclasses.fields(tree):
            yield from tensor_leaves(getattr(tree, f.name))


def labelled_leaves(tree: Any, where: str = "") -> Iterator[tuple[str, Tensor]]:
    """Every tensor in `tree` with where it sits, as Python indexes it: `[1]`, `['aux_loss']`, `[0][2]`."""
    if isinstance(tree, Tensor):
        yield where, tree
    elif isinstance(tree, tuple | list):
        for i, item in enumerate(tree):
            yield from labelled_leaves(item, f"{where}[{i}]")
    elif isinstance(tree, dict):
        for key, item in tree.items():
            yield from labelled_leaves(item, f"{where}[{key!r}]")
    elif _a_dataclass(tree):
        for f in dataclasses.fields(tree):
            yield from labelled_leaves(getattr(tree, f.name), f"{where}.{f.name}")


def _a_dataclass(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def flowing_output(out: Any, input_shape: tuple[int, ...]) -> tuple[str, Tensor, list[tuple[str, Tensor]]]:
    """Of a module's output, the tensor that flows on to the next layer and the others beside it.

    A tensor is itself. Of a tuple, dict or dataclass (Megatron's `(output, bias)`, a gate's
    `(l_aux, combine, dispatch)`, a model output): the first tensor shaped as the input, else
    the first over the input's tokens (its leading dims), else the first."""
    members = list(labelled_leaves(out))
    if not members:
        raise FFNRuntimeError(
            _("the forward returned {kind} with no tensor in it: ffn traces a tensor, or a tuple, list, dict or dataclass of them").format(
                kind=type(out).__name__
            )
        )
    tokens = input_shape[:-1]
    chosen = next(
        (m for m in members if tuple(m[1].shape) == input_shape),
        next((m for m in members if tuple(m[1].shape[:-1]) == tokens and m[1].dim() == len(input_shape)), members[0]),
    )
    return chosen[0], chosen[1], [m for m in members if m is not chosen]
