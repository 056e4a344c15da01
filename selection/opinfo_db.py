"""OpInfo / ModuleInfo database entries, read statically from the database files.

Pure. An entry is keyed by (name, variant_test_name); each keyword argument becomes a field
with a fingerprint, and the `skips` / `decorators` tuples are split into their
`DecorateInfo(...)` elements, each with the device types, test class, test name and dtypes it
is aimed at, so that a detector can say *which* instances a change touches.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field

from selection.devices import device_types_of, is_other_device_only, names_other_device
from selection.pyast import referenced_names
from selection.python.chains import last_name

DECORATION_FIELDS = ("skips", "decorators")
DB_NAME_SUFFIX = "_db"  # op_db, python_ref_db, foreach_unary_op_db, module_db, ...


@dataclass(frozen=True)
class Decoration:
    """One element of an entry's `skips` or `decorators` tuple."""

    fingerprint: str
    text: str  # short source text, for reports
    device_types: frozenset[str] | None  # None: every device
    other_device: bool  # aimed only at devices other than ours
    test_class: str | None
    test_name: str | None
    dtypes: tuple[str, ...] | None  # None: every dtype (or not statically known)
    unconditional_skip: bool = False  # `unittest.skip(...)` with no active_if

    def skips_for(self, device: str, test_class: str, template: str, dtype: str | None) -> bool:
        """Does this decoration skip that instance on our device, whatever the run's flags?"""
        if not self.unconditional_skip or self.test_class is None or self.test_name is None:
            return False
        if self.device_types is not None and not self.device_types & {device, "privateuse1"}:
            return False
        if (self.test_class, self.test_name) != (test_class, template):
            return False
        return self.dtypes is None or dtype in self.dtypes


@dataclass
class DbEntry:
    database: str  # "opinfo" | "moduleinfo"
    name: str
    variant: str
    info_class: str  # OpInfo, UnaryUfuncInfo, ModuleInfo, ...
    path: str
    lineno: int
    field_nodes: dict[str, ast.expr] = field(default_factory=dict)
    lists: tuple[str, ...] = ()  # the module-level lists holding it
    call: ast.Call | None = None
    text_hash: str = ""  # of the constructor call's source text (+ loop bindings)
    dtype_eval: object | None = None
    _lazy: dict[str, object] = field(default_factory=dict, repr=False)

    # Fingerprints, decorations and references are computed on first use: most entries of
    # a release are never compared (their source text is unchanged) nor searched.
    @property
    def fields(self) -> dict[str, str]:
        if "fields" not in self._lazy:
            self._lazy["fields"] = {name: _hash(node) for name, node in self.field_nodes.items()}
        return self._lazy["fields"]  # type: ignore[return-value]

    @property
    def decorations(self) -> dict[str, list[Decoration]]:
        if "decorations" not in self._lazy:
            found: dict[str, list[Decoration]] = {}
            for name in DECORATION_FIELDS:
                node = self.field_nodes.get(name)
                parsed = _decorations(node, self.dtype_eval) if node is not None else None
                if parsed is not None:
                    found[name] = parsed
            self._lazy["decorations"] = found
        return self._lazy["decorations"]  # type: ignore[return-value]

    @property
    def refs(self) -> frozenset[str]:
        if "refs" not in self._lazy:
            self._lazy["refs"] = (
                referenced_names(self.call) if self.call is not None else frozenset()
            )
        return self._lazy["refs"]  # type: ignore[return-value]

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.variant)

    @property
    def full_name(self) -> str:
        return f"{self.name}.{self.variant}" if self.variant else self.name

    @property
    def formatted_name(self) -> str:
        """The op part of generated test names (OpInfo.formatted_name)."""
        return self.full_name.replace(".", "_")

    @property
    def aten_name(self) -> str:
        node = self.field_nodes.get("aten_name")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return self.name.rsplit(".", 1)[-1]


def _hash(node: ast.AST) -> str:
    return hashlib.sha1(ast.dump(node).encode()).hexdigest()[:16]


def _text(node: ast.AST, limit: int = 160) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _dotted(node: ast.expr) -> str:
    return ast.unparse(node).removeprefix("torch.")


def _str_const(node: ast.expr | None, bindings: dict[str, object] | None = None) -> str | None:
    """A string constant, a bound loop/parameter name, or an f-string over those."""
    bindings = bindings or {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and isinstance(bindings.get(node.id), str):
        return str(bindings[node.id])
    if isinstance(node, ast.JoinedStr):
        parts: list[str] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name):
                if value.value.id not in bindings or value.format_spec is not None:
                    return None
                parts.append(str(bindings[value.value.id]))
            else:
                return None
        return "".join(parts)
    return None


