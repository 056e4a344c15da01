"""What TorchRefsMode's links read of a module beyond its uses: the operators its code
applies and the tables it builds. Pure.

Under TorchRefsMode an operator on a tensor is a call of a Tensor method (`a // b` calls
`Tensor.__floordiv__`), which the mode's table sends to a reference
(`torch.Tensor.__floordiv__: torch._refs.floor_divide` in `torch_to_refs_map`). So that the
refs-mode links (selection.links.refs_mode) can tell which references run another under the
mode, a module's summary keeps, per function, the special methods its operators call and the
dict-literal entries mapping one dotted name to another. The operands' types are not known:
`a // b` counts as both `__floordiv__` and `__rfloordiv__`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from selection.python.chains import Chain, chain_of

# The modules whose summaries keep these (the references, and the mode's own package).
MODULES = ("torch/_refs/", "torch/_prims/")

_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.MatMult: "matmul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
    ast.BitOr: "or",
    ast.BitXor: "xor",
    ast.BitAnd: "and",
}
_UNARY: dict[type[ast.unaryop], str] = {
    ast.Invert: "__invert__",
    ast.USub: "__neg__",
    ast.UAdd: "__pos__",
}
_COMPARE: dict[type[ast.cmpop], str] = {
    ast.Eq: "__eq__",
    ast.NotEq: "__ne__",
    ast.Lt: "__lt__",
    ast.LtE: "__le__",
    ast.Gt: "__gt__",
    ast.GtE: "__ge__",
}

Operators = tuple[tuple[str, int], ...]  # (special method, line)
Mappings = tuple[tuple[Chain, Chain, int], ...]  # (key, value, line)


def keeps(path: str) -> bool:
    """Does the summary of the module at `path` keep operators and mappings?"""
    return path.startswith(MODULES)


def operators_in(nodes: Iterable[ast.AST]) -> Operators:
    """The special methods the operators in `nodes` call, each with its line, in order."""
    found: list[tuple[str, int]] = []
    for root in nodes:
        for node in ast.walk(root):
            found.extend((name, getattr(node, "lineno", 0)) for name in _special_methods(node))
    return tuple(dict.fromkeys(found))


def _special_methods(node: ast.AST) -> list[str]:
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        name = _BINARY[type(node.op)]
        return [f"__{name}__", f"__r{name}__"]
    if isinstance(node, ast.AugAssign) and type(node.op) in _BINARY:
        name = _BINARY[type(node.op)]
        return [f"__i{name}__", f"__{name}__", f"__r{name}__"]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return [_UNARY[type(node.op)]]
    if isinstance(node, ast.Compare):
        return [_COMPARE[type(op)] for op in node.ops if type(op) in _COMPARE]
    return []


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
