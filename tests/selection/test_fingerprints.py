"""What counts as the same code: the fingerprint the Detect stage compares module-level
statements by. Reordering imports is not a change, unless the order decides a binding."""

from __future__ import annotations

import ast

from selection.pyast import normalized_fingerprint


def fingerprint(source: str) -> str:
    return normalized_fingerprint(list(ast.parse(source).body))


def statements(source: str, skip: int = 0) -> list[ast.AST]:
    """The module's statements past the first `skip` (a symbol's own statements)."""
    return list(ast.parse(source).body[skip:])


def test_reordered_imports_of_different_names_are_the_same_code() -> None:
    assert fingerprint("import os\nfrom math import pi\n") == fingerprint(
        "from math import pi\nimport os\n"
    )


def test_reordered_imports_binding_the_same_name_are_a_change() -> None:
    """The later import wins: `sqrt` is numpy's in one order and math's in the other."""
    assert fingerprint("from math import sqrt\nfrom numpy import sqrt\n") != fingerprint(
        "from numpy import sqrt\nfrom math import sqrt\n"
    )


def test_an_import_moved_past_an_assignment_of_its_name_is_a_change() -> None:
    assert fingerprint("from math import pi\npi = 3\n") != fingerprint(
        "pi = 3\nfrom math import pi\n"
    )


def test_a_docstring_is_not_code_and_other_statements_keep_their_order() -> None:
    assert fingerprint('"""Doc."""\nx = 1\n') == fingerprint('"""Other doc."""\nx = 1\n')
    assert fingerprint("x = 1\ny = x\n") != fingerprint("y = x\nx = 1\n")


def test_type_hints_added_to_a_function_are_not_a_change() -> None:
    """Upstream's typing PRs: parameter and return annotations, and an annotated assignment
    (`self.kwargs: dict[str, Any] = {}`), run nothing."""
    assert fingerprint(
        "def f(self, a, b=1):\n    self.kwargs = {}\n    n = a + b\n    return n\n"
    ) == fingerprint(
        "def f(self, a: int, b: int = 1) -> int:\n"
        "    self.kwargs: dict[str, int] = {}\n    n: int = a + b\n    return n\n"
    )


def test_a_bare_annotation_or_a_changed_value_is_a_change() -> None:
    """`x: int` alone makes `x` local to the function (a read of a global then fails)."""
    assert fingerprint("def f():\n    return x\n") != fingerprint(
        "def f():\n    x: int\n    return x\n"
    )
    assert fingerprint("def f():\n    n: int = 1\n") != fingerprint("def f():\n    n: int = 2\n")


def test_an_annotation_in_a_class_or_module_body_is_kept() -> None:
    """In a dataclass (an OpInfo) `x: int = 1` is a field and `x = 1` a class attribute:
    removing the annotation changes every constructor call."""
    assert fingerprint("@dataclass\nclass C:\n    x: int = 1\n") != fingerprint(
        "@dataclass\nclass C:\n    x = 1\n"
    )
    assert fingerprint("x: int = 1\n") != fingerprint("x = 1\n")
    assert fingerprint("class C:\n    def f(self):\n        self.a: int = 1\n") == fingerprint(
        "class C:\n    def f(self):\n        self.a = 1\n"
    )


IMPLEMENTATION = (
    "def sym_max(a, b):\n"
    "    if isinstance(a, float) or isinstance(b, float):\n"
    "        return float(max(a, b))\n"
    "    return max(a, b)\n"
)
STUBS = (
    "from typing import overload as _overload\n"
    "@_overload\n"
    "def sym_max(a: int, b: int) -> int: ...\n"
    "@typing.overload\n"
    "def sym_max(a: float, b: float) -> float: ...\n"
)


def test_overload_stubs_before_an_implementation_are_not_a_change() -> None:
    """2.14 adds `@overload` stubs to torch.sym_max and friends: the implementation replaces
    what `overload` returns, so with an unchanged implementation nothing runs differently."""
    old = statements(IMPLEMENTATION)
    new = statements(STUBS + IMPLEMENTATION, skip=1)  # the symbol's own statements
    assert normalized_fingerprint(old) == normalized_fingerprint(new)


def test_the_implementation_after_overload_stubs_is_still_compared() -> None:
    changed = IMPLEMENTATION.replace("max(a, b)\n", "min(a, b)\n")
    old = statements(STUBS + IMPLEMENTATION, skip=1)
    new = statements(STUBS + changed, skip=1)
    assert normalized_fingerprint(old) != normalized_fingerprint(new)


def test_stubs_without_an_implementation_are_what_the_name_binds() -> None:
    """Without a later implementation the last stub is the function (calling it raises):
    dropping or changing a stub then changes behaviour."""
    one = statements("@overload\ndef f(a: int) -> int: ...\n")
    other = statements("@overload\ndef f(a: int) -> int:\n    return a\n")
    assert normalized_fingerprint(one) != normalized_fingerprint(other)


def test_typing_cast_is_its_value() -> None:
    """`typing.cast(T, v)` returns `v` (SymInt.__init__ of 2.14); a bare `cast` naming no
    type by a string is some other function (torch/_inductor/bounds.py's `cast(x, dtype)`)."""
    plain = fingerprint("def f(self, node):\n    self.node = node\n")
    assert plain == fingerprint(
        'def f(self, node):\n    self.node = typing.cast("SymNode", node)\n'
    )
    assert plain == fingerprint('def f(self, node):\n    self.node = cast("SymNode", node)\n')
    assert plain != fingerprint("def f(self, node):\n    self.node = cast(node, dtype)\n")
