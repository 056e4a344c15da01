"""What counts as the same code: the fingerprint the Detect stage compares module-level
statements by. Reordering imports is not a change, unless the order decides a binding."""

from __future__ import annotations

import ast

from selection.detect import diff_symbols
from selection.pyast import module_symbols, normalized_fingerprint, same_code
from selection.python.load_time import definition_changed
from selection.python.runtime_annotations import ModuleReaders


def fingerprint(source: str) -> str:
    return normalized_fingerprint(list(ast.parse(source).body))


def test_reordered_imports_of_different_names_are_the_same_code() -> None:
    assert fingerprint("import os\nfrom math import pi\n") == fingerprint(
        "from math import pi\nimport os\n"
    )


def test_reordered_imports_binding_the_same_name_are_a_change() -> None:
    """The later import wins: `sqrt` is numpy's in one order and math's in the other."""
    assert fingerprint("from math import sqrt\nfrom numpy import sqrt\n") != fingerprint(
        "from numpy import sqrt\nfrom math import sqrt\n"
    )


def test_an_import_moved_past_an_assignment_of_its_name_is_a_change() -> None:
    assert fingerprint("from math import pi\npi = 3\n") != fingerprint(
        "pi = 3\nfrom math import pi\n"
    )


def test_a_docstring_is_not_code_and_other_statements_keep_their_order() -> None:
    assert fingerprint('"""Doc."""\nx = 1\n') == fingerprint('"""Other doc."""\nx = 1\n')
    assert fingerprint("x = 1\ny = x\n") != fingerprint("y = x\nx = 1\n")


def test_type_hints_added_to_a_function_are_not_a_change() -> None:
    """Upstream's typing PRs: parameter and return annotations, and an annotated assignment
    (`self.kwargs: dict[str, Any] = {}`), run nothing."""
    assert fingerprint(
        "def f(self, a, b=1):\n    self.kwargs = {}\n    n = a + b\n    return n\n"
    ) == fingerprint(
        "def f(self, a: int, b: int = 1) -> int:\n"
        "    self.kwargs: dict[str, int] = {}\n    n: int = a + b\n    return n\n"
    )


def test_a_bare_annotation_or_a_changed_value_is_a_change() -> None:
    """`x: int` alone makes `x` local to the function (a read of a global then fails)."""
    assert fingerprint("def f():\n    return x\n") != fingerprint(
        "def f():\n    x: int\n    return x\n"
    )
    assert fingerprint("def f():\n    n: int = 1\n") != fingerprint("def f():\n    n: int = 2\n")


def test_an_annotation_in_a_class_or_module_body_is_kept() -> None:
    """In a dataclass (an OpInfo) `x: int = 1` is a field and `x = 1` a class attribute:
    removing the annotation changes every constructor call."""
    assert fingerprint("@dataclass\nclass C:\n    x: int = 1\n") != fingerprint(
        "@dataclass\nclass C:\n    x = 1\n"
    )
    assert fingerprint("x: int = 1\n") != fingerprint("x = 1\n")
    assert fingerprint("class C:\n    def f(self):\n        self.a: int = 1\n") == fingerprint(
        "class C:\n    def f(self):\n        self.a = 1\n"
    )


def changed(old: str, new: str) -> list[str]:
    """The symbols whose code differs, compared as the detect stage compares them."""
    before = module_symbols(ast.parse(old), old)
    after = module_symbols(ast.parse(new), new)
    return [name for name in before if name in after and not same_code(before[name], after[name])]


