"""selection.links.added on hand-made graph edges: which uses of an added function are
followed, which are set aside, and when the function is linked as it is."""

from __future__ import annotations

import ast

from selection.links.added import AddedReach, added_reach, called_by_name, shadowed_aten_op
from selection.links.base import Step, Target
from selection.links.graph import Edge

TENSOR = "torch/_tensor.py"
METHOD = Target.function(TENSOR, "Tensor.cholesky")
HELPER = Target.function("torch/_linalg_utils.py", "cholesky")
ADDED = Step(TENSOR, "Tensor.cholesky", "added")


def _call(user: str, used: Target, how: str, path: str = "torch/nn/modules/module.py") -> Edge:
    return Edge(Target.function(path, user), used, "call", Step(path, user, how))


CONSTRUCTION = _call("Module._apply", METHOD, "calls torch.nn.Parameter (line 983)")
NAMED = _call("lu_solve", METHOD, "calls A.cholesky (line 12)", "torch/functional.py")


def _linked(reach: AddedReach) -> set[str]:
    return {link.target.name for link in reach.links}


def test_a_user_that_changed_too_is_set_aside_and_the_unchanged_ones_are_kept() -> None:
    users = [_call("Tensor.cholesky", HELPER, "calls cholesky (line 905)", TENSOR), NAMED]
    reach = added_reach(HELPER, users, frozenset({METHOD}), "", False, ADDED)
    assert reach is not None
    assert _linked(reach) == {"lu_solve"}
    assert reach.set_aside == ["Tensor.cholesky (changed too)"]


def test_with_nothing_set_aside_the_function_is_linked_as_it_is() -> None:
    assert added_reach(HELPER, [NAMED], frozenset(), "", False, ADDED) is None


def test_a_kernel_registered_for_an_op_is_linked_through_the_registration() -> None:
    registration = Edge(Target.aten("cholesky"), HELPER, "registration", Step("", "", "reg"))
    changed = frozenset({Target.function(TENSOR, "Tensor.cholesky")})
    users = [registration, _call("Tensor.cholesky", HELPER, "calls cholesky", TENSOR)]
    assert added_reach(HELPER, users, changed, "", False, ADDED) is None


def test_a_shadowing_tensor_method_trades_constructions_for_its_aten_op() -> None:
    reach = added_reach(METHOD, [CONSTRUCTION, NAMED], frozenset(), "cholesky", True, ADDED)
    assert reach is not None
    assert _linked(reach) == {"lu_solve", "cholesky"}  # the named call, and ATen cholesky
    assert [t.kind for t in (link.target for link in reach.links)] == ["function", "aten"]
    assert reach.set_aside == [
        "Module._apply (constructs a Tensor: calls torch.nn.Parameter (line 983))"
    ]


def test_constructions_stay_uses_of_a_method_that_shadows_nothing() -> None:
    """A method of another class keeps the construction edges: they are its only way in."""
    assert added_reach(METHOD, [CONSTRUCTION], frozenset(), "", False, ADDED) is None


def test_a_dunder_or_property_over_an_aten_op_keeps_constructions_and_gains_the_op() -> None:
    """`a & b` or `x.real` names no method: constructions stay uses, beside ATen's op."""
    dunder = Target.function(TENSOR, "Tensor.__and__")
    construction = _call("Module._apply", dunder, "calls torch.nn.Parameter (line 983)")
    reach = added_reach(dunder, [construction], frozenset(), "__and__", False, ADDED)
    assert reach is not None and reach.set_aside == []
    assert _linked(reach) == {"Module._apply", "__and__"}


def test_a_shadowing_method_nothing_uses_yet_still_reaches_its_aten_op() -> None:
    reach = added_reach(METHOD, [], frozenset(), "cholesky", True, ADDED)
    assert reach is not None and _linked(reach) == {"cholesky"}


def test_an_edge_of_another_kind_naming_something_else_is_no_construction() -> None:
    alias = Edge(
        Target.entry("opinfo", "absolute"),
        METHOD,
        "callable",
        Step("", "", "method_variant defaults to torch.Tensor.absolute (alias 'absolute')"),
    )
    reach = added_reach(METHOD, [alias], frozenset(), "cholesky", True, ADDED)
    assert reach is not None and reach.set_aside == []
    assert _linked(reach) == {"absolute", "cholesky"}


TENSOR_SOURCE = """
class Tensor(torch._C.TensorBase):
    def cholesky(self, upper=False):
        raise RuntimeError("removed")

    def __and__(self, other):
        raise RuntimeError("removed")

    @property
    def real(self):
        raise RuntimeError("removed")
"""


def test_a_tensor_method_named_after_an_aten_op_shadows_it() -> None:
    ops = frozenset({"cholesky", "__and__", "real"})
    name = {m: Target.function(TENSOR, f"Tensor.{m}") for m in ("cholesky", "__and__", "real")}
    assert {m: shadowed_aten_op(t, ops) for m, t in name.items()} == {m: m for m in name}
    assert shadowed_aten_op(name["cholesky"], frozenset()) == ""
    other = Target.function("torch/nn/parameter.py", "Parameter.cholesky")
    assert shadowed_aten_op(other, ops) == ""


def test_only_a_plain_method_is_called_by_name() -> None:
    module = ast.parse(TENSOR_SOURCE)
    assert called_by_name(module, "cholesky")
    assert not called_by_name(module, "__and__")  # `a & b` names no method
    assert not called_by_name(module, "real")  # `x.real` is read, not called
    assert not called_by_name(module, "missing")
