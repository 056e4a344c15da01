"""Settings of per-test results (``extra.results`` in the relay config).

Example (YAML)::

    extra:
      results:
        history_length: 20     # outcomes kept per test and backend
        retention_days: 30     # failed-test rows and idle per-test histories older than this go

Environment: ``SPYRE_RELAY_EXTRA__RESULTS__RETENTION_DAYS=14`` and so on.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relay.config import extra_section


class ResultsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    history_length: int = Field(20, ge=2, le=200)
    retention_days: float = Field(30.0, ge=1.0)


def results_settings(extra: dict[str, Any]) -> ResultsSettings:
    """``extra.results``; ConfigError naming the field at fault."""
    return extra_section(extra, "results", ResultsSettings)
