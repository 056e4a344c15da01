"""Sites of OpInfo / ModuleInfo entry field mutations. Pure.

A boolean field toggled (`supports_out=True` -> `False`: every test of the op, and of the
PythonRefInfos inheriting the field), a DecorateInfo for every device removed (the instances
it names), a tolerance of such a DecorateInfo doubled (the same). Execution cannot tell what
a test decoration does, so the truth is the entry's own tests.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from functools import partial

from mutations.edits import Edit, lines_of, span
from mutations.entries import Decoration, Entry, inheriting_refs
from mutations.model import DECORATION, ENTRIES, Site, TruthSpec
from mutations.operators import Change
from mutations.quiet import decoration_removals

KIND = "opinfo-field"
BOOLEAN_FIELDS = (
    "supports_out",
    "supports_autograd",
    "supports_forward_ad",
    "supports_fwgrad_bwgrad",
    "supports_inplace_autograd",
    "check_batched_grad",
    "check_batched_gradgrad",
    "check_batched_forward_grad",
    "supports_two_python_scalars",
    "supports_one_python_scalar",
    "promotes_int_to_float",
    "supports_rhs_python_scalar",
)
_WHY = "an OpInfo field or test decoration: what the tests do with it, not what ops compute"


def _toggles(entry: Entry, lines: Sequence[str]) -> Iterator[tuple[str, Change]]:
    for name in BOOLEAN_FIELDS:
        value = entry.keywords.get(name)
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            edit = Edit(*span(value, lines), repr(not value.value))
            text = f"{name}={value.value} -> {not value.value}"
            yield name, Change("toggle-field", value.lineno, (edit,), text)


def _tolerance(decoration: Decoration, lines: Sequence[str]) -> Change | None:
    decorator = decoration.node.args[0] if decoration.node.args else None
    if decorator is None or "toleranceOverride" not in ast.unparse(decorator):
        return None
    for node in ast.walk(decorator):
        if isinstance(node, ast.Constant) and isinstance(node.value, float) and node.value:
            edit = Edit(*span(node, lines), repr(node.value * 2))
            text = f"tolerance {node.value!r} -> {node.value * 2!r}"
            return Change("tolerance", node.lineno, (edit,), text)
    return None


def _decoration_truth(entry: Entry, decoration: Decoration) -> TruthSpec:
    return TruthSpec(
        DECORATION, entries=(entry.full_name,), test_class=decoration.test_class,
        test_name=decoration.test_name, dtypes=decoration.dtypes, why=_WHY,
    )  # fmt: skip


def entry_sites(sources: Mapping[str, str], entries: Mapping[str, list[Entry]]) -> Iterator[Site]:
    everything = [e for found in entries.values() for e in found]
    for path in sorted(entries):
        lines = lines_of(sources[path])
        for entry in entries[path]:
            for name, change in _toggles(entry, lines):
                refs = [r.full_name for r in inheriting_refs(everything, entry, name)]
                truth = TruthSpec(ENTRIES, entries=(entry.full_name, *refs), why=_WHY)
                yield Site(KIND, "toggle", path, entry.full_name, truth, partial(list, [change]))
            for decoration, change in decoration_removals(entry, lines, None):
                truth = _decoration_truth(entry, decoration)
                yield Site(
                    KIND, "decoration", path, entry.full_name, truth, partial(list, [change])
                )
                tolerance = _tolerance(decoration, lines)
                if tolerance is not None:
                    yield Site(
                        KIND, "tolerance", path, entry.full_name, truth, partial(list, [tolerance])
                    )
