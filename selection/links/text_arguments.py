"""A method call passing text where the tensor method of its name takes none is no call of
it. Pure.

A method called on a receiver of unknown type is linked by its name alone
(selection.links.calls): `var.split(",")` in `torch/cuda/__init__.py` to `Tensor.split`,
`name.split(".")` in `torch/_utils.py` too, so that an edit of `Tensor.split` reached nearly
every test through such calls of `str.split`. Python text converts to a schema's `str`,
`Dimname` (named tensors: `x.sum("N")`, `x.unflatten("N", ...)`) and `Device`
(`x.to("cpu")`); where no overload of the ATen op of the method's name has such a type at
the position a call passes text (the receiver is position 0), a tensor would fail there, so
the receiver is something else (a `str`, a `list`, a sympy expression).

Tensor's methods written in Python (torch/_tensor.py) decide by their own signature where it
tells: a parameter annotated with anything but known non-text types, with a text default,
or a `*args` covering the position takes text (`Tensor.norm(p="fro")`, `Tensor.rename(*names)`);
a parameter annotated with non-text types only, or no parameter at all there, takes none;
an unannotated parameter without a text default defers to the ATen op of the method's name
(`Tensor.split(self, split_size, dim=0)` to `split`'s `SymInt split_size` and
`SymInt[] split_size`). A name no schema and no Python method tells about takes text.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from selection.native_yaml import positional_types

TEXT_TYPES = frozenset({"str", "Dimname", "Device"})  # what Python text converts to
# Annotation names that never hold text (a name outside it, an alias, may)
# (not `bytes`, which a schema's `str` takes, nor `Sequence`, which a str is)
NON_TEXT_NAMES = frozenset({"int", "float", "bool", "complex", "None", "Tensor", "SymInt",
                            "SymFloat", "SymBool", "dtype", "Number", "Optional", "Union",
                            "list", "tuple", "List", "Tuple", "torch", "_size", "Size",
                            "memory_format", "layout", "Generator"})  # fmt: skip
ACCEPTS, REFUSES, DEFERS = "accepts", "refuses", "defers"


@dataclass(frozen=True)
class Signature:
    """Per position (receiver 0), whether text is taken there; `rest`: past the last."""

    positions: tuple[str, ...]
    rest: str

    def at(self, position: int) -> str:
        return self.positions[position] if position < len(self.positions) else self.rest


@dataclass(frozen=True)
class TextTaking:
    """Where tensor methods take text: per ATen op, the positions some overload takes it
    (`schema_text_positions`); per Python method of Tensor, its signature
    (`python_signatures`)."""

    schemas: Mapping[str, frozenset[int]] = field(default_factory=dict)
    methods: Mapping[str, Signature] = field(default_factory=dict)

    def refuses(self, name: str, texts: tuple[int, ...]) -> bool:
        return takes_no_text(name, texts, self.schemas, self.methods)


def schema_text_positions(funcs: Iterable[str]) -> dict[str, frozenset[int]]:
    """Per ATen op (base name), the positions (receiver 0) where an overload takes text."""
    found: dict[str, set[int]] = {}
    for func in funcs:
        base = func.split("(", 1)[0].split(".", 1)[0]
        types = positional_types(func)
        taking = {i for i, kind in enumerate(types) if _base_type(kind) in TEXT_TYPES}
        found.setdefault(base, set()).update(taking)
    return {op: frozenset(positions) for op, positions in found.items()}


def _base_type(kind: str) -> str:
    """`Dimname[1]?` -> `Dimname`, `Tensor(a!)` -> `Tensor`."""
    return kind.split("[", 1)[0].split("(", 1)[0].rstrip("?")


def python_signatures(module: ast.Module, owner: str = "Tensor") -> dict[str, Signature]:
    """The text-taking of each method `owner` defines in `module`."""
    found: dict[str, Signature] = {}
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == owner:
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found[item.name] = _signature(item.args)
    return found


def _signature(args: ast.arguments) -> Signature:
    params = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(params) - len(args.defaults))
    defaults += args.defaults
    positions = tuple(_parameter(p.annotation, d) for p, d in zip(params, defaults, strict=True))
    return Signature(positions, ACCEPTS if args.vararg is not None else REFUSES)


def _parameter(annotation: ast.expr | None, default: ast.expr | None) -> str:
    if isinstance(default, ast.Constant) and isinstance(default.value, str):
        return ACCEPTS
    if annotation is None:
        return DEFERS
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return ACCEPTS
    names = [n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)]
    names += [n.attr for n in ast.walk(annotation) if isinstance(n, ast.Attribute)]
    texts = [n for n in ast.walk(annotation) if isinstance(n, ast.Constant) and n.value is not None]
    if texts or not names or any(name not in NON_TEXT_NAMES for name in names):
        return ACCEPTS
    return REFUSES


def takes_no_text(
    name: str,
    texts: tuple[int, ...],
    schemas: Mapping[str, frozenset[int]],
    methods: Mapping[str, Signature],
) -> bool:
    """Does a method call `x.name(...)` passing text at `texts` (positional, receiver not
    counted) pass it where the tensor method `name` takes none (so `x` is no tensor)?"""
    if not texts:
        return False
    signature = methods.get(name)
    for text in texts:
        position = text + 1  # the receiver is position 0
        verdict = signature.at(position) if signature is not None else DEFERS
        if verdict == DEFERS:
            if name not in schemas:
                continue  # nothing tells: text may be taken there
            verdict = ACCEPTS if position in schemas[name] else REFUSES
        if verdict == REFUSES:
            return True
    return False
