"""Property: no signed body gets a 5xx, and a refused one leaves the store as it was.

A body GitHub would never send (but a leaked secret or a broken proxy can) is made by
mutating a valid, correctly signed request of each endpoint: any field replaced by a
string with NUL, control characters or lone surrogates, integers beyond BIGINT, other
types, JSON nested thousands deep, `NaN`, a body re-encoded as UTF-16/UTF-32 or with a
byte order mark, invalid UTF-8. Each mutated body is signed as the endpoint requires
(HMAC for the webhook, OIDC bearer for callbacks and claims, the HUD key for results)
and posted to the real app on a real uvicorn server, on SQLite and on PostgreSQL. Every
answer must be a 2xx or a 4xx with an `error`; after a 4xx every table is unchanged; and
afterwards the dashboard's pages of what was accepted answer without a 5xx.

The endpoints are a table (`ENDPOINTS`): an endpoint added later is one more row (how to
build a valid request, how to sign it, which fields the relay reads). The webhook has three
rows, one per route whose hooks read more of the payload (dispatch, L3 label, re-run).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.store import Store
from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_server import signed_headers
from tests.support.results_loop import UPSTREAM, ResultsLoop, fixture_payload, workflow_report

EXAMPLES = int(os.environ.get("SPYRE_CI_FUZZ_EXAMPLES", "120"))
HUD_KEY = "fuzz-hud-key"
REPO = "acme/l4"  # L4: callbacks set off check runs, re-runs are relayed

# --- the endpoints ---------------------------------------------------------------


@dataclass
class Target:
    """The running relay an endpoint's requests go to, and what signing needs."""

    loop: ResultsLoop
    client_payload: dict[str, Any]
    bearer: str
    serial: int = 0

    def next_serial(self) -> int:
        self.serial += 1
        return self.serial


@dataclass(frozen=True)
class Endpoint:
    name: str
    path: str
    seed: Callable[[Target], dict[str, Any]]  # a valid body, fresh for each example
    sign: Callable[[Target, bytes], dict[str, str]]  # the headers that authenticate it
    focus: tuple[str, ...] = ()  # dotted fields the relay reads: mutated more often


def _webhook_seed(fixture: str) -> Callable[[Target], dict[str, Any]]:
    def seed(target: Target) -> dict[str, Any]:
        payload = fixture_payload(fixture)
        if fixture == "pull_request.labeled":
            payload["label"]["name"] = "ciflow/crcr/spyre"  # routed to the L3 label hook
        if fixture == "check_run.rerequested":  # one of our check runs: routed to re-runs
            payload["repository"]["full_name"] = UPSTREAM
            payload["check_run"].update(name=f"crcr/{REPO}/spyre-ci/job", external_id="7:2")
        return payload

    return seed


def _webhook_headers(event: str) -> Callable[[Target, bytes], dict[str, str]]:
    def sign(target: Target, body: bytes) -> dict[str, str]:
        return signed_headers(event, body, delivery_id=str(uuid.uuid4()))

    return sign


def _callback_seed(target: Target) -> dict[str, Any]:
    # A fresh job of the dispatched run each time, so the unmutated body is accepted.
    job = f"fuzz ({target.next_serial()})"
    return {**copy.deepcopy(target.client_payload), "workflow": workflow_report(job_name=job)}


def _bearer_headers(target: Target, body: bytes) -> dict[str, str]:
    return {"Content-Type": "application/json", "Authorization": f"Bearer {target.bearer}"}


def _claim_seed(target: Target) -> dict[str, Any]:
    run = {"name": "spyre-ci", "run_id": str(target.next_serial()), "run_attempt": "1"}
    return {**copy.deepcopy(target.client_payload), "workflow": run}


def _results_seed(target: Target) -> dict[str, Any]:
    workflow = {
        "name": "wf",
        "job_name": f"job {target.next_serial()}",
        "check_run_id": 7,
        "status": "completed",
    }
    return {
        "trusted": {"ci_metrics": {"queue_time": 1, "execution_time": 2}, "verified_repo": REPO},
        "untrusted": {"callback_payload": {"delivery_id": "d-1", "workflow": workflow}},
    }


def _results_headers(target: Target, body: bytes) -> dict[str, str]:
    return {"Content-Type": "application/json", "x-hud-internal-bot": HUD_KEY}


CALLBACK_FIELDS = (
    "event_type",
    "delivery_id",
    "callback_token",
    "workflow.name",
    "workflow.url",
    "workflow.run_id",
    "workflow.run_attempt",
    "workflow.job_name",
    "workflow.check_run_id",
    "workflow.status",
    "workflow.conclusion",
    "workflow.started_at",
    "workflow.test_results",
    "workflow.artifact_url",
    "payload.pull_request",
)

PR_FIELDS = (
    "action",
    "number",
    "repository",
    "repository.full_name",
    "pull_request.number",
    "pull_request.head",
    "pull_request.head.sha",
    "pull_request.labels",
    "pull_request.title",
    "label",
    "label.name",
)
CHECK_RUN_FIELDS = (
    "action",
    "check_run",
    "check_run.name",
    "check_run.external_id",
    "check_run.head_sha",
    "check_run.app",
    "check_run.app.id",
    "check_run.pull_requests",
)

