"""A name defined more than once is one symbol over all its definitions: an edit of any of
them is a change (before, only the last one was kept, so an edit of a property's getter
followed by its setter, or of a function rebound by `f = wrap(f)`, was never seen)."""

from __future__ import annotations

import ast

from selection.detect import diff_symbols
from selection.pyast import module_symbols

SOURCE = """
class TestCase:
    @property
    def precision(self):
        return self._precision

    @precision.setter
    def precision(self, prec):
        self._precision = prec


def check(x):
    return x


check = wrap(check)


class Config:
    pass


Config = dataclass(Config)
"""


def _changed(old: str, new: str) -> list[tuple[str, str]]:
    path = "torch/testing/_internal/common_utils.py"
    before = module_symbols(ast.parse(old), old)
    after = module_symbols(ast.parse(new), new)
    return [(c.qualname, c.kind) for c in diff_symbols(path, before, after)]


def test_an_edit_of_a_property_getter_followed_by_its_setter_is_a_change() -> None:
    new = SOURCE.replace("return self._precision", "return self._precision * 2")
    assert _changed(SOURCE, new) == [("TestCase.precision", "modified")]


def test_an_edit_of_a_function_rebound_later_is_a_change_of_that_function() -> None:
    new = SOURCE.replace("    return x\n", "    return x + 1\n")
    assert _changed(SOURCE, new) == [("check", "modified")]
    assert module_symbols(ast.parse(SOURCE), SOURCE)["check"].kind == "function"


def test_a_class_rebound_later_keeps_its_header_and_the_rebinding_is_module_code() -> None:
    symbols = module_symbols(ast.parse(SOURCE), SOURCE)
    assert symbols["Config"].kind == "class"
    new = SOURCE.replace("dataclass(Config)", "frozen(Config)")
    assert _changed(SOURCE, new) == [("<module>", "modified")]