def test_a_dataclass_word_in_a_class_field_annotation_is_a_change() -> None:
    """`supports_out: ClassVar[bool] = True` in OpInfo (a dataclass) is no field, so every
    `OpInfo(..., supports_out=False)` raises: the annotation is read at run time. Other
    annotation edits of a field (upstream's typing PRs) run nothing, nor does a ClassVar
    in a class that is no dataclass."""
    field = "@dataclass\nclass C:\n    x: {} = 1\n"
    for read in ("ClassVar[bool]", '"ClassVar[bool]"', "InitVar[bool]", "typing.ClassVar[bool]"):
        assert changed(field.format("bool"), field.format(read)) == ["C"]
    assert changed(field.format("bool"), field.format("Optional[bool]")) == []
    assert changed(field.format("ClassVar[int]"), field.format("ClassVar[int | None]")) == []
    bare = "@dataclasses.dataclass(frozen=True)\nclass C:\n    x: {}\n"
    assert changed(bare.format("int"), bare.format("ClassVar[int]")) == ["C"]
    assert changed(bare.format("int"), bare.format("int\n    _: KW_ONLY")) == ["C"]
    plain = "class Module:\n    _version: {} = 1\n"
    assert changed(plain.format("int"), plain.format("ClassVar[int]")) == []


def test_annotations_a_decorator_builds_from_are_a_change() -> None:
    """torch.library.custom_op builds the op's schema from the parameter types: there a
    changed annotation changes behaviour, where the op is defined. Undecorated, in the
    body, or in a function nested in it, an annotation is a type and runs nothing."""
    op = (
        '@torch.library.custom_op("lib::f", mutates_args=())\n'
        "def f(x: Tensor, ids: {}) -> Tensor:\n"
        "    n: int = 1\n"
        "    def g(y: int) -> int:\n        return y\n"
        "    return x\n"
    )
    schema = op.format("list[Tensor]")
    assert changed(schema, op.format("list[Tensor | None]")) == ["f"]
    assert changed(schema, schema.replace("n: int = 1", "n = 1")) == []
    assert changed(schema, schema.replace("g(y: int)", "g(y: float)")) == []
    assert changed(schema, op.format('"list[Tensor]"')) == []  # infer_schema resolves it
    plain = "def f(x: Tensor, ids: {}) -> Tensor:\n    return x\n"
    assert changed(plain.format("list[Tensor]"), plain.format("list[Tensor | None]")) == []
    before, after = (list[ast.AST](ast.parse(op.format(t)).body) for t in ("list[Tensor]", "int"))
    assert definition_changed(before, after)  # the schema is built where f is defined


def test_the_type_a_singledispatch_implementation_serves_is_a_change() -> None:
    """`@_to_dispatch.register` (torch._refs.to) picks the implementation by its first
    parameter's type; `atexit.register` and a `register(int)` given the type read none."""
    module = (
        "@singledispatch\ndef dispatch(a):\n    raise NotImplementedError\n"
        "@dispatch.register\ndef _device(device: {}) -> None:\n    pass\n"
        "@atexit.register\ndef _cleanup() -> {}:\n    pass\n"
        "@dispatch.register(int)\ndef _index(index: {}) -> None:\n    pass\n"
    )
    base = module.format("torch.device", "None", "int")
    assert changed(base, module.format("str", "None", "int")) == ["_device"]
    assert changed(base, module.format("torch.device", "Any", "object")) == []


def test_torchscript_reads_every_annotation_of_what_it_compiles() -> None:
    """A scripted function's locals are typed by their annotations (`out: List[int] = []`
    compiles, `out = []` does not), and so are the methods of a scripted or interface
    class, `export`ed methods and `_overload` stubs."""
    body = "@torch.jit.script\ndef f(k: int) -> List[int]:\n    out{} = []\n    return out\n"
    assert changed(body.format(": List[int]"), body.format("")) == ["f"]
    for decorator in ("torch.jit.script", "jit.interface"):
        cls = f"@{decorator}\nclass C:\n    def step(self, grads: {{}}) -> None:\n        pass\n"
        assert changed(cls.format("list[Tensor | None]"), cls.format("list[Tensor]")) == ["C.step"]
    exported = "class M:\n    @torch.jit.export\n    def f(self, x: {}) -> int:\n        return 1\n"
    assert changed(exported.format("int"), exported.format("float")) == ["M.f"]
    stub = "@_overload\ndef up(x: Tensor, size: {} = None) -> Tensor:\n    pass\n"
    assert changed(stub.format("int | None"), stub.format("list[int] | None")) == ["up"]


