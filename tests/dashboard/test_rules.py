"""The dashboard's pure rules: pass rates, medians, ages, link policy, summary reading."""

from __future__ import annotations

import json

import pytest

from relay.dashboard import stats
from relay.dashboard.presentation import job_state, look, selection_digest
from relay.dashboard.safeurl import allowed_link
from relay.dashboard.timefmt import duration_text, relative_age, utc_iso, utc_text


def test_pass_rate_leaves_out_jobs_that_say_nothing_about_health() -> None:
    rate = stats.pass_rate(
        ["success", "success", "failure", "cancelled", "skipped", "timed_out", None]
    )
    assert (rate.passed, rate.decisive) == (2, 4)
    assert rate.rate == 0.5


def test_pass_rate_without_decisive_jobs_is_unknown_not_zero() -> None:
    assert stats.pass_rate(["cancelled", "skipped"]).rate is None


@pytest.mark.parametrize(
    ("values", "expected"),
    [([], None), ([5.0], 5.0), ([3.0, 1.0, 2.0], 2.0), ([4.0, 1.0, 3.0, 2.0], 2.5)],
)
def test_median(values: list[float], expected: float | None) -> None:
    assert stats.median(values) == expected


def test_share_over_is_strictly_above_the_threshold() -> None:
    assert stats.share_over([10.0, 20.0, 30.0, 40.0], 20.0) == 0.5
    assert stats.share_over([], 1.0) is None


NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (5, "just now"),
        (90, "2 min ago"),
        (59 * 60, "59 min ago"),
        (3 * 3600, "3 h ago"),
        (47 * 3600, "47 h ago"),
        (5 * 86400, "5 d ago"),
        (-600, "in 10 min"),
    ],
)
def test_relative_age(delta: float, text: str) -> None:
    assert relative_age(NOW - delta, NOW) == text


def test_times_are_utc() -> None:
    assert utc_iso(0.0) == "1970-01-01T00:00:00Z"
    assert utc_text(86400 + 3600 * 5 + 60 * 7) == "1970-01-02 05:07 UTC"
    assert relative_age(None, NOW) == utc_text(None) == "never"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (42, "42 s"),
        (7 * 60 + 5, "7 min"),
        (2 * 3600 + 5 * 60, "2 h 05 min"),
        (3 * 86400, "3 d 0 h"),
    ],
)
def test_duration_text(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/acme/spyre/actions/runs/1",
        "https://github.com/ACME/Spyre/actions/runs/1/job/2",
        "https://github.com/acme/spyre",
    ],
)
def test_links_into_the_reporting_repository_are_shown(url: str) -> None:
    assert allowed_link(url, "acme/spyre") == url


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/acme/spyre/actions",  # another host
        "https://github.com/other/spyre/actions/runs/1",  # another owner
        "https://github.com/acme/spyre-fork/actions",  # a name that only starts the same
        "http://github.com/acme/spyre/actions",  # not https
        "javascript:alert(1)//github.com/acme/spyre",
        "https://github.com@evil.example/acme/spyre",  # user-info trick
        "https://github.com:8443/acme/spyre",  # a port
        "https://github.com\\@evil.example/acme/spyre",
        "https://github.com/acme/spyre\n/x",
        "https://github.com.evil.example/acme/spyre",
        "",
        None,
    ],
)
def test_other_links_are_dropped(url: str | None) -> None:
    assert allowed_link(url, "acme/spyre") is None


def test_job_state_and_looks_never_rely_on_colour_alone() -> None:
    assert job_state("in_progress", None) == "in_progress"
    assert job_state("completed", "timed_out") == "timed_out"
    symbols = {look(s).symbol for s in ("success", "failure", "timed_out", "in_progress")}
    assert len(symbols) == 4
    assert look("something-new").label == "unknown"


def test_selection_digest_reads_the_callback_shape() -> None:
    summary = {
        "per_stage": {"changed": 41, "impact": 3120, "agent": 943},
        "top_causes": [{"cause": "BinaryOps.cpp", "count": 610}, "a plain string"],
        "rationale": "kept elementwise tests",
        "selected": 943,
        "total": 12000,
    }
    digest = selection_digest(json.dumps(summary))
    assert digest["stages"] == [
        {"name": "changed", "kept": 41},
        {"name": "impact", "kept": 3120},
        {"name": "agent", "kept": 943},
    ]
    assert digest["top_causes"] == [
        {"cause": "BinaryOps.cpp", "count": 610},
        {"cause": "a plain string", "count": None},
    ]
    assert (digest["rationale"], digest["selected"], digest["total"]) == (
        "kept elementwise tests",
        943,
        12000,
    )


@pytest.mark.parametrize(
    "text", ["not json", "[1, 2]", '{"stages": 5, "rationale": {"x": 1}}', None]
)
def test_selection_digest_tolerates_any_shape(text: str | None) -> None:
    digest = selection_digest(text)
    assert digest["stages"] == [] and digest["rationale"] is None
