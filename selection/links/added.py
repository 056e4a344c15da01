"""What an added Python function reaches through code that did not change. Pure.

An added function runs only where something calls it. Of its direct users in the head's
link graph (selection.links.calls):

- a user that changed in the same change set (added too, or modified to call it) and that
  the symbol link kind maps with links or a canary is mapped on its own: `Tensor.cholesky`,
  added to call the added `_linalg_utils.cholesky`, is what links that function's callers,
  and a path through it is not followed a second time;
- a method added to `Tensor` in Python whose name is an ATen op shadows the C method
  `TensorBase` defines for that op: it reaches what ran the op before (observed where
  recorded, its dispatching entries statically). Constructing a tensor is no use of a
  plain one (selection.links.calls.named_tensor_method: the graph has no such edge); a
  dunder or property keeps those uses (`a & b` and `x.real` are no named calls);
- every other use (a call naming the method, `x.cholesky()`; a re-export that now binds the
  new function, `from torch._linalg_utils import cholesky` in `torch/__init__.py`) is
  unchanged code whose behaviour changed: it is linked, with the edge as evidence.

`None` (link the added function as it is, through all its users) when no use is set aside
and no ATen op is shadowed, or when the function is registered as an op's kernel (the
registration edge then decides, as traced).
"""

from __future__ import annotations

from dataclasses import dataclass

from selection.links.base import Link, Step, Target
from selection.links.calls import TENSOR_MODULE
from selection.links.graph import Edge

TENSOR_CLASS = "Tensor"


@dataclass(frozen=True)
class AddedReach:
    links: list[Link]
    set_aside: list[str]  # the uses not followed, for the report ("Tensor.cholesky (changed too)")


def added_reach(
    target: Target,
    users: list[Edge],
    changed: frozenset[Target],
    shadowed: str,
    added: Step,
) -> AddedReach | None:
    """The links of an added function `target` through its direct `users`. `changed`: the
    symbols mapped on their own; `shadowed`: the ATen op a new `Tensor` method shadows
    (`shadowed_aten_op`), else ""; `added`: the change's own evidence step."""
    if any(edge.kind == "registration" for edge in users):
        return None
    kept: list[Edge] = []
    aside: list[str] = []
    for edge in users:
        if edge.user in changed:
            aside.append(f"{edge.user.name} (changed too)")
        else:
            kept.append(edge)
    if not aside and not shadowed:
        return None
    links = [Link(edge.user, (added, edge.step), kinds=(edge.kind,)) for edge in kept]
    if shadowed:
        method = target.name.rsplit(".", 1)[1]
        how = f"shadows TensorBase.{method}: a tensor's {method} ran ATen {shadowed} before"
        links.append(Link(Target.aten(shadowed), (added, Step(target.path, target.name, how))))
    return AddedReach(links, sorted(set(aside)))


def shadowed_aten_op(target: Target, aten_ops: frozenset[str]) -> str:
    """`Tensor.cholesky` (or `Tensor.__and__`) of torch/_tensor.py -> the ATen op of that
    name, which `TensorBase` implements in C; "" for anything else."""
    owner, _, method = target.name.partition(".")
    if target.path != TENSOR_MODULE or owner != TENSOR_CLASS or "." in method:
        return ""
    return method if method in aten_ops else ""
