"""An edit confined to what runs when something fails reaches only the tests that handle
errors: the others pass without running it (or fail as before), and the agent says "not
needed" for them, with its reason."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from selection import model
from selection.gradients import callable_index, handles_errors
from selection.pyast import module_symbols
from selection.python.failure_paths import FAILURE_PATH, FAILURE_PATH_NOTE, confined_to_failure
from selection.stages.scope import _covers
from selection.stages.triage import build_groups
from selection.state import PipelineState
from tests.selection.conftest import Select, ids
from tests.support.upstream_repo import (
    MUL_KERNEL_EDIT,
    UpstreamRepo,
    build_upstream,
    write_manifest,
)


def _function(source: str) -> list[ast.AST]:
    return [ast.parse(textwrap.dedent(source)).body[0]]


BASE = """
def f(x, self):
    if x is None:
        raise ValueError("x is missing")
    torch._check(x.ndim == 2, lambda: f"expected 2 dims, got {x.ndim}")
    assert x.numel() > 0, "empty"
    if x.dtype not in (torch.float16, torch.float32):
        parts = [str(x.dtype)]
        parts.append("is not supported")
        msg = " ".join(parts)
        raise TypeError(msg)
    return x * 2
"""

FAILURE_ONLY = {
    "a raised message": ('raise ValueError("x is missing")', 'raise ValueError("no x given")'),
    "a check's lambda message": ('got {x.ndim}")', 'got {x.ndim} dims")'),
    "an assert's message": ('"empty"', 'f"empty: {x}"'),
    "a message put together before the raise": ('"is not supported"', '"unsupported"'),
}

ON_THE_SUCCESS_PATH = {
    "the condition": ("if x is None:", "if x is None or x.numel() == 0:"),
    "the exception type": ('raise ValueError("x is missing")', 'raise KeyError("x is missing")'),
    "the checked condition": ("x.ndim == 2", "x.ndim >= 2"),
    "the result": ("return x * 2", "return x * 3"),
    "state written in the tail": ("msg = ", "self.last_error = msg = "),
    "a call made for its effect in the tail": (
        "        msg =",
        '        warnings.warn("bad dtype")\n        msg =',
    ),
    "a check's message that reads an attribute eagerly": (
        'lambda: f"expected 2 dims, got {x.ndim}"',
        'f"expected 2 dims, got {x.ndim}"',
    ),
    # _check_with of 2.13 raises TypeError for a message that is not callable
    "a check's message, lambda to constant": (
        'lambda: f"expected 2 dims, got {x.ndim}"',
        '"expected 2 dims"',
    ),
    "an other method named _check": ("torch._check(", "self._check("),
    "a loop variable's method called in the tail": (
        "        msg =",
        "        for p in self.hooks:\n            p.remove()\n        msg =",
    ),
}


OTHER_SHAPES = {
    "which exception a condition in the tail chooses": (
        """
def f(x):
    if x is None:
        if x > 0:
            raise ValueError("m")
        else:
            raise TypeError("m")
    return x
""",
        ("x > 0", "x > 5"),
    ),
    "an exception kept in a name": (
        """
def f(x):
    if x is None:
        err = ValueError("m")
        raise err
    return x
""",
        ("ValueError", "TypeError"),
    ),
    "an exception a helper makes": (
        """
def f(x):
    if x is None:
        raise make_error("value", "m")
    return x
""",
        ('"value"', '"type"'),
    ),
    "data an exception carries": (
        """
def f(x, func):
    if x is None:
        raise UnsupportedOperatorException(func)
    return x
""",
        ("(func)", "(x)"),
    ),
    "a finally that returns what the tail assigned": (
        """
def f(x):
    try:
        if x is None:
            y = 1
            raise ValueError("m")
    finally:
        return y
""",
        ("y = 1", "y = 2"),
    ),
    "a global the tail writes": (
        """
def f(x):
    global FAILURES
    if x is None:
        FAILURES = 1
        raise ValueError("m")
    return x
""",
        ("FAILURES = 1", "FAILURES = 2"),
    ),
}


@pytest.mark.parametrize("case", OTHER_SHAPES.values(), ids=list(OTHER_SHAPES))
def test_a_failure_that_can_change_its_type_or_state_is_not_confined(
    case: tuple[str, tuple[str, str]],
) -> None:
    source, (old, new) = case
    assert old in source
    assert not confined_to_failure(_function(source), _function(source.replace(old, new)))


def test_a_message_an_exception_class_is_given_is_blanked_its_data_kept() -> None:
    source = """
