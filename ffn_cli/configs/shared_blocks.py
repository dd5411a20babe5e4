"""Layers that run blocks whose weights an earlier layer holds, as transformers builds them:
Zamba's shared transformer blocks, one (Zamba) or `num_mem_blocks` in turn (Zamba2), each tied
across every layer that applies it. A layer that applies one computes it and keeps its own KV
cache, but holds no weight of it; read one by one, each would count the block again.

A shared block may hold one entry an application in a list (Zamba2's LoRA adapters on q, k, v
and gate_up_proj, `adapter_rank` wide): each application runs its own entry alone, so an
application's entry is its layer's, not the block's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from torch import nn

from ffn_cli.accounting import ParamTensor
from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import _

__all__ = ["SharedBlocks", "applied_layer", "shared_blocks"]


@dataclass(frozen=True)
class SharedBlocks:
    """Which layers run which earlier layer's blocks: `weights_from` maps a layer to the layer
    holding the weights it runs; `paths` are the layer's children that are the shared blocks;
    `applications` every layer that applies one, holders too, in order."""

    weights_from: dict[int, int]
    paths: tuple[str, ...]
    applications: tuple[int, ...]


def _outermost(paths: list[str]) -> tuple[str, ...]:
    return tuple(p for p in paths if not any(p.startswith(q + ".") for q in paths if q != p))


def shared_blocks(layers: list[nn.Module], source: str) -> SharedBlocks | None:
    """The blocks `layers` share, from the tensors each holds that an earlier one holds (or blocks
    each applied once, by their entries an application); None where there are none. Refused where
    a layer shares with more than one earlier layer, or where the layers share different children."""
    owner: dict[int, int] = {}  # a tensor's id: the first layer that holds it
    weights_from: dict[int, int] = {}
    paths: set[tuple[str, ...]] = set()
    for i, layer in enumerate(layers):
        seen = {id(p): owner[id(p)] for p in layer.parameters() if id(p) in owner}
        if seen:
            holders = set(seen.values())
            modules = [n for n, m in layer.named_modules() if n and any(True for _p in m.parameters())]
            whole = [n for n in modules if all(id(p) in seen for p in layer.get_submodule(n).parameters())]
            inside = {id(p) for n in _outermost(whole) for p in layer.get_submodule(n).parameters()}
            if len(holders) > 1:
                why = _("its layer {layer} shares tensors with {n} earlier layers: ffn cannot tell which block it runs")
                raise FFNRuntimeError(_("{source}: {why}").format(source=source, why=why.format(layer=i, n=len(holders))))
            if inside != set(seen):
                why = _("its layer {layer} shares a part of a module with an earlier layer: ffn sizes whole blocks shared")
                raise FFNRuntimeError(_("{source}: {why}").format(source=source, why=why.format(layer=i)))
            weights_from[i] = holders.pop()
            paths.add(_outermost(whole))
        for p in layer.parameters():
            owner.setdefault(id(p), i)
    if not weights_from:
        return _applied_once(layers)
    if len(paths) > 1:
        why = _("its layers share {n} different sets of blocks: ffn sizes one").format(n=len(paths))
        raise FFNRuntimeError(_("{source}: {why}").format(source=source, why=why))
    shared = next(iter(paths))
    applications = tuple(i for i, layer in enumerate(layers) if all(_has(layer, p) for p in shared))
    return SharedBlocks(weights_from, shared, applications)


def _applied_once(layers: list[nn.Module]) -> SharedBlocks | None:
    """Blocks each applied once (Zamba2 with as many blocks as hybrid layers): none tied, but each
    still holds one entry an application of every block (its adapters), the layer's own alone."""
    by_path: dict[str, list[int]] = {}
    for i, layer in enumerate(layers):
        for name, _child in layer.named_children():
            by_path.setdefault(name, []).append(i)
    for name, holders in by_path.items():
        block = layers[holders[0]].get_submodule(name)
        if any(isinstance(m, nn.ModuleList) and _per_application(m, len(holders)) for m in block.modules()):
            return SharedBlocks({}, (name,), tuple(holders))
    return None


def _has(layer: nn.Module, path: str) -> bool:
    try:
        layer.get_submodule(path)
    except AttributeError:
        return False
    return True


def _per_application(entries: nn.ModuleList, applications: int) -> bool:
    """A list with one entry an application of the block, each a stack of Linears (a LoRA adapter)
    or nothing (nn.Identity, an application of another block)."""
    if len(entries) != applications:
        return False
    stacks = [e for e in entries if not isinstance(e, nn.Identity)]
    return bool(stacks) and all(isinstance(e, nn.Sequential) and all(isinstance(c, nn.Linear) for c in e) for e in stacks)


def applied_layer(layer: nn.Module, index: int, blocks: SharedBlocks) -> tuple[nn.Module, tuple[ParamTensor, ...]]:
    """Layer `index`, an application of a shared block, as read: a copy (on meta) whose shared
    blocks hold no per-application list, and the tensors of this application's own entries
    (named by the list, without the application's index: each application's are alike)."""
    copied = copy.deepcopy(layer)
    slot = blocks.applications.index(index)
    own: list[ParamTensor] = []
    for path in blocks.paths:
        block = copied.get_submodule(path)
        lists = [(n, m) for n, m in block.named_modules() if isinstance(m, nn.ModuleList) and _per_application(m, len(blocks.applications))]
        for name, entries in lists:
            own += [ParamTensor(f"{path}.{name}.{sub}", tuple(p.shape)) for sub, p in entries[slot].named_parameters()]
            block.set_submodule(name, nn.ModuleList())
    return copied, tuple(own)
