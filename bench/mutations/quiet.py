"""Sites of edits that must select nothing: behaviour-free and other-device-only. Pure.

Behaviour-free: a docstring reworded, a comment added, an annotation quoted, two `__all__`
names swapped, two adjacent stdlib imports swapped, `torch/version.py`'s `git_version`.
Other-device-only: a statement inside a branch only another device takes (`if x.is_cuda:`,
`device_type == "cuda"`), a DecorateInfo for CUDA/MPS/XPU, a DecorateInfo for `cpu` or
`meta` (another device's for a PrivateUse1 test). Each site's truth is execution where the
code runs here (the digests must not change), nothing where it cannot run here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from itertools import pairwise

from mutations.edits import Edit, lines_of, segment, span
from mutations.entries import NOT_OURS, OTHER_DEVICES, Decoration, Entry
from mutations.model import EXECUTION, NONE, Site, TruthSpec
from mutations.operators import Change, branch_changes
from mutations.sites import (
    functions_in,
    is_database_file,
    kind_of,
    other_device_branches,
    parse_module,
)

BEHAVIOUR_FREE = "behaviour-free"
OTHER_DEVICE = "other-device"
MODULE = "<module>"
_OPENING = re.compile(r"[rRuU]?(\"\"\"|'''|\"|')")
_NOTE = "Mutation benchmark: reworded. "
_COMMENT = "# mutation benchmark: a comment, no code"


def _library(path: str) -> bool:
    kind = kind_of(path)
    return kind is not None and kind != "sample-inputs"


def _docstring(node: ast.AST) -> ast.Constant | None:
    body = getattr(node, "body", None)
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return first.value if isinstance(first.value.value, str) else None
    return None


def _docstring_change(node: ast.AST, lines: Sequence[str]) -> list[Change]:
    doc = _docstring(node)
    if doc is None:
        return []
    line, col, _, _ = span(doc, lines)
    opening = _OPENING.match(lines[line - 1][col:])
    if opening is None:
        return []
    at = col + opening.end()
    return [Change("docstring", line, (Edit(line, at, line, at, _NOTE),), "docstring reworded")]


def _comment_change(
    node: ast.FunctionDef | ast.AsyncFunctionDef, lines: Sequence[str]
) -> list[Change]:
    body = node.body[1:] if _docstring(node) is not None else node.body
    if len(body) < 2:
        return []
    stmt = body[1]
    indent = lines[stmt.lineno - 1][: stmt.col_offset]
    if indent.strip():
        return []
    edit = Edit(stmt.lineno, 0, stmt.lineno, 0, f"{indent}{_COMMENT}\n")
    return [Change("comment", stmt.lineno, (edit,), "comment line added")]


def _annotation_change(
    node: ast.FunctionDef | ast.AsyncFunctionDef, lines: Sequence[str]
) -> list[Change]:
    arguments = node.args
    annotated = [
        a.annotation for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    ]
    for annotation in [*annotated, node.returns]:
        if isinstance(annotation, (ast.Name, ast.Attribute, ast.Subscript)):
            line, col, end_line, end_col = span(annotation, lines)
            text = segment(lines, (line, col), (end_line, end_col))
            if line == end_line and '"' not in text:
                edit = Edit(line, col, end_line, end_col, f'"{text}"')
                return [Change("annotation", line, (edit,), f"annotation `{text}` quoted")]
    return []


def _all_change(tree: ast.Module, lines: Sequence[str]) -> list[Change]:
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.List, ast.Tuple))):
            continue
        if [getattr(t, "id", "") for t in stmt.targets] != ["__all__"]:
            continue
        first, second = stmt.value.elts[:2] if len(stmt.value.elts) >= 2 else (None, None)
        if isinstance(first, ast.Constant) and isinstance(second, ast.Constant):
            a, b = (segment(lines, span(n, lines)[:2], span(n, lines)[2:]) for n in (first, second))
            edits = (Edit(*span(first, lines), b), Edit(*span(second, lines), a))
            return [Change("__all__", stmt.lineno, edits, f"__all__ entries {a} and {b} swapped")]
    return []


def _import_change(tree: ast.Module, lines: Sequence[str]) -> list[Change]:
    body = tree.body
    for first, second in pairwise(body):
        pair = (first, second)
        if not all(isinstance(s, ast.Import) and len(s.names) == 1 for s in pair):
            continue
        names = [s.names[0].name for s in pair]  # type: ignore[attr-defined]
        if any(n.startswith("torch") for n in names) or second.lineno != first.lineno + 1:
            continue
        if first.end_lineno != first.lineno or second.end_lineno != second.lineno:
            continue
        texts = [lines[s.lineno - 1] for s in pair]
        edits = (
            Edit(first.lineno, 0, first.lineno, len(texts[0]), texts[1]),
            Edit(second.lineno, 0, second.lineno, len(texts[1]), texts[0]),
        )
        return [
            Change(
                "import-order", first.lineno, edits, f"imports {names[0]} and {names[1]} swapped"
            )
        ]
    return []


def _version_change(lines: Sequence[str]) -> list[Change]:
    for number, line in enumerate(lines, 1):
        found = re.match(r"git_version = '([0-9a-f]+)'", line)
        if found:
            sha = found.group(1)
            at = found.start(1)
            edit = Edit(number, at, number, at + len(sha), sha[::-1])
            return [Change("version", number, (edit,), "git_version changed")]
    return []


def _quiet(
    group: str, path: str, symbol: str, truth: TruthSpec, changes: list[Change], kind: str
) -> Site:
    return Site(kind, group, path, symbol, truth, partial(list, changes), expect="nothing")


def behaviour_free_sites(sources: Mapping[str, str]) -> Iterator[Site]:
    for path in sorted(sources):
        text = sources[path]
        if path == "torch/version.py":
            changes = _version_change(lines_of(text))
            if changes:
                yield _quiet("version", path, MODULE, TruthSpec(EXECUTION), changes, BEHAVIOUR_FREE)
            continue
        if not (_library(path) and path.endswith(".py")):
            continue
        lines, tree = lines_of(text), parse_module(text)
        if tree is None:
            continue
        for group, changes in (
            ("__all__", _all_change(tree, lines)),
            ("import-order", _import_change(tree, lines)),
        ):
            if changes:
                yield _quiet(group, path, MODULE, TruthSpec(EXECUTION), changes, BEHAVIOUR_FREE)
        for qualname, node in functions_in(tree):
            for group, make in (
                ("docstring", _docstring_change),
                ("comment", _comment_change),
                ("annotation", _annotation_change),
            ):
                changes = make(node, lines)
                if changes:
                    yield _quiet(
                        group, path, qualname, TruthSpec(EXECUTION), changes, BEHAVIOUR_FREE
                    )


def _removal(decoration: Decoration, lines: Sequence[str]) -> Edit | None:
    """Delete the DecorateInfo from its list (with one comma)."""
    elements = decoration.container.elts
    if len(elements) < 2:
        return None
    index = next(i for i, e in enumerate(elements) if e is decoration.node)
    if index + 1 < len(elements):
        start, end = span(elements[index], lines)[:2], span(elements[index + 1], lines)[:2]
    else:
        start, end = span(elements[index - 1], lines)[2:], span(elements[index], lines)[2:]
    return Edit(*start, *end, "")


def decoration_removals(
    entry: Entry, lines: Sequence[str], wanted: tuple[str, ...] | None
) -> Iterator[tuple[Decoration, Change]]:
    """Removals of the entry's DecorateInfos for these device types (None: for every
    device, unconditional)."""
    for decoration in entry.decorations:
        device = decoration.device_type
        if wanted is None and (device is not None or decoration.conditional):
            continue
        if wanted is not None and device not in wanted:
            continue
        edit = _removal(decoration, lines)
        if edit is not None:
            where = " ".join(filter(None, (decoration.test_class, decoration.test_name, device)))
            text = f"DecorateInfo({where or 'every test'}) removed from {decoration.field}"
            yield decoration, Change("remove-decoration", decoration.node.lineno, (edit,), text)


def other_device_sites(
    sources: Mapping[str, str], entries: Mapping[str, list[Entry]]
) -> Iterator[Site]:
    for path in sorted(sources):
        if not path.endswith(".py") or not (
            _library(path) or path.startswith("torch/testing/_internal/")
        ):
            continue
        text = sources[path]
        lines, tree = lines_of(text), parse_module(text)
        if tree is None:
            continue
        for qualname, branch in other_device_branches(tree):
            changes = branch_changes(branch.body, lines)
            if changes:
                yield _quiet("branch", path, qualname, TruthSpec(EXECUTION), changes, OTHER_DEVICE)
        if not is_database_file(path):
            continue
        for entry in entries.get(path, []):
            for group, devices in (
                ("decorate-other", OTHER_DEVICES),
                ("decorate-cpu-meta", ("cpu", "meta")),
            ):
                found = [c for _, c in decoration_removals(entry, lines, devices)]
                if found:
                    why = (
                        f"a DecorateInfo for {', '.join(sorted(set(NOT_OURS) & set(devices)))} only"
                    )
                    yield _quiet(
                        group, path, entry.full_name, TruthSpec(NONE, why=why), found, OTHER_DEVICE
                    )