def _entry_identity(
    call: ast.Call, info_class: str, bindings: dict[str, object]
) -> tuple[str, str] | None:
    kwargs = {k.arg: k.value for k in call.keywords if k.arg}
    # A PythonRefInfo inherits variant_test_name from the OpInfo it refers to.
    variant_node = kwargs.get("variant_test_name", kwargs.get("torch_opinfo_variant_name"))
    variant = _str_const(variant_node, bindings) if variant_node is not None else ""
    if variant is None:
        return None
    if info_class == "ModuleInfo":
        target = call.args[0] if call.args else kwargs.get("module_cls")
        return (_dotted(target), variant) if target else None
    name = (
        _str_const(call.args[0], bindings)
        if call.args
        else _str_const(kwargs.get("name"), bindings)
    )
    if name is None:
        return None
    return name, variant


def decoration_of(node: ast.expr, dtype_eval: object | None = None) -> Decoration:
    """Describe one skip/decorator element (a `DecorateInfo(...)` call or anything else)."""
    from selection.dtypes_eval import DtypeEvaluator

    text = _text(node)
    if not (isinstance(node, ast.Call) and last_name(node) == "DecorateInfo"):
        other = isinstance(node, ast.Name) and names_other_device(node.id)
        return Decoration(_hash(node), text, None, other, None, None, None)
    kwargs = {k.arg: k.value for k in node.keywords if k.arg}
    args = list(node.args)
    decorator = args[0] if args else kwargs.get("decorators")
    cls_name = _str_const(args[1]) if len(args) > 1 else _str_const(kwargs.get("cls_name"))
    test_name = _str_const(args[2]) if len(args) > 2 else _str_const(kwargs.get("test_name"))
    device_types = device_types_of(kwargs.get("device_type"))
    active_if = kwargs.get("active_if")
    other = is_other_device_only(device_types)
    if decorator is not None and _decorator_names_other_device(decorator):
        other = True
    if active_if is not None and _expr_other_device(active_if):
        other = True
    dtypes = None
    if isinstance(dtype_eval, DtypeEvaluator) and "dtypes" in kwargs:
        dtypes = dtype_eval.evaluate(kwargs["dtypes"])
        if dtypes is None:  # unknown dtypes: never treat it as a skip of a given dtype
            return Decoration(_hash(node), text, device_types, other, cls_name, test_name, None)
    unconditional = active_if is None and decorator is not None and _is_unittest_skip(decorator)
    return Decoration(
        _hash(node), text, device_types, other, cls_name, test_name, dtypes, unconditional
    )


