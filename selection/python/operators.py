"""What TorchRefsMode's links read of a module beyond its uses: the operators its code
applies and the tables it builds. Pure.

Under TorchRefsMode an operator on a tensor is a call of a Tensor method, which the mode
looks up in its table: `a + b` arrives as `Tensor.add` and runs `_refs.add` (the table maps
`Tensor.X` to `_refs.X` by name), `a // b` arrives as `Tensor.__floordiv__`, which the table's
explicit entries send to `_refs.floor_divide`. So that the refs-mode links
(selection.links.refs_mode) can tell which references and decompositions run another under
the mode, the summaries of the modules holding them keep, per function, the names its
operators arrive under, and the mode's module keeps its dict literals' name-to-name entries.

The names are those torch 2.13 gives the mode (a `TorchFunctionMode` sees them; a test runs
each operator under one): binary operators as the method the C binding reports
(`Tensor.add`, `Tensor.sub`, ...) or the Python dunder `_tensor.py` defines (`__floordiv__`,
`__rsub__`, ...), both orders of the operands (`2 - a` is `__rsub__`, `2 | a` is
`bitwise_or`), comparisons from either side (`2 < a` is `a > 2`: `gt`), augmented
assignments as the in-place method or, on a number target (`n += t`), the binary one, and
the builtins that apply operators (`abs(a)`: `abs`, `sum(ts)`: `add`, `max(a, b)`: `gt`)
unless the module defines a name of theirs. The operands' types are not known: an operator
counts unless both operands are plainly not tensors (constants, `len(...)`, `x.ndim`,
`x.shape[i]`, ...: shape arithmetic).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable

from selection.python.chains import Chain, chain_of

# The modules whose functions' operators are kept: the references, and the modules holding
# kernels registered for ATen ops (a decomposition runs under the mode too).
OPERATOR_MODULES = (
    "torch/_refs/",
    "torch/_decomp/",
    "torch/_prims/",
    "torch/_prims_common/",
    "torch/_meta_registrations.py",
    "torch/_subclasses/fake_impls.py",
)
MODE_MODULE = "torch/_prims/context.py"  # whose functions' mappings are kept

_BINARY: dict[type[ast.operator], tuple[str, ...]] = {
    ast.Add: ("add",),
    ast.Sub: ("sub", "__rsub__"),
    ast.Mult: ("mul",),
    ast.MatMult: ("matmul", "__rmatmul__"),
    ast.Div: ("div", "__rtruediv__"),
    ast.FloorDiv: ("__floordiv__", "__rfloordiv__"),
    ast.Mod: ("remainder", "__rmod__"),
    ast.Pow: ("__pow__", "__rpow__"),
    ast.LShift: ("__lshift__", "__rlshift__"),
    ast.RShift: ("__rshift__", "__rrshift__"),
    ast.BitOr: ("__or__", "bitwise_or"),
    ast.BitXor: ("__xor__", "bitwise_xor"),
    ast.BitAnd: ("__and__", "bitwise_and"),
}
# `a += b` on a tensor target runs the in-place method; on a number target (`n += t`) the
# binary operator's (Tensor has no `__imatmul__`: `x @= y` is `matmul`)
_INPLACE: dict[type[ast.operator], str] = {
    ast.Add: "add_",
    ast.Sub: "sub_",
    ast.Mult: "mul_",
    ast.Div: "div_",
    ast.FloorDiv: "floor_divide_",
    ast.Mod: "remainder_",
    ast.Pow: "__ipow__",
    ast.LShift: "__ilshift__",
    ast.RShift: "__irshift__",
    ast.BitOr: "__ior__",
    ast.BitXor: "__ixor__",
    ast.BitAnd: "__iand__",
}
_UNARY: dict[type[ast.unaryop], tuple[str, ...]] = {
    ast.Invert: ("__invert__",),
    ast.USub: ("neg",),
    ast.UAdd: ("positive",),
}
_COMPARE: dict[type[ast.cmpop], tuple[str, ...]] = {
    ast.Eq: ("__eq__",),
    ast.NotEq: ("ne",),
    ast.Lt: ("lt", "gt"),
    ast.LtE: ("le", "ge"),
    ast.Gt: ("gt", "lt"),
    ast.GtE: ("ge", "le"),
}
# Builtins yielding a Python number (or string), never a tensor: shape arithmetic.
_NUMBER_CALLS = frozenset({"len", "int", "float", "range", "bool", "str"})
# Builtins that apply an operator to what they are given (`sum` adds, `max` compares): a
# number of numbers, else those operators on what may be tensors.
_FOLDING = {"sum": ("add",), "min": ("lt",), "max": ("gt",), "abs": ("abs",)}
_NUMBER_METHODS = frozenset({"dim", "numel", "size", "stride", "storage_offset", "element_size"})
_NUMBER_ATTRIBUTES = frozenset({"ndim", "shape", "dtype", "device", "itemsize"})

Operators = tuple[tuple[str, int], ...]  # (the name the mode sees, line)
Mappings = tuple[tuple[Chain, Chain, int], ...]  # (key, value, line)


def keeps_operators(path: str) -> bool:
    return path.startswith(OPERATOR_MODULES)


def keeps_mappings(path: str) -> bool:
    return path == MODE_MODULE


def operators_in(nodes: Iterable[ast.AST], defined: Collection[str] = ()) -> Operators:
    """The names the operators in `nodes` reach TorchRefsMode under, each with its line.
    `defined`: the module's own top-level names (a `sum` it defines is no builtin)."""
    numbers = _Numbers(frozenset(defined))
    found: list[tuple[str, int]] = []
    for root in nodes:
        for node in ast.walk(root):
            names = numbers.mode_names(node)
            found.extend((name, getattr(node, "lineno", 0)) for name in names)
    return tuple(dict.fromkeys(found))