def test_a_config_module_reads_its_fields_annotations() -> None:
    """`install_config_module` checks each option against its annotation (torch.compile's
    `options=`): in a config module a field's type is behaviour, elsewhere it is not."""
    config = "max_tries: {} = 3\nclass triton:\n    cudagraphs: {} = False\n"
    tail = "install_config_module(sys.modules[__name__])\n"
    base = config.format("int", "bool") + tail
    assert changed(base, config.format("Optional[int]", "bool") + tail) == ["max_tries"]
    assert changed(base, config.format("int", "Optional[bool]") + tail) == ["triton"]
    assert changed(config.format("int", "bool"), config.format("Optional[int]", "bool")) == []


def test_a_dataclass_made_by_another_decorator_reads_the_words_too() -> None:
    """`@ir_dataclass` (torch._inductor.ir) and `@dataclass_with_cached_hash` make dataclasses
    under other names: `_force_realize: ClassVar[bool]` turned into a field is a change."""
    for decorator in ("ir_dataclass", "dataclass_with_cached_hash"):
        cls = f"@{decorator}\nclass Buffer:\n    _force_realize: {{}} = False\n"
        assert changed(cls.format("ClassVar[bool]"), cls.format("bool")) == ["Buffer"]


def test_a_config_module_installed_under_another_name_reads_its_fields_as_written() -> None:
    """`_install_config_module(...)` too; and `install_config_module` compares a value
    with the annotation as written, so a quoted `'int'` is no `int` there. Its functions'
    annotations are not read."""
    config = "max_tries: {} = 3\ndef f(x: {}) -> None:\n    pass\n"
    tail = "_install_config_module(sys.modules[__name__])\n"
    base = config.format("int", "int") + tail
    assert changed(base, config.format('"int"', "int") + tail) == ["max_tries"]
    assert changed(base, config.format("int", "float") + tail) == []


def test_the_narrowing_analyses_see_what_a_scripted_class_reads() -> None:
    """A scripted class's method whose parameter type changed besides a failure message
    changed on its success path: not a failure-only edit."""
    module = (
        "@torch.jit.script\nclass _FunctionalAdam:\n"
        "    def step(self, gradients: {}) -> None:\n"
        "        if gradients is None:\n            raise ValueError({})\n"
    )
    old, new = (
        module.format(*a) for a in (("list[Tensor]", "'a'"), ("list[Tensor | None]", "'b'"))
    )
    [change] = diff_symbols(
        "torch/x.py", module_symbols(ast.parse(old), old), module_symbols(ast.parse(new), new)
    )
    assert (change.qualname, change.failure_only) == ("_FunctionalAdam.step", False)
    message_only = module.format("list[Tensor]", "'b'")
    [change] = diff_symbols(
        "torch/x.py",
        module_symbols(ast.parse(old), old),
        module_symbols(ast.parse(message_only), message_only),
    )
    assert change.failure_only


def test_what_a_decorator_builds_where_the_function_is_defined_is_a_definition_change() -> None:
    """custom_op's schema is built from the parameters' names and types (a `None` type
    included) where the function is defined; atexit.register reads no type."""
    op = '@custom_op("lib::f", mutates_args=())\ndef f({}) -> None:\n    pass\n'

    def defined(before: str, after: str, template: str = op) -> bool:
        trees = [ast.parse(template.format(x)) for x in (before, after)]
        old, new = (list[ast.AST](tree.body) for tree in trees)
        return definition_changed(old, new, ModuleReaders.of(trees[0]))  # as detect asks

    assert defined("a: None, b: int", "a: int, b: None")
    assert defined("a: int", "b: int")
    assert defined("a: float = 0.01", "a: float = 0.2")  # the schema's default
    plain = "def f({}) -> None:\n    pass\n"
    assert not defined("a=0.01", "a=0.2", plain)  # a literal default runs nothing there
    assert not defined("a: int", 'a: "int"')
    assert not defined("a: int", "a: float", "@atexit.register\ndef f({}) -> None:\n    pass\n")


