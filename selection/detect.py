"""Stage 1 logic: a ChangeSet from two revisions of the upstream sources. Pure over trees."""

from __future__ import annotations

import ast
import dataclasses
from collections import Counter
from collections.abc import Callable

from selection.cpp.detect import detect_cpp_file, is_cpp_path
from selection.devices import names_other_device
from selection.dtypes_eval import DtypeEvaluator
from selection.links.registrations import (
    is_registration_module,
    namespace_aliases,
    registrations_in,
)
from selection.model import (
    ChangeKind,
    ChangeSet,
    EntryChange,
    FieldChange,
    FileChange,
    Revision,
    SymbolChange,
)
from selection.native_yaml import NativeYamlError, diff_entries, parse_entries
from selection.opinfo_db import DECORATION_FIELDS, DbEntry, Decoration
from selection.pyast import (
    FUNCTION_DEFS,
    Fingerprint,
    Symbol,
    module_symbols,
    same_code,
    same_code_for_us,
)
from selection.python.argument_classes import module_bindings
from selection.python.failure_paths import confined_to_failure
from selection.python.load_time import calls_on_load, definition_changed
from selection.python.nested import confined_to_nested
from selection.python.op_lists import op_list_edit
from selection.python.specialize import unchanged_for
from selection.python.summary import exports_edit
from selection.sources.analysis_cache import AnalysisCache
from selection.upstream import (
    DTYPE_HELPERS,
    ParsedTrees,
    analysed_by_symbol,
    is_database_file,
    is_native_yaml,
    is_test_file,
)


def diff_symbols(
    path: str,
    old: dict[str, Symbol],
    new: dict[str, Symbol],
    skip: Callable[[str], bool] = lambda _n: False,
) -> list[SymbolChange]:
    """Symbols added, removed or changed in behaviour (see selection.pyast); a change is
    other-device-only when it vanishes once another device's code is left out (in test
    code, `cpu`/`meta` code too)."""
    tests = path.startswith(("test/", "torch/testing/"))
    # what the module binds at its top level, any way (a builtin of that name is shadowed)
    statements = [
        n for side in (old, new) for q, s in side.items() if "." not in q for n in s.nodes
    ]
    top_level = frozenset(module_bindings([n for n in statements if isinstance(n, ast.stmt)]))
    # what the head's module binds: a message reading a name the edit removes is unbound
    head_level = frozenset(
        module_bindings(
            [n for q, s in new.items() if "." not in q for n in s.nodes if isinstance(n, ast.stmt)]
        )
    )
    changes: list[SymbolChange] = []
    for name in sorted(set(old) | set(new)):
        if skip(name):
            continue
        # A name is not a device: `tf32_on_and_off` wraps tests on every device. Only code
        # that cannot run here (python.for_us) makes a change another device's.
        if name not in old:
            changes.append(_added_or_removed(path, new[name], ChangeKind.added))
        elif name not in new:
            changes.append(_added_or_removed(path, old[name], ChangeKind.removed))
        elif not same_code(old[name], new[name]):
            same_for_us = same_code_for_us(old[name], new[name], tests)
            before, after = old[name].runtime_nodes, new[name].runtime_nodes
            # the narrowing analyses compare as the symbol did (its module's readers)
            fingerprint = old[name].fingerprinter()
            confined = confined_to_nested(name, before, after, fingerprint)
            definition = definition_changed(before, after, old[name].readers) or (
                old[name].kind in ("function", "method")
                and _beside_defs(before, fingerprint) != _beside_defs(after, fingerprint)
            )
            failure_only = confined_to_failure(before, after, fingerprint, head_level)
            # test code's op lists make tests (which tests exist), not lookups; a function's,
            # not a module-level table's: the recording tells which pairs ran a function
            listed = not tests and not failure_only and old[name].kind in ("function", "method")
            op_list = op_list_edit(before, after, fingerprint) if listed else ()
            # a function's own parameters: a method's calls fill them shifted by the receiver
            plain = old[name].kind == "function" and not same_for_us
            unchanged = unchanged_for(before, after, top_level, fingerprint) if plain else ()
            changes.append(
                SymbolChange(
                    path,
                    name,
                    ChangeKind.modified,
                    same_for_us,
                    nested=confined.names,
                    nesting=confined.nesting,
                    definition=definition,
                    failure_only=failure_only,
                    op_list=op_list,
                    unchanged_for=unchanged,
                    exports=exports_edit(before, after) if name == "__all__" else None,
                    symbol_kind=old[name].kind,
                    calls_on_load=calls_on_load(before) or calls_on_load(after),
                )
            )
    return changes


