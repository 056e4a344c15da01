"""The `spyre-ci` console script.

Each pillar owns its subcommands in its own `cli` module, which exposes
`register(group: click.Group) -> None`. This module only lists those modules,
so the relay and the selection never import the runner (and thus never
import torch) just to print `--help`.
"""

from __future__ import annotations

import importlib

import click

from spyre_ci import __version__
from spyre_ci.exit_codes import CONVENTION_HELP

# Modules whose `register(group)` adds subcommands. Order = order in --help.
COMMAND_MODULES: tuple[str, ...] = (
    "spyre_ci.ci.cli",
    "relay.cli",
    "relay.callbacks.cli",
    "test_manifests.cli",
    "selection.cli",
    "spyre_ci.deps.cli",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=CONVENTION_HELP)
@click.version_option(__version__, "--version", prog_name="spyre-ci")
def cli() -> None:
    """CI for out-of-tree PyTorch backends: relay, test selection, reference device."""


def _register_all(group: click.Group) -> None:
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        module.register(group)


_register_all(cli)


def main() -> None:
    cli(prog_name="spyre-ci")