def test_imports_reorder_freely_only_among_themselves_and_never_a_star_import() -> None:
    """isort's reordering within a block is no change; an import moved past a statement
    (a circular import may then fail) or a star import moved (it binds whatever the
    module lists) is."""
    loop = "for name in dir(_C):\n    setup(name)\n"
    assert fingerprint("import a\nimport b\n" + loop) == fingerprint("import b\nimport a\n" + loop)
    assert fingerprint("import a\n" + loop) != fingerprint(loop + "import a\n")
    star = "from torch.functional import *\nfrom torch import _C\n"
    assert fingerprint(star) != fingerprint(
        "from torch import _C\nfrom torch.functional import *\n"
    )


def test_a_docstring_in_a_torchscript_overload_stub_is_code() -> None:
    """`_check_overload_body` accepts only `pass` or `...` in an `@_overload` stub."""
    stub = "@_overload\ndef up(x: Tensor) -> Tensor:\n    {}pass\n"
    assert changed(stub.format(""), stub.format('"""Doc."""\n    ')) == ["up"]
    plain = "def up(x):\n    {}pass\n"
    assert changed(plain.format(""), plain.format('"""Doc."""\n    ')) == []


def test_the_fields_of_a_docstring_its_module_formats_are_code() -> None:
    """`add_docstr(torch.abs, r\"\"\"...\"\"\".format(**common_args))` and
    `embedding_bag.__doc__.format(**notes)` run on import: a field no argument supplies
    raises KeyError there. Their words, and the braces of a docstring nobody formats, are
    documentation."""
    setter = 'add_docstr(torch.abs, r"""abs({}) -> Tensor""".format(**common_args))\n'
    assert changed(setter.format("{input}"), setter.format("input: {input}")) == []
    assert changed(setter.format("{input}"), setter.format("{inputs}")) == ["<module>"]
    module = 'def bag(x):\n    """{}"""\n    return x\nif bag.__doc__:\n    bag.__doc__ = bag.__doc__.format(**notes)\n'
    assert changed(module.format("Sum {note}."), module.format("Sums {note}.")) == []
    assert changed(module.format("Sum {note}."), module.format("Sum {note} {other}.")) == ["bag"]
    plain = 'def bag(x):\n    """{}"""\n    return x\n'
    assert changed(plain.format("Sum."), plain.format("Sum {a: 1}.")) == []
    copied = plain + "lu.__doc__ = bag.__doc__\n"  # a copy formats nothing
    assert changed(copied.format("U^{-1}"), copied.format("U^{-T}")) == []
    joined = 'add_docstr(torch.abs, r"""{}""" + r"""abs({{input}})""".format(**common_args))\n'
    assert changed(joined.format("Absolute."), joined.format("The absolute value.")) == []


def test_a_config_module_reads_its_compile_ignored_markers() -> None:
    """`install_config_module` reads each `# [@compile_ignored: debug]` marker with the
    option right below it on import: a comment or blank line put between them fails
    `import torch`, a marker moved marks another option. Other comments are
    documentation, there as elsewhere."""
    config = "# note\n# [@compile_ignored: debug]\n{}verbose = False\nother = 1\n"
    tail = "install_config_module(sys.modules[__name__])\n"
    base = config.format("") + tail
    assert changed(base, config.format("# more\n") + tail) == ["<module>"]
    assert changed(base, config.format("\n") + tail) == ["<module>"]
    assert changed(base, base.replace("# note", "# a reworded note")) == []
    assert changed(config.format(""), config.format("# more\n")) == []


IMPLEMENTATION = (
    "def sym_max(a, b):\n"
    "    if isinstance(a, float) or isinstance(b, float):\n"
    "        return float(max(a, b))\n"
    "    return max(a, b)\n"
)
TYPING = "import typing\nfrom typing import overload as _overload\n"
STUBS = (
    "@_overload\n"
    "def sym_max(a: int, b: int) -> int: ...\n"
    "@typing.overload\n"
    "def sym_max(a: float, b: float) -> float: ...\n"
)