def _added_or_removed(path: str, symbol: Symbol, kind: ChangeKind) -> SymbolChange:
    """What of an added or removed symbol runs on import: a function's decorators (they
    may register it, or raise), statements beside its `def`, code an assignment calls."""
    nodes = symbol.runtime_nodes
    decorated = any(d.decorator_list for d in symbol.definitions)
    beside = any(not isinstance(n, FUNCTION_DEFS) for n in nodes) and symbol.kind == "function"
    return SymbolChange(
        path,
        symbol.qualname,
        kind,
        symbol_kind=symbol.kind,
        definition=decorated or beside,
        calls_on_load=calls_on_load(nodes),
    )


def _beside_defs(nodes: list[ast.AST], fingerprint: Fingerprint) -> str:
    """The statements of a function's symbol besides its `def`s (`f = wrap(f)`): module
    code that runs on import."""
    return fingerprint([n for n in nodes if not isinstance(n, FUNCTION_DEFS)])


def _decoration_changes(
    field: str, old: list[Decoration], new: list[Decoration]
) -> list[FieldChange]:
    before = Counter(d.fingerprint for d in old)
    after = Counter(d.fingerprint for d in new)
    out: list[FieldChange] = []
    for sign, items, other in (("-", old, after), ("+", new, before)):
        remaining = Counter(other)
        for deco in items:
            if remaining[deco.fingerprint] > 0:
                remaining[deco.fingerprint] -= 1
                continue
            out.append(
                FieldChange(
                    field,
                    f"{sign} {deco.text}",
                    deco.other_device,
                    deco.test_class,
                    deco.test_name,
                    deco.dtypes,
                )
            )
    return out


def _comparable(old: DbEntry, new: DbEntry, field: str) -> bool:
    """Both sides' decorations are known (a missing field is an empty tuple)."""
    return (field in old.decorations or field not in old.fields) and (
        field in new.decorations or field not in new.fields
    )


def _dtype_change(old: DbEntry, new: DbEntry) -> FieldChange | None:
    """`dtypes` compared as sets: only the added dtypes make new instances to run (the
    removed ones no longer exist). None when either side cannot be evaluated statically."""
    before = (
        old.dtype_eval.evaluate(old.field_nodes["dtypes"])
        if isinstance(old.dtype_eval, DtypeEvaluator)
        else None
    )
    after = (
        new.dtype_eval.evaluate(new.field_nodes["dtypes"])
        if isinstance(new.dtype_eval, DtypeEvaluator)
        else None
    )
    if before is None or after is None:
        return None
    added = tuple(sorted(set(after) - set(before)))
    removed = tuple(sorted(set(before) - set(after)))
    detail = "dtypes" + "".join(f" +{d}" for d in added) + "".join(f" -{d}" for d in removed)
    if not added and not removed:
        detail = "dtypes rewritten (same set)"
    return FieldChange("dtypes", detail, False, dtypes=added)


def diff_entry_fields(old: DbEntry, new: DbEntry) -> list[FieldChange]:
    changes: list[FieldChange] = []
    for field in sorted(set(old.fields) | set(new.fields)):
        if old.fields.get(field) == new.fields.get(field):
            continue
        if field in DECORATION_FIELDS and _comparable(old, new, field):
            before, after = old.decorations.get(field, []), new.decorations.get(field, [])
            changes.extend(_decoration_changes(field, before, after))
            continue
        if field == "dtypes" and field in old.fields and field in new.fields:
            dtype_change = _dtype_change(old, new)
            if dtype_change is not None:
                changes.append(dtype_change)
                continue
        other = names_other_device(field)
        if field == "dtypesIf":
            other = False
        detail = (
            "added"
            if field not in old.fields
            else "removed"
            if field not in new.fields
            else "changed"
        )
        changes.append(FieldChange(field, f"{field} {detail}", other))
    return changes


