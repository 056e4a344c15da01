"""An edit that matters only for some values of a parameter reaches only the calls that may
pass another (selection.links.argument_reach): 2.14's `_check_with` formats a message that
is not callable, where 2.13 raised TypeError, so `torch._check(cond, lambda: ...)` runs as
before and `torch._check(cond, "text")` does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.state import PipelineState
from tests.support.check_with import CHECK_WITH_213, FORMATTED, RAISED
from tests.support.observed_runs import linked_ops, manifest_file, recorded_map, select_head
from tests.support.upstream_repo import INTERNAL, UpstreamRepo, build_upstream

DB = f"{INTERNAL}/common_methods_invocations.py"

TORCH_INIT_TEXT = """
from torch import _C as _C


{check_with}


def _check(cond, message=None):
    _check_with(RuntimeError, cond, message)


def scaled(x, factor=None):
    if factor is not None:
        x = x * factor
    return x
"""

SAMPLES = '''
def _check_dtype(dtype, message):
    torch._check(dtype is not None, message)


def sample_inputs_add(op_info, device, dtype):
    torch._check(dtype is not None, lambda: "add needs a dtype")
    yield SampleInput(torch.scaled(torch.ones(3, device=device, dtype=dtype)), args=(2,))


def sample_inputs_mul(op_info, device, dtype):
    torch._check(dtype is not None, "mul needs a dtype")
    yield SampleInput(torch.scaled(torch.ones(4, device=device, dtype=dtype), 2), args=(3,))


def sample_inputs_unary(op_info, device, dtype):
    """Unary samples."""
    _check_dtype(dtype, lambda: "a unary op needs a dtype")
    yield SampleInput(torch.ones(5, device=device, dtype=dtype))
'''

TORCH_INIT = TORCH_INIT_TEXT.replace("{check_with}", CHECK_WITH_213.strip("\n"))


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    repo = build_upstream(tmp_path_factory.mktemp("upstream") / "pytorch")
    repo.reset()
    repo.write("torch/__init__.py", TORCH_INIT)
    old = repo.read(DB)
    start, end = old.index("def sample_inputs_add("), old.index("op_db = [")
    repo.write(DB, old[:start] + SAMPLES.lstrip("\n") + "\n\n" + old[end:])
    repo.base = repo.commit("torch._check, its callers, a function scaling when asked")
    return repo


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return manifest_file(tmp_path_factory.mktemp("manifests"))


def _evidence(state: PipelineState) -> list[str]:
    return [s for t in state.candidates.values() for c in t.causes for s in c.evidence]


def _ops(state: PipelineState) -> set[str | None]:
    return {op for op, _ in linked_ops(state)}


def test_only_the_call_passing_text_reaches_the_2_14_check_with_edit(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change("torch/__init__.py", RAISED, FORMATTED)
    state = select_head(upstream, manifest, head, tmp_path)
    assert _ops(state) == {"mul"}  # add passes a lambda; the unary ops one through a helper
    steps = _evidence(state)
    assert any("as before where message is a callable or None" in s for s in steps)
    # the detect cause says it too: the report's and the console's summary of the change
    summaries = {c.summary for t in state.candidates.values() for c in t.causes}
    assert any(
        s.startswith("torch/__init__.py: _check_with modified (as before where")
        and s.endswith("where message is a callable or None)")
        for s in summaries
    ), summaries


def test_an_edit_no_call_can_reach_has_no_effect_and_says_why(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """Every caller passes a lambda or None to what the edit changed: nothing to run, and
    the reason names the values passed."""
    upstream.reset()
    upstream.edit(DB, '"mul needs a dtype"', 'lambda: "mul needs a dtype"')
    base = upstream.commit("mul passes a lambda too")
    upstream.edit("torch/__init__.py", RAISED, FORMATTED)
    head = upstream.commit("format a message that is not callable")
    old_base, upstream.base = upstream.base, base
    try:
        state = select_head(upstream, manifest, head, tmp_path)
    finally:
        upstream.base = old_base
        upstream.reset()
    assert not state.candidates
    assert state.mapped is not None
    reasons = [r for r in state.mapped.no_effect if "_check_with" in r]
    assert reasons and "no caller passes" in reasons[0] and "a callable as message" in reasons[0]


def test_leaving_out_an_argument_whose_default_the_edit_leaves_alone_is_no_use(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """`scaled(x)` leaves `factor` None; only `scaled(x, 2)` runs the edited branch."""
    head = upstream.change("torch/__init__.py", "x = x * factor", "x = x * factor * 2")
    state = select_head(upstream, manifest, head, tmp_path)
    assert _ops(state) == {"mul"}


def test_the_recording_narrows_to_pairs_that_ran_both_the_caller_and_the_edit(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """With a recording: mul's pairs ran its sample function and `_check_with`; add's ran
    `_check_with` through a lambda (passed over). A pair that ran `_check` with no caller
    the code shows (exp) was called some other way: it is reached, and says so."""
    init, db = "torch/__init__.py", DB
    check = [f"{init}::_check_with", f"{init}::_check"]
    functions = {
        ("opinfo", "mul", "float32"): [f"{db}::sample_inputs_mul", *check],
        ("opinfo", "add", "float32"): [f"{db}::sample_inputs_add", *check],
        ("opinfo", "exp", "float32"): check,
    }
    deps = recorded_map(tmp_path, functions)
    head = upstream.change(init, RAISED, FORMATTED)
    state = select_head(upstream, manifest, head, tmp_path, deps=str(deps))
    assert ("mul", "float32") in linked_ops(state)
    assert ("add", "float32") not in linked_ops(state)
    assert ("exp", "float32") in linked_ops(state)
    assert any("none of the callers the code shows" in s for s in _evidence(state))


def _select_onto(
    upstream: UpstreamRepo,
    manifest: Path,
    tmp_path: Path,
    base: list[tuple[str, str, str]],
    head: list[tuple[str, str, str]],
    deps: str = "none",
) -> PipelineState:
    """A selection from the fixture's base with `base` edits committed, to that with `head`
    edits too ((path, old, new) each); the repository is put back afterwards."""
    upstream.reset()
    for edit in base:
        upstream.edit(*edit)
    start = upstream.commit("the scenario's base")
    for edit in head:
        upstream.edit(*edit)
    end = upstream.commit("the scenario's change")
    old_base, upstream.base = upstream.base, start
    try:
        return select_head(upstream, manifest, end, tmp_path, deps=deps)
    finally:
        upstream.base = old_base
        upstream.reset()


INIT, LAMBDA_MUL = "torch/__init__.py", (DB, '"mul needs a dtype"', 'lambda: "mul needs a dtype"')
EDIT = (INIT, RAISED, FORMATTED)


def test_a_user_reached_from_two_changed_functions_holds_to_both_conditions(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """`_check_both` passes `msg` to `_check_with` and `other` to `_check`: mul passing a
    lambda as `msg` and a str as `other` reaches the edit through `_check`."""
    both = (
        "\n\ndef _check_both(cond, msg, other):\n"
        "    _check_with(RuntimeError, cond, msg)\n    _check(cond, other)\n"
    )
    call = 'torch._check_both(dtype is not None, lambda: "m", "mul needs a dtype")'
    state = _select_onto(
        upstream, manifest, tmp_path,
        [(INIT, "    return x\n", "    return x\n" + both),
         (DB, 'torch._check(dtype is not None, "mul needs a dtype")', call)],
        [EDIT],
    )  # fmt: skip
    assert _ops(state) == {"mul"}


def test_an_edit_whose_own_code_passes_a_value_it_changed_reaches_every_caller(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """Under `message is None`, `_check_with` calls `_default_message`, which calls it with
    a str: leaving the message out (add's, the unary ops') runs the edit too."""
    default = (
        "\n\ndef _default_message(error_type):\n"
        '    _check_with(error_type, False, "Expected cond to be True")\n'
    )
    state = _select_onto(
        upstream, manifest, tmp_path,
        [(INIT, "    return x\n", "    return x\n" + default),
         (INIT, '        message_evaluated = "Expected cond to be True, but got False."',
          "        return _default_message(error_type)"),
         LAMBDA_MUL,
         (DB, 'torch._check(dtype is not None, lambda: "add needs a dtype")',
          "torch._check(dtype is not None)")],
        [EDIT],
    )  # fmt: skip
    # every caller reaches it (here past the limit a tiny scope sets: the broad answer)
    assert "add" in {c.instance.op for c in state.candidates.values()}
    assert not any("as before where" in s for s in _evidence(state))


def test_a_recording_that_never_saw_the_edit_run_leaves_the_answer_static(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """The recording ran mul's samples (float32) but never `_check_with`: it cannot narrow,
    so both of mul's dtypes run, as statically."""
    functions = {("opinfo", "mul", "float32"): [f"{DB}::sample_inputs_mul"]}
    deps = recorded_map(tmp_path, functions)
    head = upstream.change(*EDIT)
    state = select_head(upstream, manifest, head, tmp_path, deps=str(deps))
    assert {("mul", "float16"), ("mul", "float32")} <= linked_ops(state)


