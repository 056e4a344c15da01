"""Dotted chains of names in Python code (`torch.nn.functional.gelu`), and ATen op names
spelled as chains (`aten.add.Tensor`). Pure."""

from __future__ import annotations

import ast

Chain = tuple[str, ...]

# Attributes of an OpOverloadPacket / OpOverload that are not overload names.
_NOT_OVERLOADS = frozenset(
    {"default", "py_impl", "overloads", "_schema", "name", "decompose", "_op", "__call__"}
)


def last_name(node: ast.expr) -> str:
    """The name a call, decorator or reference ends in: `torch.nn.Linear(...)` -> "Linear",
    `@property` -> "property"; "" for anything else (a subscript, a lambda)."""
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return ""


def chain_of(node: ast.expr) -> Chain:
    """`torch.nn.functional.gelu` -> ("torch", "nn", "functional", "gelu"); () if not a chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return tuple(reversed(parts))
    return ()


def aten_name(chain: Chain, start: int) -> str | None:
    """`aten.add.Tensor` -> "add.Tensor" (chain[start] is the op); `.default` -> "add"."""
    if len(chain) <= start:
        return None
    op = chain[start]
    if len(chain) > start + 1 and chain[start + 1] not in _NOT_OVERLOADS:
        return f"{op}.{chain[start + 1]}"
    return op


def aten_in_chain(chain: Chain, aliases: frozenset[str] | set[str] = frozenset()) -> str | None:
    """`aten.x` (an alias of the aten namespace), `torch.ops.aten.x`, `torch._ops.ops.aten.x`."""
    if len(chain) >= 2 and chain[0] in aliases:
        return aten_name(chain, 1)
    for index in range(1, len(chain) - 1):
        if chain[index] == "aten" and chain[index - 1] == "ops":
            return aten_name(chain, index + 1)
    return None
