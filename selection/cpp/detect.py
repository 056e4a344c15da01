"""Detect for C++: two revisions of one file -> the definitions that changed. Pure.

`detect_cpp(base_text, head_text, path, kind)` is the pure core; `detect_cpp_file(changes,
base, head, path, kind)` is the Detector's call (reads both sides from the ParsedTrees and
records into `ChangeSet.cpp`). A file another device owns gives one "no effect" change with
the reason and is not parsed; a file either side of which cannot be read gives one whole-file
change (`function == "*"`) carrying the error, and a FileChange with `parse_error`, so the
file is listed and its dependents widen. A file whose definitions are all unchanged (comments,
whitespace, line breaks) gives one whole-file change with `no_effect` saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from selection.cpp.diff import diff_files
from selection.cpp.items import CppFile
from selection.cpp.paths import CppPath, classify_cpp
from selection.cpp.reader import read_cpp
from selection.model import ChangeKind, ChangeSet, CppChange, FileChange

if TYPE_CHECKING:
    from selection.upstream import ParsedTrees

WHOLE_FILE = "*"
LAYOUT_ONLY = "comments or layout only: no definition changed"


@dataclass
class CppDetection:
    file: FileChange
    changes: list[CppChange] = field(default_factory=list)
    no_effect: str = ""  # set when the file changed but nothing in it can matter here


def is_cpp_path(path: str) -> bool:
    """ATen / c10 / FunctionsManual C++ that detect_cpp handles."""
    return classify_cpp(path) is not None


def detect_cpp(
    base_text: str | None, head_text: str | None, path: str, kind: ChangeKind
) -> CppDetection:
    where = classify_cpp(path)
    if where is None:
        return CppDetection(FileChange(path, kind, analysed="cpp"))
    if where.no_effect:
        change = _whole(where, kind, no_effect=where.no_effect)
        return CppDetection(FileChange(path, kind, analysed="cpp"), [change], where.no_effect)
    old = read_cpp(base_text, path) if base_text is not None else CppFile(path)
    new = read_cpp(head_text, path) if head_text is not None else CppFile(path)
    error = "; ".join(f"{side}: {f.error}" for side, f in (("base", old), ("head", new)) if f.error)
    if error:
        whole = _whole(where, kind, parse_error=error)
        return CppDetection(FileChange(path, kind, error, analysed="cpp"), [whole])
    changes = [
        CppChange(
            path=path,
            function=c.item.qualname,
            kind=c.kind,
            name=c.item.name,
            role=c.item.kind,
            area=where.area,
            key=c.item.key,
            line=c.item.line,
            defines=c.item.defines,
            file_local=c.item.file_local,
        )
        for c in diff_files(old, new)
    ]
    if not changes:  # still recorded, so that the file's "no effect" has its reason
        changes = [_whole(where, kind, no_effect=LAYOUT_ONLY)]
        return CppDetection(FileChange(path, kind, analysed="cpp"), changes, LAYOUT_ONLY)
    return CppDetection(FileChange(path, kind, analysed="cpp"), changes)


def _whole(
    where: CppPath, kind: ChangeKind, no_effect: str = "", parse_error: str = ""
) -> CppChange:
    return CppChange(
        where.path, WHOLE_FILE, kind, role="file", area=where.area,
        no_effect=no_effect, parse_error=parse_error,
    )  # fmt: skip


def detect_cpp_file(
    changes: ChangeSet, base: ParsedTrees, head: ParsedTrees, path: str, kind: ChangeKind
) -> FileChange:
    """The Detector's hook: `if is_cpp_path(path): return detect_cpp_file(changes, self.base,
    self.head, path, kind)` (before the `analysed_by_symbol` test in `Detector._file`)."""
    base_text = base.tree.read(path) if kind != ChangeKind.added else None
    head_text = head.tree.read(path) if kind != ChangeKind.removed else None
    detection = detect_cpp(base_text, head_text, path, kind)
    changes.cpp.extend(detection.changes)
    return detection.file