def same(old: str, new: str, name: str = "sym_max") -> bool:
    """Whether `name` is the same code in the two module texts (as the Detect stage asks)."""
    before = module_symbols(ast.parse(old), old)[name]
    after = module_symbols(ast.parse(new), new)[name]
    return same_code(before, after)


def test_overload_stubs_before_an_implementation_are_not_a_change() -> None:
    """2.14 adds `@overload` stubs to torch.sym_max and friends: the implementation replaces
    what `overload` returns, so with an unchanged implementation nothing runs differently."""
    assert same(TYPING + IMPLEMENTATION, TYPING + STUBS + IMPLEMENTATION)


def test_the_implementation_after_overload_stubs_is_still_compared() -> None:
    changed = IMPLEMENTATION.replace("max(a, b)\n", "min(a, b)\n")
    assert not same(TYPING + STUBS + IMPLEMENTATION, TYPING + STUBS + changed)


def test_stubs_without_an_implementation_after_them_are_what_the_name_binds() -> None:
    """Without a later implementation the last stub is the function (calling it raises):
    changing a stub then changes behaviour, and so does one after the implementation."""
    stub = "from typing import overload\n@overload\ndef f(a: int) -> int: ...\n"
    assert not same(stub, stub.replace("...", "return a"), "f")
    implementation = "from typing import overload\ndef f(a):\n    return a\n"
    late = "@overload\ndef f(a: int) -> int: ...\n"
    assert not same(implementation, implementation + late, "f")


def test_overload_stubs_of_a_method_are_not_a_change() -> None:
    method = "    def size(self, dim=None):\n        return self.shape\n"
    stubs = "    @overload\n    def size(self, dim: None = None) -> tuple: ...\n"
    head = "from typing import overload\nclass T:\n"
    assert same(head + method, head + stubs + method, "T.size")


def test_torchscript_overload_stubs_are_code() -> None:
    """torch/nn/functional.py's `_overload` is torch._jit_internal's: it checks each stub's
    body on import and TorchScript compiles callers against the stubs' signatures."""
    head = "from torch._jit_internal import _overload\n"
    stub = "@_overload\ndef sym_max(a: int, b: int) -> int:\n    pass\n"
    assert not same(head + IMPLEMENTATION, head + stub + IMPLEMENTATION)
    assert not same(
        head + stub + IMPLEMENTATION, head + stub.replace("pass", "return a") + IMPLEMENTATION
    )


def test_typing_cast_naming_its_type_by_a_string_is_its_value() -> None:
    """`typing.cast("T", v)` returns `v` (SymInt.__init__ of 2.14). A type given as an
    expression is evaluated (a name imported only under TYPE_CHECKING fails there), and a
    bare `cast(...)` may be any function (torch/_inductor/bounds.py's `cast(x, dtype)`)."""
    plain = fingerprint("def f(self, node):\n    self.node = node\n")
    assert plain == fingerprint(
        'def f(self, node):\n    self.node = typing.cast("SymNode", node)\n'
    )
    for value in ("typing.cast(SymNode, node)", 'cast("SymNode", node)', "cast(node, dtype)"):
        assert plain != fingerprint(f"def f(self, node):\n    self.node = {value}\n")


def test_an_overload_name_bound_to_something_else_at_run_time_is_not_typings() -> None:
    """typing's `overload` only under TYPE_CHECKING, or rebound later (TorchScript's, a
    module attribute): the stubs run as TorchScript's, so they are code."""
    stub = "@overload\ndef sym_max(a: int, b: int) -> int:\n    pass\n"
    edited = stub.replace("pass", "return a")
    for imports in (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from typing import overload\n"
        "else:\n    from torch._jit_internal import _overload as overload\n",
        "from typing import overload\nfrom torch._jit_internal import _overload as overload\n",
        "from typing import overload\nimport torch\noverload = torch.jit._overload\n",
    ):
        assert not same(imports + stub + IMPLEMENTATION, imports + edited + IMPLEMENTATION)
    typed = "import typing as t\n"
    assert same(
        typed + IMPLEMENTATION, typed + stub.replace("@overload", "@t.overload") + IMPLEMENTATION
    )
