"""What an upstream change is, read from the stored webhook (pure).

The change pages show the PR's title and author, or the pushed commit's first
message line, and a link to it on GitHub. The link is built here from the
upstream repository's name and the number or SHA, never taken from the payload.
"""

from __future__ import annotations

import json
import re
from typing import Any

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-f]{7,40}$")
MAX_TITLE = 200


def describe(
    payload_text: str | None, event: str, pr_number: int | None, head_sha: str | None
) -> dict[str, Any] | None:
    """`{title, author, url, ref, state}` of the upstream PR or commit, or None."""
    try:
        payload = json.loads(payload_text) if payload_text else None
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    repo = _text(_get(payload, "repository", "full_name"))
    base = f"https://github.com/{repo}" if repo and _REPO.match(repo) else None
    if event == "pull_request" and pr_number:
        pr = _mapping(payload.get("pull_request"))
        return {
            "title": _short(_text(pr.get("title"))),
            "author": _text(_get(pr, "user", "login")),
            "url": f"{base}/pull/{int(pr_number)}" if base else None,
            "ref": _text(_get(pr, "head", "ref")),
            "state": _pr_state(pr),
        }
    if event == "push":
        head = _mapping(payload.get("head_commit"))
        message = _text(head.get("message"))
        sha = head_sha if head_sha and _SHA.match(head_sha) else None
        return {
            "title": _short(message.splitlines()[0] if message else None),
            "author": _text(_get(head, "author", "name")) or _text(_get(payload, "pusher", "name")),
            "url": f"{base}/commit/{sha}" if base and sha else None,
            "ref": _text(payload.get("ref")),
            "state": None,
        }
    return None


def _pr_state(pr: dict[str, Any]) -> str | None:
    # PyTorch's merge bot closes PRs without a GitHub merge; its `Merged` label is the signal.
    labels = {
        _text(label.get("name")) for label in pr.get("labels") or [] if isinstance(label, dict)
    }
    if pr.get("merged") is True or "Merged" in labels:
        return "merged"
    return _text(pr.get("state"))


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_TITLE:
        return text
    return text[: MAX_TITLE - 1] + "…"


def repo_of(payload_text: str | None) -> str | None:
    """The upstream repository (`owner/name`) a stored webhook came from, if well formed."""
    try:
        payload = json.loads(payload_text) if payload_text else None
    except ValueError:
        return None
    repo = _text(_get(payload, "repository", "full_name"))
    return repo if repo and _REPO.match(repo) else None


def title_of(payload: Any) -> str | None:
    """The PR title (or pushed commit's first line) of a webhook payload, as a dict."""
    if not isinstance(payload, dict):
        return None
    title = _text(_get(payload, "pull_request", "title"))
    if title is None:
        message = _text(_get(payload, "head_commit", "message"))
        title = message.splitlines()[0] if message else None
    return _short(title)
