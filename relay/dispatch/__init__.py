"""Dispatch: the outbox's `dispatch` jobs sent to downstream targets through connections.

A target is reached through a `Dispatcher` (see dispatcher.py); GitHub's
`repository_dispatch` is one implementation, the local target another.
"""