ENDPOINTS = [
    Endpoint(
        "webhook",
        "/github/webhook",
        _webhook_seed("pull_request.opened"),
        _webhook_headers("pull_request"),
        PR_FIELDS,
    ),
    Endpoint(
        "webhook-label",
        "/github/webhook",
        _webhook_seed("pull_request.labeled"),
        _webhook_headers("pull_request"),
        PR_FIELDS,
    ),
    Endpoint(
        "webhook-rerun",
        "/github/webhook",
        _webhook_seed("check_run.rerequested"),
        _webhook_headers("check_run"),
        CHECK_RUN_FIELDS,
    ),
    Endpoint("callback", "/github/callback", _callback_seed, _bearer_headers, CALLBACK_FIELDS),
    Endpoint(
        "claim",
        "/github/claim",
        _claim_seed,
        _bearer_headers,
        ("event_type", "delivery_id", "callback_token", "workflow.run_id", "workflow.run_attempt"),
    ),
    Endpoint(
        "results",
        "/api/crcr/results",
        _results_seed,
        _results_headers,
        focus=(
            "trusted.verified_repo",
            "untrusted.callback_payload.delivery_id",
            "untrusted.callback_payload.workflow.name",
            "untrusted.callback_payload.workflow.job_name",
            "untrusted.callback_payload.workflow.check_run_id",
            "untrusted.callback_payload.workflow.status",
        ),
    ),
]

# --- mutations ---------------------------------------------------------------------

# Raw JSON spliced in where a placeholder string is: what json.dumps cannot write.
_RAW = "\u0001raw:"


def _raw(text: str) -> str:
    return f"{_RAW}{text}"


NASTY_TEXT = st.one_of(
    st.sampled_from(
        ["\x00", "sha\x00", "\x01\x1f", "\x7f", "\x85", "\u2028", "\ud800", "x\udfff", "\ufeff"]
    ),
    st.sampled_from(["", " ", "\U0001f600" * 300, "e" * 5000, "\\u0000", "../../x", "a/b/c"]),
    st.text(st.characters(codec=None, categories=["Cc", "Cs", "Lo", "So", "Zs"]), max_size=40),
)
NASTY_INT = st.one_of(
    st.sampled_from([2**63, 2**63 - 1, -(2**63) - 1, 2**64, 2**31, 2**31 - 1, -1, 0, 10**30]),
    st.integers(),
)
RAW_VALUES = st.one_of(
    st.integers(min_value=60, max_value=5000).map(lambda d: _raw(f"lists:{d}")),
    st.integers(min_value=60, max_value=200).map(lambda d: _raw(f"objects:{d}")),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "digits:5000", "digits:19"]).map(_raw),
)


def _expand(spec: str) -> str:
    """The raw JSON text a placeholder stands for."""
    kind, _, count = spec.partition(":")
    n = int(count or 0)
    if kind == "lists":
        return "[" * n + "]" * n
    if kind == "objects":
        return '{"a":' * n + "1" + "}" * n
    if kind == "digits":
        return "9" * n
    return spec  # NaN, Infinity, -Infinity


NASTY_VALUE = st.one_of(
    NASTY_TEXT,
    NASTY_INT,
    RAW_VALUES,
    st.sampled_from([None, True, False, 1.5e308, -0.0, [], {}, [None], {"": None}]),
)
ENCODINGS = st.sampled_from(
    ["utf-8"] * 6 + ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig", "latin-1"]
)


@dataclass
class Mutation:
    edits: list[tuple[str, tuple[Any, ...], Any]] = field(default_factory=list)
    ensure_ascii: bool = True
    encoding: str = "utf-8"
    whole: bytes | None = None  # replaces the body entirely

    def apply(self, body: dict[str, Any]) -> bytes:
        if self.whole is not None:
            return self.whole
        for op, path, value in self.edits:
            # An earlier edit may have removed or replaced the path: then skip this one.
            with contextlib.suppress(KeyError, IndexError, TypeError):
                _edit(body, op, path, value)
        text = json.dumps(body, ensure_ascii=self.ensure_ascii)
        text = _splice_raw(text)
        errors = "surrogatepass" if self.encoding.startswith("utf") else "replace"
        return text.encode(self.encoding, errors=errors)


def _splice_raw(text: str) -> str:
    marker = json.dumps(_RAW)[:-1]  # the placeholder as json.dumps writes it, open quote
    while marker in text:
        start = text.index(marker)
        end = text.index('"', start + len(marker))
        text = text[:start] + _expand(text[start + len(marker) : end]) + text[end + 1 :]
    return text


def _edit(body: Any, op: str, path: tuple[Any, ...], value: Any) -> None:
    value = copy.deepcopy(value)  # drawn values may be shared lists and dicts
    node = body
    for part in path[:-1]:
        node = node[part]
    last = path[-1]
    if op == "set":
        node[last] = value
    elif op == "delete":
        del node[last]
    elif op == "add" and isinstance(node[last], dict):
        node[last]["fuzz\x00key" if value is None else "fuzz_key"] = value


