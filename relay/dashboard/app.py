"""The dashboard's router factory for `relay.app.ROUTER_FACTORIES`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter

from relay.dashboard.routes import dashboard_router

if TYPE_CHECKING:
    from relay.state import RelayState


def router(state: RelayState) -> APIRouter:
    return dashboard_router(state.store, state.clock)
