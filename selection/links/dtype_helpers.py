"""First hop for a changed dtype helper (`common_dtype.py`: `floating_types_and`, ...). Pure.

An entry's `dtypes=`-family arguments are evaluated when the database is imported; their
effect is exactly the change in the dtype lists they evaluate to, which is computed here:
every entry's supported and backward dtypes for this device are evaluated with the base's
helpers and with the head's, and the instances of the dtypes an entry gains are reached
(the ones it loses no longer exist). What else calls the helper at run time (a sample
function looping over `floating_types()`) is reached through the link graph as usual.
"""

from __future__ import annotations

import dataclasses

from selection.dtypes_eval import DtypeEvaluator
from selection.links.base import Link, Outcome, Step, Target
from selection.links.index import LinkIndex
from selection.model import ChangeKind, SymbolChange, TestInstance
from selection.opinfo_db import DbEntry
from selection.oplists import OpDatabase
from selection.pyast import MODULE_SYMBOL
from selection.upstream import DTYPE_HELPERS, database_files

# Entry arguments evaluated at import into dtype lists (left out of the call graph).
DTYPE_FIELD_PREFIXES = ("dtypes", "backward_dtypes")


def is_dtype_field(name: str | None) -> bool:
    return bool(name) and name.startswith(DTYPE_FIELD_PREFIXES)  # type: ignore[union-attr]


def _base_database(index: LinkIndex) -> OpDatabase:
    """The head's database with the base's dtype helpers (and the head's module constants)."""

    def build() -> OpDatabase:
        evaluator = DtypeEvaluator(None)
        helpers = index.base.module(DTYPE_HELPERS)
        if helpers is not None:
            evaluator.add_module(helpers)
        for path in database_files(index.head):
            tree = index.head.module(path)
            if tree is not None:
                evaluator.add_module(tree)
        return dataclasses.replace(index.db, dtype_eval=evaluator, _dtype_cache={})

    return index.memo("dtype_helpers.base_database", build)


UNKNOWN = "*"  # a side that cannot be evaluated: any dtype may be new


def gained(index: LinkIndex, device: str) -> dict[str, list[TestInstance]]:
    """Per entry, the instances of the dtypes it gains with the head's helpers (all of its
    instances when either side cannot be evaluated statically)."""

    def build() -> dict[str, list[TestInstance]]:
        base = _base_database(index)
        found: dict[str, list[TestInstance]] = {}
        for entry in index.db.entries.values():
            added = _added(index.db, base, entry, device)
            if added:
                instances = [
                    i
                    for i in index.by_op().get(entry.full_name, [])
                    if UNKNOWN in added or i.dtype in added
                ]
                if instances:
                    found[entry.full_name] = instances
        return found

    return index.memo("dtype_helpers.gained", build)


def _added(head: OpDatabase, base: OpDatabase, entry: DbEntry, device: str) -> set[str]:
    added: set[str] = set()
    for method in (OpDatabase.supported_dtypes, OpDatabase.backward_dtypes):
        after, before = method(head, entry, device), method(base, entry, device)
        if after is None or before is None:  # not evaluable statically: cannot tell
            added.add(UNKNOWN)
            continue
        added |= set(after) - set(before)
    return added


class DtypeHelperLinks:
    name = "dtype-helper"

    def __init__(self, device: str) -> None:
        self.device = device

    def reach(self, change: object, index: LinkIndex) -> Outcome:
        if not (isinstance(change, SymbolChange) and change.path == DTYPE_HELPERS):
            return Outcome()
        if change.other_device_only or change.kind == ChangeKind.added:
            return Outcome()  # the symbol kind says why
        label = f"{change.path}: {change.qualname} {change.kind}"
        links: list[Link] = []
        step = Step(change.path, change.qualname, "changes the dtype lists entries evaluate to")
        for op, instances in sorted(gained(index, self.device).items()):
            ids = tuple(i.node_id for i in instances)
            dtypes = sorted({i.dtype or "" for i in instances})
            links.append(Link(Target.instances(f"{op} gains {', '.join(dtypes)}", ids), (step,)))
        target = Target.function(change.path, change.qualname)
        if change.qualname != MODULE_SYMBOL and target in index.graph:
            links.append(Link(target, (Step(change.path, change.qualname, str(change.kind)),)))
        if not links:
            return Outcome(
                no_effect=f"{label}: no entry gains a dtype (a lost dtype's instances no longer "
                "exist), and no reused test calls it at run time"
            )
        return Outcome(links=links, kind="entry-dtypes")
