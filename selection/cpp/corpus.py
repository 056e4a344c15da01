"""The C++ of one revision that a change can reach through calls, read on demand. Pure over a
SourceTree (`read`/`list`).

Files: `aten/src/ATen/native/**` minus other devices' directories and suffixes
(selection.cpp.paths), plus FunctionsManual.cpp/.h. A file is tokenized for its identifiers
once (an index name -> files, built on first use) and parsed only when a name on the way
from a change appears in it. Files the reader cannot structure are kept in `unreadable`:
the link kind reports them rather than passing over their callers silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from selection.cpp.items import CppFile, CppItem
from selection.cpp.paths import FUNCTIONS_MANUAL, NATIVE, classify_cpp
from selection.cpp.reader import read_cpp

_NAME = re.compile(r"[A-Za-z_]\w*")


class Tree(Protocol):
    def read(self, path: str) -> str | None: ...
    def list(self, prefix: str) -> list[str]: ...


@dataclass
class CppCorpus:
    tree: Tree
    files: dict[str, CppFile] = field(default_factory=dict)
    _paths: list[str] | None = None
    _mentions: dict[str, set[str]] | None = None  # identifier -> paths whose text has it
    _other_mentions: dict[str, set[str]] | None = None  # the same over other devices' files
    _users: dict[tuple[str, str, tuple[str, ...] | None], list[tuple[str, CppItem]]] = field(
        default_factory=dict
    )

    def paths(self) -> list[str]:
        if self._paths is None:
            listed = [p for p in self.tree.list(NATIVE.rstrip("/")) if _ours(p)]
            listed += [p for p in FUNCTIONS_MANUAL if self.tree.read(p) is not None]
            self._paths = sorted(set(listed))
        return self._paths

    def file(self, path: str) -> CppFile:
        if path not in self.files:
            text = self.tree.read(path)
            self.files[path] = (
                CppFile(path, error="not in this revision")
                if text is None
                else read_cpp(text, path)
            )
        return self.files[path]

    def mentioning(self, names: set[str]) -> set[str]:
        """Paths whose text contains one of `names` as an identifier."""
        if self._mentions is None:
            self._mentions = {}
            for path in self.paths():
                for name in set(_NAME.findall(self.tree.read(path) or "")):
                    self._mentions.setdefault(name, set()).add(path)
        found: set[str] = set()
        for name in names:
            found |= self._mentions.get(name, set())
        return found

    def users(
        self, targets: dict[str, str], paths: set[str] | None, op_api: frozenset[str] = frozenset()
    ) -> list[tuple[str, CppItem, str]]:
        """(path, item, the name it uses) for every item that reaches one of the `targets`
        (name -> "function" | "method:<Class>" | "type" | "any"; CppItem.uses), in `paths`
        or (None) in every file that mentions the name. Memoized per name: changes of one
        revision share most of the names on their way (stubs, kernels)."""
        out: list[tuple[str, CppItem, str]] = []
        only = tuple(sorted(paths)) if paths is not None else None
        for name in sorted(targets):
            key = (name, targets[name], only)
            if key not in self._users:
                where = set(only) if only is not None else self.mentioning({name})
                self._users[key] = [
                    (path, item)
                    for path in sorted(where)
                    for item in self.file(path).items.values()
                    if item.uses(name, targets[name], op_api)
                ]
            out.extend((path, item, name) for path, item in self._users[key])
        return out

    def other_device_mentions(self, names: set[str]) -> list[str]:
        """Files of other devices under native/ (cuda/, mps/, .cu, ...) whose text names one
        of `names`: a helper only they use cannot affect this device."""
        if self._other_mentions is None:
            self._other_mentions = {}
            for path in self.tree.list(NATIVE.rstrip("/")):
                where = classify_cpp(path)
                if where is not None and where.no_effect:
                    for name in set(_NAME.findall(self.tree.read(path) or "")):
                        self._other_mentions.setdefault(name, set()).add(path)
        return sorted({p for n in names for p in self._other_mentions.get(n, set())})

    def unreadable(self, paths: set[str]) -> list[tuple[str, str]]:
        return [(p, self.file(p).error) for p in sorted(paths) if self.file(p).error]


def _ours(path: str) -> bool:
    where = classify_cpp(path)
    return where is not None and not where.no_effect
