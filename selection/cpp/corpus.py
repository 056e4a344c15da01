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
        self,
        names: set[str],
        paths: set[str],
        methods: frozenset[str] = frozenset(),
        op_api: frozenset[str] = frozenset(),
    ) -> list[tuple[str, CppItem, str]]:
        """(path, item, the name it uses) for every item of `paths` that reaches one of
        `names` (`methods`: those also reached as `x.name(`; see CppItem.uses)."""
        out: list[tuple[str, CppItem, str]] = []
        for path in sorted(paths):
            for item in self.file(path).items.values():
                used = sorted(n for n in item.refs & names if item.uses(n, n in methods, op_api))
                if used:
                    out.append((path, item, used[0]))
        return out

    def unreadable(self, paths: set[str]) -> list[tuple[str, str]]:
        return [(p, self.file(p).error) for p in sorted(paths) if self.file(p).error]


def _ours(path: str) -> bool:
    where = classify_cpp(path)
    return where is not None and not where.no_effect
