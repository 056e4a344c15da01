"""Decide what a verified webhook means, as CRCR's shipped relay does. No I/O.

- `pull_request` opened/reopened/synchronize/closed and every `push`: dispatch.
- `pull_request` labeled with `ciflow/crcr/<device>`: recorded as `label` (L3, part 2).
- `check_run` / `check_suite` rerequested: recorded as `rerun` (part 2).
- anything else, or another repository: ignored (200 {"ignored": true}).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relay.json_body import BIGINT_MAX, BadBody, bounded_int, storable_text

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


class BadPayload(ValueError):
    """A signed webhook body whose fields do not have GitHub's shape (answered 400)."""


# Longest text the relay stores from a webhook field (GitHub's are far shorter: an action
# is a word, a SHA 40 or 64 hex digits, a label at most 50 characters).
MAX_FIELD_CHARS = 255
# Other events are counted as "other" in metrics: the header is the sender's to choose.
_COUNTED_EVENTS = CRCR_EVENTS | {"ping"}


def event_label(event: str) -> str:
    """The `event` label of the delivery metrics: bounded, whatever the header says."""
    return event if event in _COUNTED_EVENTS else "other"


def _type_name(value: object) -> str:
    return {str: "a string", list: "a list", bool: "a boolean", int: "a number"}.get(
        type(value), type(value).__name__
    )


def _object(parent: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """`parent[key]` when it is an object, `{}` when absent or null; otherwise BadPayload."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadPayload(f"field {path} must be an object, not {_type_name(value)}")
    return value


def _objects(parent: dict[str, Any], key: str, path: str) -> list[dict[str, Any]]:
    """`parent[key]` when it is a list of objects, `[]` when absent or null."""
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadPayload(f"field {path} must be a list, not {_type_name(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise BadPayload(f"field {path}[{index}] must be an object, not {_type_name(item)}")
    return value


def _pr_facts(payload: dict[str, Any]) -> tuple[int | None, str | None]:
    pr = _object(payload, "pull_request", "pull_request")
    _objects(pr, "labels", "pull_request.labels")  # read by the dispatch record
    field = "number" if "number" in payload else "pull_request.number"
    number = _number(payload.get("number", pr.get("number")), field)
    head = _object(pr, "head", "pull_request.head").get("sha")
    return number, _text(head, "pull_request.head.sha")


def _text(value: object, field: str) -> str | None:
    """A text field the relay stores (a column, a query parameter): checked, else None."""
    if not isinstance(value, str):
        return None
    try:
        return storable_text(value, field, max_chars=MAX_FIELD_CHARS)
    except BadBody as error:
        raise BadPayload(str(error)) from None


def _number(value: object, field: str) -> int | None:
    """A PR number (a BIGINT column): a positive integer, else None when not a number."""
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    try:
        return bounded_int(value, field, low=1, high=BIGINT_MAX)
    except BadBody as error:
        raise BadPayload(str(error)) from None


def _check_facts(event: str, payload: dict[str, Any]) -> tuple[int | None, str | None]:
    obj = _object(payload, event, event)
    _object(obj, "app", f"{event}.app")  # read by the rerun hook
    prs = _objects(obj, "pull_requests", f"{event}.pull_requests")
    number = _number(prs[0].get("number"), f"{event}.pull_requests[0].number") if prs else None
    return number, _text(obj.get("head_sha"), f"{event}.head_sha")


def route(event: str, payload: dict[str, Any], upstream_repo: str) -> Route:
    """Raises `BadPayload` (naming the field) when a relayed event's fields that the
    relay reads do not have GitHub's shape."""
    action = payload.get("action") if isinstance(payload.get("action"), str) else None
    if event not in CRCR_EVENTS:
        repository = payload.get("repository")
        repo = repository.get("full_name") if isinstance(repository, dict) else None
        return Route("ignored", f"event {event!r} is not relayed", repo, action, upstream=False)
    repo = _object(payload, "repository", "repository").get("full_name")
    if not isinstance(repo, str) or repo.lower() != upstream_repo.lower():
        # Not stored: the route only says why it is ignored.
        shown = repo[:MAX_FIELD_CHARS] if isinstance(repo, str) else repo
        return Route(
            "ignored", f"repository {shown!r} is not {upstream_repo}", repo, action, upstream=False
        )
    action = _text(payload.get("action"), "action")
    if event == "push":
        return Route("dispatch", "push", repo, action, None, _text(payload.get("after"), "after"))
    if event == "pull_request":
        number, head = _pr_facts(payload)
        if action in DISPATCHED_PR_ACTIONS:
            return Route("dispatch", f"pull_request {action}", repo, action, number, head)
        label = _text(_object(payload, "label", "label").get("name"), "label.name") or ""
        if action in ("labeled", "unlabeled") and label.startswith(CRCR_LABEL_PREFIX):
            device = label[len(CRCR_LABEL_PREFIX) :]
            return Route("label", f"label {label}", repo, action, number, head, device or None)
        return Route("ignored", f"pull_request {action} is not relayed", repo, action, number, head)
    number, head = _check_facts(event, payload)
    if action == "rerequested":
        return Route("rerun", f"{event} rerequested", repo, action, number, head)
    return Route("ignored", f"{event} {action} is not relayed", repo, action, number, head)
