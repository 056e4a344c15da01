"""JUnit aggregation, on JUnit XML written by a real pytest run."""

from __future__ import annotations

from pathlib import Path

import pytest

from spyre_ci.ci.junit import (
    BadJUnit,
    TestCounts,
    aggregate,
    count_junit,
    node_id,
    parse_cases,
    shard_of,
)

MIXED_OUTCOMES = """
import pytest

def test_pass(): pass
def test_pass_too(): pass
def test_fail(): assert 1 == 2
@pytest.mark.skip(reason="not for spyre")
def test_skipped(): pass
@pytest.mark.xfail(reason="known", strict=False)
def test_xfail(): assert False
@pytest.mark.xfail(reason="fixed upstream", strict=True)
def test_xpass_strict(): pass
@pytest.fixture
def broken(): raise RuntimeError("setup")
def test_error(broken): pass
"""


def _junit_of(pytester: pytest.Pytester, source: str, name: str) -> str:
    test_file = pytester.makepyfile(**{name: source})
    xml = pytester.path / f"{name}.xml"
    pytester.runpytest_inprocess(test_file, f"--junitxml={xml}", "-p", "no:cacheprovider")
    return xml.read_text()


def test_counts_every_outcome_pytest_writes(pytester: pytest.Pytester) -> None:
    counts = count_junit(_junit_of(pytester, MIXED_OUTCOMES, "test_mixed"))
    # fail, strict XPASS and the setup error fail; skip and xfail are skipped.
    assert counts == TestCounts(passed=2, failed=3, skipped=2)
    assert counts.as_test_results() == {"passed": 2, "failed": 3, "skipped": 2, "total": 7}


def test_shards_add_up(pytester: pytest.Pytester) -> None:
    first = _junit_of(pytester, MIXED_OUTCOMES, "test_mixed")
    second = "<testsuites><testsuite><testcase name='c'/></testsuite></testsuites>"
    total = aggregate([("shard-1.xml", first), ("shard-2.xml", second)])
    assert total.as_test_results() == {"passed": 3, "failed": 3, "skipped": 2, "total": 8}


def test_nested_suites_count_each_case_once() -> None:
    xml = (
        "<testsuites><testsuite name='a'><testcase name='x'/>"
        "<testsuite name='b'><testcase name='y'><failure/></testcase></testsuite>"
        "</testsuite></testsuites>"
    )
    assert count_junit(xml) == TestCounts(passed=1, failed=1)


def test_malformed_xml_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(BadJUnit, match=r"shard-3\.xml: not well-formed"):
        count_junit("<testsuite><testcase>", source="shard-3.xml")
    with pytest.raises(BadJUnit, match=r"r\.xml: root element <html>"):
        count_junit("<html/>", source="r.xml")


def test_cases_carry_node_id_outcome_message_and_shard(pytester: pytest.Pytester) -> None:
    pytester.mkdir("test")
    pytester.path.joinpath("test", "__init__.py").write_text("")
    source = (
        MIXED_OUTCOMES
        + "\nclass TestOpsSPYRE:\n    def test_add_spyre_float16(self): assert 2 == 3\n"
    )
    pytester.path.joinpath("test", "test_mixed.py").write_text(source)
    xml = pytester.path / "shard-2.xml"
    pytester.runpytest_inprocess("test", f"--junitxml={xml}", "-p", "no:cacheprovider")
    cases = {c.node_id: c for c in parse_cases(xml.read_text(), source=str(xml))}
    # the ids `spyre-ci select` writes in selection.json: path relative to the root, class, name
    add = cases["test/test_mixed.py::TestOpsSPYRE::test_add_spyre_float16"]
    assert (add.outcome, add.shard) == ("failed", "2")
    assert add.message.startswith("assert 2 == 3") and "test_mixed.py" in add.detail
    assert add.duration is not None and add.duration >= 0
    outcomes = {i.rsplit("::", 1)[1]: c.outcome for i, c in cases.items()}
    assert outcomes == {
        "test_pass": "passed", "test_pass_too": "passed", "test_fail": "failed",
        "test_skipped": "skipped", "test_xfail": "xfailed", "test_xpass_strict": "failed",
        "test_error": "error", "test_add_spyre_float16": "failed",
    }  # fmt: skip
    assert "test/test_mixed.py::test_pass" in cases
    assert cases["test/test_mixed.py::test_xpass_strict"].message.startswith("[XPASS(strict)]")


def test_node_ids_from_classname() -> None:
    assert node_id("test.test_ops.TestCommonSPYRE", "test_x") == (
        "test/test_ops.py::TestCommonSPYRE::test_x"
    )
    assert node_id("test_top", "test_y[1-2]") == "test_top.py::test_y[1-2]"
    assert node_id("x.y.TestA", "t", file="x/y.py") == "x/y.py::TestA::t"
    assert shard_of("junit/shard-3.xml") == "3" and shard_of("results.xml") == "results"
