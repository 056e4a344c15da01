"""A modified `Tensor` method defined in Python: constructing a tensor (a subclass built by
`Module._apply`, samples wrapped in a `Tensor`) runs its dunders and accessors, never a
plain method; a plain method runs where a call names it (`x.scaled()`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.state import PipelineState
from tests.support.observed_runs import linked_ops
from tests.support.sample_helpers import select_edit_through_samples
from tests.support.upstream_repo import UpstreamRepo

TENSOR = "torch/_tensor.py"
HELPERS = "torch/_wrapping.py"

BASE_TENSOR = """import torch


class Tensor(torch._C.TensorBase):
    def __deepcopy__(self, memo):
        return self.clone()

    @property
    def doubled(self):
        return self * 2

    def scaled(self, factor):
        return self * factor
"""
WRAPPING = """from torch._tensor import Tensor


def wrap(x):
    return Tensor(x)


def scale(x):
    return x.scaled(3)
"""
# the method called on a receiver that is no name (`x.sum().backward()`)
UNNAMED = WRAPPING.replace("return x.scaled(3)", "return x.abs().scaled(3)")


def _select(
    upstream: UpstreamRepo,
    manifest: Path,
    tmp_path: Path,
    old: str,
    new: str,
    helpers: str = WRAPPING,
) -> PipelineState:
    # add's samples construct a Tensor; mul's call library code that names the method
    samples = (
        {TENSOR: BASE_TENSOR, HELPERS: helpers},
        "torch._wrapping",
        {"add": "wrap", "mul": "scale"},
    )
    return select_edit_through_samples(upstream, manifest, tmp_path, samples, (TENSOR, old, new))


@pytest.mark.parametrize("helpers", [WRAPPING, UNNAMED], ids=["named", "unnamed-receiver"])
def test_a_plain_method_is_reached_by_calls_naming_it_not_by_constructions(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, helpers: str
) -> None:
    old, new = "return self * factor", "return self + factor"
    state = _select(upstream, manifest, tmp_path, old, new, helpers)
    assert {op for op, _ in linked_ops(state)} == {"mul"}


# the method's name called on a str parameter and on a set: no tensor's method
PLAIN = WRAPPING.replace(
    "def scale(x):\n    return x.scaled(3)",
    "def scale(x, label: str = 'x'):\n    done = set()\n    done.scaled(label.scaled(3))\n"
    "    return x * 3",
)


def test_a_method_called_on_a_value_that_is_never_a_tensor_is_no_use_of_the_tensors(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    assert "label.scaled(3)" in PLAIN
    old, new = "return self * factor", "return self + factor"
    state = _select(upstream, manifest, tmp_path, old, new, PLAIN)
    assert {op for op, _ in linked_ops(state)} == set()


@pytest.mark.parametrize(
    ("old", "new"),
    [("return self.clone()", "return self.detach()"), ("return self * 2", "return self + 2")],
    ids=["dunder", "property"],
)
def test_dunders_and_accessors_stay_reached_by_constructions(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, old: str, new: str
) -> None:
    state = _select(upstream, manifest, tmp_path, old, new)
    assert "add" in {op for op, _ in linked_ops(state)}


NATIVE = "torchgen/packaged/ATen/native/native_functions.yaml"
SPLIT_SCHEMA = (
    "\n- func: split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]\n"
)
TENSOR_WITH_SPLIT = (
    BASE_TENSOR + "\n    def split(self, split_size, dim=0):\n        return [self]\n"
)
# add's samples go through a helper splitting a name (a str, though nothing says so), mul's
# through one splitting the tensor
SPLITTING = (
    WRAPPING.replace("def wrap(x):\n", "def wrap(x):\n    _parts('a.b')\n").replace(
        "def scale(x):\n", "def scale(x):\n    x.split(2)\n"
    )
    + "\n\ndef _parts(name):\n    return name.split('.')\n"
)


def test_a_call_passing_text_where_tensor_split_takes_none_is_no_use_of_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """`name.split('.')`: `Tensor.split` (unannotated) defers to `split`'s schema, whose
    `split_size` takes no text, so an edit of `Tensor.split` reaches mul's samples only."""
    upstream.reset()
    native = upstream.read(NATIVE) + SPLIT_SCHEMA
    samples = (
        {TENSOR: TENSOR_WITH_SPLIT, HELPERS: SPLITTING, NATIVE: native},
        "torch._wrapping",
        {"add": "wrap", "mul": "scale"},
    )
    edit = (TENSOR, "return [self]", "return [self, self]")
    state = select_edit_through_samples(upstream, manifest, tmp_path, samples, edit)
    assert {op for op, _ in linked_ops(state)} == {"mul"}
