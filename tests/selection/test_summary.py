"""What a module's symbols use (selection.python.summary): the edges of the link graph."""

from __future__ import annotations

import ast

from selection.python.names import ModuleNames
from selection.python.summary import Use, _UseCollector, summarize

SOURCE = """
import builtins
import torch


def _check_with(error_type, cond, message):
    if not isinstance(cond, (builtins.bool, torch.SymBool)):
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if issubclass(error_type, ValueError) or isinstance(cond, _bool_types()):
        raise error_type(message())


def type_to_dtype(typ):
    shape: list[int | torch.SymInt] = [1]
    if typ in (bool, torch.SymBool) or typ == _default_type():
        return torch.bool
    if typ in _known_types:
        return shape


def _fused_cuda(x):
    return x


def silu(x):
    if can_fuse(x) and x.device.type == "cuda":
        return _fused_cuda(x)
    return x * torch.sigmoid(x)


IntLike = (int, torch.SymInt)
IntLikeType = int | torch.SymInt | None
handlers = (torch.sym_not, _fused_cuda)
passthrough = {torch.device, torch.sym_float}
"""


def _summary() -> object:
    path = "torch/helpers.py"
    return summarize(path, ast.parse(SOURCE), SOURCE, ModuleNames([path, "torch/__init__.py"]))


def test_the_classes_a_type_test_compares_with_are_compared_not_called_but_its_calls_are() -> None:
    summary = _summary()
    used = {".".join(u.chain) for u in summary.uses["_check_with"]}  # type: ignore[attr-defined]
    how = {".".join(u.chain): u.how for u in summary.uses["_check_with"]}  # type: ignore[attr-defined]
    # compared, never constructed or called: the link graph drops them if they are classes
    # (a module-level tuple of classes, `IntLike`, still links: see the type specs below)
    assert how["torch.SymBool"] == how["ValueError"] == how["builtins.bool"] == "compared"
    assert {"cond", "error_type", "_bool_types", "message", "isinstance"} <= used


def test_a_call_only_another_devices_branch_makes_is_kept_apart_and_its_guard_is_ours() -> None:
    summary = _summary()
    ours = {".".join(u.chain) for u in summary.uses["silu"]}  # type: ignore[attr-defined]
    theirs = {".".join(u.chain) for u in summary.device_uses["silu"]}  # type: ignore[attr-defined]
    assert "_fused_cuda" in theirs and "_fused_cuda" not in ours
    assert "torch.sigmoid" in ours
    assert "can_fuse" in ours  # the guard itself runs on every device


def test_annotations_are_not_uses_and_compared_values_are_kept_as_compared() -> None:
    summary = _summary()
    uses = {".".join(u.chain): u.how for u in summary.uses["type_to_dtype"]}  # type: ignore[attr-defined]
    assert "torch.SymInt" not in uses and "int" not in uses  # the annotation
    # kept, marked: the link graph drops a compared class, never a compared list
    assert uses["torch.SymBool"] == uses["_known_types"] == "compared"
    assert uses["_default_type"] == "call"


def test_a_type_spec_names_classes_as_compared_and_other_collections_as_used() -> None:
    """`IntLike = (int, torch.SymInt)` is what isinstance tests compare with: a change of
    SymInt's class header runs through none of its users. A tuple or set with no builtin
    type in it may hold what is called later (handlers, functions passed through)."""
    summary = _summary()
    uses = summary.uses  # type: ignore[attr-defined]
    for name in ("IntLike", "IntLikeType"):
        assert {".".join(u.chain): u.how for u in uses[name]} == {
            "int": "compared",
            "torch.SymInt": "compared",
        }
    for name, chains in (
        ("handlers", {"torch.sym_not", "_fused_cuda"}),
        ("passthrough", {"torch.device", "torch.sym_float"}),
    ):
        assert {".".join(u.chain): u.how for u in uses[name]} == dict.fromkeys(chains, "reference")


NESTED = """
from functools import partial


def factory(op):
    checked(op)

    def wrapper(fn):
        registered(op, fn)

        def run(*args):
            return deferred(fn(*args))

        return run

    return wrapper


def walk(tree):
    def visit(node):
        return leaf(node)

    def stored(node):
        return later(node)

    mapping(visit, tree)
    keep(outer(op)(stored))
    table.update(key=lambda: in_callback())
    return visit(tree), (lambda: in_lambda())


@factory(1)
@plain
def decorated(x):
    return x


cast = partial(casts, kind=1)
kernel = make(meta=partial(meta_fn, kind=2))
"""


def _nested_uses() -> tuple[dict[str, tuple[int, bool, str]], tuple[Use, ...]]:
    path = "torch/nested.py"
    summary = summarize(path, ast.parse(NESTED), NESTED, ModuleNames([path]))
    uses: dict[str, tuple[int, bool, str]] = {}
    for qualname in ("factory", "walk", "cast", "kernel"):
        for u in summary.uses[qualname]:
            uses[".".join(u.chain)] = (u.nesting, u.applied, u.how)
    return uses, summary.load_uses


