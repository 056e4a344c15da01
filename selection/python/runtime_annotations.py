"""Which annotations code reads at run time, where they are behaviour and not types. Pure.

Annotations mostly describe types and run nothing, so the behaviour comparison
(selection.pyast) leaves them out. Some are read, and there an edit changes what runs:

- the parameter and return types of a function a decorator builds from:
  `torch.library.custom_op` and `triton_op` (the op's schema), `torch._numpy`'s
  `normalizer` (which converter each argument gets), functools.singledispatch's
  `@f.register` with no type given (which type the implementation serves), TorchScript's
  `ignore`/`unused` (the Python call's types in a scripted graph);
- every annotation of a function TorchScript compiles (`script`, `script_method`, `export`,
  `_overload`, `_overload_method`: a local's annotation types it, `out: List[int] = []`)
  and of the methods and fields of a class it compiles (`@torch.jit.script`,
  `@torch.jit.interface`);
- the fields of a config module (`install_config_module`: each option's type is checked
  against its annotation);
- in a dataclass, the ClassVar / InitVar / KW_ONLY a field's annotation names (a ClassVar
  is no field, so no constructor argument: `supports_out: ClassVar[bool] = True` in OpInfo
  breaks every `OpInfo(..., supports_out=False)`).

A type given as a string is the type it names for all of these but the config module and
`normalizer`, which read the text (`_unquoted`). Not covered (docs/selection.md, known
limits): `torch.jit.script(module)` reading an `nn.Module`'s class-body annotations, checks
run when a function is defined (`out_wrapper` asserts a known return annotation; an
annotation naming what is not defined raises NameError on import), and `typing.get_type_hints`
in export's serializer.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Decorators that build from a function's signature types, and TorchScript's, which read its
# every annotation. Matched by the decorator's last name (`torch.library.custom_op(...)`).
SIGNATURE_READERS = frozenset({"custom_op", "triton_op", "normalizer", "ignore", "unused"})
SCRIPT_FUNCTIONS = frozenset({"script", "script_method", "export", "_overload", "_overload_method"})
SCRIPT_CLASSES = frozenset({"script", "interface"})
DISPATCHERS = frozenset({"singledispatch", "singledispatchmethod"})
DATACLASS_WORDS = ("ClassVar", "InitVar", "KW_ONLY")
# Readers that compare the annotation's text, where quoting a type changes it.
TEXT_READERS = frozenset({"normalizer"})

# How much of a scope's annotations is behaviour.
NONE, SIGNATURE, ALL = 0, 1, 2


def last_name(node: ast.expr) -> str:
    """`torch.library.custom_op("ns::f")` -> "custom_op": the name a decorator goes by."""
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


@dataclass(frozen=True)
class ModuleReaders:
    """What of a module makes its annotations read: it installs a config module; the
    names of its singledispatch functions (whose `@name.register` reads a type)."""

    config: bool = False
    dispatchers: frozenset[str] = frozenset()

    @staticmethod
    def of(tree: ast.Module) -> ModuleReaders:
        config = any(
            isinstance(node, ast.Call) and last_name(node) == "install_config_module"
            for node in ast.walk(tree)
        )
        dispatchers = frozenset(
            node.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(last_name(d) in DISPATCHERS for d in node.decorator_list)
        )
        return ModuleReaders(config, dispatchers)


UNKNOWN = ModuleReaders(dispatchers=frozenset({"*"}))  # no module seen: any `x.register`


def _registers(decorator: ast.expr, readers: ModuleReaders) -> bool:
    """`@f.register` or `@f.register()` on a singledispatch `f` (given a type, `register(int)`
    reads none)."""
    if isinstance(decorator, ast.Call):
        if decorator.args or decorator.keywords:
            return False
        decorator = decorator.func
    if not (isinstance(decorator, ast.Attribute) and decorator.attr == "register"):
        return False
    owner = decorator.value
    name = owner.id if isinstance(owner, ast.Name) else ""
    return "*" in readers.dispatchers or name in readers.dispatchers


def function_reads(
    node: ast.FunctionDef | ast.AsyncFunctionDef, readers: ModuleReaders, enclosing: int
) -> int:
    """How much of the function's annotations is behaviour (`enclosing`: its class's)."""
    names = {last_name(d) for d in node.decorator_list}
    if enclosing == ALL or names & SCRIPT_FUNCTIONS:
        return ALL
    if names & SIGNATURE_READERS or any(_registers(d, readers) for d in node.decorator_list):
        return SIGNATURE
    return NONE


def reads_text(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(last_name(d) in TEXT_READERS for d in node.decorator_list)


def class_reads(node: ast.ClassDef, readers: ModuleReaders) -> int:
    """ALL for a class TorchScript compiles, or any class of a config module."""
    scripted = any(last_name(d) in SCRIPT_CLASSES for d in node.decorator_list)
    return ALL if scripted or readers.config else NONE


def is_dataclass(node: ast.ClassDef) -> bool:
    return any(last_name(d) == "dataclass" for d in node.decorator_list)


def dataclass_words(annotation: ast.expr) -> list[str]:
    """The dataclass words an annotation names (a string annotation read as code)."""
    names = {
        n.id if isinstance(n, ast.Name) else n.attr
        for n in ast.walk(unquoted(annotation))
        if isinstance(n, (ast.Name, ast.Attribute))
    }
    return [word for word in DATACLASS_WORDS if word in names]


def unquoted(annotation: ast.expr) -> ast.expr:
    """`"torch.device"` as `torch.device`: typing.get_type_hints, TorchScript and
    custom_op resolve a quoted type, so quoting it changes nothing for them."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return annotation
    return annotation


def read_annotations(
    node: ast.FunctionDef | ast.AsyncFunctionDef, readers: ModuleReaders = UNKNOWN
) -> list[ast.expr]:
    """The signature annotations a decorator of the function reads when it is defined (the
    op's schema, the dispatch type): part of what its definition runs."""
    if function_reads(node, readers, NONE) == NONE:
        return []
    args = node.args
    params = [*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg]
    found = [p.annotation for p in params if p is not None and p.annotation is not None]
    found += [node.returns] if node.returns is not None else []
    return found if reads_text(node) else [unquoted(a) for a in found]
