"""The dashboard's router factory for `relay.app.ROUTER_FACTORIES`, and its settings.

Optional settings under `extra.dashboard` of the relay config (YAML), e.g.::

    extra:
      dashboard:
        warm_cache: true       # fill the day cache in the background at start
        refresh_seconds: 30    # live refresh of open pages; 0 turns it off

Environment: `SPYRE_RELAY_EXTRA__DASHBOARD__REFRESH_SECONDS=60` and so on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from relay.config import extra_section
from relay.dashboard.routes import dashboard_router

if TYPE_CHECKING:
    from relay.state import RelayState


class DashboardSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    warm_cache: bool = True
    refresh_seconds: int = Field(30, ge=0, le=3600)


def dashboard_settings(extra: dict[str, Any]) -> DashboardSettings:
    return extra_section(extra, "dashboard", DashboardSettings)


def router(state: RelayState) -> APIRouter:
    settings = dashboard_settings(state.config.extra)

    def allowlisted_levels() -> dict[str, str]:
        # Configured targets (the built-in local target) report under their own name.
        levels: dict[str, str] = {t.name: t.level for t in state.config.targets}
        levels.update({entry.repo: entry.level for entry in state.allowlist.current().entries})
        return levels

    return dashboard_router(
        state.store,
        state.clock,
        refresh_seconds=settings.refresh_seconds,
        warm_cache=settings.warm_cache,
        levels=allowlisted_levels,
    )