def test_a_use_knows_the_nested_body_it_sits_in_and_whether_its_result_is_applied() -> None:
    """What `import torch` runs follows only code that runs (selection.links.startup): a
    factory's own body, the decorator it returns where that is applied, not the function
    the decorator returns in turn; a nested helper called in place, or handed to a plain
    call as a callback, runs; one handed to a decorator's application is registered."""
    uses, load_uses = _nested_uses()
    assert uses["checked"] == (0, False, "call")
    assert uses["registered"] == (1, False, "call")
    assert uses["deferred"] == (2, False, "call")
    assert uses["leaf"] == (0, False, "call")  # `visit` is called and passed to `mapping`
    assert uses["later"][0] == 1  # `stored` is only handed to `outer(op)(...)`
    assert uses["outer"] == (0, True, "call")  # what `outer(op)` returns is called there
    assert uses["in_callback"][0] == 0  # a lambda given to a plain call may run there
    assert uses["in_lambda"][0] == 1  # a lambda returned runs when called
    # partial: whoever calls the partial calls the function; one passed on is stored
    assert uses["casts"][2] == "call"
    assert uses["meta_fn"][2] == "argument"
    # on import: the decorator factory's call is applied to `decorated`; a bare decorator
    # is one use of its own
    on_load = {".".join(u.chain): (u.how, u.applied) for u in load_uses}
    assert on_load["factory"] == ("call", True)
    assert on_load["plain"] == ("decorator", False)
    assert on_load["make"] == ("call", False)


SHAPES = """
def blocks(flag):
    if flag:
        def helper():
            in_block()
    helper()
    try:
        def run():
            in_try()
    finally:
        pass
    run()


def decorating():
    def deco(fn):
        by_decorator()
        return fn

    @deco
    def g():
        in_decorated()


def constructing():
    class K:
        def __init__(self):
            in_init()

        def run(self):
            in_method()

    K()


def defaults(cb=lambda: in_default_lambda()):
    return cb


def guarded(x):
    def _fn(y):
        if check(y) and y.device.type == "cuda":
            return y
        return y

    return _fn


def guarded_callback(xs):
    def _cuda(y):
        return y

    return apply(lambda y: _cuda(y) if probe(y) and y.device.type == "cuda" else y, xs)


for name in ("a", "b"):
    def _make():
        in_loop()

    _make()
"""


def test_what_runs_in_place_whatever_block_or_shape_it_is_defined_in() -> None:
    """The shapes a maintainer found the first rules missed: a helper defined in an `if` or
    `try` and called after it, a nested function used as a decorator, the constructor of a
    class a function defines and constructs, a module-level loop that defines and calls a
    function; and what does not run: a lambda default, a method other than the
    constructor, a guard inside the function a factory returns."""
    path = "torch/shapes.py"
    summary = summarize(path, ast.parse(SHAPES), SHAPES, ModuleNames([path]))
    nesting = {
        ".".join(u.chain): u.nesting
        for qualname in (
            "blocks",
            "decorating",
            "constructing",
            "defaults",
            "guarded",
            "guarded_callback",
        )
        for u in summary.uses[qualname]
    }
    assert nesting["in_block"] == nesting["in_try"] == 0
    assert nesting["by_decorator"] == 0 and nesting["in_decorated"] == 1
    assert nesting["in_init"] == 0 and nesting["in_method"] == 1
    assert nesting["in_default_lambda"] == 1
    assert nesting["check"] == 1  # a guard of another device's branch, inside `_fn`
    assert nesting["probe"] == 0  # one inside a lambda a plain call is given
    on_load = {".".join(u.chain): u.nesting for u in summary.load_uses}
    assert on_load["in_loop"] == 0


def test_an_applied_call_is_told_by_its_shape_alone() -> None:
    """Whether a call's result is called is read from the code's shape: over many
    module-level statements read from copies (each has another device's branch), exactly
    the applied calls are (object identities once decided it, and a freed copy's were
    reused: the flag came out set on plain calls)."""
    branch = "if x.device.type == 'cuda':\n    cuda_only()\nelse:\n"
    statements = [f"{branch}    y{i} = f{i}(1)(g)\n" for i in range(200)]
    statements += [f"{branch}    z{i} = h{i}(1)\n" for i in range(2000)]
    collector = _UseCollector(tests=False)  # as summarize reads the load-time code
    for statement in statements:  # each tree freed after use, as its copies are
        collector.collect(ast.parse(statement).body[0])
    applied = {".".join(u.chain): u.applied for u in collector.uses}
    assert all(applied[f"f{i}"] for i in range(200))
    assert not any(applied[f"h{i}"] for i in range(2000))