class _Numbers:
    """Which expressions are plainly not tensors, in a module defining `defined`."""

    def __init__(self, defined: frozenset[str]) -> None:
        self.defined = defined

    def mode_names(self, node: ast.AST) -> tuple[str, ...]:
        plain = self.plain
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return () if plain(node.left) and plain(node.right) else _BINARY[type(node.op)]
        if isinstance(node, ast.AugAssign) and type(node.op) in _BINARY:
            if plain(node.value) and plain(node.target):
                return ()
            inplace = _INPLACE.get(type(node.op))
            return (*((inplace,) if inplace else ()), *_BINARY[type(node.op)])
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return () if plain(node.operand) else _UNARY[type(node.op)]
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            return tuple(
                name
                for op, left, right in zip(node.ops, operands, operands[1:], strict=False)
                if type(op) in _COMPARE and not (plain(left) and plain(right))
                for name in _COMPARE[type(op)]
            )
        if isinstance(node, ast.Call) and self._builtin(node) in _FOLDING:
            return () if plain(node) else _FOLDING[self._builtin(node)]
        return ()

    def _builtin(self, call: ast.Call) -> str:
        """The builtin a call calls (`sum`), "" for anything else (a module's own `sum`)."""
        func = chain_of(call.func)
        return func[0] if len(func) == 1 and func[0] not in self.defined else ""

    def plain(self, node: ast.AST) -> bool:
        """Is the expression a Python number (or a tuple of them, a string) whatever the
        code's inputs: a constant, `len(...)`, `x.ndim`, `x.shape[i]`, `x.size(i)`,
        arithmetic of those?"""
        if isinstance(node, ast.Constant):
            return True  # a number, a string, None
        if isinstance(node, ast.Attribute):
            return node.attr in _NUMBER_ATTRIBUTES
        if isinstance(node, ast.Subscript):
            return self.plain(node.value)
        if isinstance(node, ast.Call):
            return self._plain_call(node)
        if isinstance(node, ast.BinOp):
            return self.plain(node.left) and self.plain(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.plain(node.operand)
        return False

    def _plain_call(self, call: ast.Call) -> bool:
        builtin = self._builtin(call)
        if builtin in _NUMBER_CALLS:
            return True
        if builtin in _FOLDING:
            return not call.keywords and all(self.plain(a) for a in call.args)
        func = chain_of(call.func)
        return len(func) > 1 and func[-1] in _NUMBER_METHODS


def mappings_in(nodes: Iterable[ast.AST]) -> Mappings:
    """The entries of dict literals in `nodes` whose key and value are dotted names
    (`{torch.Tensor.__floordiv__: torch._refs.floor_divide}`), each with its line."""
    found: list[tuple[Chain, Chain, int]] = []
    for root in nodes:
        for node in ast.walk(root):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    continue  # `**other`
                pair = chain_of(key), chain_of(value)
                if pair[0] and pair[1]:
                    found.append((*pair, key.lineno))
    return tuple(found)
