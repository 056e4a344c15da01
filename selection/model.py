"""The data every stage reads and writes: revisions, the ChangeSet, test instances, causes.

Plain dataclasses, no I/O. A `Cause` chain answers "why is this test selected": the change
(detect), how it reaches the instance (map), what the manifests say (scope) and what the
agent decided (triage).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import StrEnum


class ChangeKind(StrEnum):
    added = "added"
    removed = "removed"
    modified = "modified"


@dataclass(frozen=True)
class Revision:
    label: str  # what the user asked for: "2.13", "v2.14.0", "pr/123", a SHA
    sha: str  # the commit analysed (in the mirror or the clone)
    version: str = ""  # exact release ("2.13.0+cpu") when known
    upstream_sha: str = ""  # the PyTorch commit the release was built from, when known


@dataclass(frozen=True)
class FileChange:
    path: str
    kind: ChangeKind
    parse_error: str = ""  # set when the new (or old) side could not be parsed
    analysed: str = ""  # how detect compared it: symbols | native | cpp ("" = not compared)


@dataclass(frozen=True)
class UnchangedFor:
    """A modified function behaves as before wherever parameter `param` holds a value of one
    of `classes` (selection.python.argument_classes codes: `f` a lambda, `n` None, ...), and,
    when `omitted`, wherever a call leaves it out (selection.python.specialize)."""

    param: str
    classes: frozenset[str]
    omitted: bool = False


@dataclass(frozen=True)
class SymbolChange:
    path: str
    qualname: str
    kind: ChangeKind
    other_device_only: bool = False  # only code for another device changed (see python.for_us)
    # A removed (or added) function's registrations as a Python kernel of ATen ops
    # (selection.links.registrations): removing one changes how those ops are traced.
    registers: tuple[str, ...] = ()
    # An edit confined to functions defined inside this one (`f.<locals>.g`, as the recorder
    # names them: selection.python.nested); empty when the function's own code changed.
    nested: tuple[str, ...] = ()
    # How deep in those the changed code runs: 0 when the function runs; 1 only when a
    # function it defines is called (one it returns), ... (not when `import torch` runs the
    # function: selection.links.startup).
    nesting: int = 0
    # The edit changes what runs when the definition itself runs (a function's decorators or
    # default values: at import, for a top-level function or a method of a top-level class).
    definition: bool = False
    # The edit is confined to what runs when something fails (a raise's message, a failed
    # check's message: selection.python.failure_paths); only tests that handle errors see it.
    failure_only: bool = False
    # The edit only adds ("+cosh") or removes ("-lerp") these ATen ops in literal lists of
    # ops (a decomposition table, an `op in (...)` branch: selection.python.op_lists); it
    # reaches where they run.
    op_list: tuple[str, ...] = ()
    # The edit changes nothing for some values of a parameter (2.14's `_check_with`: a lambda
    # or None as its message): a call passing such a value does not reach it.
    unchanged_for: tuple[UnchangedFor, ...] = ()
    # An `__all__` edit: the names it gains ("+mul") or loses ("-mul"), when both revisions
    # list them literally (a star import binds them, TorchRefsMode maps a refs module's);
    # () when it only reorders them, None when not known.
    exports: tuple[str, ...] | None = None
    # What the symbol is (selection.pyast.Symbol.kind: function, class, method, assign,
    # module), where known: module-level code runs on import, a function's body when called.
    symbol_kind: str = ""
    # Its code that runs on import calls something (selection.python.load_time.calls_on_load:
    # an assignment's value, a class header): a plain constant calls nothing.
    calls_on_load: bool = False


@dataclass(frozen=True)
class FieldChange:
    """One changed field of a database entry; decorations are compared element by element."""

    field: str
    detail: str
    other_device_only: bool = False
    test_class: str | None = None  # a DecorateInfo aimed at one test class / template
    test_name: str | None = None
    dtypes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class EntryChange:
    database: str  # opinfo | moduleinfo | foreach
    name: str
    variant: str
    kind: ChangeKind
    path: str
    fields: tuple[FieldChange, ...] = ()

    @property
    def full_name(self) -> str:
        return f"{self.name}.{self.variant}" if self.variant else self.name

    @property
    def other_device_only(self) -> bool:
        return bool(self.fields) and all(f.other_device_only for f in self.fields)


@dataclass(frozen=True)
class NativeChange:
    """An entry of native_functions.yaml (by overload name) or derivatives.yaml."""

    source: str  # native_functions | derivatives
    op: str  # overload name, e.g. "add.Tensor"
    kind: ChangeKind
    fields: tuple[str, ...] = ()
    other_device_only: bool = False
    # For a `func.defaults` change: the first argument whose default changed (0-based, in
    # schema order, `*` not counted): a call passing that many arguments or more is not
    # affected. None: not known, or not a defaults change.
    default_from: int | None = None
    default_name: str = ""  # that argument's name: `dim`

    @property
    def base_name(self) -> str:
        return self.op.split(".", 1)[0]


@dataclass
class ChangeSet:
    base: Revision
    head: Revision
    files: list[FileChange] = field(default_factory=list)
    symbols: list[SymbolChange] = field(default_factory=list)
    entries: list[EntryChange] = field(default_factory=list)
    native: list[NativeChange] = field(default_factory=list)
    templates: list[SymbolChange] = field(default_factory=list)  # test_* methods in test/
    unparseable: list[FileChange] = field(default_factory=list)
    cpp: list[CppChange] = field(default_factory=list)  # ATen / FunctionsManual C++ definitions


@dataclass(frozen=True)
class TestInstance:
    """One generated test, as pytest would collect it."""

    file: str  # repository path, e.g. test/test_ops.py
    test_class: str  # generic (template) class, e.g. TestCommon
    device_class: str  # instantiated class, e.g. TestCommonPRIVATEUSE1
    template: str  # source method name, e.g. test_out
    name: str  # generated method name, e.g. test_out_add_spyre_float32
    op: str | None = None  # OpInfo full name ("add", "linalg.norm.subgradients_at_zero")
    dtype: str | None = None
    op_variant: str = ""  # the variant_test_name part of `op`, if any
    database: str = "opinfo"  # "moduleinfo": `op` names a ModuleInfo (nn.Linear)

    @functools.cached_property
    def node_id(self) -> str:
        # cached: the map stage asks for it tens of millions of times in a release upgrade
        return f"{self.file}::{self.device_class}::{self.name}"


@dataclass(frozen=True)
class Cause:
    """One link of a cause chain."""

    stage: str  # detect | map | scope | triage
    kind: str  # e.g. entry, template, call, registration, native, canary, widen, manifest, agent
    summary: str  # one line a person can read
    # map: the hops from the changed item to the test (file:symbol how), first to last
    evidence: tuple[str, ...] = ()
    basis: str = ""  # map: "static" (from the sources) | "observed" (recorded execution)


@dataclass
class Candidate:
    instance: TestInstance
    causes: list[Cause] = field(default_factory=list)
    mode: str = "mandatory_success"  # from the manifests
    rank: float = 0.0  # higher runs first
    group: str = ""  # the triage group (shared root cause)


@dataclass(frozen=True)
class Dropped:
    """A candidate that did not make it, always with its reason."""

    node_id: str
    stage: str
    reason: str


@dataclass
class StageReport:
    name: str
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    enabled: bool = True
    seconds: float = 0.0


@dataclass(frozen=True)
class CppChange:
    """One changed C++ definition (selection.cpp): a function, a TORCH_IMPL_FUNC, a
    registration, a class, a macro, ... `function == "*"` stands for a whole file that could
    not be read (`parse_error`): its dependents widen."""

    path: str
    function: str  # as read: "at::native::add_kernel", "at::native::TORCH_IMPL_FUNC(add_out)"
    kind: ChangeKind
    name: str = ""  # what its users write to reach it ("add_kernel"); "" when nothing does
    role: str = "function"  # CppItem.kind: function|impl|meta|class|macro|declaration|stub|...
    area: str = "native"  # native | autograd | core (selection.cpp.paths)
    key: str = ""  # its key in the file (qualified name and parameter types)
    line: int = 0
    defines: tuple[str, ...] = ()  # kernel / meta names it defines (TORCH_IMPL_FUNC(add_out))
    file_local: bool = False  # static or in an anonymous namespace: users only in its file
    no_effect: str = ""  # why it cannot affect this device, when it cannot
    parse_error: str = ""

    @property
    def summary(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.function} {self.kind}"
