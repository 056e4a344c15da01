"""Reading the upstream change from its stored webhook."""

from __future__ import annotations

import json

from relay.dashboard.upstream import describe

SHA = "ab" * 20


def _pr(**fields: object) -> str:
    pr: dict[str, object] = {
        "title": "Speed up add",
        "user": {"login": "alice"},
        "head": {"ref": "fast-add"},
    }
    pr.update(fields)
    return json.dumps({"repository": {"full_name": "pytorch/pytorch"}, "pull_request": pr})


def test_pull_request() -> None:
    assert describe(_pr(state="open"), "pull_request", 7, SHA) == {
        "title": "Speed up add",
        "author": "alice",
        "url": "https://github.com/pytorch/pytorch/pull/7",
        "ref": "fast-add",
        "state": "open",
    }


def test_merged_by_the_merge_bot_is_merged() -> None:
    closed = _pr(state="closed", merged=False, labels=[{"name": "Merged"}])
    assert describe(closed, "pull_request", 7, SHA)["state"] == "merged"  # type: ignore[index]


def test_push_uses_the_first_line_of_the_head_commit() -> None:
    payload = {
        "repository": {"full_name": "pytorch/pytorch"},
        "ref": "refs/heads/main",
        "head_commit": {"message": "Fix add\n\nLong body", "author": {"name": "Bob"}},
    }
    got = describe(json.dumps(payload), "push", None, SHA)
    assert got == {
        "title": "Fix add",
        "author": "Bob",
        "url": f"https://github.com/pytorch/pytorch/commit/{SHA}",
        "ref": "refs/heads/main",
        "state": None,
    }


def test_links_are_built_not_copied_and_bad_payloads_give_nothing() -> None:
    odd = json.dumps({"repository": {"full_name": "javascript:alert(1)"}, "pull_request": {}})
    assert describe(odd, "pull_request", 7, SHA)["url"] is None  # type: ignore[index]
    assert describe("not json", "pull_request", 7, SHA) is None
    assert describe("[]", "push", None, SHA) is None
    assert describe(_pr(), "check_run", None, SHA) is None
    long = describe(_pr(title="x" * 500), "pull_request", 7, SHA)
    assert long is not None and len(long["title"]) == 200
