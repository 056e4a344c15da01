"""What a call passes, by class of value (selection.python.argument_classes), and for which
values of a parameter an edit leaves a function as it was (selection.python.specialize)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from selection.model import UnchangedFor
from selection.python.argument_classes import (
    CallShape,
    call_shape,
    callable_names,
    passed,
    passed_on,
    signature_of,
)
from selection.python.specialize import unchanged_for
from tests.support.check_with import CHECK_WITH_213, CHECK_WITH_214


def _function(source: str) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def _shape(call: str, passing: frozenset[str] = frozenset()) -> CallShape:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call)
    return call_shape(node, passing, frozenset({"helper"}))


def test_a_call_shape_names_each_argument_by_class() -> None:
    shape = _shape("f(lambda: 'x', None, 's', f'{y}', '%s' % y, b'b', True, 3, 2.5, y, helper)")
    assert shape == ("f", "n", "s", "s", "s", "y", "b", "i", "r", "?", "f")
    assert _shape("f(x, message=m, **kw)", frozenset({"m"})) == ("?", "message=p:m", "**")
    assert _shape("f(x, *rest, 'late')") == ("?", "*")  # past `*args` nothing is known


def test_what_a_call_passes_for_a_parameter_follows_how_python_binds_it() -> None:
    signature = signature_of(_function("def _check(cond, message=None, *, kind=None): ..."))
    assert passed(("?", "f"), signature, "message") == "f"
    assert passed(("?", "message=s"), signature, "message") == "s"
    assert passed(("?",), signature, "message") == "default:n"  # left out: the default
    assert passed(("?",), signature, "cond") == "?"
    assert passed(("*",), signature, "message") is None  # `*args` may fill it
    assert passed(("?", "*"), signature, "kind") == "default:n"  # keyword-only: no *args
    assert passed(("?", "**"), signature, "message") is None
    assert passed(("?", "f", "message=s"), signature, "message") is None  # twice: raises
    only = signature_of(_function("def f(a=0, /, **kw): ..."))
    assert passed(("a=s",), only, "a") == "default:i"  # `a=` goes to **kw


def test_a_parameter_is_passed_on_only_where_no_code_binds_it_again() -> None:
    function = _function(
        """
        def f(cond, message, other, shadowed, caught, *args):
            other = 2
            g = lambda shadowed: shadowed
            try:
                pass
            except Exception as caught:
                pass
            return _check_with(RuntimeError, cond, message)
        """
    )
    assert passed_on(function) == {"cond", "message"}


def test_names_holding_a_function_are_those_defined_once_and_not_bound_otherwise() -> None:
    function = _function(
        """
        def f(x, local_param):
            def error():
                return "bad"
            def twice(): ...
            twice = 3
            check = x > 1
            return error, twice, check
        """
    )
    names = callable_names(function, frozenset({"module_helper", "check", "local_param"}))
    assert names == {"error", "module_helper"}


# 2.14's edit, with annotations added as 2.14 did (they change nothing)
CHECK_WITH_214 = CHECK_WITH_214.replace(
    "error_type, cond, message", "error_type: type, cond: bool, message: object"
)


def _unchanged(old: str, new: str) -> dict[str, UnchangedFor]:
    before, after = _function(old), _function(new)
    return {u.param: u for u in unchanged_for([before], [after])}


def test_the_2_14_check_with_edit_leaves_a_lambda_and_none_alone() -> None:
    assert CHECK_WITH_214 != CHECK_WITH_213
    found = _unchanged(CHECK_WITH_213, CHECK_WITH_214)
    assert found["message"].classes == {"f", "n"}
    assert not found["message"].omitted  # it has no default
    # `isinstance(cond, (bool, SymBool))`: what a str is to the module's SymBool is not
    # known, so nothing is claimed for `cond`
    assert "cond" not in found


SCALE = """
def scale(x, factor=None, mode="linear"):
    if factor is not None:
        x = x * factor
    if isinstance(mode, str):
        return x if mode == "linear" else x * x
    return x ** 2
