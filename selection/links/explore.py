"""Build the link graph of one revision, exploring forward from what the backend runs. Pure
over parsed trees.

Roots are the OpInfo/ModuleInfo entries and the reused test templates. From each node the
edges of every link kind are added (calls, an entry's arguments, its default callables, the
ATen ops it dispatches to, the PythonRefInfo relation, registrations of Python kernels for
an ATen op, the ops a backward formula calls, the ops an op's C++ kernels call; a template
whose body was not read, what the layout recorded of it) and the nodes they lead to explored
in turn.
Modules are parsed when first reached, so only code the tests can reach is read; a package
collapsed as a subsystem (`selection.links.subsystems`) is one node, never parsed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping

from selection.links.base import Step, Target
from selection.links.callables import callable_uses
from selection.links.calls import (
    TENSOR_MODULE,
    constructed_methods,
    device_uses_of,
    own_methods,
    uses_of,
)
from selection.links.derivatives import Derived, derivative_uses
from selection.links.dispatch import dispatch_uses
from selection.links.entry_arguments import argument_uses, entry_target
from selection.links.graph import LinkGraph
from selection.links.native_calls import KIND as NATIVE_CALL
from selection.links.native_calls import NativeCalls
from selection.links.python_refs import python_ref_uses
from selection.links.recorded_uses import recorded_uses
from selection.links.refs_mode import MODE_TABLE
from selection.links.registrations import is_registration_module
from selection.links.subsystems import subsystem_of
from selection.links.text_arguments import TextTaking, python_signatures, schema_text_positions
from selection.native_yaml import NativeYamlError, parse_entries
from selection.opinfo_db import DbEntry
from selection.oplists import OpDatabase
from selection.python.names import ModuleNames
from selection.python.resolver import Resolver
from selection.python.summary import ModuleSummary, is_test_code, summarize
from selection.sources.analysis_cache import AnalysisCache
from selection.templates import Template
from selection.universe import Universe
from selection.upstream import ParsedTrees, is_database_file

Out = Iterator[tuple[Target, str, Step]]
Registered = dict[str, list[tuple[Target, Step]]]  # aten op (base) -> functions, evidence
NATIVE_PATHS = (
    "aten/src/ATen/native/native_functions.yaml",
    "torchgen/packaged/ATen/native/native_functions.yaml",
)
DERIVATIVE_PATHS = (
    "tools/autograd/derivatives.yaml",
    "torchgen/packaged/autograd/derivatives.yaml",
)


def _first_text(trees: ParsedTrees, paths: tuple[str, ...]) -> tuple[str, str] | None:
    for path in paths:
        text = trees.tree.read(path)
        if text:
            return path, text
    return None


class Explorer:
    def __init__(
        self,
        trees: ParsedTrees,
        db: OpDatabase,
        universe: Universe,
        lowered_to: dict[str, tuple[str, ...]] | None = None,
        cache: AnalysisCache | None = None,
        native_calls: NativeCalls | None = None,
    ) -> None:
        self.cache = cache
        self.native_calls = native_calls
        self.trees, self.db, self.universe = trees, db, universe
        self.lowered_to = lowered_to or {}
        self.names = ModuleNames([*trees.tree.list("torch"), *trees.tree.list("test")])
        self.summaries: dict[str, ModuleSummary | None] = {}
        self.unparseable: dict[str, str] = {}
        self.native = self._native_entries(NATIVE_PATHS)
        self.aten_ops = frozenset(op.split(".", 1)[0] for op in self.native)
        self.resolver = Resolver(self.names, self.summary, subsystem_of, self.aten_ops)
        self.graph = LinkGraph()
        self._entries = {entry_target(e): e for e in db.entries.values()}
        self._registered: Registered | None = None
        self._derived: Derived | None = None
        self._own_methods: dict[str, Mapping[str, list[str]]] = {}
        self._text_taking: TextTaking | None = None
        self._known_templates: dict[Target, Template] | None = None

    # -- sources -----------------------------------------------------------------------------
    def _native_entries(self, paths: tuple[str, ...]) -> dict[str, dict[str, object]]:
        found = _first_text(self.trees, paths)
        if found is None:
            return {}
        try:
            return parse_entries(found[1], found[0])
        except NativeYamlError as exc:
            self.unparseable[found[0]] = str(exc)
            return {}

    def text_taking(self) -> TextTaking:
        """Where tensor methods take text (selection.links.text_arguments), once."""
        if self._text_taking is None:
            funcs = (str(entry.get("func", "")) for entry in self.native.values())
            module = self.trees.module(TENSOR_MODULE)
            # without Tensor's own signatures (`norm(p="fro")`), no call is judged by text
            self._text_taking = (
                TextTaking(schema_text_positions(funcs), python_signatures(module))
                if module is not None
                else TextTaking()
            )
        return self._text_taking

    def own_methods(self, summary: ModuleSummary) -> Mapping[str, list[str]]:
        """A module's own methods by name, once per module (calls.own_methods)."""
        found = self._own_methods.get(summary.path)
        if found is None:
            found = self._own_methods[summary.path] = own_methods(summary)
        return found

    def summary(self, path: str) -> ModuleSummary | None:
        if path not in self.summaries:
            self.summaries[path] = self._summarize(path)
        return self.summaries[path]

    def _summarize(self, path: str) -> ModuleSummary | None:
        """A module's summary, from the analysis cache when its blob was summarized before."""
        content = self.trees.tree.content_id(path)
        key = self.cache.key("summary", path, content) if self.cache and content else None
        if key is not None and self.cache is not None:
            cached = self.cache.get(key)
            if isinstance(cached, ModuleSummary):
                return cached
        tree = self.trees.parse(path)
        if tree is None:
            if path in self.trees.errors:
                self.unparseable[path] = self.trees.errors[path]
            return None
        text = self.trees.tree.read(path) or ""
        summary = summarize(path, tree, text, self.names, tests=is_test_code(path))
        if key is not None and self.cache is not None:
            self.cache.put(key, summary)
        return summary

    def _is_database_list(self, target: Target) -> bool:
        return (
            target.kind == "function"
            and self.db.is_entry_list(target.name)
            and is_database_file(target.path)
        )

    def constructed_methods(self, cls: Target) -> list[Target]:
        """The methods that may run on an instance of `cls` (calls.constructed_methods)."""
        return constructed_methods(cls, self.methods_of, self.summary(TENSOR_MODULE))

    def methods_of(self, target: Target, depth: int = 0) -> list[Target]:
        """The methods of a class target, its bases' included (none for anything else)."""
        if target.kind != "function" or "." in target.name or depth > 8:
            return []
        summary = self.summary(target.path)
        if summary is None or summary.kinds.get(target.name) != "class":
            return []
        prefix = target.name + "."
        found = [Target.function(target.path, q) for q in summary.kinds if q.startswith(prefix)]
        for base in summary.bases.get(target.name, ()):
            for resolved in self.resolver.resolve(summary, "", base):
                found += self.methods_of(resolved, depth + 1)
        return found

    def registered(self) -> Registered:
        """ATen op (base name) -> the Python kernels registered for it (the overload is in
        the evidence), over every registration module."""
        if self._registered is None:
            found: Registered = {}
            for path in self.trees.tree.list("torch"):
                if not is_registration_module(path):
                    continue
                summary = self.summary(path)
                if summary is None:
                    continue
                for op, function, how, line in [*summary.registrations, *self._imported(summary)]:
                    base = op.split(".", 1)[0]
                    if base in self.aten_ops:
                        step = Step(path, function, f"{how} (line {line})")
                        target = Target.function(path, function)
                        found.setdefault(base, []).append((target, step))
            self._registered = found
        return self._registered

    def _imported(self, summary: ModuleSummary) -> list[tuple[str, str, str, int]]:
        """Registrations by a registering decorator factory another module defines
        (`_make_elementwise_unary_reference`, imported into `torch/_refs/special`)."""
        found = []
        for function, chain, how, line, op in summary.pending_registrations:
            for target in self.resolver.resolve(summary, function, chain):
                defining = self.summary(target.path) if target.kind == "function" else None
                if defining is not None and target.name in defining.inferring_factories:
                    found.append((op, function, f"{how} (aten_op inferred from the name)", line))
        return found

    def derived(self) -> Derived:
        if self._derived is None:
            found = _first_text(self.trees, DERIVATIVE_PATHS)
            entries = self._native_entries(DERIVATIVE_PATHS) if found else {}
            self._derived = derivative_uses(entries, self.aten_ops, found[0] if found else "")
        return self._derived

    # -- exploration -------------------------------------------------------------------------
    def roots(self) -> list[Target]:
        """The entries, and the templates whose body is known: read from the tree, or by
        its recorded uses (selection.links.recorded_uses) where the tree has no test/."""
        return [*self._entries, *self._templates]

    @property
    def _templates(self) -> dict[Target, Template]:
        if self._known_templates is None:
            self._known_templates = {
                Target.template(t.file, t.test_class, t.method): t
                for t in self.universe.templates
                if t.symbol is not None or t.recorded_uses
            }
        return self._known_templates

    def build(self, extra: Iterable[Target] = ()) -> LinkGraph:
        queue: deque[Target] = deque([*self.roots(), *extra])
        explored: set[Target] = set()
        while queue:
            node = queue.popleft()
            if node in explored:
                continue
            explored.add(node)
            for used, kind, step in self._out(node):
                if self._is_database_list(used):
                    continue  # its entries are nodes of their own; the list is not a use
                self.graph.add(node, used, kind, step)
                if used not in explored:
                    queue.append(used)
        return self.graph

    def _out(self, node: Target) -> Out:
        if (node.path, node.name) == MODE_TABLE and _readable_table(self.summary(node.path)):
            # the mode's table, read as such: what it names runs under the mode, where the
            # refs-mode links reach (a table rewritten past reading is followed as code)
            return
        if node.kind == "function":
            summary = self.summary(node.path)
            yield from self.function_uses(node)
            if summary is not None and node.name in summary.kinds:
                for used, step in device_uses_of(summary, node.name, self.resolver):
                    self.graph.add_device_use(used, step)
        elif node.kind == "entry":
            yield from self._entry_out(self._entries.get(node))
        elif node.kind == "template":
            yield from self._template_out(node)
        elif node.kind == "aten":
            yield from self._aten_out(node)

    def function_uses(self, node: Target) -> Out:
        """What a function's code uses (calls.uses_of), whether or not the graph holds it:
        what `import torch` runs is followed from its load-time code, which no test roots
        (selection.links.startup)."""
        summary = self.summary(node.path)
        if summary is not None and node.name in summary.kinds:
            tensor = self.summary(TENSOR_MODULE)
            yield from uses_of(
                summary,
                node.name,
                self.resolver,
                tensor,
                self.methods_of,
                self.own_methods,
                self.text_taking(),
            )

    def _template_out(self, node: Target) -> Out:
        template = self._templates.get(node)
        if template is not None and template.symbol is None:
            yield from recorded_uses(
                node,
                template.recorded_uses,
                self.resolver,
                self.constructed_methods,
                template.recorded_from,
            )
            return
        qualname = f"{node.scope}.{node.name}"
        body = Step(node.path, qualname, "is the template's body")
        yield Target.function(node.path, qualname), "template", body

    def _entry_out(self, entry: DbEntry | None) -> Out:
        if entry is None:
            return
        summary = self.summary(entry.path)
        if summary is not None:
            yield from argument_uses(entry, summary, self.resolver, self.methods_of)
        yield from callable_uses(entry, self.resolver)
        yield from dispatch_uses(entry, self.aten_ops, self.lowered_to)
        yield from python_ref_uses(entry, self.db, self.resolver)

    def _aten_out(self, node: Target) -> Out:
        for target, step in self.registered().get(node.aten_base, ()):
            yield target, "registration", step
        for target, step in self.derived().get(node.aten_base, ()):
            yield target, "derivative", step
        if self.native_calls is not None:
            for called, step in self.native_calls.kernels.get(node.aten_base, ()):
                yield Target.aten(called), NATIVE_CALL, step
            for called, step in self.native_calls.formulas.get(node.aten_base, ()):
                yield Target.aten(called), "derivative", step


def _readable_table(summary: ModuleSummary | None) -> bool:
    """Does the mode's table read as a dict literal of names (`torch_to_refs_map`'s
    explicit entries)? Else it is followed as code."""
    return summary is not None and bool(summary.mappings.get(MODE_TABLE[1]))
