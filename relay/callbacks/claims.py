"""``POST /github/claim``: a downstream run's first step claims its dispatch.

Authenticated like a callback (OIDC bearer token, allowlisted identity, the per-repository
rate limit, the dispatch's callback token). The body is the dispatched ``client_payload``
echoed back plus ``workflow`` {``name``, ``run_id``, ``run_attempt``, ``job_name``}.
Answers (200):

- ``{"status": "claimed", "claimed": true, "run_id", "run_attempt"}``: this run owns the
  dispatch (the first to claim or report, the same run again, or a re-run the relay asked
  for); test and report.
- ``{"status": "duplicate", "claimed": false, "duplicate": true, "claimed_by": {...}}``:
  another run owns it (GitHub received the dispatch twice); stop without testing, report
  nothing: the owner's result is the one the dashboard shows.
- ``{"status": "ignored", ...}``: not allowlisted, or a nightly/periodic run (no
  dispatch): go on, there is nothing to deduplicate.

Refusals are the callback's (401, 403, 429, 400, 503 while the dispatch is being
recorded), and a refusal changes nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from relay.callbacks.answer import Answer
from relay.callbacks.body import (
    PERIODIC_EVENTS,
    BadCallback,
    ColumnText,
    RunAttempt,
    RunId,
    parse_body,
    run_key,
)
from relay.callbacks.records import load_dispatch
from relay.callbacks.run_binding import Binding, RunRef, bind_run

if TYPE_CHECKING:
    from relay.callbacks.service import CallbackService
    from relay.state import RelayState

log = logging.getLogger("relay.callbacks")


class ClaimingRun(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: ColumnText | None = Field(default=None, max_length=200)
    run_id: RunId
    run_attempt: RunAttempt = 1
    job_name: ColumnText | None = Field(default=None, max_length=300)


class ClaimBody(BaseModel):
    model_config = ConfigDict(extra="allow")
    event_type: ColumnText = Field(min_length=1, max_length=100)
    delivery_id: ColumnText = Field(min_length=1, max_length=200)
    callback_token: str | None = None
    workflow: ClaimingRun


def parse_claim(raw: bytes) -> ClaimBody:
    return parse_body(raw, ClaimBody)


class ClaimService:
    """The claim endpoint's checks; shares the callback service's verifier and rate limit."""

    def __init__(self, state: RelayState, callbacks: CallbackService) -> None:
        self.state = state
        self.callbacks = callbacks

    def handle(self, authorization: str | None, raw: bytes) -> Answer:
        return self.callbacks.guarded(lambda: self._handle(authorization, raw))

    def _handle(self, authorization: str | None, raw: bytes) -> Answer:
        # Every allowlisted level claims: a duplicate run costs an L1 backend device time too.
        identity, _ = self.callbacks.admit(authorization, min_level=1)
        try:
            body = parse_claim(raw)
        except BadCallback as error:
            raise self.callbacks.refusal(400, str(error)) from None
        if body.event_type in PERIODIC_EVENTS:
            return _go_on("nightly/periodic runs are not dispatched: nothing to claim")
        run = RunRef(run_key(body.workflow.run_id), body.workflow.run_attempt)
        with self.state.store.transaction() as tx:
            now = self.state.clock.now()
            dispatch = load_dispatch(tx, body.delivery_id, identity.repository, lock=True)
            if dispatch is None:
                raise self.callbacks.no_dispatch(tx, body.delivery_id, identity.repository)
            self.callbacks.check_token(body.callback_token, dispatch, now)
            binding = bind_run(tx, dispatch.delivery_id, dispatch.repo, run, how="claim", now=now)
        return _answer(binding, body, dispatch.repo)


def _go_on(reason: str) -> Answer:
    return Answer(200, {"ok": True, "status": "ignored", "ignored": True, "reason": reason})


def _answer(binding: Binding, body: ClaimBody, repo: str) -> Answer:
    owner = {"run_id": binding.run.run_id, "run_attempt": binding.run.run_attempt}
    if binding.allowed:
        return Answer(200, {"ok": True, "status": "claimed", "claimed": True, **owner})
    log.info(
        "duplicate run %s attempt %s of %s told to stop: the dispatch belongs to %s",
        body.workflow.run_id,
        body.workflow.run_attempt,
        repo,
        binding.run,
        extra={"delivery_id": body.delivery_id},
    )
    answer: dict[str, Any] = {
        "ok": True,
        "status": "duplicate",
        "claimed": False,
        "duplicate": True,
        "claimed_by": owner,
        "reason": f"delivery {body.delivery_id} to {repo} belongs to {binding.run}",
    }
    return Answer(200, answer)