"""


@pytest.mark.parametrize(
    ("old", "new", "param", "classes", "omitted"),
    [
        # an edit under `factor is not None`: the same for None, and where it is left out
        (SCALE, SCALE.replace("x * factor", "x * factor * 2"), "factor", {"n"}, True),
        # an edit where mode is no str: a str leaves it alone, and so does leaving it out
        (SCALE, SCALE.replace("x ** 2", "x ** 3"), "mode", {"s"}, True),
        # a default that changed: any value passed leaves it alone, leaving it out not
        (
            SCALE,
            SCALE.replace('mode="linear"', 'mode="square"'),
            "mode",
            {"f", "n", "s", "y", "b", "i", "r"},
            False,
        ),
    ],
)
def test_an_edit_under_a_test_of_a_parameter_is_unchanged_for_the_other_values(
    old: str, new: str, param: str, classes: set[str], omitted: bool
) -> None:
    found = _unchanged(old, new)[param]
    assert classes <= found.classes
    assert found.omitted is omitted


def test_a_truth_test_is_answered_for_none_and_a_lambda_only() -> None:
    old = "def f(x, fn=None):\n    if not fn:\n        return x\n    return fn(x)\n"
    new = old.replace("return fn(x)", "return fn(x) + 1")
    assert _unchanged(old, new)["fn"].classes == {"n"}


def test_a_value_read_by_or_keeps_what_it_holds() -> None:
    """`p or "default"` is p's value when p is a lambda: not replaced by True, so an edit of
    the default text is the same for a lambda, and not for None."""
    old = 'def f(message=None):\n    return str(message or "default")\n'
    new = old.replace('"default"', '"fallback"')
    assert _unchanged(old, new)["message"].classes == {"f"}


@pytest.mark.parametrize(
    "new",
    [
        # the parameter bound again: nothing is specialized
        SCALE.replace(
            "    if factor is not None:", "    factor = factor\n    if factor is not None:"
        )
        + "",
        # the parameters changed
        SCALE.replace("def scale(x, factor=None", "def scale(x, size=None, factor=None"),
    ],
)
def test_nothing_is_known_where_the_parameter_or_the_signature_changed(new: str) -> None:
    edited = new.replace("x * factor", "x * factor * 2")
    assert "factor" not in _unchanged(SCALE, edited)


def test_an_edit_that_asks_nothing_of_a_parameter_is_known_for_none() -> None:
    old = "def f(x, y):\n    return x + y\n"
    assert _unchanged(old, old.replace("x + y", "x - y")) == {}


# A value of each class, to run both revisions with.
VALUES: dict[str, list[object]] = {
    "f": [lambda: "m"],
    "n": [None],
    "s": ["", "abc"],
    "y": [b"x"],
    "b": [True, False],
    "i": [0, 3],
    "r": [2.5],
}


def _outcome(source: str, value: object) -> tuple[str, str]:
    namespace: dict[str, object] = {"state": 0}
    try:
        exec(textwrap.dedent(source), namespace)
        result = namespace["f"](value)  # type: ignore[operator]
        kind = "generator" if hasattr(result, "__next__") else repr(result)
        return "returned", f"{kind} {namespace['state']}"
    except Exception as exc:
        return "raised", type(exc).__name__


def _claims_hold(old: str, new: str) -> set[str]:
    """The classes claimed for `p`; each checked by running both revisions on values of it."""
    claimed = _unchanged(old, new).get("p")
    classes = set(claimed.classes) if claimed else set()
    for code in classes:
        for value in VALUES[code]:
            assert _outcome(old, value) == _outcome(new, value), (code, value)
    return classes


@pytest.mark.parametrize(
    ("old", "new", "claimed"),
    [
        # the plain case: the edit is where p is no None
        (
            "def f(p):\n    if p is None:\n        return 1\n    return 2\n",
            "def f(p):\n    if p is None:\n        return 1\n    return 3\n",
            {"n"},
        ),
        # a `yield` in the code cut for None made it a generator
        (
            "def f(p):\n    if p is None:\n        return 1\n    yield 2\n",
            "def f(p):\n    if p is None:\n        return 1\n    yield 3\n",
            set(),
        ),
        # a name the cut code binds is read in what is left (`str` local: UnboundLocalError)
        (
            "def f(p):\n    if p is None:\n        return str(1)\n    str = repr\n    return 2\n",
            "def f(p):\n    if p is None:\n        return str(1)\n    str = repr\n    return 3\n",
            set(),
        ),
        # a `global` in the cut branch makes `state` the module's everywhere
        (
            "def f(p):\n    if p is not None:\n        global state\n        return 1\n"
            "    state = 5\n    return 2\n",
            "def f(p):\n    if p is not None:\n        return 1\n    state = 5\n    return 2\n",
            set(),
        ),
        # `callable` bound by the function: not answered
        (
            "def f(p):\n    callable = lambda x: True\n    return 1 if callable(p) else 3\n",
            "def f(p):\n    callable = lambda x: True\n    return 1 if callable(p) else 4\n",
            set(),
        ),
        # a type of another module (`np.bool_`) is not `bool`
        (
            "def f(p):\n    import numpy as np\n    return 1 if isinstance(p, np.bool_) else 3\n",
            "def f(p):\n    import numpy as np\n    return 2 if isinstance(p, np.bool_) else 3\n",
            set(),
        ),
        # the function calls itself with a str under None: its own call runs the edit
        (
            "def f(p, n=0):\n    if p is None:\n        return f('x', 1)\n    return n\n",
            "def f(p, n=0):\n    if p is None:\n        return f('x', 1)\n    return n + 1\n",
            set(),
        ),
        # types spread from a tuple (`*torch.fx.node.base_types`) are not known, but a str
        # is a str whatever else is named
        (
            "def f(p):\n    return 1 if isinstance(p, (str, *more)) else 2\n",
            "def f(p):\n    return 1 if isinstance(p, (str, *more)) else 3\n",
            {"s"},
        ),
        # a known type decides a tuple that also names an unknown one
        (
            "def f(p):\n    return 1 if isinstance(p, (str, Unknown)) else 2\n",
            "def f(p):\n    return 3 if isinstance(p, (str, Unknown)) else 2\n",
            set(),
        ),
    ],
)
def test_what_is_claimed_holds_when_both_revisions_run(
    old: str, new: str, claimed: set[str]
) -> None:
    assert _claims_hold(old, new) == claimed


def test_only_the_body_is_specialized_not_decorators_or_other_defaults() -> None:
    """`q=(p is None)` reads the module's `p`: an edit of it holds for no class."""
    old = "def f(p, q=(p is None)):\n    return q\n"
    new = "def f(p, q=True):\n    return q\n"
    assert "p" not in _unchanged(old, new)


