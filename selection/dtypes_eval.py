"""Evaluate dtype expressions of the OpInfo database without importing torch.

`all_types_and(torch.bool, torch.half)` is evaluated against the helper definitions parsed
from `common_dtype.py` (module-level tuples and one-line `return` helpers). The result is a
tuple of canonical dtype names as they appear in test names (`float32`, `int64`, ...), or
None when the expression cannot be evaluated statically (the caller then over-approximates).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from test_manifests.model import DTYPE_ALIASES  # torch.half -> float16, ...

DtypeTuple = tuple[str, ...]

# Every dtype name torch prints, wider than the manifests' CANONICAL_DTYPES: an OpInfo may list
# dtypes (quantized, float8_e8m0fnu, ...) that no manifest names, and must still be read as dtypes.
TORCH_DTYPE_NAMES: frozenset[str] = frozenset(
    {
        "float32", "float64", "float16", "bfloat16", "complex32", "complex64", "complex128",
        "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "bool",
        "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
        "float4_e2m1fn_x2", "qint8", "quint8", "qint32", "quint4x2", "bits8",
    }
)  # fmt: skip


def canonical_dtype(attr: str) -> str | None:
    name = DTYPE_ALIASES.get(attr, attr)
    return name if name in TORCH_DTYPE_NAMES else None


class DtypeEvaluator:
    """Evaluates dtype expressions given the helpers of `common_dtype.py` and extra names."""

    def __init__(self, helpers_source: str | None) -> None:
        self._values: dict[str, ast.expr] = {}
        self._functions: dict[str, ast.FunctionDef] = {}
        self._cache: dict[str, DtypeTuple | None] = {}
        if helpers_source:
            self.add_module(ast.parse(helpers_source))

    def add_module(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef):
                self._functions.setdefault(stmt.name, stmt)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name):
                    self._values.setdefault(target.id, stmt.value)

    def evaluate(self, node: ast.expr | None) -> DtypeTuple | None:
        if node is None:
            return None
        return self._eval(node, {}, depth=0)

    def _eval(self, node: ast.expr, env: Mapping[str, DtypeTuple], depth: int) -> DtypeTuple | None:
        if depth > 30:
            return None
        handler = self._HANDLERS.get(type(node))
        return handler(self, node, env, depth) if handler else None

    def _attribute(
        self, node: ast.expr, env: Mapping[str, DtypeTuple], depth: int
    ) -> DtypeTuple | None:
        assert isinstance(node, ast.Attribute)
        if isinstance(node.value, ast.Name) and node.value.id == "torch":
            dtype = canonical_dtype(node.attr)
            return (dtype,) if dtype else None
        return None

    def _sequence(
        self, node: ast.expr, env: Mapping[str, DtypeTuple], depth: int
    ) -> DtypeTuple | None:
        assert isinstance(node, (ast.Tuple, ast.List, ast.Set))
        out: list[str] = []
        for elt in node.elts:
            value = self._eval(elt.value if isinstance(elt, ast.Starred) else elt, env, depth + 1)
            if value is None:
                return None
            out.extend(value)
        return tuple(out)

    def _binop(
        self, node: ast.expr, env: Mapping[str, DtypeTuple], depth: int
    ) -> DtypeTuple | None:
        assert isinstance(node, ast.BinOp)
        left = self._eval(node.left, env, depth + 1)
        right = self._eval(node.right, env, depth + 1)
        if left is None or right is None:
            return None
        if isinstance(node.op, (ast.Add, ast.BitOr)):
            return left + tuple(d for d in right if d not in left)
        if isinstance(node.op, ast.Sub):
            return tuple(d for d in left if d not in right)
        if isinstance(node.op, ast.BitAnd):
            return tuple(d for d in left if d in right)
        return None

    def _name(self, node: ast.expr, env: Mapping[str, DtypeTuple], depth: int) -> DtypeTuple | None:
        assert isinstance(node, ast.Name)
        if node.id in env:
            return env[node.id]
        if node.id not in self._cache:
            self._cache[node.id] = None  # guards against cycles
            value = self._values.get(node.id)
            self._cache[node.id] = self._eval(value, {}, depth + 1) if value else None
        return self._cache[node.id]

    def _call(self, node: ast.expr, env: Mapping[str, DtypeTuple], depth: int) -> DtypeTuple | None:
        assert isinstance(node, ast.Call)
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name in {"_dispatch_dtypes", "tuple", "list", "set", "_validate_dtypes"}:
            args = [a.value if isinstance(a, ast.Starred) else a for a in node.args]
            return self._sequence(ast.Tuple(elts=args), env, depth + 1)
        if name == "custom_types":
            return self._sequence(ast.Tuple(elts=list(node.args)), env, depth + 1)
        if name == "get_all_fp_dtypes":
            return _all_fp_dtypes(node)
        function = self._functions.get(name or "")
        if function is None:
            return None
        return self._call_function(function, node, env, depth)

    def _call_function(
        self, function: ast.FunctionDef, call: ast.Call, env: Mapping[str, DtypeTuple], depth: int
    ) -> DtypeTuple | None:
        returns = [s for s in function.body if isinstance(s, ast.Return)]
        if len(returns) != 1 or returns[0].value is None:
            return None
        local: dict[str, DtypeTuple] = {}
        if function.args.vararg is not None:
            args = self._sequence(ast.Tuple(elts=list(call.args)), env, depth + 1)
            if args is None:
                return None
            local[function.args.vararg.arg] = args
        elif call.args:
            return None
        return self._eval(returns[0].value, local, depth + 1)

    def _starred(
        self, node: ast.expr, env: Mapping[str, DtypeTuple], depth: int
    ) -> DtypeTuple | None:
        assert isinstance(node, ast.Starred)
        return self._eval(node.value, env, depth + 1)

    _HANDLERS: dict[type, Callable[..., DtypeTuple | None]] = {
        ast.Attribute: _attribute,
        ast.Tuple: _sequence,
        ast.List: _sequence,
        ast.Set: _sequence,
        ast.BinOp: _binop,
        ast.Name: _name,
        ast.Call: _call,
        ast.Starred: _starred,
    }


def _all_fp_dtypes(call: ast.Call) -> DtypeTuple | None:
    """common_dtype.get_all_fp_dtypes(include_half=True, include_bfloat16=True), whose body
    appends conditionally (not a single return the evaluator can read)."""
    flags = {"include_half": True, "include_bfloat16": True}
    given = [*zip(flags, call.args, strict=False), *((k.arg, k.value) for k in call.keywords)]
    for name, value in given:
        if name not in flags or not isinstance(value, ast.Constant):
            return None
        flags[name] = bool(value.value)
    extra = ("float16",) * flags["include_half"] + ("bfloat16",) * flags["include_bfloat16"]
    return ("float32", "float64", *extra)
