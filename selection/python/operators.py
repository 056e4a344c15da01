"""What TorchRefsMode's links read of a module beyond its uses: the operators its code
applies and the tables it builds. Pure.

Under TorchRefsMode an operator on a tensor is a call of a Tensor method, which the mode
looks up in its table: `a + b` arrives as `Tensor.add` and runs `_refs.add` (the table maps
`Tensor.X` to `_refs.X` by name), `a // b` arrives as `Tensor.__floordiv__`, which the table's
explicit entries send to `_refs.floor_divide`. So that the refs-mode links
(selection.links.refs_mode) can tell which references run another under the mode, a
reference module's summary keeps, per function, the names its operators arrive under, and
the mode's module keeps its dict literals' name-to-name entries.

The names are those torch 2.13 gives the mode (a `TorchFunctionMode` sees them): binary
operators as the method the C binding reports (`Tensor.add`, `Tensor.sub`, ...) or the Python
dunder `_tensor.py` defines (`__floordiv__`, `__rsub__`, ...), both orders of the operands
(`2 - a` is `__rsub__`), comparisons from either side (`2 < a` is `a > 2`: `gt`), augmented
assignments as the in-place method (`a += b`: `add_`), and the builtin `abs(a)` as `abs`.
The operands' types are not known: an operator counts unless both operands are plainly not
tensors (constants, `len(...)`, `x.ndim`, `x.shape[i]`, ... : shape arithmetic).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from selection.python.chains import Chain, chain_of

REFS_MODULES = "torch/_refs/"  # whose functions' operators are kept
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
    ast.BitOr: ("__or__", "__ror__"),
    ast.BitXor: ("__xor__", "__rxor__"),
    ast.BitAnd: ("__and__", "__rand__"),
}
_AUGMENTED: dict[type[ast.operator], tuple[str, ...]] = {
    ast.Add: ("add_",),
    ast.Sub: ("sub_",),
    ast.Mult: ("mul_",),
    ast.MatMult: ("__imatmul__",),
    ast.Div: ("div_",),
    ast.FloorDiv: ("floor_divide_",),
    ast.Mod: ("remainder_",),
    ast.Pow: ("__ipow__",),
    ast.LShift: ("__ilshift__",),
    ast.RShift: ("__irshift__",),
    ast.BitOr: ("__ior__",),
    ast.BitXor: ("__ixor__",),
    ast.BitAnd: ("__iand__",),
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
# What yields a Python number or tuple of them, never a tensor: shape arithmetic.
_NUMBER_CALLS = frozenset({"len", "int", "float", "range", "bool", "str"})
_NUMBERS_OF_NUMBERS = frozenset({"min", "max", "sum", "abs"})  # of tensors: a tensor
_NUMBER_METHODS = frozenset({"dim", "numel", "size", "stride", "storage_offset", "element_size"})
_NUMBER_ATTRIBUTES = frozenset({"ndim", "shape", "dtype", "device", "itemsize"})

Operators = tuple[tuple[str, int], ...]  # (the name the mode sees, line)
Mappings = tuple[tuple[Chain, Chain, int], ...]  # (key, value, line)


def keeps_operators(path: str) -> bool:
    return path.startswith(REFS_MODULES)


def keeps_mappings(path: str) -> bool:
    return path == MODE_MODULE


def operators_in(nodes: Iterable[ast.AST]) -> Operators:
    """The names the operators in `nodes` reach TorchRefsMode under, each with its line."""
    found: list[tuple[str, int]] = []
    for root in nodes:
        for node in ast.walk(root):
            found.extend((name, getattr(node, "lineno", 0)) for name in _mode_names(node))
    return tuple(dict.fromkeys(found))


def _mode_names(node: ast.AST) -> tuple[str, ...]:
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        if _plainly_numbers(node.left) and _plainly_numbers(node.right):
            return ()
        return _BINARY[type(node.op)]
    if isinstance(node, ast.AugAssign) and type(node.op) in _AUGMENTED:
        if _plainly_numbers(node.value) and _plainly_numbers(node.target):
            return ()
        return _AUGMENTED[type(node.op)]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return () if _plainly_numbers(node.operand) else _UNARY[type(node.op)]
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        return tuple(
            name
            for op, left, right in zip(node.ops, operands, operands[1:], strict=False)
            if type(op) in _COMPARE and not (_plainly_numbers(left) and _plainly_numbers(right))
            for name in _COMPARE[type(op)]
        )
    if isinstance(node, ast.Call) and chain_of(node.func) == ("abs",) and node.args:
        return () if _plainly_numbers(node.args[0]) else ("abs",)
    return ()


def _plainly_numbers(node: ast.AST) -> bool:
    """Is the expression a Python number (or a tuple of them, a string) whatever the code's
    inputs: a constant, `len(...)`, `x.ndim`, `x.shape[i]`, `x.size(i)`, arithmetic of those?"""
    if isinstance(node, ast.Constant):
        return True  # a number, a string, None
    if isinstance(node, ast.Attribute):
        return node.attr in _NUMBER_ATTRIBUTES
    if isinstance(node, ast.Subscript):
        return _plainly_numbers(node.value)
    if isinstance(node, ast.Call):
        func = chain_of(node.func)
        if len(func) == 1 and func[0] in _NUMBER_CALLS:
            return True
        if len(func) == 1 and func[0] in _NUMBERS_OF_NUMBERS:
            return all(_plainly_numbers(a) for a in node.args)
        return len(func) > 1 and func[-1] in _NUMBER_METHODS
    if isinstance(node, ast.BinOp):
        return _plainly_numbers(node.left) and _plainly_numbers(node.right)
    if isinstance(node, ast.UnaryOp):
        return _plainly_numbers(node.operand)
    return False


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
