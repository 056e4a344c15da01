"""Decide what a verified webhook means, as CRCR's shipped relay does. No I/O.

- `pull_request` opened/reopened/synchronize/closed and every `push`: dispatch.
- `pull_request` labeled with `ciflow/crcr/<device>`: recorded as `label` (L3, part 2).
- `check_run` / `check_suite` rerequested: recorded as `rerun` (part 2).
- anything else, or another repository: ignored (200 {"ignored": true}).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DISPATCHED_PR_ACTIONS = frozenset({"opened", "reopened", "synchronize", "closed"})
CRCR_EVENTS = frozenset({"pull_request", "push", "check_run", "check_suite"})
CRCR_LABEL_PREFIX = "ciflow/crcr/"


@dataclass(frozen=True)
class Route:
    kind: str  # "dispatch", "label", "rerun", "ignored"
    reason: str
    repo: str | None = None
    action: str | None = None
    pr_number: int | None = None
    head_sha: str | None = None
    device: str | None = None
    upstream: bool = True  # a CRCR event of the upstream repository (stored even if ignored)

    @property
    def ignored(self) -> bool:
        return self.kind == "ignored"


def _pr_facts(payload: dict[str, Any]) -> tuple[int | None, str | None]:
    pr = payload.get("pull_request") or {}
    number = payload.get("number", pr.get("number"))
    head = (pr.get("head") or {}).get("sha")
    return (int(number) if isinstance(number, int) else None, head)


def _check_facts(event: str, payload: dict[str, Any]) -> tuple[int | None, str | None]:
    obj = payload.get(event) or {}
    prs = obj.get("pull_requests") or []
    number = prs[0].get("number") if prs and isinstance(prs[0], dict) else None
    return (number if isinstance(number, int) else None, obj.get("head_sha"))


def route(event: str, payload: dict[str, Any], upstream_repo: str) -> Route:
    repo = (payload.get("repository") or {}).get("full_name")
    action = payload.get("action") if isinstance(payload.get("action"), str) else None
    if event not in CRCR_EVENTS:
        return Route("ignored", f"event {event!r} is not relayed", repo, action, upstream=False)
    if not isinstance(repo, str) or repo.lower() != upstream_repo.lower():
        return Route(
            "ignored", f"repository {repo!r} is not {upstream_repo}", repo, action, upstream=False
        )
    if event == "push":
        return Route("dispatch", "push", repo, action, None, payload.get("after"))
    if event == "pull_request":
        number, head = _pr_facts(payload)
        if action in DISPATCHED_PR_ACTIONS:
            return Route("dispatch", f"pull_request {action}", repo, action, number, head)
        label = ((payload.get("label") or {}).get("name")) or ""
        if action in ("labeled", "unlabeled") and label.startswith(CRCR_LABEL_PREFIX):
            device = label[len(CRCR_LABEL_PREFIX) :]
            return Route("label", f"label {label}", repo, action, number, head, device or None)
        return Route("ignored", f"pull_request {action} is not relayed", repo, action, number, head)
    number, head = _check_facts(event, payload)
    if action == "rerequested":
        return Route("rerun", f"{event} rerequested", repo, action, number, head)
    return Route("ignored", f"{event} {action} is not relayed", repo, action, number, head)
