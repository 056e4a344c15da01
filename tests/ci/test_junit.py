"""JUnit aggregation, on JUnit XML written by a real pytest run."""

from __future__ import annotations

from pathlib import Path

import pytest

from spyre_ci.ci.junit import BadJUnit, TestCounts, aggregate, count_junit

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
