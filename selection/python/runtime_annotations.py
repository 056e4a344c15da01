"""Which annotations code reads at run time, where they are behaviour and not types. Pure.

Annotations mostly describe types and run nothing, so the behaviour comparison
(selection.pyast) leaves them out. Some are read, and there an edit changes what runs:

- the parameter and return types of a function a decorator builds from:
  `torch.library.custom_op` and `triton_op` (the op's schema, built where the function is
  defined, from its parameters' names, types and defaults), functools.singledispatch's
  `@f.register` with no type given, for an `f` of the same module (which type the
  implementation serves, also fixed where it is defined), `torch._numpy`'s `normalizer`
  (which converter each argument gets) and TorchScript's `ignore`/`unused` (the Python
  call's types in a scripted graph);
- every annotation of a function TorchScript compiles (`script`, `script_method`, `export`,
  `_overload`, `_overload_method`: a local's annotation types it, `out: List[int] = []`)
  and of the methods and fields of a class it compiles (`@torch.jit.script`,
  `@torch.jit.interface`);
- the fields of a config module (`install_config_module` checks each option against its
  annotation as written: a quoted `'int'` is no type there);
- the ClassVar / InitVar / KW_ONLY a field's annotation names in a decorated class (a
  dataclass, or a decorator making one: `ir_dataclass`, `dataclass_with_cached_hash`): a
  ClassVar is no field, so no constructor argument (`supports_out: ClassVar[bool] = True`
  in OpInfo breaks every `OpInfo(..., supports_out=False)`).

Elsewhere a type given as a string is the type it names (`unquoted`: the readers resolve
it); `normalizer` and config modules read the text. What is not covered is listed in
docs/selection.md, "Known limits".
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from enum import Enum

from selection.python.chains import last_name


class Reads(Enum):
    """How much of a function's annotations is behaviour."""

    NONE = 0
    SIGNATURE = 1  # its parameters' and return types
    ALL = 2  # every annotation in it (TorchScript compiles it)


class Fields(Enum):
    """How a class or module body's field annotations (`x: T = v`) are read."""

    TYPES = 0  # not at all
    DATACLASS = 1  # the ClassVar / InitVar / KW_ONLY words they name
    CONFIG = 2  # as written (install_config_module)
    SCRIPT = 3  # as the types they name (a TorchScript class: its methods' too)


# Decorators that build from a function's signature, where it is defined (DEFINED) or when
# it is called or scripted; TorchScript's, which read its every annotation. Matched by the
# decorator's last name (`torch.library.custom_op("ns::f", ...)`).
DEFINED = frozenset({"custom_op", "triton_op"})
SIGNATURE_READERS = DEFINED | {"normalizer", "ignore", "unused"}
SCRIPT_FUNCTIONS = frozenset({"script", "script_method", "export", "_overload", "_overload_method"})
SCRIPT_CLASSES = frozenset({"script", "interface"})
DISPATCHERS = frozenset({"singledispatch", "singledispatchmethod"})
DATACLASS_WORDS = ("ClassVar", "InitVar", "KW_ONLY")
TEXT_READERS = frozenset({"normalizer"})  # quoting a type changes what it reads


@dataclass(frozen=True)
class ModuleReaders:
    """What of a module makes its annotations read: it installs a config module; the
    names of its singledispatch functions, whose `@name.register` reads a type (`any_register`:
    the module is not known, any `x.register` may)."""

    config: bool = False
    dispatchers: frozenset[str] = frozenset()
    any_register: bool = False
    # top-level functions and classes whose `__doc__` the module's own code formats
    # (`embedding_bag.__doc__.format(**reproducibility_notes)`)
    formatted: frozenset[str] = frozenset()

    @staticmethod
    def of(tree: ast.Module, text: str = "__doc__") -> ModuleReaders:
        """Read from the module's and its classes' statements only (a whole-tree walk per
        module doubled the cost of reading its symbols); `text`, the module's source, tells
        whether any reads a `__doc__`."""
        config, dispatchers = False, set[str]()
        formatted = _formatted_docs(tree) if "__doc__" in text else frozenset()
        statements = list(tree.body)
        while statements:
            stmt = statements.pop()
            if isinstance(stmt, ast.ClassDef):
                statements.extend(stmt.body)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(last_name(d) in DISPATCHERS for d in stmt.decorator_list):
                    dispatchers.add(stmt.name)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                # `install_config_module(sys.modules[__name__])`, or an alias of it
                config = config or last_name(stmt.value).endswith("install_config_module")
        return ModuleReaders(config, frozenset(dispatchers), formatted=formatted)