def test_recorded_runs_no_caller_explains_are_kept_when_no_caller_reaches_the_edit(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """Every caller passes a lambda, but exp's pair ran `_check` with no caller the code
    shows: exp runs, not "no effect"."""
    check = [f"{INIT}::_check_with", f"{INIT}::_check"]
    deps = recorded_map(tmp_path, {("opinfo", "exp", "float32"): check})
    state = _select_onto(upstream, manifest, tmp_path, [LAMBDA_MUL], [EDIT], deps=str(deps))
    assert ("exp", "float32") in linked_ops(state)
    assert any("none of the callers the code shows" in s for s in _evidence(state))


def test_what_explains_a_recorded_run_of_a_conditioned_function() -> None:
    """A calling function that ran, an op it is registered for (for the runs where it was
    traced), an entry naming it explain a pair's run; a caller the warm-up ran explains
    none (it stands for all), nor does one only a function nested in it ran."""
    from selection.links.argument_reach import _explained
    from selection.links.base import Target
    from selection.observed import ObservedMap

    observed = ObservedMap(torch_version="9.1.0", device="spyre")
    mul, add = ("opinfo", "mul", "float32"), ("opinfo", "add", "float32")
    kernel = Target.function("torch/_decomp/decompositions.py", "mm")
    observed.add(mul, ["mm.default"], [f"{DB}::sample_inputs_mul"], [], [f"{kernel.path}::mm"])
    observed.add(
        add, ["mm.default"], [f"{DB}::helper.<locals>.inner", f"{DB}::factory.<locals>._fn"]
    )
    observed.baseline["functions"] |= {f"{INIT}::_check", f"{DB}::helper.<locals>.inner"}
    ran = {mul, add}
    node = Target.function(INIT, "_check_with")
    assert _explained(Target.function(DB, "sample_inputs_mul"), node, ran, observed) == {mul}
    assert _explained(Target.aten("mm"), kernel, ran, observed) == {mul}  # add: eager only
    assert _explained(Target.entry("opinfo", "add"), node, ran, observed) == {add}
    assert _explained(Target.function(INIT, "_check"), node, ran, observed) == set()
    assert _explained(Target.function(DB, "helper"), node, ran, observed) == set()
    # a function a factory made runs per pair under the factory's name
    assert _explained(Target.function(DB, "factory"), node, ran, observed) == {add}


SCALE_EDIT = (INIT, "x = x * factor", "x = x * factor * 2")


@pytest.mark.parametrize(
    ("code", "at_import"),
    [
        ("_SCALED = scaled(1, 2)\n", True),  # module-level code passes a changed value
        ("class _Config:\n    SCALE = scaled(1, 2)\n", True),  # a class body, likewise
        ("_SCALED = scaled(1)\n", True),  # no user the walk judges: counted whatever it passes
    ],
)
def test_import_time_calls_of_a_conditioned_function_count_as_running_at_import(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, code: str, at_import: bool
) -> None:
    state = _select_onto(
        upstream, manifest, tmp_path, [(INIT, "    return x\n", "    return x\n\n\n" + code)],
        [SCALE_EDIT],
    )  # fmt: skip
    canaries = state.mapped.canaries if state.mapped else []
    said = [c.summary for canary in canaries for c in canary.causes]
    assert any("runs while `import torch` runs" in s for s in said) is at_import


WRAPPED = """

def _stringify(fn):
    def inner(cond, message=None):
        return fn(cond, message if message is None else str(message))
    return inner


@_stringify
def _check_wrapped(cond, message=None):
    _check_with(RuntimeError, cond, message)


def _check_rewrapped(cond, message=None):
    _check_with(RuntimeError, cond, message)


_check_rewrapped = _stringify(_check_rewrapped)


def _msg():
    return "text"


if True:
    _msg = "not a callable"


def _check_msg(cond):
    _check_with(RuntimeError, cond, _msg)
"""


@pytest.mark.parametrize(
    "call",
    [
        # a wrapper turns the lambda into a str before the body sees it
        'torch._check_wrapped(dtype is not None, lambda: "add")',
        'torch._check_rewrapped(dtype is not None, lambda: "add")',
        # the module's `_msg` is a function only until a top-level `if` rebinds it
        "torch._check_msg(dtype is not None)",
    ],
)
def test_a_user_whose_values_may_change_on_the_way_is_not_passed_over(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, call: str
) -> None:
    state = _select_onto(
        upstream, manifest, tmp_path,
        [(INIT, "    return x\n", "    return x\n" + WRAPPED), LAMBDA_MUL,
         (DB, 'torch._check(dtype is not None, lambda: "add needs a dtype")', call)],
        [EDIT],
    )  # fmt: skip
    assert "add" in _ops(state)