def _is_unittest_skip(node: ast.expr) -> bool:
    """`unittest.skip("...")` (not skipIf, not expectedFailure)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "skip"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "unittest"
    )


def _decorator_names_other_device(node: ast.expr) -> bool:
    name = last_name(node)
    return names_other_device(name) if name else False


def _expr_other_device(node: ast.expr) -> bool:
    from selection.devices import guards_other_device

    return guards_other_device(node)


def _decorations(value: ast.expr, dtype_eval: object | None) -> list[Decoration] | None:
    if isinstance(value, (ast.Tuple, ast.List)):
        out: list[Decoration] = []
        for elt in value.elts:
            out.append(
                decoration_of(elt.value if isinstance(elt, ast.Starred) else elt, dtype_eval)
            )
        return out
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        left = _decorations(value.left, dtype_eval)
        right = _decorations(value.right, dtype_eval)
        return None if left is None or right is None else left + right
    return None


def entry_from_call(
    call: ast.Call,
    path: str,
    lists: tuple[str, ...],
    dtype_eval: object | None = None,
    bindings: dict[str, object] | None = None,
    lines: list[str] | None = None,
) -> DbEntry | None:
    info_class = last_name(call)
    if not info_class.endswith("Info") or info_class == "DecorateInfo":
        return None
    identity = _entry_identity(call, info_class, bindings or {})
    if identity is None:
        return None
    database = {"ModuleInfo": "moduleinfo", "ForeachFuncInfo": "foreach"}.get(info_class, "opinfo")
    entry = DbEntry(
        database,
        identity[0],
        identity[1],
        info_class,
        path,
        call.lineno,
        lists=lists,
        call=call,
        dtype_eval=dtype_eval,
    )
    for index, arg in enumerate(call.args[1:], start=1):
        entry.field_nodes[f"<arg{index}>"] = arg
    for keyword in call.keywords:
        entry.field_nodes[keyword.arg or "**"] = keyword.value
    if lines is not None:
        text = "\n".join(lines[call.lineno - 1 : call.end_lineno or call.lineno])
        entry.text_hash = hashlib.sha1(
            f"{text}\0{sorted((bindings or {}).items())!r}".encode()
        ).hexdigest()
    return entry


def _db_list_name(stmt: ast.stmt) -> str | None:
    target: ast.expr | None = None
    if isinstance(stmt, (ast.Assign,)) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        target = stmt.target
    if isinstance(target, ast.Name) and target.id.endswith(DB_NAME_SUFFIX):
        return target.id
    return None


def _is_info_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = last_name(node)
    return name.endswith("Info") and name != "DecorateInfo"


def _literal_values(node: ast.expr) -> list[object] | None:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        values: list[object] = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        return values if len(values) == len(node.elts) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        bounds = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, int)
        ]
        if len(bounds) == len(node.args) and 1 <= len(bounds) <= 3:
            return list(range(*bounds))
    return None


Found = tuple[ast.Call, dict[str, object]]


def _expand_comprehension(
    node: ast.ListComp | ast.GeneratorExp,
    bindings: dict[str, object],
    factories: dict[str, ast.FunctionDef],
) -> list[Found] | None:
    if len(node.generators) != 1 or not isinstance(node.generators[0].target, ast.Name):
        return None
    values = _literal_values(node.generators[0].iter)
    if values is None:
        return None
    var = node.generators[0].target.id
    found: list[Found] = []
    for value in values:
        found.extend(_info_calls(node.elt, {**bindings, var: value}, factories))
    return found


def _expand_factory(
    call: ast.Call,
    factory: ast.FunctionDef,
    bindings: dict[str, object],
    factories: dict[str, ast.FunctionDef],
) -> list[Found]:
    """`make_foo_opinfo(variant_test_name='x', ...)`: the entry its `return` builds."""
    params = [a.arg for a in factory.args.args]
    local: dict[str, object] = dict(bindings)
    for name, arg in zip(params, call.args, strict=False):
        if isinstance(arg, ast.Constant):
            local[name] = arg.value
    for keyword in call.keywords:
        if keyword.arg and isinstance(keyword.value, ast.Constant):
            local[keyword.arg] = keyword.value.value
    found: list[Found] = []
    for stmt in factory.body:
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            found.extend(_info_calls(stmt.value, local, {}))
    return found


def _info_calls(
    node: ast.AST,
    bindings: dict[str, object] | None = None,
    factories: dict[str, ast.FunctionDef] | None = None,
) -> list[Found]:
    """Entry constructor calls inside a list expression, with the loop/parameter values
    that name them (comprehensions over literals and one-`return` factory functions)."""
    bindings = bindings or {}
    factories = factories or {}
    if _is_info_call(node):
        assert isinstance(node, ast.Call)
        return [(node, bindings)]
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        expanded = _expand_comprehension(node, bindings, factories)
        if expanded is not None:
            return expanded
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in factories:
        expanded_calls = _expand_factory(node, factories[node.func.id], bindings, factories)
        if expanded_calls:
            return expanded_calls
    found: list[Found] = []
    for child in ast.iter_child_nodes(node):
        found.extend(_info_calls(child, bindings, factories))
    return found


@dataclass
class DbParse:
    entries: dict[tuple[str, str, str], DbEntry]  # (database, name, variant) -> entry
    lists: dict[str, list[tuple[str, str, str]]]  # list name -> entry keys in order
    duplicates: list[str]


def parse_database(
    tree: ast.Module, path: str, dtype_eval: object | None = None, text: str | None = None
) -> DbParse:
    """Every entry of the module-level `*_db` lists of one database file."""
    result = DbParse({}, {}, [])
    lines = text.splitlines() if text is not None else None
    factories = {
        s.name: s
        for s in tree.body
        if isinstance(s, ast.FunctionDef)
        and any(_is_info_call(r.value) for r in s.body if isinstance(r, ast.Return) and r.value)
    }
    for stmt in tree.body:
        list_name = _db_list_name(stmt)
        value = getattr(stmt, "value", None)
        if list_name is None or value is None:
            continue
        for call, bindings in _info_calls(value, {}, factories):
            entry = entry_from_call(call, path, (list_name,), dtype_eval, bindings, lines)
            if entry is None:
                continue
            key = (entry.database, entry.name, entry.variant)
            if key in result.entries:
                result.duplicates.append(entry.full_name)
                continue
            result.entries[key] = entry
            result.lists.setdefault(list_name, []).append(key)
    return result
