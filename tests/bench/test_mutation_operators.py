"""Semantic mutation operators: each proposal changes the code (as Python runs it) and
parses; docstrings, decorators, annotations, defaults, error messages, another device's
branches and `__torch_function__` dispatch are never touched."""

from __future__ import annotations

import ast

import pytest
from mutations.edits import apply_edits, lines_of
from mutations.operators import Change, body_changes, code_differs
from mutations.sites import left_alone, names_other_device

SOURCE = '''\
@register_decomposition(aten.gelu)
def f(a: Tensor, b: int = 3, *, flag: bool = True) -> Tensor:
    """Docstring with 7 and < in it."""
    if has_torch_function_unary(a):
        return handle_torch_function(f, (a,), a, b=b)
    if a.is_cuda:
        return a * 2
    if b  is  not  None and b <= 4:
        a = torch.add(a, b) + 1.5
    if flag:
        raise ValueError(f"bad {b + 1}")
    return a
'''


def _changes() -> tuple[ast.FunctionDef, list[Change]]:
    function = ast.parse(SOURCE).body[0]
    assert isinstance(function, ast.FunctionDef)
    return function, body_changes(function, lines_of(SOURCE), left_alone)


def _applied(change: Change) -> str:
    return apply_edits(SOURCE, change.edits)


def test_every_proposal_parses_and_changes_the_code() -> None:
    _, changes = _changes()
    assert {c.operator for c in changes} == {
        "flip-compare",
        "flip-arith",
        "flip-bool",
        "constant",
        "swap-args",
        "negate",
        "drop",
    }
    for change in changes:
        assert code_differs(SOURCE, _applied(change)), change


def test_operators_rewrite_the_tokens_they_name() -> None:
    _, changes = _changes()
    texts = {c.description: _applied(c) for c in changes}
    assert "    if b  is  None and b <= 4:\n" in texts["`is not` -> `is`"]
    assert "b <= 4" in SOURCE and "b < 4" in texts["`<=` -> `<`"]
    assert "torch.add(b, a) + 1.5" in texts["arguments `a` and `b` swapped"]
    assert "torch.add(a, b) + 3.0" in texts["constant `1.5` -> `3.0`"]
    assert "torch.add(a, b) - 1.5" in texts["`+` -> `-`"]
    assert "    if not (flag):\n" in texts["condition `flag` negated"]


def test_what_runs_elsewhere_or_is_not_code_is_left_alone() -> None:
    function, changes = _changes()
    lines = {c.line for c in changes}
    first, last = function.lineno, function.end_lineno or function.lineno
    untouched = {
        first - 1,  # the decorator
        first,  # signature: annotations and defaults
        first + 1,  # the docstring
        first + 3,  # __torch_function__ dispatch
        first + 5,  # another device's branch
        last - 1,  # the error message
    }
    assert not lines & untouched
    assert all(c.line <= last for c in changes)


@pytest.mark.parametrize(
    "condition, other",
    [
        ("x.is_cuda", True),
        ("device_type == 'cuda'", True),
        ("x.device.type in ('cuda', 'xpu')", True),
        ("torch.cuda.is_available()", True),
        ("TEST_WITH_ROCM and x > 1", True),
        ("x.is_cuda or x.is_cpu", False),
        ("not x.is_cuda", False),
        ("device_type == 'cpu'", False),
        ("device_type != 'cuda'", False),
    ],
)
def test_other_device_conditions(condition: str, other: bool) -> None:
    test = ast.parse(condition, mode="eval").body
    assert names_other_device(test) is other