def f(x, func):
    if x is None:
        raise UnsupportedOperatorException(func, f"no {func}")
    return x
"""
    edited = source.replace('f"no {func}"', '"unsupported"')
    assert confined_to_failure(_function(source), _function(edited))


@pytest.mark.parametrize("edit", FAILURE_ONLY.values(), ids=list(FAILURE_ONLY))
def test_an_edit_of_what_a_failure_raises_or_says_is_confined_to_failing_paths(
    edit: tuple[str, str],
) -> None:
    old, new = edit
    assert old in BASE
    assert confined_to_failure(_function(BASE), _function(BASE.replace(old, new)))


@pytest.mark.parametrize("edit", ON_THE_SUCCESS_PATH.values(), ids=list(ON_THE_SUCCESS_PATH))
def test_an_edit_that_can_change_what_succeeds_is_not(edit: tuple[str, str]) -> None:
    old, new = edit
    assert old in BASE
    assert not confined_to_failure(_function(BASE), _function(BASE.replace(old, new)))


def test_a_message_naming_what_nothing_binds_is_no_failure_path_change() -> None:
    """`Module.__getattr__`'s AttributeError is control flow (`hasattr` catches it): a
    message reading an undefined name raises NameError instead, on every module built. A
    message naming a parameter, a module-level name or a builtin stays failure-only."""
    source = """
def __getattr__(self, name):
    if name in self._parameters:
        return self._parameters[name]
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
"""
    module = frozenset({"Module", "torch"})
    old = _function(source)
    for message, confined in (
        ("f\"'{type(self).__name__}' has no '{name}' ({torch.__version__})\"", True),
        ('f"{type(self).__name__} lacks {name}"', True),
        ("f\"'{type(self).__name__}' object has no attribute '{nme}'\"", False),
    ):
        edited = source.replace(
            "f\"'{type(self).__name__}' object has no attribute '{name}'\"", message
        )
        assert confined_to_failure(old, _function(edited), module_names=module) is confined
    # a comprehension's variable is its own: read outside it, it is unbound
    shapes = 'f"{[t.shape for t in self._parameters]} lack {name}, not {t}"'
    edited = source.replace("f\"'{type(self).__name__}' object has no attribute '{name}'\"", shapes)
    assert not confined_to_failure(old, _function(edited), module_names=module)


def test_an_unchanged_function_is_not_a_failure_path_change() -> None:
    assert not confined_to_failure(_function(BASE), _function(BASE))


@pytest.mark.parametrize(
    "wrapper",
    [
        ("try:\n        ", "\n    except ValueError:\n        x = 0"),
        ("with torch.no_grad():\n        ", ""),
    ],
    ids=["inside a try that catches", "inside a with (its manager may suppress)"],
)
def test_a_raise_the_function_itself_may_catch_is_not_collapsed(
    wrapper: tuple[str, str],
) -> None:
    before, after = wrapper
    source = """
def g(x):
    {before}if x is None:
            raise ValueError("{message}"){after}
    return x
"""
    old = source.format(before=before, after=after, message="x is missing")
    new = source.format(before=before, after=after, message="no x")
    assert not confined_to_failure(_function(old), _function(new))


TEMPLATES = """
class TestCommon(TestCase):
    def test_plain(self, device, dtype, op):
        op(op.sample_inputs(device, dtype))

    def test_raises(self, device, dtype, op):
        with self.assertRaisesRegex(RuntimeError, "bad"):
            op(1)

    def test_catches(self, device, dtype, op):
        try:
            op(1)
        except RuntimeError:
            pass

    def test_error_inputs(self, device, dtype, op):
        for ei in op.error_inputs(device):
            pass

    def test_through_a_helper(self, device, dtype, op):
        _check(op)


def _check(op):
    try:
        op(1)
    finally:
        pass
