"""A ForeachFuncInfo is its own entry (`_foreach_abs` upstream, run by test_foreach.py's
templates), not the OpInfo of the same name: what reaches `ForeachFuncInfo('abs')` reaches
no `abs` test of test_ops (the 2.13 -> 2.14 upgrade selected 1,652 tests through such links,
each with a false "the op now generates these dtypes")."""

from __future__ import annotations

from pathlib import Path

from tests.support.observed_runs import linked_ops, manifest_file, select_head, upstream_replacing
from tests.support.upstream_repo import INTERNAL

DB = f"{INTERNAL}/common_methods_invocations.py"
FOREACH = """
def foreach_dtypes():
    return floating_types_and(torch.float16)


class ForeachFuncInfo(OpInfo):
    def __post_init__(self):
        self.dtypes = foreach_dtypes()
        self.name = "_foreach_" + self.name


foreach_unary_op_db = [
    ForeachFuncInfo("abs", sample_inputs_func=sample_inputs_unary),
]

unary_ufuncs = """


def test_what_reaches_a_foreach_entry_reaches_no_opinfo_of_its_name(tmp_path: Path) -> None:
    upstream = upstream_replacing(
        tmp_path, DB, "\nunary_ufuncs = ", "[op for op", FOREACH, "a foreach entry"
    )
    manifest = manifest_file(tmp_path)
    head = upstream.change(
        DB,
        "return floating_types_and(torch.float16)",
        "return floating_types_and(torch.float16, torch.bfloat16)",
    )
    state = select_head(upstream, manifest, head, tmp_path / "run")
    assert not any(op == "abs" for op, _ in linked_ops(state))
    assert not any(
        "ForeachFuncInfo" in cause.summary
        for candidate in state.candidates.values()
        for cause in candidate.causes
    )
