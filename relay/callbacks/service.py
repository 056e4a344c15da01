"""The callback's order of checks, and its one transaction (the shell around the state machine).

identity (401/403) -> allowlisted and level >= L2 (else 200 ignored) -> rate limit
(429) -> body (400) -> [nightly/periodic: record, done] -> dispatch record (400)
-> callback token (403) -> state machine (400/409) -> write the job, its selection
report and its effects (HUD, check run, commit status) in one transaction -> answer.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from relay.callback_token import CallbackTokenError, CallbackTokenSigner, TokenBinding
from relay.callbacks.answer import Answer
from relay.callbacks.body import BadCallback, CallbackBody, parse_callback
from relay.callbacks.downstreams import LEVEL_ORDER, Downstream, downstream_of
from relay.callbacks.effects import enqueue_effects
from relay.callbacks.periodic import record_periodic
from relay.callbacks.rate_limit import TokenBucketLimiter, retry_after_header
from relay.callbacks.records import (
    Dispatch,
    JobFacts,
    load_dispatch,
    load_job,
    recording_dispatch,
    save_job,
    save_selection,
)
from relay.callbacks.run_binding import RunRef, bind_run
from relay.callbacks.settings import CallbackSettings, callback_settings, token_secret
from relay.callbacks.state_machine import (
    Accepted,
    JobKey,
    JobState,
    Rejected,
    Report,
    advance,
)
from relay.jwks import http_get_json
from relay.oidc import CallerIdentity, Forbidden, OidcVerifier, Unauthenticated
from relay.results.records import record_callback, record_progress
from relay.results.settings import results_settings
from relay.store import Tx

if TYPE_CHECKING:
    from relay.state import RelayState

log = logging.getLogger("relay.callbacks")


class _Refused(Exception):
    """The answer is decided before the end of the checks (a refusal, or 200 ignored)."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.body)
        self.answer = answer


def _refuse(status: int, message: str, headers: dict[str, str] | None = None) -> _Refused:
    # "detail" is the key CRCR's relay answers errors with; "error" is ours.
    return _Refused(Answer(status, {"error": message, "detail": message}, headers or {}))


def make_signer(state: RelayState, settings: CallbackSettings) -> CallbackTokenSigner:
    secret = token_secret(settings, state.config.secret_bytes()[0])
    return CallbackTokenSigner(secret, ttl_seconds=settings.callback_token_ttl_seconds)


