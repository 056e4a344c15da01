"""`spyre-ci relay sweep`: run the sweepers once (cron, or recovery after an outage).

The worker runs them periodically (`relay.worker.PERIODIC_TASKS`); this command
runs the chosen ones now and prints what they did. Added to the `relay` group
registered by `relay.cli` (listed after it in `spyre_ci.cli.COMMAND_MODULES`).
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command("sweep")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="relay YAML configuration (default: $SPYRE_RELAY_CONFIG)",
)
@click.option("--timeouts/--no-timeouts", default=True, help="time out stuck in-progress jobs")
@click.option("--redeliver/--no-redeliver", default=False, help="redeliver failed webhooks (App)")
@click.option("--tags/--no-tags", default=False, help="poll upstream tags and releases")
def sweep(config_path: Path | None, timeouts: bool, redeliver: bool, tags: bool) -> None:
    """Run the relay's sweepers once and report what they did."""
    from relay.callbacks.settings import callback_settings
    from relay.cli import load_relay_config, relay_state
    from relay.sweepers import poll_tags, sweep_failed_deliveries, sweep_timeouts

    config = load_relay_config(config_path)  # bad configuration: exit 2, one line each
    settings = callback_settings(config.extra)  # (validated by the load already)
    state = relay_state(config)  # an unreachable store: exit 1, one line
    try:
        if timeouts:
            click.echo(f"timed out: {sweep_timeouts(state, settings)} job(s)")
        if redeliver:
            click.echo(
                f"redelivery asked: {sweep_failed_deliveries(state, settings)} delivery(ies)"
            )
        if tags:
            missed = poll_tags(state)
            click.echo(f"tags dispatched: {', '.join(missed) or 'none'}")
    finally:
        state.close()


def register(group: click.Group) -> None:
    relay = group.commands.get("relay")
    if not isinstance(relay, click.Group):
        raise RuntimeError("relay.callbacks.cli must be listed after relay.cli")
    relay.add_command(sweep)