def _formatted_docs(tree: ast.Module) -> frozenset[str]:
    """`X` of every `X.__doc__` the module-level code (not its functions) formats:
    `X.__doc__.format(...)`, `.format_map(...)`, `X.__doc__ % ...` (a copy formats nothing)."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Attribute) and node.attr in ("format", "format_map"):
                formatted = node.value
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
                formatted = node.left
            else:
                continue
            if (
                isinstance(formatted, ast.Attribute)
                and formatted.attr == "__doc__"
                and isinstance(formatted.value, ast.Name)
            ):
                names.add(formatted.value.id)
    return frozenset(names)


UNKNOWN = ModuleReaders(any_register=True)  # no module seen: any `x.register` may read


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
    return readers.any_register or (isinstance(owner, ast.Name) and owner.id in readers.dispatchers)


def function_reads(
    node: ast.FunctionDef | ast.AsyncFunctionDef, readers: ModuleReaders, scripted: bool
) -> Reads:
    """How much of the function's annotations is behaviour (`scripted`: TorchScript compiles
    its class)."""
    names = {last_name(d) for d in node.decorator_list}
    if scripted or names & SCRIPT_FUNCTIONS:
        return Reads.ALL
    if names & SIGNATURE_READERS or any(_registers(d, readers) for d in node.decorator_list):
        return Reads.SIGNATURE
    return Reads.NONE


def reads_text(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(last_name(d) in TEXT_READERS for d in node.decorator_list)


def class_fields(node: ast.ClassDef, readers: ModuleReaders) -> Fields:
    if any(last_name(d) in SCRIPT_CLASSES for d in node.decorator_list):
        return Fields.SCRIPT
    if readers.config:
        return Fields.CONFIG
    return Fields.DATACLASS if node.decorator_list else Fields.TYPES


def module_fields(readers: ModuleReaders) -> Fields:
    return Fields.CONFIG if readers.config else Fields.TYPES


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


def built_where_defined(
    node: ast.FunctionDef | ast.AsyncFunctionDef, readers: ModuleReaders
) -> ast.expr | None:
    """What a decorator builds from where the function is defined (custom_op's schema: its
    parameters' names, kinds, types and defaults; the type a singledispatch `register`
    serves), as one expression; None when no decorator does."""
    decorators = node.decorator_list
    if not (
        {last_name(d) for d in decorators} & DEFINED
        or any(_registers(d, readers) for d in decorators)
    ):
        return None
    args = node.args
    kinds: tuple[list[ast.arg | None], ...] = (
        list(args.posonlyargs), list(args.args), [args.vararg], list(args.kwonlyargs), [args.kwarg]
    )  # fmt: skip
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(
        zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    )
    defaults |= {a: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d}
    parts: list[ast.expr] = []
    for kind, params in enumerate(kinds):
        for param in params:
            if param is not None:
                default = defaults.get(param, ast.Constant("<no default>"))
                parts += [
                    ast.Constant(f"{kind}:{param.arg}"),
                    _annotation(param.annotation),
                    default,
                ]
    parts.append(_annotation(node.returns))
    return ast.Tuple(elts=parts, ctx=ast.Load())


def _annotation(annotation: ast.expr | None) -> ast.expr:
    return ast.Constant(None) if annotation is None else unquoted(annotation)
