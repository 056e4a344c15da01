"""Read JUnit XML (as pytest writes it): CRCR's `test_results` counts and per-test results. Pure.

Outcomes of a `<testcase>`, as pytest's junitxml writes them: no child element =
passed; `<failure>` = failed (a strict XPASS too); `<error>` = error (setup,
teardown, collection); `<skipped type="pytest.xfail">` = xfailed; any other
`<skipped>` = skipped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed")
FAILING = frozenset({"failed", "error"})
_SHARD_FILE = re.compile(r"^shard-(?P<shard>[A-Za-z0-9_.-]+)$")


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


@dataclass(frozen=True)
class CaseResult:
    """One test case: its pytest node id, outcome, the failure text, seconds, shard."""

    node_id: str
    outcome: str  # one of OUTCOMES
    message: str = ""  # the failure's message attribute (the exception's message)
    detail: str = ""  # the failure's text (pytest's long report: code, E lines, location)
    duration: float | None = None
    shard: str = ""

    __test__ = False

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING


def counts_of(cases: Iterable[CaseResult]) -> TestCounts:
    """CRCR's counts: an error counts as failed, an xfail as skipped."""
    passed = failed = skipped = 0
    for case in cases:
        if case.failing:
            failed += 1
        elif case.outcome in ("skipped", "xfailed"):
            skipped += 1
        else:
            passed += 1
    return TestCounts(passed, failed, skipped)


def _root(xml_text: str, source: str) -> ET.Element:
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise BadJUnit(f"{source}: not well-formed JUnit XML ({exc})") from exc
    if root.tag not in ("testsuites", "testsuite"):
        raise BadJUnit(f"{source}: root element <{root.tag}> is not <testsuites> or <testsuite>")
    return root


def shard_of(source: str) -> str:
    """`.../shard-2.xml` -> "2" (the name `spyre-ci ci test` gives each leg's file); else the stem."""
    stem = PurePosixPath(source.replace("\\", "/")).stem
    match = _SHARD_FILE.match(stem)
    return match.group("shard") if match else stem


def node_id(classname: str, name: str, file: str = "") -> str:
    """The pytest node id of a case: `test/test_x.py::TestXSPYRE::test_y_spyre_float16`.

    pytest writes `classname` as the module path with dots plus the class
    (`test.test_x.TestXSPYRE`); the class path starts at the first part that begins
    with a capital letter (module names are lower case). xunit1 files name the file.
    """
    parts = [p for p in classname.split(".") if p]
    first_class = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts))
    module, classes = parts[:first_class], parts[first_class:]
    path = file or ("/".join(module) + ".py" if module else "")
    return "::".join(p for p in (path, *classes, name) if p)


def _case(element: ET.Element, shard: str) -> CaseResult:
    outcome, message, detail = "passed", "", ""
    for child in element:
        if child.tag in ("failure", "error"):
            outcome = "failed" if child.tag == "failure" else "error"
            message, detail = child.get("message") or "", child.text or ""
            break
        if child.tag == "skipped":
            outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
            message = child.get("message") or ""
    duration = element.get("time")
    try:
        seconds = float(duration) if duration else None
    except ValueError:
        seconds = None
    return CaseResult(
        node_id(element.get("classname", ""), element.get("name", ""), element.get("file", "")),
        outcome,
        message,
        detail,
        seconds,
        shard,
    )


def parse_cases(xml_text: str, *, source: str = "<junit>") -> list[CaseResult]:
    """Every `<testcase>` of one JUnit document (nested suites included, each case once)."""
    shard = shard_of(source)
    return [_case(case, shard) for case in _root(xml_text, source).iter("testcase")]


def count_junit(xml_text: str, *, source: str = "<junit>") -> TestCounts:
    """Count the test cases of one JUnit document.

    Counted from the `<testcase>` elements, not the suite attributes, so nested
    suites and files merged by hand count right. An error counts as a failure; an
    expected failure (pytest writes it as `skipped`) counts as skipped.
    """
    return counts_of(parse_cases(xml_text, source=source))


def read_all(documents: Iterable[tuple[str, str]]) -> list[CaseResult]:
    """The cases of several `(source name, xml text)` documents, in order."""
    return [case for source, text in documents for case in parse_cases(text, source=source)]


def aggregate(documents: Iterable[tuple[str, str]]) -> TestCounts:
    """Sum the counts of `(source name, xml text)` documents."""
    return counts_of(read_all(documents))
