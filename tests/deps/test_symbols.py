"""Executed code objects named as selection.observed names functions (pyast qualnames)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import CodeType

from spyre_ci.deps.symbols import SymbolResolver

SOURCE = textwrap.dedent(
    """
    import functools

    def gelu(x):
        def inner(y):
            return (lambda z: z)(y)
        return inner(x)

    @functools.lru_cache
    def cached(n):
        return [i for i in range(n)]

    class Tensor:
        shape = (lambda: 1)()

        def __rsub__(self, other):
            return other

        class Nested:
            def method(self):
                return 1

    square = lambda x: x * x

    if True:
        def conditional():
            return 2
    """
)


def _codes(code: CodeType) -> list[CodeType]:
    found = [code]
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found += _codes(const)
    return found


def _names(root: Path, relative: str, text: str) -> dict[str, str | None]:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    resolver = SymbolResolver(root)
    module = compile(text, str(path), "exec")
    return {
        c.co_qualname: resolver.resolve((c.co_filename, c.co_firstlineno, c.co_qualname))
        for c in _codes(module)
    }


def test_code_is_named_for_its_symbol_or_the_function_it_is_nested_in(tmp_path: Path) -> None:
    names = _names(tmp_path, "torch/nn/functional.py", SOURCE)
    prefix = "torch/nn/functional.py::"
    assert names["gelu"] == prefix + "gelu"
    # a nested function is itself: an edit confined to it reaches only the pairs that ran it
    assert names["gelu.<locals>.inner"] == prefix + "gelu.<locals>.inner"
    # a lambda or comprehension runs as part of the function defining it
    assert names["gelu.<locals>.inner.<locals>.<lambda>"] == prefix + "gelu.<locals>.inner"
    assert names["cached"] == prefix + "cached"  # decorated: first line is the decorator's
    assert names["cached.<locals>.<listcomp>"] == prefix + "cached"
    assert names["Tensor.__rsub__"] == prefix + "Tensor.__rsub__"
    assert names["Tensor.<lambda>"] == prefix + "Tensor"  # class attribute
    assert names["Tensor.Nested.method"] == prefix + "Tensor"  # nested class: its outer class
    assert names["<lambda>"] == prefix + "square"  # module-level lambda assigned to a name
    assert names["conditional"] == prefix + "<module>"  # defined in an `if` block
    assert names["<module>"] == prefix + "<module>"


def test_code_outside_torch_is_not_named(tmp_path: Path) -> None:
    names = _names(tmp_path, "torch_spyre_ref/ops.py", SOURCE)
    assert set(names.values()) == {None}


def test_unparseable_file_counts_as_its_module(tmp_path: Path) -> None:
    path = tmp_path / "torch" / "broken.py"
    path.parent.mkdir(parents=True)
    path.write_text("def f(:\n")
    resolver = SymbolResolver(tmp_path)
    assert resolver.resolve((str(path), 1, "f")) == "torch/broken.py::<module>"
