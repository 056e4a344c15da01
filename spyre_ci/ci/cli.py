"""`spyre-ci ci ...`: the commands `upstream-dispatch.yml` wires together.

Each command is a thin shell: read the environment a workflow step has, call the
pure decision (`plan`, `junit`, `callback`), do the I/O, write `GITHUB_OUTPUT`.
The commands live in `cli_claim` (the select job's first step), `cli_steps` (select
job, test legs), `cli_report` and `cli_wait` (report job) and `cli_local` (the workflow on
this machine); importing them registers them.
"""

from __future__ import annotations

import click

from spyre_ci.ci import cli_claim, cli_local, cli_report, cli_steps, cli_wait
from spyre_ci.ci.cli_common import ci_group

__all__ = ["ci_group", "cli_claim", "cli_local", "cli_report", "cli_steps", "cli_wait", "register"]


def register(group: click.Group) -> None:
    group.add_command(ci_group)