def _paths(node: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    if depth > 6:
        return []
    items: list[tuple[Any, Any]] = []
    if isinstance(node, dict):
        items = list(node.items())
    elif isinstance(node, list):
        items = list(enumerate(node))[:3]
    found = []
    for key, child in items:
        found.append((*prefix, key))
        found.extend(_paths(child, (*prefix, key), depth + 1))
    return found


def _dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path)


def _one_of_list(items: list[tuple[Any, ...]]) -> st.SearchStrategy[tuple[Any, ...]]:
    # By index: the strategy's repr stays short however long the list is.
    return st.integers(min_value=0, max_value=len(items) - 1).map(items.__getitem__)


def mutations(endpoint: Endpoint, seed: dict[str, Any]) -> st.SearchStrategy[Mutation]:
    """Edits of `seed`'s shape (every example's seed has the same shape)."""
    every = _paths(seed)
    focused = [p for p in every if _dotted(p) in endpoint.focus] or every
    path = st.one_of(_one_of_list(focused), _one_of_list(every))
    edit = st.tuples(st.sampled_from(["set", "set", "set", "delete", "add"]), path, NASTY_VALUE)
    edited = st.builds(Mutation, st.lists(edit, min_size=1, max_size=3), st.booleans(), ENCODINGS)
    whole = st.sampled_from(
        [b"", b"[]", b"1", b'"x"', b"null", b"{", b"\xff\xfe{}", b'{"a": "\xc3"}', b"{}" * 2]
    ).map(lambda raw: Mutation(whole=raw))
    return st.one_of(edited, edited, edited, whole)


# --- the property ------------------------------------------------------------------


def snapshot(store: Store) -> dict[str, list[str]]:
    """Every row of every table, as text: the store's whole content."""
    with store.transaction(write=False) as tx:
        if tx.dialect == "sqlite":
            names = [
                r["name"]
                for r in tx.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
        else:
            names = [
                r["table_name"]
                for r in tx.fetchall(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema()"
                )
            ]
        return {
            n: sorted(repr(sorted(r.items())) for r in tx.fetchall(f"SELECT * FROM {n}"))
            for n in names
        }


@pytest.fixture
def target(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer, each_store_url: str | None
) -> Iterator[Target]:
    callbacks = {"hud_api_keys": [HUD_KEY], "rate_burst": 1_000_000}
    with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks, store_url=each_store_url) as loop:
        payload = loop.open_pr(REPO)
        yield Target(loop, payload, loop.token(REPO))


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e.name for e in ENDPOINTS])
def test_no_signed_body_gets_a_5xx_and_a_refusal_changes_nothing(
    endpoint: Endpoint, target: Target
) -> None:
    loop = target.loop
    answered: dict[int, int] = {}
    strategy = mutations(endpoint, endpoint.seed(target))

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def post_one(data: st.DataObject) -> None:
        seed = endpoint.seed(target)
        mutation = data.draw(strategy)
        body = mutation.apply(seed)
        before = snapshot(loop.state.store)
        response = loop.http.post(
            f"{loop.url}{endpoint.path}", content=body, headers=endpoint.sign(target, body)
        )
        answered[response.status_code] = answered.get(response.status_code, 0) + 1
        assert response.status_code < 500, (response.status_code, response.text, body[:300])
        if response.status_code >= 400:
            error = response.json().get("error")
            assert isinstance(error, str) and error, response.text
            assert snapshot(loop.state.store) == before, (response.text, body[:300])

    post_one()
    # The mutations reach both sides: some bodies are accepted, most are refused.
    assert any(s < 300 for s in answered) and any(400 <= s < 500 for s in answered), answered
    # What was accepted can be shown: the dashboard's pages of it answer without a 5xx.
    for path in _pages_of(loop):
        shown = loop.http.get(f"{loop.url}{path}")
        assert shown.status_code < 500, (path, shown.status_code, shown.text[:300])


def _pages_of(loop: ResultsLoop) -> list[str]:
    pages = ["/crcr", "/api/crcr", f"/crcr/{REPO}", f"/api/crcr/{REPO}", "/crcr/metrics"]
    deliveries = loop.rows("SELECT delivery_id, pr_number, head_sha FROM deliveries LIMIT 40")
    for row in deliveries:
        delivery = quote(str(row["delivery_id"]), safe="")
        pages += [f"/crcr/deliveries/{delivery}?repo={REPO}", f"/api/crcr/deliveries/{delivery}"]
        if row["pr_number"] is not None:
            pages += [f"/crcr/pr/{row['pr_number']}", f"/api/crcr/pr/{row['pr_number']}"]
        if row["head_sha"]:
            pages.append(f"/crcr/commit/{quote(str(row['head_sha']), safe='')}")
    for row in loop.rows("SELECT selection_id FROM job_runs WHERE selection_id IS NOT NULL"):
        pages.append(f"/selection/{quote(str(row['selection_id']), safe='/')}")
    return pages
