"""`spyre-ci ci claim`: the select job's first step (effectively once)."""

from __future__ import annotations

import click

from spyre_ci.ci import runner_env
from spyre_ci.ci.claim import ClaimOutcome, build_claim_body, claim_url, interpret
from spyre_ci.ci.cli_common import AUDIENCE, CALLBACK_URL, EVENT_PATH, ci_group
from spyre_ci.ci.oidc import NoIdToken, get_id_token
from spyre_ci.ci.send import CallbackFailed, post_callback

# A dispatch whose worker died after GitHub accepted it is recorded when the relay's lease
# runs out (2 minutes by default): keep asking that long, and through a relay restart.
CLAIM_PATIENCE_SECONDS = 600.0


@ci_group.command("claim")
@EVENT_PATH
@CALLBACK_URL
@click.option(
    "--claim-url",
    "claim_url_",
    envvar="SPYRE_CI_CLAIM_URL",
    default="",
    help="The relay's /github/claim URL (default: next to --callback-url).",
)
@AUDIENCE
def claim_command(
    event_path: str | None, callback_url: str, claim_url_: str, audience: str
) -> None:
    """Claim the dispatch for this run; a second run of it is told `duplicate=true`."""
    _, event = runner_env.read_event(event_path)
    payload = runner_env.client_payload(event)
    if payload is None:
        _finish(ClaimOutcome(False, "not a relay dispatch: nothing to claim"))
        return
    url = claim_url_ or (claim_url(callback_url) if callback_url else "")
    if not url:
        raise click.ClickException(
            "no claim URL: pass --callback-url or --claim-url (or set SPYRE_CI_CALLBACK_URL)"
        )
    body = build_claim_body(payload, runner_env.workflow_run())
    try:
        answer = post_callback(
            url, body, get_id_token(audience), max_attempts=10_000,
            patience=CLAIM_PATIENCE_SECONDS,
        )  # fmt: skip
        outcome = interpret(answer.status, answer.body)
    except CallbackFailed as exc:
        if exc.status != 404:
            raise click.ClickException(str(exc)) from exc
        outcome = interpret(404, "")
    except NoIdToken as exc:
        raise click.ClickException(str(exc)) from exc
    _finish(outcome)


def _finish(outcome: ClaimOutcome) -> None:
    runner_env.write_outputs(outcome.outputs())
    if outcome.duplicate:
        # A GitHub Actions notice on the run's summary: why it stopped without testing.
        click.echo(f"::notice title=Duplicate dispatch::{outcome.reason}")
    click.echo(outcome.reason, err=True)
