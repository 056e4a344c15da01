"""The OpInfo database as a whole: every entry, the named op lists, dtypes per device.

Pure. Built from the database modules parsed by `opinfo_db`; op-list expressions of
`@ops(...)` (names, `+`, comprehensions and `filter(lambda ...)` with isinstance / field
predicates) are evaluated statically. Whatever cannot be evaluated is over-approximated and
flagged, so that the enumeration errs on the side of running a test.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from selection.dtypes_eval import DtypeEvaluator
from selection.opinfo_db import DbEntry

EntryKey = tuple[str, str, str]  # (database, name, variant)

# Defaults of OpInfo fields that op-list filters commonly test (opinfo/core.py).
FIELD_DEFAULTS: dict[str, object] = {
    "supports_out": True,
    "supports_autograd": True,
    "supports_forward_ad": False,
    "supports_fwgrad_bwgrad": False,
    "supports_sparse": False,
    "supports_sparse_csr": False,
    "supports_sparse_csc": False,
    "supports_sparse_bsr": False,
    "supports_sparse_bsc": False,
    "supports_varargs": False,
    "is_factory_function": False,
    "supports_expanded_weight": False,
    "supports_njt": False,
    "domain": (None, None),  # UnaryUfuncInfo: no domain restriction
}

# all dtypes of get_all_dtypes(include_qint=False): ForeachFuncInfo sets exactly these.
ALL_DTYPES = (
    "uint8", "int8", "int16", "int32", "int64", "float32", "float64", "float16", "bfloat16",
    "bool", "complex64", "complex128",
)  # fmt: skip


@dataclass
class OpDatabase:
    entries: dict[EntryKey, DbEntry] = field(default_factory=dict)
    lists: dict[str, list[EntryKey]] = field(default_factory=dict)
    derived: dict[str, ast.expr] = field(default_factory=dict)  # unary_ufuncs = [...]
    class_bases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    class_default_dtypes: dict[str, ast.expr] = field(default_factory=dict)
    dtype_eval: DtypeEvaluator = field(default_factory=lambda: DtypeEvaluator(None))
    _dtype_cache: dict[tuple[str, str, str, str], tuple[str, ...] | None] = field(
        default_factory=dict
    )
    _entry_lists: dict[str, bool] = field(default_factory=dict)

    def add_entries(
        self, entries: dict[EntryKey, DbEntry], lists: dict[str, list[EntryKey]]
    ) -> None:
        for key, entry in entries.items():
            self.entries.setdefault(key, entry)
        for name, keys in lists.items():
            self.lists.setdefault(name, []).extend(keys)

    def add_classes(self, tree: ast.Module) -> None:
        """Record OpInfo subclasses and the default `dtypes` of their constructors."""
        for stmt in tree.body:
            if not isinstance(stmt, ast.ClassDef):
                continue
            self.class_bases[stmt.name] = tuple(
                b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in stmt.bases
            )
            default = _constructor_default(stmt, "dtypes")
            if default is not None:
                self.class_default_dtypes[stmt.name] = default

    def is_entry_list(self, name: str) -> bool:
        """A list of the database's entries: a literal one (`op_db`) or one computed from
        them (`unary_ufuncs = [op for op in op_db if ...]`). Any other module-level name
        (`reference_inputs_bucketize = partial(...)`, a dict of defaults) is code that runs."""
        if name in self.lists:
            return True
        if name not in self.derived:
            return False
        if name not in self._entry_lists:
            self._entry_lists[name] = (
                OpListResolver(self)._eval(self.derived[name], depth=0) is not None
            )
        return self._entry_lists[name]

    def add_derived(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name) and target.id not in self.lists:
                    self.derived.setdefault(target.id, stmt.value)

    def is_subclass(self, info_class: str, base: str) -> bool:
        seen: set[str] = set()
        stack = [info_class]
        while stack:
            current = stack.pop()
            if current == base:
                return True
            if current not in seen:
                seen.add(current)
                stack.extend(self.class_bases.get(current, ()))
        return False

    def supported_dtypes(self, entry: DbEntry, device: str) -> tuple[str, ...] | None:
        """OpInfo.supported_dtypes(device) for a device without its own `dtypesIf...` list."""
        key = (entry.database, entry.name, entry.variant, device)
        if key not in self._dtype_cache:
            self._dtype_cache[key] = self._supported_dtypes(entry, device)
        return self._dtype_cache[key]

    def _supported_dtypes(self, entry: DbEntry, device: str) -> tuple[str, ...] | None:
        if entry.database == "foreach":
            return ALL_DTYPES
        per_device = self.field(entry, "dtypesIf")
        if isinstance(per_device, ast.Dict):
            for key, value in zip(per_device.keys, per_device.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in (device, "privateuse1"):
                    return self.dtype_eval.evaluate(value)
        node = self.field(entry, "dtypes")
        if node is None:
            parent = self.parent(entry)
            node = self._class_default(parent.info_class if parent else entry.info_class)
        if node is None and entry.database == "moduleinfo":
            return ("float32", "float64")
        return self.dtype_eval.evaluate(node)

    def backward_dtypes(self, entry: DbEntry, device: str) -> tuple[str, ...] | None:
        if _const(self.field(entry, "supports_autograd")) is False:
            return ()
        node = self.field(entry, "backward_dtypes")
        return (
            self.dtype_eval.evaluate(node)
            if node is not None
            else self.supported_dtypes(entry, device)
        )

    def parent(self, entry: DbEntry) -> DbEntry | None:
        """The op_db entry a PythonRefInfo inherits its arguments from (torch_opinfo_name)."""
        name = entry.field_nodes.get("torch_opinfo_name")
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return None
        variant = entry.field_nodes.get("torch_opinfo_variant_name")
        variant_name = variant.value if isinstance(variant, ast.Constant) else ""
        return self.entries.get(("opinfo", name.value, str(variant_name or "")))

    def field(self, entry: DbEntry, name: str) -> ast.expr | None:
        """A field as the OpInfo sees it: its own argument, else the inherited one."""
        if name in entry.field_nodes:
            return entry.field_nodes[name]
        parent = self.parent(entry)
        return parent.field_nodes.get(name) if parent is not None else None

    def _class_default(self, info_class: str) -> ast.expr | None:
        stack = [info_class]
        while stack:
            current = stack.pop(0)
            if current in self.class_default_dtypes:
                return self.class_default_dtypes[current]
            stack.extend(self.class_bases.get(current, ()))
        return None

    def by_name(self) -> dict[str, list[EntryKey]]:
        index: dict[str, list[EntryKey]] = {}
        for key in self.entries:
            index.setdefault(key[1], []).append(key)
        return index


def _constructor_default(cls: ast.ClassDef, arg: str) -> ast.expr | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
            args = stmt.args
            positional = args.posonlyargs + args.args
            for name, default in zip(
                positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
            ):
                if name.arg == arg:
                    return default
            for name, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                if name.arg == arg and kw_default is not None:
                    return kw_default
    return None


def _const(node: ast.expr | None) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    return None


@dataclass
class ResolvedOps:
    keys: list[EntryKey]
    exact: bool  # False when part of the expression was over-approximated


class OpListResolver:
    """Evaluates the op-list argument of `@ops(...)` against an OpDatabase."""

    def __init__(self, db: OpDatabase, local_names: dict[str, ast.expr] | None = None) -> None:
        self.db = db
        self.local = local_names or {}
        self.exact = True

    def resolve(self, node: ast.expr) -> ResolvedOps:
        self.exact = True
        keys = self._eval(node, depth=0)
        if keys is None:
            self.exact = False
            keys = list(self.db.lists.get("op_db", []))
        return ResolvedOps(keys, self.exact)

    def _eval(self, node: ast.expr, depth: int) -> list[EntryKey] | None:
        if depth > 20:
            return None
        if isinstance(node, ast.Name):
            return self._name(node.id, depth)
        if isinstance(node, ast.Attribute):
            return self._name(node.attr, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._eval(node.left, depth + 1), self._eval(node.right, depth + 1)
            return None if left is None or right is None else left + right
        if isinstance(node, (ast.List, ast.Tuple)):
            return self._literal(node, depth)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self._comprehension(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        return None

    def _name(self, name: str, depth: int) -> list[EntryKey] | None:
        if name in self.local:
            return self._eval(self.local[name], depth + 1)
        if name in self.db.lists:
            return list(self.db.lists[name])
        if name in self.db.derived:
            return self._eval(self.db.derived[name], depth + 1)
        return None

    def _literal(self, node: ast.List | ast.Tuple, depth: int) -> list[EntryKey] | None:
        out: list[EntryKey] = []
        for elt in node.elts:
            value = self._eval(elt.value if isinstance(elt, ast.Starred) else elt, depth + 1)
            if value is None:
                return None
            out.extend(value)
        return out

    def _call(self, node: ast.Call, depth: int) -> list[EntryKey] | None:
        func = node.func.id if isinstance(node.func, ast.Name) else ""
        if func in {"list", "tuple"} and len(node.args) == 1:
            return self._eval(node.args[0], depth + 1)
        if func == "filter" and len(node.args) == 2 and isinstance(node.args[0], ast.Lambda):
            lam = node.args[0]
            source = self._eval(node.args[1], depth + 1)
            if source is None or len(lam.args.args) != 1:
                return None
            return self._filter(source, lam.args.args[0].arg, lam.body)
        return None

    def _comprehension(
        self, node: ast.ListComp | ast.GeneratorExp, depth: int
    ) -> list[EntryKey] | None:
        if len(node.generators) != 1:
            return None
        gen = node.generators[0]
        if not (isinstance(gen.target, ast.Name) and isinstance(node.elt, ast.Name)):
            return None
        if node.elt.id != gen.target.id:
            return None
        source = self._eval(gen.iter, depth + 1)
        if source is None:
            return None
        for condition in gen.ifs:
            source = self._filter(source, gen.target.id, condition)
        return source

    def _filter(self, keys: list[EntryKey], var: str, condition: ast.expr) -> list[EntryKey]:
        kept: list[EntryKey] = []
        for key in keys:
            verdict = self._predicate(self.db.entries[key], var, condition)
            if verdict is None:
                self.exact = False
            if verdict is not False:
                kept.append(key)
        return kept

    def _predicate(self, entry: DbEntry, var: str, node: ast.expr) -> bool | None:
        return _Predicate(self.db, entry, var).evaluate(node)


class _Predicate:
    """Evaluates a filter condition on one entry; None when it cannot tell."""

    def __init__(self, db: OpDatabase, entry: DbEntry, var: str) -> None:
        self.db, self.entry, self.var = db, entry, var

    def evaluate(self, node: ast.expr) -> bool | None:
        if isinstance(node, ast.BoolOp):
            values = [self.evaluate(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in values else (None if None in values else True)
            return True if True in values else (None if None in values else False)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.evaluate(node.operand)
            return None if inner is None else not inner
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
        ):
            return self._isinstance(node)
        value = self._value(node)
        if value is not _UNKNOWN:
            return bool(value)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._compare(node)
        return None

    def _isinstance(self, node: ast.Call) -> bool | None:
        if len(node.args) != 2:
            return None
        target = node.args[1]
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        classes = [n.id if isinstance(n, ast.Name) else ast.unparse(n) for n in names]
        return any(self.db.is_subclass(self.entry.info_class, c) for c in classes)

    def _value(self, node: ast.expr) -> object:
        if isinstance(node, ast.Constant):
            return node.value
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, (int, float))
        ):
            return -node.operand.value
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            values = [self._value(e) for e in node.elts]
            return _UNKNOWN if _UNKNOWN in values else tuple(values)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == self.var
        ):
            return self._field(node.attr)
        return _UNKNOWN

    def _field(self, name: str) -> object:
        if name in ("name", "full_name", "formatted_name", "variant_test_name"):
            return {
                "name": self.entry.name,
                "full_name": self.entry.full_name,
                "formatted_name": self.entry.formatted_name,
                "variant_test_name": self.entry.variant,
            }[name]
        if name == "aten_name":
            return self.entry.aten_name
        if name in self.entry.field_nodes:
            return self._value(self.entry.field_nodes[name])  # literals only, else unknown
        if name in ("ref",):
            return None
        return FIELD_DEFAULTS.get(name, _UNKNOWN)

    def _compare(self, node: ast.Compare) -> bool | None:
        left, right = self._value(node.left), self._value(node.comparators[0])
        op = node.ops[0]
        if left is _UNKNOWN or right is _UNKNOWN:
            return None
        try:
            if isinstance(op, ast.Eq):
                return bool(left == right)
            if isinstance(op, ast.NotEq):
                return bool(left != right)
            if isinstance(op, ast.In):
                return left in right  # type: ignore[operator]
            if isinstance(op, ast.NotIn):
                return left not in right  # type: ignore[operator]
            if isinstance(op, ast.Is):
                return left is right
            if isinstance(op, ast.IsNot):
                return left is not right
        except TypeError:
            return None
        return None


_UNKNOWN = object()
