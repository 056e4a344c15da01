"""Settings of the callback side of the relay (``extra.callbacks`` in the relay config).

Example (YAML)::

    extra:
      callbacks:
        oidc_audience: pytorch-cross-repo-ci-relay
        oidc_issuers:
          - {kind: github_actions, issuer: https://token.actions.githubusercontent.com}
          - kind: buildkite
            issuer: https://agent.buildkite.com
            pipelines:
              - {repository: acme/spyre, claims: {organization_id: "0f..", pipeline_id: "9a.."}}
        hud_url: https://hud.example.org       # forward results to an external HUD
        hud_key: "..."                           # sent as x-hud-internal-bot
        hud_api_keys: ["..."]                    # accept /api/crcr/results from other relays
        status_reporting: check_runs             # check_runs | commit_statuses | both | none

Environment: ``SPYRE_RELAY_EXTRA__CALLBACKS__HUD_URL=...`` and so on.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from relay.config import extra_section
from relay.oidc import DEFAULT_AUDIENCE, GITHUB_ACTIONS_ISSUER, OidcIssuer


class CallbackSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # Signed callback tokens. Without an explicit secret one is derived from the
    # first webhook secret, so every relay process of a deployment agrees.
    callback_token_secret: SecretStr | None = None
    callback_token_ttl_seconds: int = Field(3 * 24 * 3600, ge=60)
    require_callback_token: bool = True

    oidc_audience: str = DEFAULT_AUDIENCE
    oidc_issuers: list[OidcIssuer] = Field(
        default_factory=lambda: [OidcIssuer(kind="github_actions", issuer=GITHUB_ACTIONS_ISSUER)]
    )
    oidc_leeway_seconds: float = Field(60.0, ge=0)
    jwks_min_refetch_seconds: float = Field(30.0, ge=0)

    # A matrix of a few hundred jobs reports in_progress and completed in bursts.
    rate_per_second: float = Field(10.0, gt=0)
    rate_burst: int = Field(400, ge=1)

    hud_url: str | None = None
    hud_key: SecretStr | None = None
    hud_api_keys: list[SecretStr] = Field(default_factory=list)

    status_reporting: Literal["check_runs", "commit_statuses", "both", "none"] = "check_runs"

    in_progress_timeout_seconds: float = Field(6 * 3600.0, gt=0)
    redeliver_failed_webhooks: bool = True
    redeliver_lookback_seconds: float = Field(3 * 24 * 3600.0, gt=0)
    redeliver_max_per_sweep: int = Field(50, ge=0)
    # None: poll when the relay authenticates as a GitHub App (installed on the upstream).
    poll_releases: bool | None = None


def callback_settings(extra: dict[str, Any]) -> CallbackSettings:
    """``extra.callbacks``; ConfigError naming the field at fault."""
    return extra_section(extra, "callbacks", CallbackSettings)


def token_secret(settings: CallbackSettings, webhook_secret: bytes) -> bytes:
    if settings.callback_token_secret is not None:
        return settings.callback_token_secret.get_secret_value().encode()
    return hmac.new(webhook_secret, b"spyre-ci callback token v1", hashlib.sha256).digest()