"""


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("test_plain", False),
        ("test_raises", True),
        ("test_catches", True),
        ("test_error_inputs", True),
        ("test_through_a_helper", True),
    ],
)
def test_a_template_handles_errors_if_it_or_a_helper_of_its_file_does(
    template: str, expected: bool
) -> None:
    symbols = module_symbols(ast.parse(TEMPLATES), TEMPLATES)
    assert handles_errors(symbols[f"TestCommon.{template}"], callable_index(symbols)) is expected
    assert handles_errors(None, {}) is None  # a body not seen


ERROR_TEMPLATE = """
    @ops(op_db)
    def test_errors(self, device, dtype, op):
        with self.assertRaises(ValueError):
            list(op.sample_inputs(device, None))

    @ops(op_db)
    def test_out(self, device, dtype, op):"""

MUL_SAMPLES = "def sample_inputs_mul(op_info, device, dtype):\n"
MUL_CHECKED = (
    "def sample_inputs_mul(op_info, device, dtype):\n"
    "    if dtype is None:\n"
    '        raise ValueError("sample_inputs_mul needs a dtype")\n'
)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    """The shared upstream, plus a template that expects errors and a sample function
    that raises one."""
    repo = build_upstream(tmp_path_factory.mktemp("upstream") / "pytorch")
    repo.edit(
        "test/test_ops.py",
        "\n    @ops(op_db)\n    def test_out(self, device, dtype, op):",
        ERROR_TEMPLATE,
    )
    repo.edit("torch/testing/_internal/common_methods_invocations.py", MUL_SAMPLES, MUL_CHECKED)
    repo.base = repo.commit("a template that expects errors; a sample function that raises")
    return repo


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_manifest(tmp_path_factory.mktemp("manifests"), also=("TestCommon::test_errors",))


DATABASE = "torch/testing/_internal/common_methods_invocations.py"
MESSAGE = '"sample_inputs_mul needs a dtype"'


def _dropped(state: PipelineState) -> dict[str, str]:
    return {d.node_id.rsplit("::", 1)[-1]: d.reason for d in state.dropped}


def test_a_message_edit_runs_only_the_templates_that_handle_errors(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(DATABASE, MESSAGE, '"a dtype is required"')
    state = select(head)
    assert ids(state) == {"test_errors_mul_spyre_float16", "test_errors_mul_spyre_float32"}
    dropped = _dropped(state)
    assert set(dropped) >= {"test_out_mul_spyre_float16", "test_out_mul_spyre_float32"}
    assert "these templates handle no errors" in dropped["test_out_mul_spyre_float32"]
    summaries = {g.cause.summary: g.verdict.decision for g in state.groups if g.verdict}
    assert any(
        "only on failing paths" in s and s.endswith("(templates that handle no errors)")
        for s in summaries
    ), summaries


def test_a_condition_edit_runs_every_template(upstream: UpstreamRepo, select: Select) -> None:
    head = upstream.change(DATABASE, "if dtype is None:", "if dtype is None or dtype == 0:")
    state = select(head)
    assert {"test_out_mul_spyre_float32", "test_errors_mul_spyre_float32"} <= ids(state)
    assert not any("handle no errors" in reason for reason in _dropped(state).values())


def test_a_test_another_change_reaches_too_still_runs(
    upstream: UpstreamRepo, select: Select
) -> None:
    upstream.reset()
    upstream.edit(DATABASE, MESSAGE, '"a dtype is required"')
    upstream.edit(*MUL_KERNEL_EDIT)
    state = select(upstream.commit("a message and mul's kernel"))
    assert {"test_out_mul_spyre_float32", "test_errors_mul_spyre_float32"} <= ids(state)
    assert "test_out_mul_spyre_float32" not in _dropped(state)


def test_a_test_standing_for_a_canary_stratum_is_not_dropped() -> None:
    """Scope lets a kept test stand for a machinery canary's stratum; were triage to drop it
    as error-free, the stratum would be left without a test."""
    inst = model.TestInstance(
        "test/test_ops.py", "TestCommon", "TestCommonPRIVATEUSE1", "test_out", "test_out_mul"
    )
    failure = model.Cause("detect", FAILURE_PATH, f"f modified {FAILURE_PATH_NOTE}")
    reached = model.Candidate(inst, [failure, model.Cause("map", "library", "calls f")])
    template = {(inst.file, inst.test_class, inst.template)}
    assert build_groups({inst.node_id: reached}, error_free=template)[0].error_free
    _covers(reached, model.Cause("detect", "machinery", "g"), model.Cause("map", "canary", "g"))
    groups = build_groups({inst.node_id: reached}, error_free=template)
    assert not groups[0].error_free
