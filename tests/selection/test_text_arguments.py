"""A method call passing text where no tensor method of its name takes text is on no tensor
(selection.links.text_arguments): `var.split(",")` is `str.split`, not `Tensor.split`."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import torch

from selection.links.text_arguments import (
    ACCEPTS,
    DEFERS,
    REFUSES,
    TextTaking,
    python_signatures,
    schema_text_positions,
)

SCHEMAS = [
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]",
    "sum.dim_DimnameList(Tensor self, Dimname[1] dim, bool keepdim=False, *, ScalarType? "
    "dtype=None) -> Tensor",
    "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
    "to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False) -> "
    "Tensor(a)",
    "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
    "norm.Scalar(Tensor self, Scalar p=2) -> Tensor",
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
]

TENSOR = """
class Tensor:
    def split(self, split_size, dim=0): ...
    def norm(self, p: Optional[Union[float, str]] = "fro", dim=None): ...
    def rename(self, *names, **rename_map): ...
    def stft(self, n_fft: int, hop_length: Optional[int] = None): ...
    def unflatten(self, dim, sizes): ...
"""


def _taking() -> TextTaking:
    methods = python_signatures(ast.parse(textwrap.dedent(TENSOR)))
    return TextTaking(schema_text_positions(SCHEMAS), methods)


def test_the_schema_positions_taking_text_are_str_dimname_and_device() -> None:
    """Positions count the receiver; keyword-only arguments are not positional."""
    positions = schema_text_positions(SCHEMAS)
    assert positions["sum"] == {1} and positions["to"] == {1}
    assert positions["split"] == frozenset() and positions["div"] == frozenset()


def test_a_python_methods_own_signature_tells_where_it_can() -> None:
    methods = python_signatures(ast.parse(textwrap.dedent(TENSOR)))
    assert methods["split"].at(1) == DEFERS  # unannotated: split's schema decides
    assert methods["norm"].at(1) == ACCEPTS  # annotated with str, and a text default
    assert methods["rename"].at(3) == ACCEPTS  # *names
    assert methods["stft"].at(1) == REFUSES and methods["stft"].at(2) == REFUSES
    assert methods["stft"].at(3) == REFUSES  # past the last parameter, no *args


def test_text_where_the_tensor_method_takes_none_is_no_call_of_it() -> None:
    taking = _taking()
    assert taking.refuses("split", (0,))  # `name.split(".")`
    assert taking.refuses("add", (0,))  # `seen.add("x")`
    assert taking.refuses("stft", (0,))
    assert not taking.refuses("split", ())  # `t.split(2)`
    assert not taking.refuses("norm", (0,))  # `t.norm("fro")`
    assert not taking.refuses("sum", (0,))  # `t.sum("N")`, a named dimension
    assert not taking.refuses("to", (0,))  # `t.to("cpu")`
    assert not taking.refuses("rename", (0, 1))  # `t.rename("N", "C")`
    assert not taking.refuses("unknown_method", (0,))  # nothing tells
    assert taking.refuses("split", (1, 0))  # any position refused is enough


def test_the_real_tensor_takes_text_where_the_reading_says_it_does() -> None:
    """On torch 2.13.0's own sources: each call the reading says no tensor method takes
    raises on a real tensor; each it keeps runs."""
    import torchgen

    native = Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"
    from selection.native_yaml import parse_entries

    entries = parse_entries(native.read_text(), str(native))
    tensor_source = Path(torch.__file__).with_name("_tensor.py").read_text()
    taking = TextTaking(
        schema_text_positions(str(e.get("func", "")) for e in entries.values()),
        python_signatures(ast.parse(tensor_source)),
    )
    t = torch.ones(4)
    refused = {"split": (",",), "add": ("x",), "index_select": ("d", t.long()), "sub": ("a",)}
    for name, args in refused.items():
        assert taking.refuses(name, (0,)), name
        try:
            getattr(t, name)(*args)
        except (TypeError, RuntimeError):
            continue
        raise AssertionError(f"Tensor.{name} took text")
    kept = {"to": ("cpu",), "norm": ("fro",), "type": ("torch.FloatTensor",)}
    for name, args in kept.items():
        assert not taking.refuses(name, (0,)), name
        getattr(t, name)(*args)


def test_a_library_call_passing_text_links_no_tensor_method_or_op() -> None:
    """Through the use reader and the call links: `seen.add("x")` and `name.split(".")`
    link nothing, `t.add(1)`, `t.split(2)` and `t.to("cpu")` their op."""
    from selection.links.calls import uses_of
    from selection.python.names import ModuleNames
    from selection.python.resolver import Resolver
    from selection.python.summary import summarize

    text = textwrap.dedent(
        """
        def f(seen, t, name):
            seen.add("x")
            name.split(".")
            t.add(1)
            t.split(2)
            t.to("cpu")
        """
    )
    names = ModuleNames(["torch/m.py"])
    summary = summarize("torch/m.py", ast.parse(text), text, names)
    resolver = Resolver(names, lambda path: None, lambda path: None, {"add", "split", "to"})
    found = {
        (target.name, step.how.split(" (line", 1)[0])
        for target, _, step in uses_of(summary, "f", resolver, None, lambda t: [], texts=_taking())
    }
    assert found == {("add", "calls t.add"), ("split", "calls t.split"), ("to", "calls t.to")}


def test_test_codes_own_method_called_with_text_keeps_its_link() -> None:
    """In test code, `rec.add("svd")` may be the module's own `Recorder.add`: the text rule
    judges tensor methods only."""
    from selection.links.calls import uses_of
    from selection.python.names import ModuleNames
    from selection.python.resolver import Resolver
    from selection.python.summary import summarize

    path = "torch/testing/_internal/m.py"
    text = textwrap.dedent(
        """
        class Recorder:
            def add(self, name):
                return name

        def f(rec):
            rec.add("svd")
        """
    )
    names = ModuleNames([path])
    summary = summarize(path, ast.parse(text), text, names)
    resolver = Resolver(names, lambda p: None, lambda p: None, {"add"})
    found = [
        t.name for t, _, _ in uses_of(summary, "f", resolver, None, lambda t: [], texts=_taking())
    ]
    assert found == ["Recorder.add"]