def diff_databases(
    path: str, old: dict[tuple[str, str, str], DbEntry], new: dict[tuple[str, str, str], DbEntry]
) -> list[EntryChange]:
    changes: list[EntryChange] = []
    for key in sorted(set(old) | set(new)):
        database, name, variant = key
        if key not in old:
            changes.append(EntryChange(database, name, variant, ChangeKind.added, path))
        elif key not in new:
            changes.append(EntryChange(database, name, variant, ChangeKind.removed, path))
        elif old[key].text_hash and old[key].text_hash == new[key].text_hash:
            continue  # same source text: nothing to compare
        else:
            fields = diff_entry_fields(old[key], new[key])
            if fields:
                changes.append(
                    EntryChange(database, name, variant, ChangeKind.modified, path, tuple(fields))
                )
    return changes


def _with_registrations(
    path: str, changes: list[SymbolChange], old: dict[str, Symbol], tree: ast.Module | None
) -> list[SymbolChange]:
    """A removed function's registrations (the ops it was a decomposition or meta kernel
    of): nothing in the head links to it any more, yet those ops are traced differently."""
    removed = {c.qualname for c in changes if c.kind == ChangeKind.removed}
    if not removed or tree is None:
        return changes
    aliases = namespace_aliases(tree)
    ops: dict[str, list[str]] = {}
    for op, function, _how, _line in registrations_in(path, old, aliases):
        if function in removed:
            ops.setdefault(function, []).append(op)
    return [
        dataclasses.replace(c, registers=tuple(ops[c.qualname])) if c.qualname in ops else c
        for c in changes
    ]


def _is_db_list(qualname: str) -> bool:
    return qualname.endswith("_db")


# Modules parsed by detect whose trees are kept for the stages after it (the link graph
# parses them again otherwise); the rest are parsed, compared and let go.
_KEEP_PARSED = ("torch/testing/", "test/", "torch/nn/", "torch/_refs/", "torch/_decomp/")


