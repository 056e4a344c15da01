"""Errors a user can act on; each maps to a documented exit code of `spyre-ci select`."""

from __future__ import annotations

# the exit codes of `spyre-ci select`, as documented (docs/selection.md)
EXIT_SELECTED, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_FETCH, EXIT_EMPTY = 0, 1, 2, 3, 4


class SelectionError(Exception):
    """Base class: the message names what failed."""

    exit_code = EXIT_INTERNAL


class BadInput(SelectionError):
    """Unknown version, missing ref, unreadable diff or manifest, bad option combination."""

    exit_code = EXIT_BAD_INPUT


class FetchError(SelectionError):
    """pip could not fetch a release, or git could not fetch a PR."""

    exit_code = EXIT_FETCH