def test_a_match_capture_binds_the_parameter_again() -> None:
    old = "def f(p):\n    match [5]:\n        case [p]:\n            pass\n    return 1 if p is None else 2\n"
    assert "p" not in _unchanged(old, old.replace("else 2", "else 3"))
    function = _function(old)
    assert passed_on(function) == set()


def test_a_function_defined_in_a_nested_scope_is_not_the_outer_names_function() -> None:
    function = _function(
        """
        def f(x):
            def inner():
                def msg(): ...
                return msg
            class Holder:
                def error(self): ...
            return inner, Holder
        """
    )
    assert callable_names(function, frozenset()) == {"inner"}


@pytest.mark.parametrize(
    ("decorator", "claims"),
    [
        ("@register_decomposition(aten.f)\n", True),  # registers it and returns it as it is
        ("@elementwise_type_promotion_wrapper(type_promoting_args=('p',))\n", False),
        ("@out_wrapper()\n", False),
    ],
)
def test_a_decorator_that_may_wrap_the_function_claims_nothing(
    decorator: str, claims: bool
) -> None:
    """A wrapper sees the call's values before the body does (it may turn an int into a
    float): what the body asks of them says nothing of what a call passes."""
    old = decorator + "def f(p):\n    if p is None:\n        return 1\n    return 2\n"
    assert bool(_unchanged(old, old.replace("return 2", "return 3"))) is claims


@pytest.mark.parametrize(
    "module",
    [
        "from mylib import callable\n",
        "try:\n    from mylib import callable\nexcept ImportError:\n    pass\n",
        "for callable in [len]:\n    pass\n",
        "def setup():\n    global callable\n    callable = len\n",
    ],
)
def test_a_builtin_the_module_binds_any_way_is_not_answered(module: str) -> None:
    """detect passes every top-level binding (imports, blocks, `global` in a function) to
    the specializer as shadowing the builtin of that name."""
    from selection.detect import diff_symbols
    from selection.pyast import module_symbols

    function = "\n\ndef f(p):\n    return 1 if callable(p) else {}\n"
    old, new = module + function.format(2), module + function.format(3)
    [change] = [
        c
        for c in diff_symbols("torch/m.py", module_symbols(ast.parse(old), old),
                              module_symbols(ast.parse(new), new))
        if c.qualname == "f"
    ]  # fmt: skip
    assert change.unchanged_for == ()
