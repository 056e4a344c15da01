"""The `spyre-ci` console script.

Each pillar owns its subcommands in its own `cli` module, which exposes
`register(group: click.Group) -> None`. This module only lists those modules,
so the relay and the selection never import the runner (and thus never
import torch) just to print `--help`.
"""

from __future__ import annotations

import importlib
import sys

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


# click >= 8.2 raises this for a group called with no command (a UsageError whose message
# is the whole help text)
_NO_ARGS_IS_HELP: tuple[type[click.UsageError], ...] = tuple(
    getattr(click.exceptions, name)
    for name in ("NoArgsIsHelpError",)
    if hasattr(click.exceptions, name)
)


def main() -> None:
    """Run the CLI. A usage error (an option's bad value, an unknown option) is one line,
    as every other error is: click's own display adds the usage text and a hint line."""
    try:
        code = cli.main(prog_name="spyre-ci", standalone_mode=False)
    except _NO_ARGS_IS_HELP as exc:  # `spyre-ci` alone: the help, as click shows it
        exc.show()
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "spyre-ci"
        click.echo(f"Error: {exc.format_message()} (see '{where} --help')", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # `python -m spyre_ci.cli` as `python -m spyre_ci`
    main()
