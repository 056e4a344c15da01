"""What an added Python symbol reaches through code that did not change. Pure.

An added function runs only where something calls it. Of its users in the head's link
graph (selection.links.calls):

- a user that changed in the same change set (added too, or modified to call it) is mapped
  on its own: `Tensor.cholesky`, added to call the added `_linalg_utils.cholesky`, is what
  links that function's callers, and a path through it is not followed a second time;
- a use that constructs the method's class is how every method of a constructed class is
  reached (`Module._apply` constructs `torch.nn.Parameter`, so each `Tensor` method is its
  use). For a method added to `Tensor` in Python whose name is an ATen op, such a use ran,
  before the change, the C method `TensorBase` defines for that op: it now reaches what
  ran that ATen op (observed where recorded, its dispatching entries statically);
- every other use (a call naming the method, `x.cholesky()`; a re-export that now binds
  the new function, `from torch._linalg_utils import cholesky` in `torch/__init__.py`) is
  unchanged code whose behaviour changed: it is linked, with the edge as evidence.

`None` when no use was set aside: the added function is then linked as it is (its graph
users, registration edges included, decide).
"""

from __future__ import annotations

from dataclasses import dataclass

from selection.links.base import Link, Step, Target
from selection.links.calls import TENSOR_MODULE, constructs_owner
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
    aten_ops: frozenset[str],
    added: Step,
) -> AddedReach | None:
    """The links of an added function `target` through its direct `users` (`changed`: the
    symbols the change set adds or modifies; `aten_ops`: the ATen op names the head knows;
    `added`: the change's own evidence step). None when every use is followed as it is."""
    kept: list[Edge] = []
    aside: list[str] = []
    shadowed = _shadowed_aten_op(target, aten_ops)
    constructed = False
    for edge in users:
        if edge.user in changed:
            aside.append(f"{edge.user.name} (changed too)")
        elif shadowed and constructs_owner(edge):
            aside.append(f"{edge.user.name} (constructs a Tensor: {edge.step.how})")
            constructed = True
        elif edge.kind == "registration":
            return None  # a kernel registered for an op: linked through the op as traced
        else:
            kept.append(edge)
    if not aside:
        return None
    links = [Link(edge.user, (added, edge.step), kinds=(edge.kind,)) for edge in kept]
    if constructed:
        step = Step(
            target.path,
            target.name,
            f"shadows TensorBase.{target.name.rsplit('.', 1)[1]}: a call on a tensor ran "
            f"ATen {shadowed} before",
        )
        links.append(Link(Target.aten(shadowed), (added, step)))
    return AddedReach(links, sorted(set(aside)))


def _shadowed_aten_op(target: Target, aten_ops: frozenset[str]) -> str:
    """`Tensor.cholesky` of torch/_tensor.py -> "cholesky" when ATen has that op; ""."""
    owner, _, method = target.name.partition(".")
    if target.path != TENSOR_MODULE or owner != TENSOR_CLASS or "." in method:
        return ""
    return method if method in aten_ops else ""