class CallbackService:
    def __init__(self, state: RelayState) -> None:
        self.state = state
        self.settings = callback_settings(state.config.extra)
        self.verifier = OidcVerifier(
            self.settings.oidc_issuers,
            self.settings.oidc_audience,
            http_get_json,
            state.clock,
            leeway_seconds=self.settings.oidc_leeway_seconds,
            jwks_min_refetch_seconds=self.settings.jwks_min_refetch_seconds,
        )
        self.signer = make_signer(state, self.settings)
        self.limiter = TokenBucketLimiter(
            self.settings.rate_per_second, self.settings.rate_burst, state.clock
        )
        self.history_length = results_settings(state.config.extra).history_length

    def handle(self, authorization: str | None, raw: bytes) -> Answer:
        return self.guarded(lambda: self._handle(authorization, raw))

    @staticmethod
    def guarded(decide: Callable[[], Answer]) -> Answer:
        """Run `decide`; a check that stopped it early gives the answer."""
        try:
            return decide()
        except _Refused as refused:
            return refused.answer

    def _handle(self, authorization: str | None, raw: bytes) -> Answer:
        identity, entry = self.admit(authorization, min_level=2)
        body = self._body(raw)
        if body.is_periodic:
            return self._periodic(identity, body, entry)
        return self._job_callback(identity, body, entry.level, entry.device)

    def admit(
        self, authorization: str | None, *, min_level: int
    ) -> tuple[CallerIdentity, Downstream]:
        """The caller's identity (401/403) and entry, within its rate limit (429). As CRCR
        ships it, a repository below `min_level`, or no longer allowlisted at all, is
        acknowledged and ignored (200), so that a demotion does not turn its CI red."""
        identity = self.authenticate(authorization)
        entry = downstream_of(self.state, identity.repository)
        if entry is None:
            raise _Refused(_ignored(f"repository {identity.repository} is not allowlisted"))
        if LEVEL_ORDER[entry.level] < min_level:
            raise _Refused(_ignored(f"{entry.level}: callbacks ignored"))
        wait = self.limiter.take(entry.repo.lower())
        if wait is not None:
            raise _refuse(
                429,
                f"rate limit for {entry.repo} exceeded",
                {"Retry-After": retry_after_header(wait)},
            )
        return identity, entry

    @staticmethod
    def refusal(status: int, message: str) -> Exception:
        return _refuse(status, message)

    @staticmethod
    def no_dispatch(tx: Tx, delivery_id: str, repo: str) -> Exception:
        return _no_dispatch(tx, delivery_id, repo)

    def authenticate(self, authorization: str | None) -> CallerIdentity:
        try:
            return self.verifier.verify(authorization)
        except Unauthenticated as error:
            raise _refuse(401, str(error), {"WWW-Authenticate": "Bearer"}) from None
        except Forbidden as error:
            raise _refuse(403, str(error)) from None

    @staticmethod
    def _body(raw: bytes) -> CallbackBody:
        try:
            return parse_callback(raw)
        except BadCallback as error:
            raise _refuse(400, str(error)) from None

    def check_token(self, token: object, dispatch: Dispatch, now: float) -> str | None:
        """The token's id when it is this dispatch's (403 otherwise); None when no token
        was sent and none is required."""
        if token is None and not self.settings.require_callback_token:
            return None
        binding = TokenBinding(
            dispatch.delivery_id, dispatch.repo, dispatch.pr_number, dispatch.head_sha
        )
        try:
            return self.signer.verify(token, binding, dispatch.callback_token_id, now)
        except CallbackTokenError as error:
            raise _refuse(403, str(error)) from None

    @staticmethod
    def _bind_run(tx: Tx, dispatch: Dispatch, key: JobKey, now: float) -> None:
        """403 unless this run owns the dispatch (see relay.callbacks.run_binding)."""
        run = RunRef(key.run_id, key.run_attempt)
        binding = bind_run(tx, dispatch.delivery_id, dispatch.repo, run, how="callback", now=now)
        if not binding.allowed:
            raise _refuse(
                403,
                f"callback_token is bound to {binding.run} of this dispatch, not to {run};"
                " a re-run is let in when asked for through the relay (Re-run on the"
                " upstream check run)",
            )

    def _job_callback(
        self, identity: CallerIdentity, body: CallbackBody, level: str, device: str | None
    ) -> Answer:
        w = body.workflow
        key = JobKey(body.delivery_id, identity.repository, w.run_key, w.run_attempt, w.job_name)
        with self.state.store.transaction() as tx:
            now = self.state.clock.now()
            dispatch = load_dispatch(tx, body.delivery_id, identity.repository, lock=True)
            if dispatch is None:
                raise _no_dispatch(tx, body.delivery_id, identity.repository)
            key = JobKey(key.delivery_id, dispatch.repo, key.run_id, key.run_attempt, key.job_name)
            token_id = self.check_token(body.callback_token, dispatch, now)
            self._bind_run(tx, dispatch, key, now)
            report = Report(w.status, w.conclusion, w.check_run_id, body.digest())
            facts = JobFacts(
                pr_number=dispatch.pr_number,
                head_sha=dispatch.head_sha,
                selection_id=None,
                callback_token_id=token_id,
                identity=_identity_text(identity),
            )
            # Twice at most: a concurrent first callback of the same job may insert its
            # row between our read and our insert; then we decide again on that row.
            for _ in range(2):
                loaded = load_job(tx, key, lock=True)
                current = loaded[0] if loaded else None
                outcome = advance(current, report, dispatch.dispatched_at, now)
                if isinstance(outcome, Rejected):
                    raise _refuse(outcome.http_status, outcome.reason)
                if not isinstance(outcome, Accepted):
                    assert current is not None
                    if body.progress is not None and current.status == "in_progress":
                        record_progress(tx, key, body.progress)  # the same report, further on
                    return Answer(200, _answer(current, outcome.status))
                selection_id = self._save_selection(tx, body, key, now)
                facts = dataclasses.replace(facts, selection_id=selection_id)
                if save_job(tx, key, outcome.state, body, facts, now, first=current is None):
                    break
            else:
                raise _refuse(409, "conflict: concurrent callbacks for this job; retry")
            event = (dispatch.dispatched_at, dispatch.head_sha)
            record_callback(tx, key, body, event, self.history_length, now)
            enqueue_effects(tx, self.state, self.settings, key, level, device, dispatch.labels, now)
        log.info(
            "callback accepted: %s %s %s",
            key.repo,
            key.job_name,
            w.status,
            extra={"delivery_id": key.delivery_id},
        )
        return Answer(200, _answer(outcome.state, outcome.state.status))

    def _save_selection(self, tx: Tx, body: CallbackBody, key: JobKey, now: float) -> str | None:
        if body.selection is None:
            return None
        given = body.selection.selection_id
        selection_id = (
            f"{key.repo}/{given}"
            if given
            else f"{key.delivery_id}:{key.repo}:{key.run_id}:{key.run_attempt}"
        )
        save_selection(tx, selection_id, body, key.repo, now)
        return selection_id

    def _periodic(self, identity: CallerIdentity, body: CallbackBody, entry: Downstream) -> Answer:
        if body.workflow.status != "completed":
            return _ignored("nightly/periodic: completed only")
        w = body.workflow
        key = JobKey(body.delivery_id, entry.repo, w.run_key, w.run_attempt, w.job_name)
        with self.state.store.transaction() as tx:
            now = self.state.clock.now()
            selection_id = self._save_selection(tx, body, key, now)
            record_periodic(tx, key, body, selection_id, _identity_text(identity), now)
            record_callback(tx, key, body, (now, body.delivery_id), self.history_length, now)
            enqueue_effects(tx, self.state, self.settings, key, entry.level, None, (), now)
        return Answer(200, {"ok": True, "accepted": True, "status": "completed", "periodic": True})


