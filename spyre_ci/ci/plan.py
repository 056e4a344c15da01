"""Decide what a downstream run does for one upstream event. Pure: no I/O.

The input is what GitHub Actions gives a workflow: the event name and the event
JSON (`GITHUB_EVENT_PATH`). For `repository_dispatch` the relay's
`client_payload` is `{event_type, delivery_id, payload, ...}` where `payload` is
the upstream webhook unchanged (CRCR wire format). The output is a `Plan`: run or
skip (with the reason), the upstream commits to compare and what to report back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

ZERO_SHA = "0" * 40
MERGED_LABEL = "Merged"  # PyTorch's merge bot closes PRs without a GitHub merge
TESTED_PR_ACTIONS = frozenset({"opened", "reopened", "synchronize", "closed"})
TIERS = ("selected", "full")
DEFAULT_UPSTREAM_REF = "main"


class BadEvent(ValueError):
    """The event JSON lacks a field the plan needs; the message names the field."""


@dataclass(frozen=True)
class Plan:
    run: bool
    reason: str
    event_type: str  # pull_request | push | nightly | manual
    delivery_id: str
    upstream_repo: str
    head_sha: str  # the upstream commit under test (a ref for nightly until resolved)
    base_sha: str  # what it is compared with; "" = no comparison (full tier)
    base_ref: str
    pr_number: int | None
    merged: bool
    labels: list[str] = field(default_factory=list)
    tier: str = "selected"
    concurrency_key: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def outputs(self) -> dict[str, str]:
        """The plan as `GITHUB_OUTPUT` key/value strings (what later jobs read)."""
        return {
            "run": "true" if self.run else "false",
            "reason": self.reason,
            "event_type": self.event_type,
            "delivery_id": self.delivery_id,
            "upstream_repo": self.upstream_repo,
            "head_sha": self.head_sha,
            "base_sha": self.base_sha,
            "base_ref": self.base_ref,
            "pr_number": "" if self.pr_number is None else str(self.pr_number),
            "merged": "true" if self.merged else "false",
            "tier": self.tier,
            "concurrency_key": self.concurrency_key,
        }


def plan_event(
    event_name: str, event: Mapping[str, Any], *, run_id: str = "", nightly_tier: str = "full"
) -> Plan:
    """The plan for a workflow started by `event_name` with `event` as its JSON."""
    if event_name == "repository_dispatch":
        return plan_dispatch(_mapping(event, "client_payload"))
    if event_name == "workflow_dispatch":
        return plan_manual(_optional_mapping(event, "inputs"), run_id=run_id)
    if event_name == "schedule":
        return plan_nightly(run_id=run_id, tier=nightly_tier)
    raise BadEvent(
        f"event {event_name!r} is not handled: expected repository_dispatch, "
        "workflow_dispatch or schedule"
    )


def plan_dispatch(client_payload: Mapping[str, Any]) -> Plan:
    """The plan for a relay dispatch (`client_payload` as CRCR sends it)."""
    event_type = _str(client_payload, "event_type", where="client_payload")
    delivery_id = _str(client_payload, "delivery_id", where="client_payload")
    payload = _mapping(client_payload, "payload", where="client_payload")
    if event_type == "pull_request":
        return _plan_pull_request(payload, delivery_id)
    if event_type == "push":
        return _plan_push(payload, delivery_id)
    return _skip(
        f"event_type {event_type!r} is not tested (only pull_request and push)",
        event_type=event_type,
        delivery_id=delivery_id,
        upstream_repo=_repo_name(payload),
    )


def is_merged(pull_request: Mapping[str, Any]) -> bool:
    """Merged by GitHub, or closed by PyTorch's merge bot (which adds the `Merged` label)."""
    if pull_request.get("merged") is True:
        return True
    return pull_request.get("state") == "closed" and MERGED_LABEL in label_names(pull_request)


def label_names(pull_request: Mapping[str, Any]) -> list[str]:
    labels = pull_request.get("labels") or []
    return [
        str(label["name"]) for label in labels if isinstance(label, Mapping) and "name" in label
    ]


def _plan_pull_request(payload: Mapping[str, Any], delivery_id: str) -> Plan:
    where = "client_payload.payload"
    action = _str(payload, "action", where=where)
    pr = _mapping(payload, "pull_request", where=where)
    where_pr = f"{where}.pull_request"
    number = pr.get("number", payload.get("number"))
    if not isinstance(number, int):
        raise BadEvent(f"{where_pr}.number: expected an integer, got {number!r}")
    head = _mapping(pr, "head", where=where_pr)
    base = _mapping(pr, "base", where=where_pr)
    merged = is_merged(pr)
    common: dict[str, Any] = {
        "event_type": "pull_request",
        "delivery_id": delivery_id,
        "upstream_repo": _repo_name(payload),
        "head_sha": _str(head, "sha", where=f"{where_pr}.head"),
        "base_sha": _str(base, "sha", where=f"{where_pr}.base"),
        "base_ref": _str(base, "ref", where=f"{where_pr}.base"),
        "pr_number": number,
        "merged": merged,
        "labels": label_names(pr),
        "concurrency_key": f"pr-{number}",
    }
    if action not in TESTED_PR_ACTIONS:
        return Plan(run=False, reason=f"pull_request action {action!r} is not tested", **common)
    if action == "closed" and not merged:
        return Plan(run=False, reason=f"PR #{number} was closed without being merged", **common)
    if action == "closed":
        return Plan(run=True, reason=f"PR #{number} was merged: testing its head", **common)
    return Plan(run=True, reason=f"PR #{number} {action}", **common)


