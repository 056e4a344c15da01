"""Stage 2 logic: which upstream instances each change can affect. Pure.

Rules, each recorded as a cause on the instances it reaches:
- an edited template: all its instances;
- a database entry: every instance of that op (or only the class/template/dtypes a changed
  DecorateInfo names); changes aimed only at another device affect nothing;
- native_functions.yaml / derivatives.yaml: every instance of the ops with that aten name;
- a changed helper: the entries and templates that reach it through the reference graph;
- the instantiation machinery (reached by nearly every instance) and library code that
  cannot be mapped to ops: a stratified canary (one instance per class x template x dtype),
  resolved after scoping; `widen="full"` selects everything instead;
- an unparseable file: its dependents widen (a test file: all its instances; else all).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from selection.devices import names_other_device
from selection.model import (
    Candidate,
    Cause,
    ChangeKind,
    ChangeSet,
    EntryChange,
    FieldChange,
    SymbolChange,
    TestInstance,
)
from selection.opinfo_db import DECORATION_FIELDS
from selection.oplists import OpDatabase
from selection.pyast import MODULE_SYMBOL, Symbol
from selection.refgraph import MACHINERY_FILES, ReferenceGraph, SymbolKey
from selection.universe import Universe
from selection.upstream import INTERNAL, NOT_DEVICE_GENERIC, is_database_file

MAX_CAUSES = 6
NEARLY_ALL = 0.5  # a helper reaching more than half of the ops is treated as machinery
_ATEN = re.compile(r"aten\.(\w+)")


@dataclass
class MapResult:
    candidates: dict[str, Candidate] = field(default_factory=dict)
    canary_causes: list[Cause] = field(default_factory=list)
    widen_all: list[Cause] = field(default_factory=list)
    no_effect: list[str] = field(default_factory=list)  # changes that affect nothing here, why
    removed_entries: list[EntryChange] = field(default_factory=list)
    removed_templates: list[SymbolChange] = field(default_factory=list)
    unmapped_library: list[str] = field(default_factory=list)


class Mapper:
    def __init__(
        self,
        changes: ChangeSet,
        universe: Universe,
        db: OpDatabase,
        graph: ReferenceGraph,
        head_symbols: dict[str, dict[str, Symbol]],
    ) -> None:
        self.changes, self.universe, self.db, self.graph = changes, universe, db, graph
        self.head_symbols = head_symbols
        self.result = MapResult()
        self.by_op = universe.by_op()
        self.by_template = universe.by_template()
        self._machinery: set[SymbolKey] | None = None
        self._aten_index: dict[str, list[str]] | None = None
        self.aten_aliases: dict[str, tuple[str, ...]] = {}

    # -- recording -------------------------------------------------------------------------
    def _hit(self, instances: list[TestInstance], detect: Cause, how: Cause) -> None:
        for inst in instances:
            candidate = self.result.candidates.get(inst.node_id)
            if candidate is None:
                candidate = self.result.candidates[inst.node_id] = Candidate(inst)
            if len(candidate.causes) < MAX_CAUSES * 2:
                candidate.causes.extend((detect, how))

    def run(self) -> MapResult:
        self._templates()
        self._entries()
        self._native()
        self._symbols()
        self._library()
        self._unparseable()
        return self.result

    # -- templates -------------------------------------------------------------------------
    def _templates(self) -> None:
        for change in self.changes.templates:
            cls_name, _, method = change.qualname.partition(".")
            detect = Cause("detect", "template", f"{change.path}: {change.qualname} {change.kind}")
            if change.other_device_only:
                self.result.no_effect.append(
                    f"{detect.summary}: only another device's code changed"
                )
                continue
            if change.kind == ChangeKind.removed:
                self.result.removed_templates.append(change)
                continue
            instances = self.by_template.get((change.path, cls_name, method), [])
            if not instances:
                self.result.no_effect.append(
                    f"{detect.summary}: not a template of a file the manifests reuse, "
                    "or not instantiated for this device"
                )
            self._hit(instances, detect, Cause("map", "template", "the template's body changed"))

    # -- database entries --------------------------------------------------------------------
    def _entries(self) -> None:
        for change in self.changes.entries:
            label = "ModuleInfo" if change.database == "moduleinfo" else "OpInfo"
            summary = f"{label} {change.full_name!r} {change.kind}"
            if change.kind == ChangeKind.removed:
                self.result.removed_entries.append(change)
                continue
            if change.other_device_only:
                details = "; ".join(f.detail for f in change.fields[:3])
                self.result.no_effect.append(
                    f"{summary}: only other-device skips/decorators/dtypes ({details})"
                )
                continue
            relevant = [f for f in change.fields if not f.other_device_only]
            detail = "; ".join(f.detail for f in relevant[:3]) + ("…" if len(relevant) > 3 else "")
            detect = Cause("detect", "entry", f"{summary}: {detail}" if detail else summary)
            instances = self.by_op.get(change.full_name, [])
            if relevant and all(_targeted(f) for f in relevant):
                instances = [i for i in instances if any(_aimed_at(f, i) for f in relevant)]
                kinds = {"dtypes" if f.field == "dtypes" else "decoration" for f in relevant}
                how = Cause(
                    "map",
                    "entry-decoration" if kinds == {"decoration"} else "entry-dtypes",
                    "only the instances the changed skip/decorator/dtype list names",
                )
                if not instances:
                    self.result.no_effect.append(
                        f"{detect.summary}: names no instance that exists here"
                    )
            else:
                how = Cause("map", "entry", f"every generated instance of {change.full_name!r}")
            self._hit(instances, detect, how)

    # -- native_functions.yaml / derivatives.yaml -------------------------------------------
    def _ops_by_aten(self) -> dict[str, list[str]]:
        """aten base name -> OpInfo full names: the entry's aten_name / last name component,
        plus what the capability file says a supported op lowers to (`square` -> `pow`)."""
        if self._aten_index is None:
            index: dict[str, list[str]] = {}
            by_name = self.db.by_name()
            for entry in self.db.entries.values():
                for name in {entry.aten_name, entry.name.rsplit(".", 1)[-1]}:
                    index.setdefault(name, []).append(entry.full_name)
            for aten, ops in self.aten_aliases.items():
                for op in ops:
                    index.setdefault(aten, []).extend(
                        self.db.entries[k].full_name for k in by_name.get(op, [])
                    )
            self._aten_index = {k: list(dict.fromkeys(v)) for k, v in index.items()}
        return self._aten_index

    def _native(self) -> None:
        by_aten = self._ops_by_aten()
        for change in self.changes.native:
            summary = f"{change.source}.yaml {change.op} {change.kind}"
            if change.fields:
                summary += ": " + ", ".join(change.fields[:4])
            if change.other_device_only:
                self.result.no_effect.append(f"{summary}: only another device's dispatch changed")
                continue
            detect = Cause("detect", "native", summary)
            if change.source == "derivatives":
                how = Cause(
                    "map", "derivative", f"ops differentiated through aten::{change.base_name}"
                )
            else:
                how = Cause("map", "native", f"ops dispatching to aten::{change.base_name}")
            for op in by_aten.get(change.base_name, []):
                self._hit(self.by_op.get(op, []), detect, how)

    # -- helpers in the testing infrastructure and test files --------------------------------
    def machinery(self) -> set[SymbolKey]:
        if self._machinery is None:
            self._machinery = self.graph.machinery()
        return self._machinery

    def _symbols(self) -> None:
        for change in self.changes.symbols:
            if not (change.path.startswith(INTERNAL + "/") or change.path.startswith("test/")):
                continue
            if change.path.removeprefix(INTERNAL + "/").startswith(NOT_DEVICE_GENERIC):
                self.result.no_effect.append(
                    f"{change.path}: {change.qualname}: distributed/codegen test helpers"
                )
                continue
            if change.path.startswith("test/") and change in self.changes.templates:
                continue
            label = f"{change.path}: {change.qualname} {change.kind}"
            if change.other_device_only:
                self.result.no_effect.append(f"{label}: another device's code only")
                continue
            self._helper(change, label)

    def _helper(self, change: SymbolChange, label: str) -> None:
        key = (change.path, change.qualname)
        if change.path in MACHINERY_FILES and (
            key in self.machinery() or change.qualname == MODULE_SYMBOL
        ):
            self.result.canary_causes.append(
                Cause(
                    "map",
                    "canary",
                    f"{label}: instantiation machinery, reached by nearly every instance",
                )
            )
            return
        if change.qualname == MODULE_SYMBOL:
            if is_database_file(change.path) or change.path.startswith("test/"):
                self.result.canary_causes.append(
                    Cause("map", "canary", f"{label}: module-level statements")
                )
            else:
                self.result.no_effect.append(
                    f"{label}: module-level statements of a file no reused test imports by name"
                )
            return
        if change.kind in (ChangeKind.removed, ChangeKind.added):
            # A new name is only reached by code that changed to use it (mapped on its own);
            # a removed one can no longer be reached by anything in the new release.
            self.result.no_effect.append(
                f"{label}: {change.kind} (its users changed too, and are mapped)"
            )
            return
        users = self.graph.reverse_closure([key])
        names = {q.rsplit(".", 1)[-1] for _, q in users if q != MODULE_SYMBOL}
        detect = Cause("detect", "helper", label)
        entries = [e for e in self.db.entries.values() if e.refs & names]
        if len(entries) > NEARLY_ALL * max(1, len(self.db.entries)):
            self.result.canary_causes.append(
                Cause("map", "canary", f"{label}: reached by {len(entries)} database entries")
            )
            return
        reached = 0
        for entry in entries:
            instances = self.by_op.get(entry.full_name, [])
            reached += len(instances)
            self._hit(
                instances, detect, Cause("map", "helper", f"OpInfo {entry.full_name!r} uses it")
            )
        for template in self.universe.templates:
            if template.refs & names:
                instances = self.by_template.get(
                    (template.file, template.test_class, template.method), []
                )
                reached += len(instances)
                self._hit(
                    instances,
                    detect,
                    Cause("map", "helper", f"template {template.qualname} uses it"),
                )
        if not reached:
            self.result.no_effect.append(f"{label}: no reused instance reaches it")

    # -- library code under test ------------------------------------------------------------
    def _library(self) -> None:
        handled: set[str] = set()
        for change in self.changes.symbols:
            ops = self._library_ops(change)
            if ops is None:
                continue
            handled.add(change.path)
            if change.other_device_only:
                continue
            detect = Cause("detect", "library", f"{change.path}: {change.qualname} {change.kind}")
            for op in ops:
                self._hit(
                    self.by_op.get(op, []),
                    detect,
                    Cause("map", "library", f"implements or references {op!r}"),
                )
        for file in self.changes.files:
            path = file.path
            if path.startswith(INTERNAL + "/") and path.removeprefix(INTERNAL + "/").startswith(
                NOT_DEVICE_GENERIC
            ):
                self.result.no_effect.append(
                    f"{path}: distributed/generated test helpers, not used by device-generic tests"
                )
                continue
            if not path.startswith("torch/") or path.startswith(INTERNAL) or path in handled:
                continue
            if not path.endswith(".py") or _other_device_path(path):
                continue
            self.result.unmapped_library.append(path)
        if self.result.unmapped_library:
            sample = ", ".join(self.result.unmapped_library[:3])
            self.result.canary_causes.append(
                Cause(
                    "map",
                    "canary",
                    f"{len(self.result.unmapped_library)} library files changed that cannot be mapped to ops statically ({sample}, …)",
                )
            )

    def _library_ops(self, change: SymbolChange) -> list[str] | None:
        path, name = change.path, change.qualname.rsplit(".", 1)[-1]
        if path.startswith("torch/_refs/"):
            return [
                e.full_name
                for e in self.db.entries.values()
                if e.name.startswith("_refs.") and e.name.rsplit(".", 1)[-1] == name
            ]
        if path == "torch/nn/functional.py":
            return [
                e.full_name for e in self.db.entries.values() if e.name == f"nn.functional.{name}"
            ]
        if path == "torch/functional.py":
            return [e.full_name for e in self.db.entries.values() if e.name == name]
        if path.startswith("torch/_decomp/") or path == "torch/_meta_registrations.py":
            symbol = self.head_symbols.get(path, {}).get(change.qualname)
            aten = set()
            if symbol is not None:
                for node in symbol.nodes:
                    for deco in getattr(node, "decorator_list", []):
                        aten.update(_ATEN.findall(_unparse(deco)))
            by_aten = self._ops_by_aten()
            return list(dict.fromkeys(op for a in sorted(aten) for op in by_aten.get(a, [])))
        return None

    # -- unparseable files --------------------------------------------------------------------
    def _unparseable(self) -> None:
        for file in self.changes.unparseable:
            cause = Cause(
                "map",
                "widen",
                f"{file.path} could not be parsed ({file.parse_error}): its dependents run",
            )
            if file.path.startswith("test/"):
                instances = [i for i in self.universe.instances if i.file == file.path]
                self._hit(instances, Cause("detect", "unparseable", file.path), cause)
            else:
                self.result.widen_all.append(cause)
                self._hit(self.universe.instances, Cause("detect", "unparseable", file.path), cause)


def _targeted(change: FieldChange) -> bool:
    """A field change that names the instances it affects: a DecorateInfo aimed at a test
    class, or a dtype list compared as sets (its added dtypes)."""
    if change.field == "dtypes":
        return change.dtypes is not None
    return change.field in DECORATION_FIELDS and bool(change.test_class)


def _aimed_at(change: object, inst: TestInstance) -> bool:
    test_class = getattr(change, "test_class", None)
    test_name = getattr(change, "test_name", None)
    dtypes = getattr(change, "dtypes", None)
    if getattr(change, "field", "") == "dtypes":
        return inst.dtype in (dtypes or ())
    if test_class and test_class != inst.test_class:
        return False
    if test_name and test_name != inst.template:
        return False
    return not (dtypes and inst.dtype and inst.dtype not in dtypes)


def _other_device_path(path: str) -> bool:
    parts = path.removesuffix(".py").split("/")
    return any(names_other_device(part) for part in parts)


def _unparse(node: object) -> str:
    import ast

    return ast.unparse(node) if isinstance(node, ast.AST) else ""
