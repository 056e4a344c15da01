"""The six L3 criteria, judged from jobs."""

from __future__ import annotations

from relay.dashboard.readiness import (
    Criterion,
    JobSample,
    Readiness,
    evaluate,
    figures_from_samples,
)

DAY = 86400.0
NOW = 1_800_000_000.0
MIN = 60.0


def _jobs(
    n: int, conclusion: str = "success", queue: float = 5 * MIN, run: float = 30 * MIN
) -> list[JobSample]:
    return [JobSample(conclusion, queue, run) for _ in range(n)]


def _by_key(readiness: Readiness) -> dict[str, Criterion]:
    return {c.key: c for c in readiness.criteria}


def test_a_healthy_backend_a_month_at_l2_is_ready() -> None:
    result = evaluate("L2", NOW - 40 * DAY, figures_from_samples(_jobs(200)), NOW)
    assert result.ready
    assert result.met_count == 6
    values = {c.key: c.value for c in result.criteria}
    assert values == {
        "time_at_l2": "40 d at L2",
        "avg_queue": "5 min",
        "p50_end_to_end": "35 min",
        "long_jobs": "0.0 %",
        "timeout_rate": "0.0 %",
        "pass_rate": "100.0 %",
    }


def test_each_criterion_fails_on_its_own_bar() -> None:
    jobs = (
        _jobs(85)
        + _jobs(10, "failure")
        + _jobs(2, "timed_out", run=6 * 3600)
        + _jobs(3, queue=50 * MIN, run=4 * 3600)
    )
    result = evaluate("L2", NOW - 10 * DAY, figures_from_samples(jobs), NOW)
    c = _by_key(result)
    assert not c["time_at_l2"].met and c["time_at_l2"].value == "10 d at L2"
    assert not c["pass_rate"].met  # 88 of 100 decisive
    assert c["pass_rate"].value == "88.0 %"
    assert not c["timeout_rate"].met  # 2 %
    assert not c["long_jobs"].met  # 5 of 100 over 3 h
    assert c["avg_queue"].met  # (97*5 + 3*50)/100 = 6.35 min
    assert c["p50_end_to_end"].met
    assert result.met_count == 2 and not result.ready


def test_thresholds_are_strict() -> None:
    # Exactly 90 % passing is not "> 90 %"; exactly 30 min average queue is not "< 30 min".
    jobs = _jobs(90, queue=30 * MIN) + _jobs(10, "failure", queue=30 * MIN)
    c = _by_key(evaluate("L2", NOW - 60 * DAY, figures_from_samples(jobs), NOW))
    assert not c["pass_rate"].met
    assert not c["avg_queue"].met


def test_no_data_is_never_met() -> None:
    result = evaluate("L2", NOW - 60 * DAY, figures_from_samples([]), NOW)
    assert [c.value for c in result.criteria[1:]] == ["no data"] * 5
    assert result.met_count == 1


def test_levels_other_than_l2() -> None:
    figures = figures_from_samples(_jobs(10))
    assert _by_key(evaluate("L1", NOW - 90 * DAY, figures, NOW))["time_at_l2"].met is False
    assert _by_key(evaluate("L4", NOW - 2 * DAY, figures, NOW))["time_at_l2"].met is True
    assert _by_key(evaluate(None, None, figures, NOW))["time_at_l2"].value == "not in the allowlist"
