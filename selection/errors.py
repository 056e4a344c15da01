"""Errors a user can act on; each maps to a documented exit code of `spyre-ci select`."""

from __future__ import annotations


class SelectionError(Exception):
    """Base class: the message names what failed."""

    exit_code = 1


class BadInput(SelectionError):
    """Unknown version, missing ref, unreadable diff or manifest, bad option combination."""

    exit_code = 2


class FetchError(SelectionError):
    """pip could not fetch a release, or git could not fetch a PR."""

    exit_code = 3
