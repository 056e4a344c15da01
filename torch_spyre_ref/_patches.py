"""Where pure Python needs help from outside the dispatcher (filled in as pitfalls are met)."""

from __future__ import annotations


def install() -> None:
    return None


def quiesce_at_exit() -> None:
    return None
