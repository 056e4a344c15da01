"""Store errors, named for what happened."""

from __future__ import annotations


class StoreError(Exception):
    """Base class of the store's errors."""


class StoreUnavailable(StoreError):
    """The database cannot be reached, or stayed locked past the busy timeout.

    The webhook endpoint answers 503 for it so that GitHub records a failed delivery.
    """


class BadStoreURL(StoreError):
    """The store URL names no supported database."""


class MigrationError(StoreError):
    """A migration file is malformed or could not be applied."""
