"""The Jinja2 environment: autoescaping always on, filters for times and states."""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context
from jinja2.runtime import Context

from relay.dashboard import charts, presentation, timefmt

LEVEL_HELP = {
    "L4": "blocking: a check run on every PR, a failure blocks merge",
    "L3": "check runs on labelled PRs",
    "L2": "results shown here and on the HUD",
    "L1": "dispatch only",
    "unlisted": "not in the allowlist (results from earlier entries)",
}


@lru_cache(maxsize=1)
def environment() -> Environment:
    # autoescape=True for every template, not by file extension: everything a
    # downstream sends (job names, workflow names, rationale) is untrusted text.
    env = Environment(
        loader=PackageLoader("relay.dashboard", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        utc=timefmt.utc_text,
        iso=timefmt.utc_iso,
        dur=timefmt.duration_text,
        pct=timefmt.percent_text,
        look=presentation.look,
        event_label=presentation.event_label,
        ratebar=charts.rate_bar,
        age=_age,
    )
    env.globals.update(
        level_help=LEVEL_HELP,
        conclusions=presentation.CONCLUSIONS,
        kind_labels=presentation.KIND_LABELS,
        pager_query=pager_query,
    )
    return env


def pager_query(page: dict[str, Any], before: float | None) -> str:
    """The backend page's query string with its filters and the `before` cursor."""
    filters = {k: v for k, v in (page.get("filters") or {}).items() if v}
    if before is not None:
        filters["before"] = repr(float(before))
    return urlencode(filters)


def render(template: str, page: dict[str, Any], **extra: Any) -> str:
    env = environment()
    return env.get_template(template).render({"page": page, **extra})


@pass_context
def _age(context: Context, ts: float | None) -> str:
    """Relative age against the page's own clock (`page.now`), so a page is self-consistent."""
    return timefmt.relative_age(ts, float(context["page"]["now"]))
