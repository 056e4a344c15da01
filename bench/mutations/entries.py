"""OpInfo / ModuleInfo entries as written in the database files, read with `ast`. Pure.

The benchmark's own reading (not the selection's): an entry is a call of a name ending in
`Info` whose first argument is a string (`UnaryUfuncInfo('abs', ...)`,
`PythonRefInfo('_refs.abs', torch_opinfo_name='abs')`); it gives the names its keyword
arguments use (`sample_inputs_func=sample_inputs_abs`, `ref=np.abs`), its DecorateInfos and
the fields a PythonRefInfo inherits from the OpInfo it names.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

OTHER_DEVICES = ("cuda", "mps", "xpu", "hip", "rocm", "mtia", "hpu", "lazy")
NOT_OURS = (*OTHER_DEVICES, "cpu", "meta")  # for a PrivateUse1 device's tests
# What a PythonRefInfo never inherits (opinfo/refs.py `_inherit_constructor_args`).
NOT_INHERITED = frozenset(
    {
        "skips",
        "decorators",
        "aliases",
        "method_variant",
        "inplace_variant",
        "supports_scripting",
        "supports_autograd",
        "supports_gradgrad",
        "supports_fwgrad_bwgrad",
        "supports_inplace_autograd",
        "supports_forward_ad",
    }
)


@dataclass(frozen=True)
class Decoration:
    node: ast.Call  # the DecorateInfo(...) call
    container: ast.List | ast.Tuple  # the skips=/decorators= list holding it
    field: str  # skips | decorators
    device_type: str | None
    test_class: str | None
    test_name: str | None
    dtypes: tuple[str, ...] | None  # torch dtype names; None: every dtype
    conditional: bool  # has active_if: cannot be decided statically


@dataclass
class Entry:
    path: str
    info_class: str
    name: str
    variant: str
    node: ast.Call
    names_used: set[str] = field(default_factory=set)  # Names in its keyword arguments
    keywords: dict[str, ast.expr] = field(default_factory=dict)
    decorations: list[Decoration] = field(default_factory=list)
    torch_opinfo: tuple[str, str] | None = None  # PythonRefInfo: (name, variant) it builds on

    @property
    def full_name(self) -> str:
        return f"{self.name}.{self.variant}" if self.variant else self.name

    @property
    def database(self) -> str:
        return "moduleinfo" if self.info_class == "ModuleInfo" else "opinfo"


def _string(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _dtype_names(node: ast.expr | None) -> tuple[str, ...] | None:
    if node is None:
        return None
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    names = [i.attr for i in items if isinstance(i, ast.Attribute)]
    return tuple(names) if len(names) == len(items) else None


def decoration(call: ast.Call, container: ast.List | ast.Tuple, field_name: str) -> Decoration:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    positional = list(call.args) + [None] * 4
    return Decoration(
        node=call,
        container=container,
        field=field_name,
        device_type=_string(keywords.get("device_type", positional[3])),
        test_class=_string(keywords.get("cls_name", positional[1])),
        test_name=_string(keywords.get("test_name", positional[2])),
        dtypes=_dtype_names(keywords.get("dtypes")),
        conditional="active_if" in keywords,
    )


def _decorations(keywords: Mapping[str, ast.expr]) -> Iterator[Decoration]:
    for field_name in ("skips", "decorators"):
        container = keywords.get(field_name)
        if not isinstance(container, (ast.List, ast.Tuple)):
            continue
        for element in container.elts:
            if isinstance(element, ast.Call) and _callee(element) == "DecorateInfo":
                yield decoration(element, container, field_name)


def _entry(path: str, call: ast.Call) -> Entry | None:
    info_class = _callee(call)
    name = _string(call.args[0]) if call.args else None
    if not info_class.endswith("Info") or info_class == "DecorateInfo" or name is None:
        return None
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    used = {n.id for k in call.keywords for n in ast.walk(k.value) if isinstance(n, ast.Name)}
    entry = Entry(
        path, info_class, name, _string(keywords.get("variant_test_name")) or "", call, used,
        keywords, list(_decorations(keywords)),
    )  # fmt: skip
    base = _string(keywords.get("torch_opinfo_name"))
    if base is not None:
        entry.torch_opinfo = (base, _string(keywords.get("torch_opinfo_variant_name")) or "")
    return entry


def entries_in(path: str, tree: ast.Module) -> list[Entry]:
    """Every entry of one database file, in source order."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            entry = _entry(path, node)
            if entry is not None:
                found.append(entry)
    return sorted(found, key=lambda e: e.node.lineno)


def inheriting_refs(entries: list[Entry], base: Entry, field_name: str | None) -> list[Entry]:
    """The PythonRefInfos built on `base` that inherit `field_name` (None: samples and
    everything else they always inherit)."""
    return [
        e
        for e in entries
        if e.torch_opinfo == (base.name, base.variant)
        and (
            field_name is None or (field_name not in NOT_INHERITED and field_name not in e.keywords)
        )
    ]