def _no_dispatch(tx: Tx, delivery_id: str, repo: str) -> _Refused:
    """400 as shipped; but 503 + Retry-After while our own dispatch job is still open.

    The worker records DISPATCHED in the transaction that completes the dispatch
    job, just after GitHub accepted it; a downstream that reports within those
    milliseconds (the local target) is asked to retry instead of being refused.
    """
    # On PostgreSQL each statement sees what was committed when it began: the worker may
    # have committed "done" with the record between our first read and this one. So after
    # the job, look at the record again before saying there is none.
    if recording_dispatch(tx, delivery_id, repo) or load_dispatch(tx, delivery_id, repo):
        return _refuse(
            503, f"dispatch of {delivery_id} to {repo} is being recorded", {"Retry-After": "2"}
        )
    return _refuse(400, f"no dispatch of delivery {delivery_id} to {repo}")


def _identity_text(identity: CallerIdentity) -> str:
    return f"{identity.issuer_kind}:{identity.subject}"


def _ignored(reason: str) -> Answer:
    # CRCR answers {"ok": true, "status": "ignored"}; "ignored"/"reason" are ours.
    return Answer(200, {"ok": True, "status": "ignored", "ignored": True, "reason": reason})


def _answer(state: JobState, status: str) -> dict[str, Any]:
    # CRCR answers {"ok": true, "status": <status>}; the rest is ours.
    answer: dict[str, Any] = {
        "ok": True,
        "accepted": True,
        "status": status,
        "queue_time": state.queue_time,
    }
    if status == "completed":
        answer["conclusion"] = state.conclusion
        answer["execution_time"] = state.execution_time
    return answer
