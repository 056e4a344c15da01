"""Argument counts of C++ calls between ops, recorded from an older release's source
(selection.cpp.recorded_arguments): a release's library holds its calls' counts no more."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from selection.cpp.recorded_arguments import (
    RECORD_FILE,
    RecordedArguments,
    dumps,
    load_recorded_arguments,
    main,
    parse,
    record,
    with_recorded,
)
from selection.links.base import Step
from selection.links.native_calls import NativeCalls
from tests.support.pytorch_src import pytorch_src

Table = dict[str, dict[str, int | None]]


def _table(calls: Table, source: str) -> dict[str, tuple[tuple[str, Step], ...]]:
    return {
        user: tuple(
            (op, Step(source, f"at::native::{user}", f"calls {op}", n)) for op, n in called.items()
        )
        for user, called in calls.items()
    }


def _calls(kernels: Table, source: str = "lib", formulas: Table | None = None) -> NativeCalls:
    return NativeCalls(
        source, _table(kernels, source), _table(formulas or {}, source), len(kernels), 0
    )


def test_only_counts_the_source_knows_are_recorded() -> None:
    source = _calls({"narrow": {"slice": 5}, "tensor_split": {"slice": None, "size": 1}}, "src")
    recorded = record(source, "PyTorch 2.6.0's C++ source")
    assert recorded.kernels == {"narrow": {"slice": 5}, "tensor_split": {"size": 1}}
    assert recorded.formulas == {} and recorded.source == "PyTorch 2.6.0's C++ source"


def test_a_librarys_unknown_counts_get_the_recorded_ones_of_the_same_edge() -> None:
    """narrow -> slice is recorded; narrow -> as_strided and chunk -> narrow are not, and a
    known count (a clone's) is never replaced."""
    recorded = RecordedArguments("2.6.0", {"narrow": {"slice": 5, "as_strided": 2}}, {})
    library = _calls({"narrow": {"slice": None, "sym_size": None}, "chunk": {"narrow": None}})
    annotated, found = with_recorded(library, recorded)
    older = {
        (user, op): (step.arguments, step.older_arguments)
        for user, called in annotated.kernels.items()
        for op, step in called
    }
    assert older == {
        ("narrow", "slice"): (None, 5),
        ("narrow", "sym_size"): (None, None),
        ("chunk", "narrow"): (None, None),
    }
    assert found == 1 and annotated.arguments_from == "2.6.0"
    clone, found = with_recorded(_calls({"narrow": {"slice": 2}}), recorded)
    [(_, step)] = clone.kernels["narrow"]
    assert (step.arguments, step.older_arguments, found) == (2, None, 0)


def test_formula_helpers_calls_get_the_counts_recorded_for_formulas_only() -> None:
    """`select`'s backward formula helper calls slice (the formulas table); the same pair
    in the kernels table is another kernel's call and says nothing of it."""
    recorded = RecordedArguments("2.6.0", {"select": {"slice": 1}}, {"select": {"slice": 5}})
    library = _calls({"select": {"slice": None}}, formulas={"select": {"slice": None}})
    annotated, found = with_recorded(library, recorded)
    [(_, kernel)] = annotated.kernels["select"]
    [(_, helper)] = annotated.formulas["select"]
    assert (kernel.older_arguments, helper.older_arguments, found) == (1, 5, 2)


def test_a_record_reads_back_as_written_and_a_damaged_one_is_refused(tmp_path: Path) -> None:
    recorded = RecordedArguments("x", {"narrow": {"slice": 5}}, {"mul": {"sum": 3}})
    assert parse(json.loads(dumps(recorded))) == recorded
    for document in (
        {"schema": "other", "kernels": {}},
        {"schema": "spyre-ci/native-call-arguments", "kernels": {"narrow": {"slice": "5"}}},
        {"schema": "spyre-ci/native-call-arguments", "kernels": {}, "formulas": ["mul"]},
        {"schema": "spyre-ci/native-call-arguments", "kernels": {"a": {"b": True}}, "formulas": {}},
        {"schema": "spyre-ci/native-call-arguments", "kernels": {"a": {"b": -1}}, "formulas": {}},
        {"schema": "spyre-ci/native-call-arguments", "formulas": {}},
    ):
        with pytest.raises(ValueError):
            parse(document)
    damaged = tmp_path / "record.json"
    damaged.write_text('{"schema": ')
    assert load_recorded_arguments(damaged) is None
    assert load_recorded_arguments(tmp_path / "missing.json") is None


def test_the_packaged_record_holds_real_edges() -> None:
    """What release mode reads: PyTorch 2.6.0's kernels, `narrow` calling
    `at::slice_symint(self, dim, start, start + length, 1)`, `tensor_split` calling
    `at::symint::slice<T>(self, dim_, start_idx, end_idx)`."""
    recorded = load_recorded_arguments()
    assert recorded is not None and "2.6.0" in recorded.source
    assert recorded.kernels["narrow"]["slice"] == 5
    assert recorded.kernels["tensor_split"]["slice"] == 4


@pytest.mark.needs_pytorch_src
def test_the_packaged_record_is_what_the_tree_gives(pytestconfig: pytest.Config) -> None:
    src = pytorch_src(pytestconfig, "aten/src/ATen/native/native_functions.yaml")
    if not (src / "version.txt").read_text().startswith("2.6.0"):
        pytest.skip("the packaged record was read from PyTorch 2.6.0")
    packaged = load_recorded_arguments()
    assert packaged is not None
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--pytorch-src", str(src), "--label", packaged.source]) == 0
    assert out.getvalue() == RECORD_FILE.read_text(encoding="utf-8"), (
        "regenerate: python -m selection.cpp.recorded_arguments --pytorch-src DIR --label ... "
        "> selection/data/native_call_arguments.json"
    )


def test_a_tree_without_the_yaml_files_is_refused_with_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--pytorch-src", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "native_functions.yaml" in err and err.count("\n") == 1