def _plan_push(payload: Mapping[str, Any], delivery_id: str) -> Plan:
    where = "client_payload.payload"
    ref = _str(payload, "ref", where=where)
    after = _str(payload, "after", where=where)
    before = str(payload.get("before") or ZERO_SHA)
    common: dict[str, Any] = {
        "event_type": "push",
        "delivery_id": delivery_id,
        "upstream_repo": _repo_name(payload),
        "head_sha": after,
        "base_sha": "" if before == ZERO_SHA else before,
        "base_ref": ref,
        "pr_number": None,
        "merged": False,
        "concurrency_key": f"push-{after[:12]}",
    }
    if payload.get("deleted") is True or after == ZERO_SHA:
        return Plan(run=False, reason=f"{ref} was deleted: nothing to test", **common)
    if ref.startswith("refs/tags/") and not ref.startswith("refs/tags/v"):
        return Plan(run=False, reason=f"{ref} is not a release tag", **common)
    if ref.startswith("refs/tags/") or before == ZERO_SHA:
        why = "a release tag" if ref.startswith("refs/tags/") else "a new branch"
        return Plan(
            run=True, reason=f"{ref} is {why}: no previous commit, full tier", tier="full", **common
        )
    return Plan(run=True, reason=f"push to {ref}", **common)


def plan_manual(inputs: Mapping[str, Any], *, run_id: str) -> Plan:
    """`workflow_dispatch`: `pytorch_ref` is a SHA/ref/version or `FROM..TO`; `tier`."""
    spec = str(inputs.get("pytorch_ref") or DEFAULT_UPSTREAM_REF).strip()
    tier = _tier(str(inputs.get("tier") or "selected"))
    base, sep, head = spec.partition("..")
    if not sep:
        base, head = f"{spec}^", spec
    if not base or not head:
        raise BadEvent(f"inputs.pytorch_ref: {spec!r} is not REF or FROM..TO")
    return Plan(
        run=True,
        reason=f"manual run for {spec} ({tier})",
        event_type="manual",
        delivery_id=f"manual-{run_id}" if run_id else "manual",
        upstream_repo=str(inputs.get("upstream_repo") or "pytorch/pytorch"),
        head_sha=head,
        base_sha="" if tier == "full" else base,
        base_ref="",
        pr_number=None,
        merged=False,
        tier=tier,
        concurrency_key=f"manual-{run_id}",
    )


def plan_nightly(*, run_id: str, tier: str = "full") -> Plan:
    """`schedule`: upstream main, compared with its parent unless the tier is full."""
    tier = _tier(tier)
    return Plan(
        run=True,
        reason=f"nightly run of upstream {DEFAULT_UPSTREAM_REF} ({tier})",
        event_type="nightly",
        delivery_id="",  # CRCR: the tested PyTorch SHA, known once the ref is resolved
        upstream_repo="pytorch/pytorch",
        head_sha=DEFAULT_UPSTREAM_REF,
        base_sha="" if tier == "full" else f"{DEFAULT_UPSTREAM_REF}^",
        base_ref=DEFAULT_UPSTREAM_REF,
        pr_number=None,
        merged=False,
        tier=tier,
        concurrency_key=f"nightly-{run_id}",
    )


def _skip(reason: str, *, event_type: str, delivery_id: str, upstream_repo: str) -> Plan:
    return Plan(
        run=False,
        reason=reason,
        event_type=event_type,
        delivery_id=delivery_id,
        upstream_repo=upstream_repo,
        head_sha="",
        base_sha="",
        base_ref="",
        pr_number=None,
        merged=False,
        concurrency_key=f"skip-{delivery_id}",
    )


def _tier(value: str) -> str:
    if value not in TIERS:
        raise BadEvent(f"inputs.tier: {value!r} is not one of {', '.join(TIERS)}")
    return value


def _repo_name(payload: Mapping[str, Any]) -> str:
    repository = payload.get("repository")
    if isinstance(repository, Mapping) and isinstance(repository.get("full_name"), str):
        return str(repository["full_name"])
    return "pytorch/pytorch"


def _mapping(obj: Mapping[str, Any], key: str, *, where: str = "event") -> Mapping[str, Any]:
    value = obj.get(key)
    if not isinstance(value, Mapping):
        raise BadEvent(f"{where}.{key}: expected an object, got {type(value).__name__}")
    return value


def _optional_mapping(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _str(obj: Mapping[str, Any], key: str, *, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise BadEvent(f"{where}.{key}: expected a non-empty string, got {value!r}")
    return value
