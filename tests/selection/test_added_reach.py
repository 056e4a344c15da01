"""selection.links.added on hand-made graph edges: which uses of an added function are
followed, which are set aside, and when the function is linked as it is. (Constructing a
tensor makes no edge into a plain `Tensor` method: test_tensor_methods.py.)"""

from __future__ import annotations

from selection.links.added import AddedReach, added_reach, shadowed_aten_op
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
    reach = added_reach(HELPER, users, frozenset({METHOD}), "", ADDED)
    assert reach is not None
    assert _linked(reach) == {"lu_solve"}
    assert reach.set_aside == ["Tensor.cholesky (changed too)"]


def test_with_nothing_set_aside_the_function_is_linked_as_it_is() -> None:
    assert added_reach(HELPER, [NAMED], frozenset(), "", ADDED) is None


def test_a_kernel_registered_for_an_op_is_linked_through_the_registration() -> None:
    registration = Edge(Target.aten("cholesky"), HELPER, "registration", Step("", "", "reg"))
    changed = frozenset({Target.function(TENSOR, "Tensor.cholesky")})
    users = [registration, _call("Tensor.cholesky", HELPER, "calls cholesky", TENSOR)]
    assert added_reach(HELPER, users, changed, "", ADDED) is None


def test_a_shadowing_tensor_method_reaches_its_callers_and_its_aten_op() -> None:
    reach = added_reach(METHOD, [NAMED], frozenset(), "cholesky", ADDED)
    assert reach is not None
    assert _linked(reach) == {"lu_solve", "cholesky"}  # the named call, and ATen cholesky
    assert [t.kind for t in (link.target for link in reach.links)] == ["function", "aten"]
    assert reach.set_aside == []


def test_a_method_that_shadows_nothing_is_linked_through_every_use_as_it_is() -> None:
    """Nothing set aside, no op shadowed: the graph's edges decide (a construction edge
    into a method is only there where calls.constructed_methods keeps it)."""
    assert added_reach(METHOD, [CONSTRUCTION], frozenset(), "", ADDED) is None


def test_a_dunder_or_property_over_an_aten_op_keeps_constructions_and_gains_the_op() -> None:
    """`a & b` or `x.real` names no method: constructions stay uses, beside ATen's op."""
    dunder = Target.function(TENSOR, "Tensor.__and__")
    construction = _call("Module._apply", dunder, "calls torch.nn.Parameter (line 983)")
    reach = added_reach(dunder, [construction], frozenset(), "__and__", ADDED)
    assert reach is not None and reach.set_aside == []
    assert _linked(reach) == {"Module._apply", "__and__"}


def test_a_shadowing_method_nothing_uses_yet_still_reaches_its_aten_op() -> None:
    reach = added_reach(METHOD, [], frozenset(), "cholesky", ADDED)
    assert reach is not None and _linked(reach) == {"cholesky"}


def test_an_entry_naming_the_method_as_its_variant_is_linked_beside_the_op() -> None:
    alias = Edge(
        Target.entry("opinfo", "absolute"),
        METHOD,
        "callable",
        Step("", "", "method_variant defaults to torch.Tensor.absolute (alias 'absolute')"),
    )
    reach = added_reach(METHOD, [alias], frozenset(), "cholesky", ADDED)
    assert reach is not None and reach.set_aside == []
    assert _linked(reach) == {"absolute", "cholesky"}


def test_a_tensor_method_named_after_an_aten_op_shadows_it() -> None:
    ops = frozenset({"cholesky", "__and__", "real"})
    name = {m: Target.function(TENSOR, f"Tensor.{m}") for m in ("cholesky", "__and__", "real")}
    assert {m: shadowed_aten_op(t, ops) for m, t in name.items()} == {m: m for m in name}
    assert shadowed_aten_op(name["cholesky"], frozenset()) == ""
    other = Target.function("torch/nn/parameter.py", "Parameter.cholesky")
    assert shadowed_aten_op(other, ops) == ""
