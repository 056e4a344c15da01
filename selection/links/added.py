"""What an added Python function reaches through code that did not change. Pure.

An added function runs only where something calls it. Of its direct users in the head's
link graph (selection.links.calls):

- a user that changed in the same change set (added too, or modified to call it) and that
  the symbol link kind maps with links or a canary is mapped on its own: `Tensor.cholesky`,
  added to call the added `_linalg_utils.cholesky`, is what links that function's callers,
  and a path through it is not followed a second time;
- a method added to `Tensor` in Python whose name is an ATen op shadows the C method
  `TensorBase` defines for that op: it reaches what ran the op before (observed where
  recorded, its dispatching entries statically). When calls name it (no dunder, no
  property), a use that constructs a tensor is set aside: that is how every method of a
  constructed class is reached (`Module._apply` constructs `torch.nn.Parameter`, so each
  `Tensor` method is its use), and what such a use could call by name ran that op before.
  A dunder or property keeps those uses (`a & b` and `x.real` are no named calls);
- every other use (a call naming the method, `x.cholesky()`; a re-export that now binds the
  new function, `from torch._linalg_utils import cholesky` in `torch/__init__.py`) is
  unchanged code whose behaviour changed: it is linked, with the edge as evidence.

`None` (link the added function as it is, through all its users) when no use is set aside
and no ATen op is shadowed, or when the function is registered as an op's kernel (the
registration edge then decides, as traced).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from selection.links.base import Link, Step, Target
from selection.links.calls import TENSOR_MODULE, constructs_owner
from selection.links.graph import Edge
from selection.python.chains import last_name
from selection.python.summary import ACCESSOR_DECORATORS

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
    named: bool,
    added: Step,
) -> AddedReach | None:
    """The links of an added function `target` through its direct `users`. `changed`: the
    symbols mapped on their own; `shadowed`: the ATen op a new `Tensor` method shadows
    (`shadowed_aten_op`), else ""; `named`: whether calls name that method
    (`called_by_name`: only then are constructions set aside); `added`: the change's own
    evidence step."""
    if any(edge.kind == "registration" for edge in users):
        return None
    kept: list[Edge] = []
    aside: list[str] = []
    for edge in users:
        if edge.user in changed:
            aside.append(f"{edge.user.name} (changed too)")
        elif shadowed and named and constructs_owner(edge):
            aside.append(f"{edge.user.name} (constructs a Tensor: {edge.step.how})")
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


def called_by_name(module: ast.Module | None, method: str) -> bool:
    """Whether `Tensor.<method>` of the head's torch/_tensor.py (`module`) is a plain
    method: no dunder (operators and protocols call those without naming them) and no
    property or accessor decorator (`x.real` is read, not called)."""
    if module is None or (method.startswith("__") and method.endswith("__")):
        return False
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == TENSOR_CLASS:
            defs = [
                d
                for d in node.body
                if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == method
            ]
            return bool(defs) and not any(
                last_name(x) in ACCESSOR_DECORATORS for d in defs for x in d.decorator_list
            )
    return False
