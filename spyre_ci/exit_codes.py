"""The exit codes every `spyre-ci` command shares (docs/cli.md).

One convention, the one `spyre-ci select` documented first (docs/selection.md): 0 done,
1 the command ran and failed (or an unexpected internal error), 2 bad input -- a usage error
or a configuration, manifest, payload or other input file that cannot be used, reported in
one line naming the file, line and field at fault, with nothing done. Codes above 2 are
specific to one command and listed in its --help (select: 3 fetch failure, 4 nothing
selected; test: pytest's 5, no tests collected).
"""

from __future__ import annotations

import click

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

# Shown at the end of `spyre-ci --help`; each command adds its own codes to its --help.
CONVENTION_HELP = (
    "\b\nExit codes (every command; docs/cli.md):\n"
    "  0  done\n"
    "  1  the command ran and failed (tests failed, the relay answered an error, ...)\n"
    "  2  bad input: usage, configuration, manifest, payload or input file (one line\n"
    "     naming the file, line and field; nothing done)\n"
    "  3+ specific to a command, listed in its --help (select: 3 fetch failure,\n"
    "     4 nothing selected; test: 5 no tests collected)"
)


class BadInput(click.ClickException):
    """Input the command cannot use: printed as one `Error:` line, exit 2 (no usage text:
    the message names the file and field, which is what the user must fix)."""

    exit_code = EXIT_BAD_INPUT