class Detector:
    """Builds the ChangeSet; parsed modules are kept in the ParsedTrees for the next stages.

    `cache` (optional) keeps per-file symbol comparisons by the two blobs compared, so the
    same release pair is parsed once per machine."""

    def __init__(
        self, base: ParsedTrees, head: ParsedTrees, cache: AnalysisCache | None = None
    ) -> None:
        self.base, self.head = base, head
        self.cache = cache
        self.symbols_cache: dict[tuple[str, str], dict[str, Symbol]] = {}
        self._dtype_evals: dict[str, DtypeEvaluator] = {}

    def dtype_eval(self, side: str) -> DtypeEvaluator:
        """Evaluates `dtypes=` of DecorateInfos with that side's common_dtype helpers."""
        if side not in self._dtype_evals:
            trees = self.base if side == "base" else self.head
            evaluator = DtypeEvaluator(None)
            helpers = trees.module(DTYPE_HELPERS)
            if helpers is not None:
                evaluator.add_module(helpers)
            self._dtype_evals[side] = evaluator
        return self._dtype_evals[side]

    def symbols(self, side: str, path: str, keep: bool = True) -> dict[str, Symbol] | None:
        key = (side, path)
        if key in self.symbols_cache:
            return self.symbols_cache[key]
        trees = self.base if side == "base" else self.head
        tree = trees.module(path) if keep else trees.parse(path)
        if tree is None:
            return None
        symbols = module_symbols(tree, trees.tree.read(path) or "")
        if keep:
            self.symbols_cache[key] = symbols
        return symbols

    def detect(
        self,
        base: Revision,
        head: Revision,
        paths: list[tuple[str, ChangeKind]],
        progress: Callable[[int, int], None] | None = None,
    ) -> ChangeSet:
        changes = ChangeSet(base, head)
        for index, (path, kind) in enumerate(paths, start=1):
            if progress is not None:
                progress(index, len(paths))
            change = self._file(changes, path, kind)
            changes.files.append(change)
            # an unreadable C++ file is widened by the C++ link kind, finer than "all"
            if change.parse_error and change.analysed != "cpp":
                changes.unparseable.append(change)
        return changes

    def _file(self, changes: ChangeSet, path: str, kind: ChangeKind) -> FileChange:
        if is_native_yaml(path):
            return self._native(changes, path, kind)
        if is_cpp_path(path):
            return detect_cpp_file(changes, self.base, self.head, path, kind)
        if not analysed_by_symbol(path):
            return FileChange(path, kind)
        database = is_database_file(path)
        if not database and not is_test_file(path):
            return self._library(changes, path, kind)
        old = self.symbols("base", path) if kind != ChangeKind.added else {}
        new = self.symbols("head", path) if kind != ChangeKind.removed else {}
        error = self.base.errors.get(path) or self.head.errors.get(path)
        if old is None or new is None:
            return FileChange(path, kind, error or "could not be read")
        # Database lists are compared entry by entry below: fingerprinting all of `op_db`
        # as one symbol would cost seconds for nothing.
        symbol_changes = diff_symbols(
            path, old, new, skip=_is_db_list if database else lambda _n: False
        )
        if database:
            symbol_changes = self._database(changes, path, symbol_changes)
        if is_test_file(path):
            changes.templates.extend(
                s
                for s in symbol_changes
                if s.qualname.rsplit(".", 1)[-1].startswith("test") and "." in s.qualname
            )
        changes.symbols.extend(symbol_changes)
        return FileChange(path, kind, analysed="symbols")

    def _library(self, changes: ChangeSet, path: str, kind: ChangeKind) -> FileChange:
        """Any other module: symbols compared, through the cache when one is given."""
        key = None
        if self.cache is not None:
            ids = [
                (t.tree.content_id(path) if k else None) or "-"
                for t, k in (
                    (self.base, kind != ChangeKind.added),
                    (self.head, kind != ChangeKind.removed),
                )
            ]
            key = self.cache.key("symbol-changes", path, *ids)
            cached = self.cache.get(key)
            if isinstance(cached, list):
                changes.symbols.extend(cached)
                return FileChange(path, kind, analysed="symbols")
        keep = path.startswith(_KEEP_PARSED)
        old = self.symbols("base", path, keep) if kind != ChangeKind.added else {}
        new = self.symbols("head", path, keep) if kind != ChangeKind.removed else {}
        if old is None or new is None:
            error = self.base.errors.get(path) or self.head.errors.get(path)
            return FileChange(path, kind, error or "could not be read")
        found = diff_symbols(path, old, new)
        if is_registration_module(path):
            found = _with_registrations(path, found, old, self.base.parse(path))
        if key is not None and self.cache is not None:
            self.cache.put(key, found)
        changes.symbols.extend(found)
        return FileChange(path, kind, analysed="symbols")

    def _database(
        self, changes: ChangeSet, path: str, symbols: list[SymbolChange]
    ) -> list[SymbolChange]:
        """Entries of `*_db` lists are compared entry by entry instead of as one symbol."""
        old_parse = self.base.database(path, self.dtype_eval("base"))
        new_parse = self.head.database(path, self.dtype_eval("head"))
        old = old_parse.entries if old_parse is not None else {}
        new = new_parse.entries if new_parse is not None else {}
        changes.entries.extend(diff_databases(path, old, new))
        return symbols

    def _native(self, changes: ChangeSet, path: str, kind: ChangeKind) -> FileChange:
        source = "derivatives" if path.endswith("derivatives.yaml") else "native_functions"
        try:
            old_text = self.base.tree.read(path) if kind != ChangeKind.added else None
            new_text = self.head.tree.read(path) if kind != ChangeKind.removed else None
            old = parse_entries(old_text, path) if old_text else {}
            new = parse_entries(new_text, path) if new_text else {}
        except NativeYamlError as exc:
            return FileChange(path, kind, str(exc))
        changes.native.extend(diff_entries(source, old, new))
        return FileChange(path, kind, analysed="native")
