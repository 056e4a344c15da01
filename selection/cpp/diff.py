"""Two revisions of a C++ file compared definition by definition. Pure.

Definitions are matched by key (qualified name plus parameter types, so overloads are told
apart and a renamed parameter is not a new function) and compared by fingerprint: comments,
whitespace and line breaks do not count; every other token does.
"""

from __future__ import annotations

from dataclasses import dataclass

from selection.cpp.items import CppFile, CppItem
from selection.model import ChangeKind


@dataclass(frozen=True)
class ItemChange:
    item: CppItem  # the head's definition (the base's when removed)
    kind: ChangeKind


def diff_files(old: CppFile, new: CppFile) -> list[ItemChange]:
    changes: list[ItemChange] = []
    for key in sorted(set(old.items) | set(new.items)):
        before, after = old.items.get(key), new.items.get(key)
        if before is None and after is not None:
            changes.append(ItemChange(after, ChangeKind.added))
        elif after is None and before is not None:
            changes.append(ItemChange(before, ChangeKind.removed))
        elif before is not None and after is not None and before.fingerprint != after.fingerprint:
            changes.append(ItemChange(after, ChangeKind.modified))
    return changes
