"""Get an OIDC token the way a GitHub Actions job does. Thin shell over HTTP.

GitHub's protocol: a job with `permissions: id-token: write` has
`ACTIONS_ID_TOKEN_REQUEST_URL` and `ACTIONS_ID_TOKEN_REQUEST_TOKEN`;
`GET <url>&audience=<aud>` with `Authorization: bearer <request token>` answers
`{"value": "<JWT>"}`. A token handed over directly (`SPYRE_CI_OIDC_TOKEN`, what
the relay's local target does) is used as is.
"""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

import requests

from spyre_ci.ci.runner_env import env

DEFAULT_AUDIENCE = "pytorch-cross-repo-ci-relay"


class NoIdToken(RuntimeError):
    """No way to get a token, or the token service refused; the message says which."""


def request_url(base: str, audience: str) -> str:
    separator = "&" if urlsplit(base).query else "?"
    return f"{base}{separator}{urlencode({'audience': audience})}"


def get_id_token(audience: str = DEFAULT_AUDIENCE, *, timeout: float = 10.0) -> str:
    direct = env("SPYRE_CI_OIDC_TOKEN")
    if direct:
        return direct
    url = env("ACTIONS_ID_TOKEN_REQUEST_URL")
    bearer = env("ACTIONS_ID_TOKEN_REQUEST_TOKEN")
    if not url or not bearer:
        raise NoIdToken(
            "ACTIONS_ID_TOKEN_REQUEST_URL/ACTIONS_ID_TOKEN_REQUEST_TOKEN are not set: "
            "the job needs `permissions: id-token: write` (or set SPYRE_CI_OIDC_TOKEN)"
        )
    try:
        response = requests.get(
            request_url(url, audience),
            headers={"Authorization": f"bearer {bearer}", "Accept": "application/json"},
            timeout=timeout,
        )
    except requests.RequestException as exc:
        raise NoIdToken(f"the ID token request failed: {exc}") from exc
    if response.status_code != 200:
        raise NoIdToken(
            f"the ID token service answered {response.status_code}: {response.text[:200]}"
        )
    value = response.json().get("value") if response.content else None
    if not isinstance(value, str) or not value:
        raise NoIdToken("the ID token service answered without a `value`")
    return value
