"""Aggregate JUnit XML (as pytest writes it) into CRCR's `test_results`. Pure."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import asdict, dataclass


class BadJUnit(ValueError):
    """A JUnit file that cannot be parsed; the message names the file."""


@dataclass(frozen=True)
class TestCounts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0

    __test__ = False  # not a pytest test class

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped

    def __add__(self, other: TestCounts) -> TestCounts:
        return TestCounts(
            self.passed + other.passed, self.failed + other.failed, self.skipped + other.skipped
        )

    def as_test_results(self) -> dict[str, int]:
        """CRCR's `workflow.test_results` object."""
        return {**asdict(self), "total": self.total}


def count_junit(xml_text: str, *, source: str = "<junit>") -> TestCounts:
    """Count the test cases of one JUnit document.

    Counted from the `<testcase>` elements, not the suite attributes, so nested
    suites and files merged by hand count right. An error counts as a failure; an
    expected failure (pytest writes it as `skipped`) counts as skipped.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise BadJUnit(f"{source}: not well-formed JUnit XML ({exc})") from exc
    if root.tag not in ("testsuites", "testsuite"):
        raise BadJUnit(f"{source}: root element <{root.tag}> is not <testsuites> or <testsuite>")
    passed = failed = skipped = 0
    for case in root.iter("testcase"):
        outcomes = {child.tag for child in case}
        if outcomes & {"failure", "error"}:
            failed += 1
        elif "skipped" in outcomes:
            skipped += 1
        else:
            passed += 1
    return TestCounts(passed, failed, skipped)


def aggregate(documents: Iterable[tuple[str, str]]) -> TestCounts:
    """Sum the counts of `(source name, xml text)` documents."""
    total = TestCounts()
    for source, text in documents:
        total = total + count_junit(text, source=source)
    return total
