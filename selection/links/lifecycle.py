"""What runs around every reused test: the set-up, tear-down and run methods of `TestCase`
and of the device test bases, and the library code they call. Pure over the index.

Every instantiated test runs them (`TestCase.tearDown`'s precision-leak check reads
`torch.backends.cuda.matmul.fp32_precision` after each one), so a change to what they call
can affect any reused test, whichever templates or entries also reach it. The recording
runs samples, not tests, so it never sees this code; the static call graph does, from
these methods (what only another device runs is not followed, selection.links.calls).
Functions of the machinery files themselves are the instantiation machinery already
(selection.links.symbol_changes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from selection.links.base import Target
from selection.links.calls import TENSOR_MODULE, constructs_owner, named_tensor_method
from selection.links.graph import Edge
from selection.upstream import INTERNAL

if TYPE_CHECKING:
    from selection.links.index import LinkIndex
    from selection.python.summary import ModuleSummary

# The classes every reused test instantiates (a device-generic class is rebuilt per
# device on the device's base, PrivateUse1TestBase for spyre), and their methods unittest
# and the device framework call for each test or class.
BASES = {
    f"{INTERNAL}/common_utils.py": ("TestCase",),
    f"{INTERNAL}/common_device_type.py": ("DeviceTypeTestBase", "PrivateUse1TestBase"),
}
METHODS = (
    "__init__",
    "setUp",
    "tearDown",
    "setUpClass",
    "tearDownClass",
    "run",
    "_run_custom",
    "instantiate_test",  # its per-test wrapper runs the template
)


def per_test_methods(summary_of: Callable[[str], ModuleSummary | None]) -> list[Target]:
    """The test bases' per-test methods the head defines (the explorer explores them, so
    that what they call is in the graph even where no entry or template reaches them)."""
    found = []
    for path, classes in BASES.items():
        summary = summary_of(path)
        if summary is not None:
            found += [
                Target.function(path, f"{cls}.{method}")
                for cls in classes
                for method in METHODS
                if f"{cls}.{method}" in summary.kinds
            ]
    return found


def around_every_test(index: LinkIndex) -> frozenset[Target]:
    """The functions the test bases' per-test methods run, transitively. A test base the
    code constructs (`_run_custom` builds a `TestCase()` to end a run early) brings none of
    its other methods: which of them run per test is what METHODS says, and the others
    (sample generators, `assertExpectedInline`) are reached from templates where used."""

    def build() -> frozenset[Target]:
        explorer = index.explorer
        start = per_test_methods(explorer.summary)
        tensor = explorer.summary(TENSOR_MODULE)
        reached = index.functions_reached(
            start,
            # a call on an object of unknown type is linked to the `Tensor` method of its
            # name (`test_id.split(".")` in `check_if_enable`): no test base runs one
            keep=lambda target: not named_tensor_method(target, tensor),
            methods=_not_of_a_base,
            follows=_runs,
        )
        return frozenset(reached)

    return index.memo("lifecycle.around_every_test", build)


def _not_of_a_base(method: Target) -> bool:
    """A constructed class's methods may run, except a test base's (see around_every_test)."""
    return not _of_a_base(method)


def _of_a_base(method: Target) -> bool:
    owner = method.name.split(".", 1)[0]
    return "." in method.name and owner in BASES.get(method.path, ())


def _runs(edge: Edge) -> bool:
    """Into a test base's method, only a use naming it (`self._check_leaks()`), not one the
    base's construction brings (selection.links.calls.constructs_owner)."""
    return not (_of_a_base(edge.used) and constructs_owner(edge))
